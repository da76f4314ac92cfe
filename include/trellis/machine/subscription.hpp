#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: trellis::Subscription lives in
/// <trellis/base/subscription.hpp>; include that instead.

#include "trellis/base/subscription.hpp"
