#pragma once
/// @file
/// A run's lifecycle, itself a trellis transition table: queued -> running <-> waiting_approval;
/// running -> succeeded | failed (terminal, sticky) | cancelled (resumable: back to running).
/// The graph drives a StateMachine<RunStatus, RunEvent> over this table for every run, so an
/// impossible status change cannot be committed.

#include "trellis/json/enumeration.hpp"
#include "trellis/machine/transition_table.hpp"

namespace trellis::agent {

enum class RunStatus { Queued, Running, WaitingApproval, Succeeded, Failed, Cancelled };
TRELLIS_ENUM(RunStatus, Queued, Running, WaitingApproval, Succeeded, Failed, Cancelled);

enum class RunEvent { Start, Interrupt, Continue, Succeed, Fail, Cancel };
TRELLIS_ENUM(RunEvent, Start, Interrupt, Continue, Succeed, Fail, Cancel);

/// Whether a run in `s` has ended for good.
constexpr bool terminal(RunStatus s) noexcept {
  return s == RunStatus::Succeeded || s == RunStatus::Failed;
}

/// The lifecycle table (one row per statement; see the file comment).
inline const TransitionTable<RunStatus, RunEvent>& lifecycle() {
  static const auto table = [] {
    TransitionTable<RunStatus, RunEvent> t;
    t.from(RunStatus::Queued).on(RunEvent::Start).to(RunStatus::Running);
    t.from(RunStatus::Cancelled).on(RunEvent::Start).to(RunStatus::Running);
    t.from(RunStatus::Running).on(RunEvent::Interrupt).to(RunStatus::WaitingApproval);
    t.from(RunStatus::WaitingApproval).on(RunEvent::Continue).to(RunStatus::Running);
    t.from(RunStatus::Running).on(RunEvent::Succeed).to(RunStatus::Succeeded);
    // A paused run fails when its approval is rejected or expires (issue 5, sections 3-4).
    t.from(RunStatus::Running, RunStatus::WaitingApproval).on(RunEvent::Fail).to(RunStatus::Failed);
    t.from(RunStatus::Running).on(RunEvent::Cancel).to(RunStatus::Cancelled);
    return t;
  }();
  return table;
}

}  // namespace trellis::agent
