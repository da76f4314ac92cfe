// SPDX-License-Identifier: MIT
/// @file
/// The document cycle of an AI writing tool (issue 3, section 4; issue 12, section 3), as the
/// seed story tells it: the state is a phase plus the cycle's bookkeeping (pending write ids,
/// the queue head, capture and response hashes, counters), every mutator (phase advances and
/// bookkeeping records alike) is an event of its own type carrying its payload, and one
/// transition table alone decides. Its phase rules:
///
/// - StartPreflight -> PreflightStarted from any phase; from Committed or Abandoned it opens a
///   new cycle, the only edge out of a terminal phase. It always starts a fresh cycle (the
///   next number, bookkeeping cleared; the queue head, a position in a durable queue, is kept).
/// - ResponseCaptured -> ResponseCaptured from PreflightStarted or ResponseCaptured.
/// - WriteApplied -> WriteApplied from PreflightStarted, ResponseCaptured or WriteApplied.
/// - Committed -> Committed from PreflightStarted, ResponseCaptured, WriteApplied or Committed
///   (a second Committed is accepted and changes nothing).
/// - Abandoned -> Abandoned from PreflightStarted, ResponseCaptured or WriteApplied.
/// - RecoverablePreflightTimeout rewinds an open cycle (PreflightStarted, ResponseCaptured,
///   WriteApplied) to PreflightStarted, the cycle's number kept.
/// - The bookkeeping records (RecordPendingWrite, AdvanceQueueHead, RecordCaptureHash) update
///   their fields in the open phases, the phase unchanged, and are rejected once the cycle is
///   Committed or Abandoned.
/// - Everything else is rejected. Committed and Abandoned are terminal: only StartPreflight
///   leaves them.
///
/// No row has a guard, so what the table decides depends on the phase alone (the bookkeeping
/// fields are carried, never consulted): tests/machine/golden/doc_cycle.md holds the phase
/// matrix these rules give, written by hand. examples/document_cycle.cpp runs the machine on
/// a durable sidecar (document_cycle_json.hpp converts the state to JSON) and draws it.
#pragma once

#include <trellis/base/enumeration.hpp>
#include <trellis/machine/transition_table.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace doc_cycle {

enum class Phase { PreflightStarted, ResponseCaptured, WriteApplied, Committed, Abandoned };
TRELLIS_ENUM(Phase, PreflightStarted, ResponseCaptured, WriteApplied, Committed, Abandoned);

// Phase advances.
struct StartPreflight {
  std::string document;  ///< the document the new cycle works on
  bool operator==(const StartPreflight&) const = default;
};
struct ResponseCaptured {
  std::string hash;  ///< the model response's hash
  bool operator==(const ResponseCaptured&) const = default;
};
struct WriteApplied {
  std::string id;  ///< the write applied (no longer pending)
  bool operator==(const WriteApplied&) const = default;
};
struct Committed {
  bool operator==(const Committed&) const = default;
};
struct Abandoned {
  std::string reason;
  bool operator==(const Abandoned&) const = default;
};
struct RecoverablePreflightTimeout {
  bool operator==(const RecoverablePreflightTimeout&) const = default;
};

// Bookkeeping records: each its own event, accepted only while the cycle is open.
struct RecordPendingWrite {
  std::string id;
  bool operator==(const RecordPendingWrite&) const = default;
};
struct AdvanceQueueHead {
  std::uint64_t head = 0;
  bool operator==(const AdvanceQueueHead&) const = default;
};
struct RecordCaptureHash {
  std::string hash;  ///< the hash of the document as captured for the preflight
  bool operator==(const RecordCaptureHash&) const = default;
};

using Event = std::variant<StartPreflight, ResponseCaptured, WriteApplied, Committed, Abandoned,
                           RecoverablePreflightTimeout, RecordPendingWrite, AdvanceQueueHead,
                           RecordCaptureHash>;

