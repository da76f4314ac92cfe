#pragma once
/// @file
/// `ForkOrigin`: where a forked run came from, and who forked it.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// Where a run forked from (Graph::fork, fork_run): the source run's checkpoint, who asked for
/// the fork and why, and when. Kept in the fork's first checkpoint (Checkpoint::forked_from,
/// seq 0, and nowhere else: the audit record of the fork) and logged as its `forked` event.
struct ForkOrigin {
  std::string run_id = {};  ///< the source run
  std::uint64_t seq = 0;    ///< the source checkpoint
  std::string by = {};      ///< who forked it (empty when the caller named nobody)
  std::string reason = {};  ///< why (free text; may be empty)
  std::string at = {};      ///< ISO-8601 UTC, when the fork was made

  friend bool operator==(const ForkOrigin&, const ForkOrigin&) = default;
};

void to_json(nlohmann::json& j, const ForkOrigin& f);
void from_json(const nlohmann::json& j, ForkOrigin& f);

}  // namespace trellis::agent
