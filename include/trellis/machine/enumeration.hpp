#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: TRELLIS_ENUM and trellis::enumeration
/// lives in <trellis/base/enumeration.hpp>; include that instead.

#include "trellis/base/enumeration.hpp"
