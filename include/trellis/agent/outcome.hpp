#pragma once
/// @file
/// How a run call ended: its status, and for a failed run the reason code (a stable name to
/// branch on) and a detail text for people. A failed run is an outcome, not an exception:
/// exceptions are kept for misuse and infrastructure (see errors.hpp).

#include <cstdint>
#include <optional>
#include <string>

#include "trellis/agent/next_step.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

/// Why a run failed (or none; or, on a Succeeded run, completed_with_errors).
enum class Reason {
  none,
  approval_rejected,        ///< a person said no (a business failure)
  approval_expired,         ///< nobody decided before the request's expires_at
  denied,                   ///< a hook (the ModeGate) refused a node and nothing routed elsewhere
  max_steps,                ///< the step bound was reached (a loop that does not end)
  unknown_node,             ///< a node named a next node the graph does not have
  node_error,               ///< a node threw a non-transient exception
  retries_exhausted,        ///< a transient error outlived the retry policy
  reconciliation_required,  ///< an at_most_once effect was cut off by a crash (effect.hpp)
  undeclared_edge,          ///< a node went where its declared edges do not lead (graph.hpp)
  /// On a Succeeded run, not a failure: it completed, and some of its parts failed (a fan-out
  /// that goes on after an item fails). Nothing in this release sets it yet.
  completed_with_errors,
};
TRELLIS_ENUM(Reason, none, approval_rejected, approval_expired, denied, max_steps, unknown_node,
             node_error, retries_exhausted, reconciliation_required, undeclared_edge,
             completed_with_errors);

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
