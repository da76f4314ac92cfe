#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: the property checks lives in
/// <trellis/testing/properties.hpp>; include that instead.

#include "trellis/testing/properties.hpp"
