#pragma once
/// @file
/// JSON for the media player's data, so that a DurableStateChart can persist it.

#include <nlohmann/json.hpp>

#include "media_player.hpp"

namespace media {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Player, track, tracks, buffered)
}  // namespace media
