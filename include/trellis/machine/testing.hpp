#pragma once
/// @file
/// `trellis::testing`: exhaustive tests of transition functions without running a machine.
/// The transition matrix of every (state, event) pair and its Markdown form
/// (`transition_matrix.hpp`), golden-file comparison (`golden.hpp`) and property checks
/// (`properties.hpp`). Pure, header-only, and independent of doctest: results are values a
/// test framework can print.

#include "trellis/machine/golden.hpp"
#include "trellis/machine/properties.hpp"
#include "trellis/machine/transition_matrix.hpp"
