#pragma once
/// @file
/// `trellis::testing`: exhaustive tests of transition functions without running a machine.
/// The transition matrix of every (state, event) pair and its Markdown form
/// (`testing/transition_matrix.hpp`), the declared rows of a typed table as phases × event
/// types (`testing/phase_matrix.hpp`), golden-file comparison (`testing/golden.hpp`) and property
/// checks (`testing/properties.hpp`). Pure, header-only, and independent of doctest: results are
/// values a test framework can print.

#include "trellis/testing/golden.hpp"
#include "trellis/testing/phase_matrix.hpp"
#include "trellis/testing/properties.hpp"
#include "trellis/testing/transition_matrix.hpp"
