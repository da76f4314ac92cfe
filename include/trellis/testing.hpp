#pragma once
/// @file
/// `trellis::testing`: exhaustive tests of transition functions without running a machine.
/// The transition matrix of every (state, event) pair and its Markdown form
/// (`testing/transition_matrix.hpp`), the declared rows of a typed table as phases × event
/// types (`testing/phase_matrix.hpp`), golden-file comparison (`testing/golden.hpp`), property
/// checks (`testing/properties.hpp`) and the bounded exploration of machines whose states cannot
/// be listed (`testing/explore.hpp`). Pure, header-only, and independent of doctest: results are
/// values a test framework can print.

#include "trellis/testing/explore.hpp"
#include "trellis/testing/golden.hpp"
#include "trellis/testing/phase_matrix.hpp"
#include "trellis/testing/properties.hpp"
#include "trellis/testing/transition_matrix.hpp"
