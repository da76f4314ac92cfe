#pragma once
/// @file
/// `EventKind`: every event a run reports, with its stable name. The name is what
/// RunEventRecord::kind holds and what the stores' event logs contain ("step_completed"): it
/// never changes, so logs written by older programs read the same. One line per kind: when it
/// is emitted (`node`: the record's node field), and what its `detail` holds.
///
/// "Durable" kinds are appended to the store's per-run log after the commit they report and
/// published on the graph's bus; `effect_replayed` is published on the bus only (the step's
/// step_completed lists the replayed keys instead).

#include <optional>
#include <string_view>

#include "trellis/machine/enumeration.hpp"

namespace trellis::agent {

enum class EventKind {
  /// run() or enqueue() created the run's first checkpoint (Queued). node: empty. detail: {}.
  graph_started,
  /// A run call continues a run: after a crash (from resume(), node: the node to run), after a
  /// decision on a pause or after a cancellation. detail: {}.
  resumed,
  /// A node is about to run (before the hooks). node: that node. detail: {}.
  step_started,
  /// A step's checkpoint was committed. node: the node that ran; duration_ms: hooks and node.
  /// detail: {"next": the next node, or null when the run succeeded; "replayed": [keys of the
  /// effects answered from their receipts], only when there were some}.
  step_completed,
  /// A transient error was counted (committed) and the node runs again after a backoff.
  /// detail: {"attempt": failed tries so far, "backoff_ms", "error": the error's text}.
  retry_scheduled,
  /// The run paused (WaitingApproval committed). node: the node that interrupted (or the
  /// hook's). detail: {"reason": Interrupt::reason}.
  interrupted,
  /// A decision on a pause was committed. node: the node to run next. detail: the Decision as
  /// stored, without its request and input value: {"kind": "approve" | "reject" | "input",
  /// "reviewer", "comment" or "reason", "decided_at", "answers": the pause's seq}.
  decision_recorded,
  /// The run succeeded (Succeeded committed, after the last step_completed). node: the last
  /// node. detail: {}.
  graph_completed,
  /// The run failed (Failed committed). node: the node it stopped at. detail: {"reason": the
  /// Reason's name, "detail": the text of Outcome::detail}.
  graph_failed,
  /// The run stopped on a stop request (Cancelled committed): the caller's stop token, or a
  /// cancel request (Store::request_cancel) seen by the run call or committed by the operator
  /// when nobody advanced the run. node: the next node. detail: {} for the caller's stop token;
  /// {"request": its id, "by", "reason"} for a cancel request.
  cancelled,
  /// An effect's started record was committed, right before its call. node: the step's node.
  /// detail: {"effect": name, "key", "policy", "issue": calls made under the key}. Not logged
  /// for a fan-out's items (fanout.hpp), which log their outcome only.
  effect_started,
  /// An effect's receipt with its result was committed. detail: as effect_started.
  effect_completed,
  /// An effect's receipt with an error was committed (transient or final). detail: as
  /// effect_started, and "error".
  effect_failed,
  /// An effect was answered from its stored receipt instead of being called (bus only).
  /// detail: as effect_started, of the stored record.
  effect_replayed,
  /// An at_most_once effect was found started without a receipt: the run fails with
  /// reconciliation_required. detail: as effect_started, of the stored record.
  effect_reconciliation_required,
  /// A compensation is due but this process has no function for it: left for a later
  /// resume(). detail: as effect_started, of the effect to undo.
  compensation_pending,
  /// A compensation's started record was committed, right before its call. detail: as
  /// effect_started, of the compensation's own record (its own key).
  compensation_started,
  /// A compensation's receipt with its result was committed. detail: as compensation_started,
  /// and "compensates": the undone effect's key.
  compensation_completed,
  /// A compensation's receipt with an error was committed (a transient one stays due).
  /// detail: as compensation_completed, and "error".
  compensation_failed,
  /// An operator reconciled the effect in doubt of a run failed with reconciliation_required
  /// (operations.hpp), and the run was reopened. node: the node to run next. detail: the
  /// Reconciliation as stored ({"key", "happened", "result", "by", "reason", "at"}).
  reconciled,
  /// The run waits on a timer (Waiting committed): a node's Sleep, or a retry backoff made
  /// durable (RunOptions::durable_waits). node: the node to run when it fires. detail:
  /// {"wake_at": ISO-8601 UTC}.
  waiting,
  /// The run was started from another run's checkpoint (Graph::fork, fork_run): its first
  /// checkpoint is committed. node: the node to run. detail: the ForkOrigin as stored
  /// ({"run_id", "seq", "by", "reason", "at"}).
  forked,
};
TRELLIS_ENUM(EventKind, graph_started, resumed, step_started, step_completed, retry_scheduled,
             interrupted, decision_recorded, graph_completed, graph_failed, cancelled,
             effect_started, effect_completed, effect_failed, effect_replayed,
             effect_reconciliation_required, compensation_pending, compensation_started,
             compensation_completed, compensation_failed, reconciled, waiting, forked);

/// The stable name of `kind` (what the stores' event logs hold).
constexpr std::string_view to_string(EventKind kind) noexcept {
  return enumeration<EventKind>::name(kind);
}

/// The kind named `name`, or nullopt for a name this program does not know.
constexpr std::optional<EventKind> event_kind_from(std::string_view name) noexcept {
  return enumeration<EventKind>::from_name(name);
}

}  // namespace trellis::agent
