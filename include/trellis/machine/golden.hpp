#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: golden-file comparison lives in
/// <trellis/testing/golden.hpp>; include that instead.

#include "trellis/testing/golden.hpp"
