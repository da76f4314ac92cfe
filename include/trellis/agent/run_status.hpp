#pragma once
/// @file
/// A run's lifecycle, itself a trellis transition table (the one table of the round; its golden
/// matrix is tests/agent/golden/lifecycle.md):
///
/// - Queued: runnable, nobody advances it yet (a new run; a run whose pause was decided by an
///   operator; a failed run reopened by a reconciliation).
/// - Running: a process advances it (or did, and died: resume continues it).
/// - WaitingApproval: paused on an Interrupt until a decision (resume.hpp, operations.hpp).
/// - Waiting: paused on a durable timer (a node's Sleep, a retry backoff in a Worker;
///   Checkpoint::wake_at), started again when it is due (a Worker claims it then).
/// - Succeeded: ended well (terminal). A run that completed with errors (a fan-out that went on
///   after some items failed) is Succeeded with Reason::completed_with_errors.
/// - Failed: ended with a Reason (terminal), except that a run failed with
///   reconciliation_required is reopened (to Queued) by a reconciliation (operations.hpp).
/// - Cancelled: stopped on request (resumable: Start runs it again).
///
/// Cancel is accepted from Queued, Running, WaitingApproval and Waiting. The graph drives a
/// StateMachine<RunStatus, RunEvent> over this table for every run call, and the operations
/// (decide, cancel, reconcile) check it before they commit, so an impossible status change is
/// never committed.

#include "trellis/json/enumeration.hpp"
#include "trellis/machine/transition_table.hpp"

namespace trellis::agent {

enum class RunStatus { Queued, Running, WaitingApproval, Waiting, Succeeded, Failed, Cancelled };
TRELLIS_ENUM(RunStatus, Queued, Running, WaitingApproval, Waiting, Succeeded, Failed, Cancelled);

/// Start: a process starts advancing the run. Interrupt: it pauses for a decision. Continue:
/// the process that advances it applies a decision. Decide: a decision is recorded without
/// running the graph (the run becomes runnable). Wait: it pauses on a timer or a child run.
/// Reconcile: an operator recorded the outcome of the effect in doubt of a run that failed
/// with reconciliation_required.
enum class RunEvent { Start, Interrupt, Continue, Succeed, Fail, Cancel, Decide, Wait, Reconcile };
TRELLIS_ENUM(RunEvent, Start, Interrupt, Continue, Succeed, Fail, Cancel, Decide, Wait, Reconcile);

/// Whether a run in `s` has ended (succeeded or failed; see Reconcile above for the one way
/// back from Failed).
constexpr bool terminal(RunStatus s) noexcept {
  return s == RunStatus::Succeeded || s == RunStatus::Failed;
}

/// The lifecycle table (one row per statement; see the file comment).
inline const TransitionTable<RunStatus, RunEvent>& lifecycle() {
  static const auto table = [] {
    using enum RunStatus;
    TransitionTable<RunStatus, RunEvent> t;
    t.from(Queued, Cancelled, Waiting).on(RunEvent::Start).to(Running);
    t.from(Running).on(RunEvent::Interrupt).to(WaitingApproval);
    t.from(WaitingApproval).on(RunEvent::Continue).to(Running);
    t.from(WaitingApproval).on(RunEvent::Decide).to(Queued);
    t.from(Running).on(RunEvent::Wait).to(Waiting);
    t.from(Running).on(RunEvent::Succeed).to(Succeeded);
    // A paused run fails when its approval is rejected or expires; a waiting one when what it
    // waits for fails.
    t.from(Running, WaitingApproval, Waiting).on(RunEvent::Fail).to(Failed);
    t.from(Queued, Running, WaitingApproval, Waiting).on(RunEvent::Cancel).to(Cancelled);
    t.from(Failed).on(RunEvent::Reconcile).to(Queued);
    return t;
  }();
  return table;
}

}  // namespace trellis::agent
