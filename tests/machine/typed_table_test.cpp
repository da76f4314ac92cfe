// SPDX-License-Identifier: MIT
// Typed transition tables: rows keyed by event type, guards and updates over payloads, phases
// of struct states, validation, and rows left unfinished. The vending machine
// (examples/vending_machine.hpp) is the table under test where a real machine is needed.
#include <trellis/machine/transition_table.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <trellis/machine/transition_function.hpp>

#include "vending_machine.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace typed_table_test {

using vending::Cancel;
using vending::Coin;
using vending::Dispensed;
using vending::Event;
using vending::Fault;
using vending::Machine;
using vending::Phase;
using vending::Select;

namespace {

Machine paying(int credit) {
  Machine m;
  m.phase = Phase::Paying;
  m.credit = credit;
  return m;
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  for (const std::string& p : problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) out += p + "\n";
  return out;
}

// A small table over an enum phase for the validation cases.
enum class Door { Closed, Open, Locked, Broken };
TRELLIS_ENUM(Door, Closed, Open, Locked, Broken);
struct Push {};
struct Pull {};
struct Lock {
  int code = 0;
};
using DoorEvent = std::variant<Push, Pull, Lock>;
using DoorTable = trellis::TransitionTable<Door, DoorEvent>;

}  // namespace

static_assert(std::is_same_v<trellis::phase_t<Machine>, Phase>);
static_assert(
    trellis::TransitionFunction<trellis::TransitionTable<Machine, Event>, Machine, Event>);

TEST_CASE("typed table: a row keyed by type matches every payload of that type") {
  const auto t = vending::table();
  for (const int cents : {5, 10, 25, 100}) {
    const auto next = t(Machine{}, Event{Coin{cents}});
    REQUIRE(next.has_value());
    CHECK(next->credit == cents);
    CHECK(next->phase == Phase::Paying);
  }
}

TEST_CASE("typed table: the guard sees the payload and the state") {
  const auto t = vending::table();
  CHECK_FALSE(t(Machine{}, Event{Coin{3}}).has_value());      // not an accepted coin
  CHECK_FALSE(t(paying(450), Event{Coin{100}}).has_value());  // credit would pass 500
  CHECK_FALSE(t(paying(99), Event{Select{0}}).has_value());   // price 100
  CHECK_FALSE(t(paying(500), Event{Select{7}}).has_value());  // no slot 7
  const auto vended = t(paying(130), Event{Select{1}});       // price 125
  REQUIRE(vended.has_value());
  CHECK(vended->phase == Phase::Vending);
  CHECK(vended->credit == 5);
  CHECK(vended->slot == 1);
}

TEST_CASE("typed table: an update applies the payload and leaves the rest of the state alone") {
  const auto t = vending::table();
  Machine m = paying(25);
  m.sold = 7;
  m.faults = 2;
  const auto next = t(m, Event{Coin{10}});
  REQUIRE(next.has_value());
  Machine expected = m;
  expected.credit = 35;
  CHECK(*next == expected);
}

TEST_CASE("typed table: an in-place update works on a copy, never on the current state") {
  const auto t = vending::table();
  const Machine m = paying(60);
  const auto next = t(m, Event{Cancel{}});
  REQUIRE(next.has_value());
  CHECK(next->refunded == 60);
  CHECK(next->credit == 0);
  CHECK(m.credit == 60);
}

TEST_CASE(
    "typed table: of two rows for one phase and event type, the first whose guard holds wins") {
  const auto t = vending::table();
  Machine with_change = paying(25);
  with_change.phase = Phase::Vending;
  Machine exact = paying(0);
  exact.phase = Phase::Vending;
  CHECK(t(with_change, Event{Dispensed{}})->phase == Phase::Paying);
  CHECK(t(exact, Event{Dispensed{}})->phase == Phase::Idle);
}

TEST_CASE("typed table: an event no row covers in the current phase is rejected") {
  const auto t = vending::table();
  CHECK_FALSE(t(Machine{}, Event{Select{0}}).has_value());  // Idle: Select has no row
  CHECK_FALSE(t(Machine{}, Event{Dispensed{}}).has_value());
  Machine broken;
  broken.phase = Phase::OutOfOrder;
  CHECK_FALSE(t(broken, Event{Coin{25}}).has_value());
}

