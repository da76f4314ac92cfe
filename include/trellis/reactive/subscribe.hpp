#pragma once
/// @file
/// Forwarding header, kept so existing includes keep working: `subscribe()` is the
/// Boost.Signals2 edge's, in <trellis/signals2/subscribe.hpp>; include that instead.

#include "trellis/signals2/subscribe.hpp"
