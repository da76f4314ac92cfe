// SPDX-License-Identifier: MIT
// The document cycle (examples/document_cycle.hpp): a struct state, payload events, one table.
// Its phase matrix (phases x event types) is checked against tests/machine/golden/doc_cycle.md,
// written by hand from issue 12's rules; the properties and the bookkeeping rules are checked
// on the table and on a machine running it.
#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <trellis/machine/event_types.hpp>
#include <trellis/machine/state_machine.hpp>
#include <trellis/testing/golden.hpp>
#include <trellis/testing/properties.hpp>
#include <trellis/testing/transition_matrix.hpp>

#include "document_cycle.hpp"

#ifndef TRELLIS_MACHINE_GOLDEN_DIR
#error \
    "TRELLIS_MACHINE_GOLDEN_DIR must name tests/machine/golden (tests/machine/tests.cmake sets it)"
#endif

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace doc_cycle_test {

namespace tt = trellis::testing;
using namespace doc_cycle;

// The event types as an enumeration, so that a phase matrix (phases x event types) can be
// tabulated, printed and checked with trellis::testing. Listed in the variant's order.
enum class Kind {
  StartPreflight,
  ResponseCaptured,
  WriteApplied,
  Committed,
  Abandoned,
  RecoverablePreflightTimeout,
  RecordPendingWrite,
  AdvanceQueueHead,
  RecordCaptureHash,
};
TRELLIS_ENUM(Kind, StartPreflight, ResponseCaptured, WriteApplied, Committed, Abandoned,
             RecoverablePreflightTimeout, RecordPendingWrite, AdvanceQueueHead, RecordCaptureHash);

namespace {

const std::filesystem::path golden_dir{TRELLIS_MACHINE_GOLDEN_DIR};

// One event of each type, in Kind's order.
const std::array<Event, 9> samples{StartPreflight{"doc-7"},     ResponseCaptured{"r-hash"},
                                   WriteApplied{"w1"},          Committed{},
                                   Abandoned{"user closed it"}, RecoverablePreflightTimeout{},
                                   RecordPendingWrite{"w2"},    AdvanceQueueHead{5},
                                   RecordCaptureHash{"c-hash"}};

const Event& sample(Kind k) { return samples[*trellis::enumeration<Kind>::index_of(k)]; }

Cycle after(Cycle c, const std::vector<Event>& events) {
  for (const Event& e : events) {
    const std::optional<Cycle> next = table()(c, e);
    REQUIRE(next.has_value());
    c = *next;
  }
  return c;
}

// A state in phase `p` as a running tool reaches it.
Cycle reached(Phase p) {
  const Cycle open = after(Cycle{}, {StartPreflight{"doc-1"}, RecordPendingWrite{"w1"}});
  switch (p) {
    case Phase::PreflightStarted:
      return open;
    case Phase::ResponseCaptured:
      return after(open, {ResponseCaptured{"r1"}});
    case Phase::WriteApplied:
      return after(open, {ResponseCaptured{"r1"}, WriteApplied{"w1"}});
    case Phase::Committed:
      return after(open, {ResponseCaptured{"r1"}, WriteApplied{"w1"}, Committed{}});
    case Phase::Abandoned:
      return after(open, {Abandoned{"timeout budget spent"}});
  }
  return open;
}

// A state in phase `p` with arbitrary bookkeeping.
Cycle arbitrary(Phase p) {
  Cycle c;
  c.phase = p;
  c.number = 41;
  c.pending_writes = {"a", "b"};
  c.queue_head = 900;
  c.capture_hash = "x";
  c.write_count = 7;
  c.timeouts = 2;
  return c;
}

// What the table does with each (phase, event type), from one state per phase.
template <class Sample>
tt::TransitionMatrix<Phase, Kind> phase_matrix(Sample state_in) {
  return tt::transition_matrix<Phase, Kind>([&](const Phase& p, const Kind& k) {
    const std::optional<Cycle> next = table()(state_in(p), sample(k));
    return next ? std::optional<Phase>(next->phase) : std::nullopt;
  });
}

const std::array bookkeeping{Kind::RecordPendingWrite, Kind::AdvanceQueueHead,
                             Kind::RecordCaptureHash};

}  // namespace

TEST_CASE("doc cycle: the event kinds of the test list the variant's types in order") {
  using Types = trellis::event_types<Event>;
  REQUIRE(Types::count == trellis::enumeration<Kind>::size);
  for (std::size_t k = 0; k < Types::count; ++k) {
    CHECK(Types::name(k) == trellis::enumeration<Kind>::names[k]);
    CHECK(Types::index(samples[k]) == k);
  }
}

TEST_CASE("doc cycle: its phase matrix matches the hand-written golden file") {
  CHECK(tt::check_golden(golden_dir / "doc_cycle.md", tt::to_markdown(phase_matrix(reached))));
}

TEST_CASE("doc cycle: what the table decides depends on the phase alone") {
  CHECK(phase_matrix(reached) == phase_matrix(arbitrary));
}

TEST_CASE("doc cycle: the table validates from PreflightStarted, with two terminal phases") {
  const std::vector<std::string> problems = table().validate(Phase::PreflightStarted);
  CHECK_MESSAGE(problems.empty(), tt::joined(problems));
  CHECK(table().terminals() == std::vector<Phase>{Phase::Committed, Phase::Abandoned});
}

TEST_CASE("doc cycle: Committed and Abandoned are left only by StartPreflight") {
  const auto v = tt::sticky_terminals(phase_matrix(reached), {Phase::Committed, Phase::Abandoned},
                                      {Kind::StartPreflight});
  CHECK_MESSAGE(v.empty(), tt::joined(v));
}

TEST_CASE("doc cycle: every phase is reachable from PreflightStarted") {
  const auto v = tt::reachable_from(phase_matrix(reached), Phase::PreflightStarted);
  CHECK_MESSAGE(v.empty(), tt::joined(v));
}

TEST_CASE("doc cycle: no backward edge but a new cycle and the timeout rewind") {
  const auto v = tt::no_backward_edges(phase_matrix(reached), rank,
                                       {Kind::StartPreflight, Kind::RecoverablePreflightTimeout});
  CHECK_MESSAGE(v.empty(), tt::joined(v));
}

TEST_CASE("doc cycle: the timeout rewinds exactly the open phases past PreflightStarted") {
  CHECK(tt::no_backward_edges(phase_matrix(reached), rank, {Kind::StartPreflight}) ==
        std::vector<std::string>{
            "ResponseCaptured --RecoverablePreflightTimeout--> PreflightStarted goes backward "
            "(rank 1 to 0); only StartPreflight may rewind",
            "WriteApplied --RecoverablePreflightTimeout--> PreflightStarted goes backward "
            "(rank 2 to 0); only StartPreflight may rewind"});
}

TEST_CASE("doc cycle: a bookkeeping record on a closed cycle is rejected and changes nothing") {
  for (const Phase closed : {Phase::Committed, Phase::Abandoned}) {
    for (const Kind k : bookkeeping) {
      CAPTURE(trellis::enumeration<Phase>::name(closed));
      CAPTURE(trellis::enumeration<Kind>::name(k));
      trellis::Context ctx;
      const Cycle before = reached(closed);
      trellis::StateMachine<Cycle, Event> cycle{ctx, before, table()};
      int told = 0;
      auto observer = cycle.on_transition([&](const Cycle&, const Cycle&) { ++told; });
      CHECK_FALSE(cycle.can(sample(k)));
      CHECK(cycle.send(sample(k)) == trellis::SendResult::Rejected);
      CHECK(cycle.state() == before);
      CHECK(told == 0);
    }
  }
}

TEST_CASE("doc cycle: bookkeeping records update their field and keep the phase") {
  for (const Phase open : open_phases) {
    CAPTURE(trellis::enumeration<Phase>::name(open));
    const Cycle c = reached(open);
    const std::optional<Cycle> pending = table()(c, RecordPendingWrite{"w9"});
    REQUIRE(pending);
    CHECK(pending->phase == open);
    CHECK(pending->pending_writes.back() == "w9");
    CHECK(pending->pending_writes.size() == c.pending_writes.size() + 1);
    const std::optional<Cycle> head = table()(c, AdvanceQueueHead{12});
    REQUIRE(head);
    CHECK(head->phase == open);
    CHECK(head->queue_head == 12);
    const std::optional<Cycle> hash = table()(c, RecordCaptureHash{"sha-1"});
    REQUIRE(hash);
    CHECK(hash->phase == open);
    CHECK(hash->capture_hash == "sha-1");
  }
}

TEST_CASE("doc cycle: StartPreflight on a closed cycle opens the next one afresh") {
  for (const Phase closed : {Phase::Committed, Phase::Abandoned}) {
    CAPTURE(trellis::enumeration<Phase>::name(closed));
    Cycle c = reached(closed);
    c.queue_head = 33;
    const std::optional<Cycle> next = table()(c, StartPreflight{"doc-9"});
    REQUIRE(next);
    Cycle expected;
    expected.phase = Phase::PreflightStarted;
    expected.number = c.number + 1;
    expected.document = "doc-9";
    expected.queue_head = 33;
    CHECK(*next == expected);
  }
}

TEST_CASE("doc cycle: a second Committed is accepted and changes nothing") {
  trellis::Context ctx;
  trellis::StateMachine<Cycle, Event> cycle{ctx, reached(Phase::WriteApplied), table()};
  CHECK(cycle.send(Committed{}) == trellis::SendResult::Transitioned);
  const Cycle committed = cycle.state();
  CHECK(cycle.send(Committed{}) == trellis::SendResult::Unchanged);
  CHECK(cycle.state() == committed);
}

TEST_CASE("doc cycle: the timeout rewinds to PreflightStarted within the same cycle") {
  const Cycle c = reached(Phase::WriteApplied);
  const std::optional<Cycle> next = table()(c, RecoverablePreflightTimeout{});
  REQUIRE(next);
  CHECK(next->phase == Phase::PreflightStarted);
  CHECK(next->number == c.number);
  CHECK(next->response_hash.empty());
  CHECK(next->timeouts == c.timeouts + 1);
  CHECK(next->write_count == c.write_count);
}

TEST_CASE("doc cycle: WriteApplied takes the write off the pending list and counts it") {
  const Cycle c = after(reached(Phase::ResponseCaptured), {RecordPendingWrite{"w2"}});
  REQUIRE(c.pending_writes == std::vector<std::string>{"w1", "w2"});
  const std::optional<Cycle> next = table()(c, WriteApplied{"w1"});
  REQUIRE(next);
  CHECK(next->phase == Phase::WriteApplied);
  CHECK(next->pending_writes == std::vector<std::string>{"w2"});
  CHECK(next->write_count == c.write_count + 1);
}

}  // namespace doc_cycle_test
