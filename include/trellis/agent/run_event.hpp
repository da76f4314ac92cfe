#pragma once
/// @file
/// `RunEventRecord`: one event of a run, as appended to the store's per-run JSONL log after
/// the commit it reports (observability, not part of the commit: a crash may lose the last
/// events, never state) and as published to the graph's observers (Graph::events(), the
/// Boost.Signals2 adapter <trellis/signals2/event_bus.hpp>). The kinds: event_kind.hpp.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/agent/event_kind.hpp"

namespace trellis::agent {

/// `kind` stays the stable name as text (what the logs hold, and what code written before
/// EventKind compares); kind_id() gives the enumeration to switch on.
struct RunEventRecord {
  std::string kind;  ///< an EventKind's name (event_kind.hpp)
  std::string run_id;
  std::uint64_t step = 0;  ///< steps committed when the event happened
  std::string node;
  std::string at;            ///< ISO-8601 UTC
  double duration_ms = 0.0;  ///< the step's (or the run call's) duration, when it has one
  nlohmann::json detail = nlohmann::json::object();

  /// The kind as an enumeration; nullopt for a name this program does not know (a record
  /// built by hand, or read from a log written by a newer program).
  std::optional<EventKind> kind_id() const noexcept { return event_kind_from(kind); }
  /// Whether this is an event of kind `k`.
  bool is(EventKind k) const noexcept { return kind == to_string(k); }
};

void to_json(nlohmann::json& j, const RunEventRecord& e);

}  // namespace trellis::agent