TEST_CASE("typed table: an any() row covers every phase") {
  const auto t = vending::table();
  for (const Phase p : trellis::enumeration<Phase>::values) {
    Machine m;
    m.phase = p;
    const auto next = t(m, Event{Fault{"jam"}});
    REQUIRE(next.has_value());
    CHECK(next->phase == Phase::OutOfOrder);
    CHECK(next->last_fault == "jam");
  }
}

TEST_CASE(
    "typed table: an update that leaves the wrong phase throws phase_error and names the row") {
  trellis::TransitionTable<Machine, Event> t;
  t.from(Phase::Idle)
      .on<Coin>()
      .update("forgets the phase",
              [](Machine m, const Coin& c) {
                m.credit += c.cents;
                return m;
              })
      .to(Phase::Paying);
  try {
    (void)t(Machine{}, Event{Coin{5}});
    FAIL("no phase_error");
  } catch (const trellis::phase_error& e) {
    const std::string what = e.what();
    CHECK(what.find("row 1") != std::string::npos);
    CHECK(what.find("forgets the phase") != std::string::npos);
    CHECK(what.find("Paying") != std::string::npos);
    CHECK(e.id() == "machine.phase");
  }
}

TEST_CASE("typed table: accepts() answers from rows and guards without running an update") {
  int updates = 0;
  trellis::TransitionTable<Machine, Event> t;
  t.from(Phase::Idle)
      .on<Coin>()
      .when("big", [](const Machine&, const Coin& c) { return c.cents >= 25; })
      .update([&updates](Machine m, const Coin&) {
        ++updates;
        m.phase = Phase::Paying;
        return m;
      })
      .to(Phase::Paying);
  CHECK(t.accepts(Machine{}, Event{Coin{25}}));
  CHECK_FALSE(t.accepts(Machine{}, Event{Coin{5}}));
  CHECK_FALSE(t.accepts(Machine{}, Event{Cancel{}}));
  CHECK(updates == 0);
}

TEST_CASE("typed table: a trace names the row that fired and every guard evaluated") {
  const auto t = vending::table();
  trellis::RowTrace trace;
  Machine exact;
  exact.phase = Phase::Vending;
  (void)t(exact, Event{Dispensed{}}, trace);
  CHECK(trace.fired == 4);  // the unguarded "count sale" row, after "change due" said no
  REQUIRE(trace.guards.size() == 1);
  CHECK(trace.guards[0] == std::pair<std::size_t, bool>{3, false});
  (void)t(Machine{}, Event{Select{0}}, trace);
  CHECK(trace.fired == -1);
  CHECK(trace.guards.empty());
}

TEST_CASE("typed table: rows() reads back names, kinds and targets") {
  const auto t = vending::table();
  REQUIRE(t.rows().size() == 6);
  const auto& select = t.rows()[1];
  CHECK(select.event_name() == "Select");
  CHECK(select.kind == 1);
  CHECK(select.guard_name == "slot exists && credit >= price");
  CHECK(select.update_name == "vend");
  CHECK(select.to == Phase::Vending);
  CHECK(select.describe() ==
        "row 2 (from Paying on Select [slot exists && credit >= price] / vend -> Vending)");
  CHECK(t.terminals() == std::vector<Phase>{Phase::OutOfOrder});
}

TEST_CASE("typed table: the vending table validates clean") {
  const auto problems = vending::table().validate(Phase::Idle);
  CHECK_MESSAGE(problems.empty(), joined(problems));
}

TEST_CASE("typed table: validate reports two unguarded rows for one phase and event type") {
  DoorTable t;
  t.from(Door::Closed).on<Push>().to(Door::Open);
  t.from(Door::Closed, Door::Open).on<Push>().to(Door::Locked);
  t.any().on<Pull>().to(Door::Closed);
  const auto problems = t.validate();
  CHECK(mentions(problems, "two unguarded rows for Closed on Push"));
  CHECK_FALSE(mentions(problems, "row 2 (from Closed, Open on Push -> Locked) can never fire"));
}

