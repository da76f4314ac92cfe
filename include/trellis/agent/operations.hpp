#pragma once
/// @file
/// What an operator does to a run, as data committed to its store, by any process and without
/// the graph: decide on a pause, cancel, reconcile an effect in doubt, fork, list what waits.
/// None of them runs a node: the run goes on when something resumes it (the user's program
/// with Graph::resume, `<program> resume RUN`, or a worker).
///
/// ```cpp
/// trellis::agent::FileStore store{"runs"};
/// for (const auto& p : trellis::agent::pending_approvals(store))
///   std::cout << p.run.run_id << " request " << p.run.request << ": " << p.interrupt.reason;
/// trellis::agent::record_decision(store, "run-7", "4", trellis::agent::Approve{"ana", "ok"});
/// graph.resume("run-7", store);  // later, in the program that links the graph
/// ```
///
/// Each checks the run's status against the lifecycle (run_status.hpp) and commits with the
/// store's version check, so two operators racing on one run cannot both win (the second gets
/// request_superseded or run_busy, and nothing of theirs is written). The errors, and the
/// `trellis` command's exit codes for them: unknown_run (3), unknown_request (3),
/// request_superseded (4), run_conflict (4), run_busy (4), request_expired (5).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/reconciliation.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/run_summary.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// Records `decision` on the pause `request_id` (request_id(cp): the WaitingApproval
/// checkpoint's seq) of run `run_id`, as Graph::resume would before running the step, and
/// returns the checkpoint committed:
/// - Approve or Input: Queued, holding the decision; the next resume runs the step with it (the
///   node sees it in RunContext::resume()), without asking again.
/// - Reject: Failed with approval_rejected, holding the decision; compensations the run owes
///   are left to its next resume (which finishes them, as after a crash).
/// The decision's reviewer is who decided (Approve::reviewer, Reject::reviewer,
/// Input::reviewer). Refused, nothing written: unknown_run; unknown_request (no pause of that
/// id); request_superseded (the pause was decided, or the run moved on); request_expired (after
/// the request's expires_at by `clock`); run_busy (another process is advancing the run).
Checkpoint record_decision(Store& store, std::string_view run_id, std::string_view request_id,
                           const Resume& decision, Clock& clock = SystemClock::instance());

/// What cancel_run did.
struct CancelResult {
  std::uint64_t request = 0;  ///< the request's id in the run's log (0 when none was needed)
  /// True when the run was cancelled now: nobody was advancing it, so the Cancelled checkpoint
  /// was committed here. False when a process holds it: it sees the request between steps (and
  /// its node through its stop_token) and cancels it; or when it was already Cancelled.
  bool cancelled_now = false;
  RunStatus status = RunStatus::Cancelled;  ///< the run's status when cancel_run returned
};

/// Asks run `run_id` to stop: appends a CancelRequest {by, reason} to its request log, then,
/// when no process holds the run's lease, commits the Cancelled checkpoint that answers it.
/// A Cancelled run stays resumable. Refused: unknown_run; run_conflict for a run that has
/// succeeded or failed (nothing written). A run already Cancelled (with no pending request)
/// is left as it is (request 0).
CancelResult cancel_run(Store& store, std::string_view run_id, std::string by, std::string reason,
                        Clock& clock = SystemClock::instance());

/// Records the outcome of the effect in doubt `r.key` of run `run_id`, which failed with
/// reconciliation_required: the effect's record gets a receipt (succeeded with `r.result` when
/// it happened; transient, to be re-issued under the same key, when it did not) with the
/// reconciliation, then the run is reopened (Queued, holding the reconciliation), so a resume
/// continues it from that receipt. `r.at` is set from `clock`. Refused, nothing written:
/// unknown_run; run_conflict when the run did not fail with reconciliation_required, when the
/// key names no effect of the run that is in doubt, or when the run's compensations already
/// ran; run_busy while a process holds the run. Repeating it after a crash between the two
/// writes finishes it.
Checkpoint reconcile_run(Store& store, std::string_view run_id, Reconciliation r,
                         Clock& clock = SystemClock::instance());

/// Starts run `new_id` from checkpoint `seq` of run `from_id`, as Graph::fork does, without the
/// graph (and without its fingerprint check: the fork keeps the source's fingerprint). Its
/// first checkpoint records where it came from (Checkpoint::forked_from). A
/// finished run's checkpoint forks as a fresh start at the node its checkpoint names, or at
/// the run's first node when it names none. Returns the new run's first checkpoint.
/// unknown_run when there is no such checkpoint; graph_error when `new_id` exists.
Checkpoint fork_run(Store& store, std::string_view from_id, std::uint64_t seq,
                    std::string_view new_id, Clock& clock = SystemClock::instance());
/// fork_run, recording who forked and why in the fork's first checkpoint
/// (Checkpoint::forked_from) and its `forked` event: an operator's fork, audited.
Checkpoint fork_run(Store& store, std::string_view from_id, std::uint64_t seq,
                    std::string_view new_id, std::string by, std::string reason,
                    Clock& clock = SystemClock::instance());

/// A run that waits for a decision, with what it asks.
struct PendingApproval {
  RunSummary run;        ///< run.request is the id a decision names
  Interrupt interrupt;   ///< its reason, and the approval request (action, proposed input,
                         ///< risk reason, expiry) when it has one
  std::string asked_by;  ///< the node that interrupted
};

/// Every run of `store` that waits for a decision, ordered by run id.
std::vector<PendingApproval> pending_approvals(Store& store);

}  // namespace trellis::agent
