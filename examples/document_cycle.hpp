// SPDX-License-Identifier: MIT
/// @file
/// The document cycle machine of an AI writing tool (issue 3, section 4), declared as a
/// transition table. A cycle opens with StartPreflight, captures the model's response, applies
/// the write and commits it, or is abandoned. Read as rules:
///
/// - StartPreflight opens a new cycle from any phase (PreflightStarted included).
/// - ResponseCaptured, WriteApplied and Committed each advance one phase, from the phase
///   before them; Committed on Committed is idempotent (accepted, the phase stays).
/// - Abandoned ends an open cycle (PreflightStarted, ResponseCaptured, WriteApplied).
/// - RecoverablePreflightTimeout rewinds an open cycle to PreflightStarted: the one backward
///   edge among open phases.
/// - Bookkeeping is a self-transition on the open phases.
/// - Committed and Abandoned are terminal: only StartPreflight leaves them (the idempotent
///   Committed re-delivery is accepted but stays), and every other event is rejected.
///
/// tests/machine/golden/doc_cycle.md holds the matrix these rules give, written by hand from
/// the rules; examples/document_cycle.cpp runs the machine and draws it.
#pragma once

#include <trellis/base/enumeration.hpp>
#include <trellis/machine/transition_table.hpp>

#include <array>

namespace doc_cycle {

enum class Phase { PreflightStarted, ResponseCaptured, WriteApplied, Committed, Abandoned };
TRELLIS_ENUM(Phase, PreflightStarted, ResponseCaptured, WriteApplied, Committed, Abandoned);

enum class Event {
  StartPreflight,
  ResponseCaptured,
  WriteApplied,
  Committed,
  Abandoned,
  RecoverablePreflightTimeout,
  Bookkeeping,
};
TRELLIS_ENUM(Event, StartPreflight, ResponseCaptured, WriteApplied, Committed, Abandoned,
             RecoverablePreflightTimeout, Bookkeeping);

/// The phases of a cycle that has not ended.
inline constexpr std::array open_phases{Phase::PreflightStarted, Phase::ResponseCaptured,
                                        Phase::WriteApplied};

/// Progress through a cycle; the terminal phases share the last rank.
constexpr int rank(Phase p) {
  switch (p) {
    case Phase::PreflightStarted:
      return 0;
    case Phase::ResponseCaptured:
      return 1;
    case Phase::WriteApplied:
      return 2;
    case Phase::Committed:
    case Phase::Abandoned:
      return 3;
  }
  return -1;
}

/// The machine's transition table, one row per statement.
inline const trellis::TransitionTable<Phase, Event>& table() {
  static const auto t = [] {
    trellis::TransitionTable<Phase, Event> t;
    t.any().on(Event::StartPreflight).to(Phase::PreflightStarted);
    t.from(Phase::PreflightStarted).on(Event::ResponseCaptured).to(Phase::ResponseCaptured);
    t.from(Phase::ResponseCaptured).on(Event::WriteApplied).to(Phase::WriteApplied);
    t.from(Phase::WriteApplied).on(Event::Committed).to(Phase::Committed);
    t.from(Phase::Committed).on(Event::Committed).stay();
    t.from(open_phases).on(Event::Abandoned).to(Phase::Abandoned);
    t.from(open_phases).on(Event::RecoverablePreflightTimeout).to(Phase::PreflightStarted);
    t.from(open_phases).on(Event::Bookkeeping).stay();
    return t;
  }();
  return t;
}

}  // namespace doc_cycle