TEST_CASE("typed table: validate reports a row that can never fire") {
  DoorTable t;
  t.any().on<Push>().to(Door::Open);
  t.from(Door::Closed)
      .on<Push>()
      .when("never reached", [](const Door&) { return true; })
      .to(Door::Locked);
  t.any().on<Pull>().to(Door::Closed);
  CHECK(mentions(t.validate(),
                 "row 2 (from Closed on Push [never reached] -> Locked) can never fire"));
}

TEST_CASE("typed table: validate reports phases unreachable from the initial phase") {
  DoorTable t;
  t.from(Door::Closed).on<Push>().to(Door::Open);
  t.from(Door::Open).on<Pull>().to(Door::Closed);
  t.from(Door::Locked).on<Lock>().to(Door::Closed);
  t.terminal(Door::Broken);
  const auto problems = t.validate(Door::Closed);
  CHECK(mentions(problems, "phase Locked cannot be reached from Closed"));
  CHECK(mentions(problems, "phase Broken cannot be reached from Closed"));
  CHECK_FALSE(mentions(problems, "phase Open cannot be reached"));
}

TEST_CASE("typed table: validate reports a non-terminal phase with no way out") {
  DoorTable t;
  t.from(Door::Closed).on<Push>().to(Door::Open);
  t.from(Door::Open).on<Lock>().to(Door::Locked);
  t.from(Door::Locked).on<Push>().stay();
  t.any().on<Pull>().when("not broken", [](const Door& d) { return d != Door::Broken; }).stay();
  const auto problems = t.validate(Door::Closed);
  CHECK(mentions(problems, "phase Locked has no way out"));
  t.terminal(Door::Locked);
  CHECK_FALSE(mentions(t.validate(Door::Closed), "phase Locked has no way out"));
}

TEST_CASE("typed table: validate reports a struct row that changes phase without an update") {
  trellis::TransitionTable<Machine, Event> t;
  t.from(Phase::Idle).on<Coin>().to(Phase::Paying);
  CHECK(mentions(t.validate(),
                 "row 1 (from Idle on Coin -> Paying) leads to Paying but has no update"));
}

TEST_CASE("typed table: check() throws table_error listing every problem") {
  DoorTable t;
  t.from(Door::Closed).on<Push>().to(Door::Open);
  t.from(Door::Closed).on<Push>().to(Door::Locked);
  try {
    t.check(Door::Closed);
    FAIL("no table_error");
  } catch (const trellis::table_error& e) {
    const std::string what = e.what();
    CHECK(e.id() == "machine.table");
    CHECK(what.find("two unguarded rows") != std::string::npos);
    CHECK(what.find("phase Locked cannot be reached") == std::string::npos);  // it can (row 2)
    CHECK(what.find("phase Broken cannot be reached from Closed") != std::string::npos);
    CHECK(what.find("phase Open has no way out") != std::string::npos);
  }
}

TEST_CASE("typed table: a row kept unfinished makes every use of the table throw, naming the row") {
  DoorTable t;
  t.from(Door::Closed).on<Push>().to(Door::Open);
  {
    auto pending = t.from(Door::Open).on<Pull>();  // never ended
    (void)pending;
  }
  CHECK_THROWS_WITH_AS(
      t(Door::Closed, DoorEvent{Push{}}),
      doctest::Contains("a row begun after row 1 (from Open on Pull) was never ended"),
      trellis::table_error);
  CHECK_THROWS_AS(t.check_complete(), trellis::table_error);
  CHECK(mentions(t.validate(), "(from Open on Pull) was never ended"));
}

TEST_CASE("typed table: a row whose result is cast away is refused at use, not lost silently") {
  DoorTable t;
  (void)t.from(Door::Closed).on<Lock>();
  CHECK_THROWS_AS((void)t.accepts(Door::Closed, DoorEvent{Lock{}}), trellis::table_error);
}

TEST_CASE("typed table: enum events stay keyed by value, and a table chains on a temporary") {
  const auto t = trellis::TransitionTable<Door, Door>{}
                     .from(Door::Closed)
                     .on(Door::Open)
                     .to(Door::Open)
                     .from(Door::Open)
                     .on(Door::Closed)
                     .to(Door::Closed);
  CHECK(t(Door::Closed, Door::Open) == Door::Open);
  CHECK_FALSE(t(Door::Closed, Door::Closed).has_value());
}

}  // namespace typed_table_test
