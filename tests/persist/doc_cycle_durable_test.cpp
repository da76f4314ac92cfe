// SPDX-License-Identifier: MIT
// The document cycle (examples/document_cycle.hpp) on its durable sidecar: the struct state
// goes through JSON whole, a reopened machine goes on where the last one stopped, and a
// bookkeeping record rejected on a closed cycle writes nothing.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <trellis/persist/durable_state_machine.hpp>

#include "document_cycle.hpp"
#include "document_cycle_json.hpp"
#include "persist_test_support.hpp"

using namespace doc_cycle;
using Machine = trellis::DurableStateMachine<Cycle, Event>;

namespace {

Cycle busy_cycle() {
  Cycle c;
  c.phase = Phase::WriteApplied;
  c.number = 3;
  c.document = "doc-42";
  c.pending_writes = {"w2", "w3"};
  c.queue_head = 17;
  c.capture_hash = "c1";
  c.response_hash = "r2";
  c.write_count = 1;
  c.timeouts = 1;
  return c;
}

}  // namespace

TEST_CASE("durable doc cycle: the state's JSON names the phase and round-trips every field") {
  const Cycle c = busy_cycle();
  const nlohmann::json j = c;
  CHECK(j.at("phase") == "WriteApplied");
  CHECK(j.at("pending_writes") == nlohmann::json{"w2", "w3"});
  CHECK(j.get<Cycle>() == c);
}

TEST_CASE("durable doc cycle: a reopened machine goes on where the last one stopped") {
  persist_test::ScratchDir dir;
  const auto path = dir / "cycle.json";
  Cycle stopped;
  std::uint64_t epoch = 0;
  {
    trellis::Context ctx;
    Machine cycle{ctx, path, Cycle{}, table()};
    for (const Event& e :
         {Event{StartPreflight{"doc-42"}}, Event{RecordPendingWrite{"w1"}},
          Event{ResponseCaptured{"r1"}}, Event{WriteApplied{"w1"}}, Event{AdvanceQueueHead{9}}}) {
      REQUIRE(cycle.send(e) == trellis::SendResult::Transitioned);
    }
    stopped = cycle.state();
    epoch = cycle.epoch();
  }
  trellis::Context ctx;
  Machine cycle{ctx, path, Cycle{}, table()};
  CHECK(cycle.recovery().from_sidecar);
  CHECK(cycle.epoch() == epoch);
  CHECK(cycle.state() == stopped);
  CHECK(cycle.send(Committed{}) == trellis::SendResult::Transitioned);
  CHECK(cycle.state().phase == Phase::Committed);
  CHECK(cycle.state().queue_head == 9);
}

TEST_CASE("durable doc cycle: a record rejected on a closed cycle writes nothing") {
  persist_test::ScratchDir dir;
  const auto path = dir / "cycle.json";
  Cycle closed;
  std::uint64_t epoch = 0;
  {
    trellis::Context ctx;
    Machine cycle{ctx, path, Cycle{}, table()};
    REQUIRE(cycle.send(StartPreflight{"doc-1"}) == trellis::SendResult::Transitioned);
    REQUIRE(cycle.send(Abandoned{"user closed it"}) == trellis::SendResult::Transitioned);
    closed = cycle.state();
    epoch = cycle.epoch();
    CHECK(cycle.send(RecordPendingWrite{"late"}) == trellis::SendResult::Rejected);
    CHECK(cycle.send(AdvanceQueueHead{4}) == trellis::SendResult::Rejected);
    CHECK(cycle.epoch() == epoch);
  }
  trellis::Context ctx;
  Machine cycle{ctx, path, Cycle{}, table()};
  CHECK(cycle.epoch() == epoch);
  CHECK(cycle.state() == closed);
}

TEST_CASE(
    "durable doc cycle: a table with an unfinished row is refused before the sidecar exists") {
  persist_test::ScratchDir dir;
  const auto path = dir / "cycle.json";
  auto t = table();
  (void)t.from(Phase::Committed).on<RecordPendingWrite>();
  trellis::Context ctx;
  CHECK_THROWS_AS((Machine{ctx, path, Cycle{}, t}), trellis::table_error);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("durable doc cycle: can() asks the table's rows and writes nothing") {
  persist_test::ScratchDir dir;
  const auto path = dir / "cycle.json";
  trellis::Context ctx;
  Machine cycle{ctx, path, Cycle{}, table()};
  const std::uint64_t epoch = cycle.epoch();
  CHECK(cycle.can(StartPreflight{"doc-1"}));
  CHECK_FALSE(cycle.can(RecordPendingWrite{"w1"}));  // Cycle{} is a closed (Committed) cycle
  CHECK(cycle.epoch() == epoch);
}

TEST_CASE(
    "durable doc cycle: a state naming an unknown phase or missing a field is refused by name") {
  nlohmann::json j = busy_cycle();
  j["phase"] = "Archived";
  CHECK_THROWS_WITH_AS(j.get<Cycle>(), doctest::Contains("Archived"), trellis::error);
  nlohmann::json k = busy_cycle();
  k.erase("pending_writes");
  CHECK_THROWS_WITH_AS(k.get<Cycle>(), doctest::Contains("pending_writes"),
                       nlohmann::json::exception);
}
