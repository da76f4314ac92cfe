#pragma once
/// @file
/// `StoredEvent`: one event of a run's log with its position, so a reader can continue after
/// the last one it saw (Store::events_after, follow_events in follow.hpp) with no gap and no
/// duplicate.

#include <cstdint>

#include <nlohmann/json.hpp>

namespace trellis::agent {

struct StoredEvent {
  /// Its position in the run's log: larger for every later event of the run (not necessarily
  /// consecutive: SqliteStore numbers events across runs). Never 0.
  std::uint64_t seq = 0;
  nlohmann::json event;  ///< as appended (RunEventRecord's JSON for the graph's events)

  friend bool operator==(const StoredEvent&, const StoredEvent&) = default;
};

}  // namespace trellis::agent
