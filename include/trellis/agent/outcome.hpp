#pragma once
/// @file
/// How a run call ended: its status, and for a failed run the reason code (a stable name to
/// branch on) and a detail text for people. A failed run is an outcome, not an exception:
/// exceptions are kept for misuse and infrastructure (see errors.hpp).

#include <cstdint>
#include <optional>
#include <string>

#include "trellis/agent/next_step.hpp"
#include "trellis/agent/reason.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

/// The result of Graph::run or Graph::resume.
template <class S>
struct Outcome {
  /// Succeeded, Failed, WaitingApproval, Waiting (a Sleep, or a durable retry backoff) or
  /// Cancelled
  RunStatus status = RunStatus::Queued;
  Reason reason = Reason::none;
  std::string detail = {};
  std::uint64_t steps = 0;                            ///< committed steps so far
  std::optional<S> state = std::nullopt;              ///< the last committed state
  std::optional<Interrupt> interrupt = std::nullopt;  ///< set while WaitingApproval
  /// While WaitingApproval: the id of the pending request, what a decision names
  /// (operations.hpp: record_decision; `trellis approve RUN --request ID`).
  std::string request_id = {};
  /// While Waiting: when its timer fires (ISO-8601 UTC; Checkpoint::wake_at).
  std::string wake_at = {};

  bool succeeded() const noexcept { return status == RunStatus::Succeeded; }
  bool interrupted() const noexcept { return status == RunStatus::WaitingApproval; }
  bool failed() const noexcept { return status == RunStatus::Failed; }
  bool cancelled() const noexcept { return status == RunStatus::Cancelled; }
  bool waiting() const noexcept { return status == RunStatus::Waiting; }
};

}  // namespace trellis::agent
