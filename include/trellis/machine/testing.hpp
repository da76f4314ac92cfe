#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: trellis::testing lives in
/// <trellis/testing.hpp>; include that instead.

#include "trellis/testing.hpp"
