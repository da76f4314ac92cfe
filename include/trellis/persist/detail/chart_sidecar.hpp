#pragma once
/// @file
/// The "state" member of a durable chart's sidecar (format version 2, kind "statechart"; see
/// docs/formats.md, "Sidecar"): the active configuration, the recorded history values, the
/// chart's data and the pending delayed sends, by state id. Encoded from a running instance;
/// decoded and checked against the chart's definition before anything is restored.

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/statechart/definition.hpp"
#include "trellis/statechart/detail/chart_instance.hpp"
#include "trellis/statechart/state_set.hpp"

namespace trellis::detail {

/// What a chart's sidecar restores into its instance (ChartInstance::restore's arguments).
struct ChartSnapshot {
  StateSet configuration;
  std::vector<std::vector<int>> history;  ///< by state index; empty when not recorded
  std::vector<bool> recorded;             ///< by state index
  std::vector<DelayedSend> sends;         ///< names only (no payload)
  bool running = true;                    ///< false once a top-level final state is active
};

/// The sidecar state of `inst` with `data` (the chart's data as JSON). A pending send that
/// carries a payload (std::any cannot be written) is refused with unwritable_value naming the
/// sidecar at `file` and the member ("/state/sends/0/event").
nlohmann::json encode_chart_state(const ChartInstance& inst, nlohmann::json data,
                                  const std::filesystem::path& file);

/// Decodes a sidecar state written by encode_chart_state and checks it against `def`: every id
/// must be one of the chart's states (recovery_error, reason unknown_state, naming `file` and
/// the id), every history key one of its history states, the configuration one the chart can
/// be in and every history value a descendant of the history's parent (reason bad_state, as
/// for a missing or mistyped member). `data` receives the data member as it is.
ChartSnapshot decode_chart_state(const ChartDefinition& def, const nlohmann::json& state,
                                 const std::filesystem::path& file, nlohmann::json& data);

/// The snapshot `inst` would be restored from (what encode_chart_state writes), as it is now.
ChartSnapshot snapshot_of(const ChartInstance& inst);

}  // namespace trellis::detail
