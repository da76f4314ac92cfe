#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: the transition matrix lives in
/// <trellis/testing/transition_matrix.hpp>; include that instead.

#include "trellis/testing/transition_matrix.hpp"
