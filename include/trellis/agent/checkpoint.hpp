#pragma once
/// @file
/// One committed checkpoint of a run: everything needed to continue it, written in one atomic
/// commit after every step (and at every pause). A run is its sequence of checkpoints; the
/// newest one is where it resumes, the older ones are its history.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

struct Checkpoint {
  std::string run_id;
  std::uint64_t seq = 0;  ///< 0 for the first checkpoint of a run, +1 per commit
  RunStatus status = RunStatus::Queued;
  std::string next_node;               ///< the node to run next (the step in flight after a crash)
  std::uint64_t step = 0;              ///< steps completed
  std::uint32_t attempt = 0;           ///< failed attempts of next_node so far (transient errors)
  nlohmann::json state;                ///< the run's state, as to_json wrote it
  int schema = 1;                      ///< the state's schema version (for migrations)
  std::string fingerprint;             ///< the graph that wrote it (node names and user version)
  std::optional<Interrupt> interrupt;  ///< the pause, while WaitingApproval or after one
  std::string resume_node;  ///< the node that interrupted (it reruns when `then` is empty)
  /// While that node reruns after its pause(s): the step its effects are keyed by (the step
  /// of its first pause in a row), so what it did before pausing replays.
  std::optional<std::uint64_t> rerun_step;
  Reason reason = Reason::none;
  std::string detail;
  std::string created_at;  ///< ISO-8601 UTC
  /// The idempotency keys of the effects the step made (their records: Store::effects).
  std::vector<std::string> effects;

  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

void to_json(nlohmann::json& j, const Interrupt& i);
void from_json(const nlohmann::json& j, Interrupt& i);
void to_json(nlohmann::json& j, const Checkpoint& c);
void from_json(const nlohmann::json& j, Checkpoint& c);

}  // namespace trellis::agent