/// One cycle: its phase and its bookkeeping. A tool that has run no cycle yet is at cycle 0,
/// Committed (nothing open); StartPreflight opens cycle 1.
struct Cycle {
  Phase phase = Phase::Committed;
  std::uint64_t number = 0;                 ///< 1 for the first cycle
  std::string document;                     ///< from StartPreflight
  std::vector<std::string> pending_writes;  ///< recorded and not yet applied, in order
  std::uint64_t queue_head = 0;             ///< kept across cycles
  std::string capture_hash;                 ///< from RecordCaptureHash
  std::string response_hash;                ///< from ResponseCaptured; cleared by a rewind
  int write_count = 0;                      ///< writes applied in this cycle
  int timeouts = 0;                         ///< rewinds in this cycle
  std::string abandon_reason;               ///< from Abandoned
  bool operator==(const Cycle&) const = default;
};

/// The phase hook: the table, observers and diagrams speak about phases.
inline Phase phase_of(const Cycle& c) { return c.phase; }

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

using Table = trellis::TransitionTable<Cycle, Event, Phase>;

/// The machine's transition table: every rule of the cycle, and nothing else decides.
inline const Table& table() {
  static const Table t = [] {
    Table t;
    t.any()
        .on<StartPreflight>()
        .update("open cycle",
                [](const Cycle& c, const StartPreflight& e) {
                  Cycle next;
                  next.phase = Phase::PreflightStarted;
                  next.number = c.number + 1;
                  next.document = e.document;
                  next.queue_head = c.queue_head;
                  return next;
                })
        .to(Phase::PreflightStarted);
    t.from(Phase::PreflightStarted, Phase::ResponseCaptured)
        .on<ResponseCaptured>()
        .update("capture response",
                [](Cycle& c, const ResponseCaptured& e) {
                  c.response_hash = e.hash;
                  c.phase = Phase::ResponseCaptured;
                })
        .to(Phase::ResponseCaptured);
    t.from(open_phases)
        .on<WriteApplied>()
        .update("apply write",
                [](Cycle& c, const WriteApplied& e) {
                  std::erase(c.pending_writes, e.id);
                  ++c.write_count;
                  c.phase = Phase::WriteApplied;
                })
        .to(Phase::WriteApplied);
    t.from(open_phases)
        .on<Committed>()
        .update("commit", [](Cycle& c, const Committed&) { c.phase = Phase::Committed; })
        .to(Phase::Committed);
    t.from(Phase::Committed).on<Committed>().stay();  // a re-delivered Committed: accepted, no-op
    t.from(open_phases)
        .on<Abandoned>()
        .update("abandon",
                [](Cycle& c, const Abandoned& e) {
                  c.abandon_reason = e.reason;
                  c.phase = Phase::Abandoned;
                })
        .to(Phase::Abandoned);
    t.from(open_phases)
        .on<RecoverablePreflightTimeout>()
        .update("rewind",
                [](Cycle& c, const RecoverablePreflightTimeout&) {
                  c.response_hash.clear();
                  ++c.timeouts;
                  c.phase = Phase::PreflightStarted;
                })
        .to(Phase::PreflightStarted);
    t.from(open_phases)
        .on<RecordPendingWrite>()
        .update("record pending write",
                [](Cycle& c, const RecordPendingWrite& e) { c.pending_writes.push_back(e.id); })
        .stay();
    t.from(open_phases)
        .on<AdvanceQueueHead>()
        .update("advance queue head",
                [](Cycle& c, const AdvanceQueueHead& e) { c.queue_head = e.head; })
        .stay();
    t.from(open_phases)
        .on<RecordCaptureHash>()
        .update("record capture hash",
                [](Cycle& c, const RecordCaptureHash& e) { c.capture_hash = e.hash; })
        .stay();
    t.terminal(Phase::Committed, Phase::Abandoned);
    return t;
  }();
  return t;
}

}  // namespace doc_cycle
