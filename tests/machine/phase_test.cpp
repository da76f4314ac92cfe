// SPDX-License-Identifier: MIT
// Machines over struct states, observed by phase: state_is(phase), on_enter/on_exit(phase),
// phase(), state_is(predicate), can(), and a machine built from a typed table.
#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_table.hpp>

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "vending_machine.hpp"

using vending::Cancel;
using vending::Coin;
using vending::Dispensed;
using vending::Event;
using vending::Fault;
using vending::Machine;
using vending::Phase;
using vending::Select;

TEST_CASE("phases: state_is(phase) follows the phase, not the whole state") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  const auto paying = m.state_is(Phase::Paying);
  CHECK_FALSE(paying.get());
  m.send(Coin{25});
  CHECK(paying.get());
  m.send(Coin{10});  // same phase, other credit
  CHECK(paying.get());
  m.send(Cancel{});
  CHECK_FALSE(paying.get());
}

TEST_CASE("phases: on_enter and on_exit fire on phase changes only") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  std::vector<std::string> log;
  auto enter = m.on_enter(Phase::Paying, [&] { log.emplace_back("enter Paying"); });
  auto exit = m.on_exit(Phase::Paying, [&] { log.emplace_back("exit Paying"); });
  m.send(Coin{100});
  m.send(Coin{25});     // Paying -> Paying with more credit: neither enters nor exits
  m.send(Select{0});    // -> Vending
  m.send(Dispensed{});  // change due: -> Paying
  CHECK(log == std::vector<std::string>{"enter Paying", "exit Paying", "enter Paying"});
}

TEST_CASE("phases: phase() is a signal that changes only when the phase does") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  const auto phase = m.phase();
  std::vector<Phase> seen;
  auto watch = ctx.effect([&] { seen.push_back(phase.get()); });
  m.send(Coin{5});
  m.send(Coin{5});
  m.send(Coin{100});
  m.send(Select{0});
  CHECK(seen == std::vector<Phase>{Phase::Idle, Phase::Paying, Phase::Vending});
}

TEST_CASE("phases: state_is(predicate) observes any projection of the state") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  const auto can_buy = m.state_is([](const Machine& s) { return s.credit >= vending::price(0); });
  m.send(Coin{25});
  CHECK_FALSE(can_buy.get());
  m.send(Coin{100});
  CHECK(can_buy.get());
}

TEST_CASE("phases: can() asks the table without sending") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  int transitions = 0;
  auto count = m.on_transition([&](const Machine&, const Machine&) { ++transitions; });
  CHECK_FALSE(m.can(Select{0}));
  CHECK(m.can(Coin{25}));
  CHECK_FALSE(m.can(Coin{3}));
  m.send(Coin{100});
  CHECK(m.can(Select{0}));
  CHECK_FALSE(m.can(Select{3}));  // 175 > 100
  CHECK(transitions == 1);
  CHECK(m.state().credit == 100);
}

TEST_CASE("phases: can() works for a plain transition function too") {
  trellis::Context ctx;
  trellis::StateMachine<int, int> m{ctx, 0, [](const int& s, const int& e) -> std::optional<int> {
                                      if (e <= 0) return std::nullopt;
                                      return s + e;
                                    }};
  CHECK(m.can(1));
  CHECK_FALSE(m.can(0));
  CHECK(m.state() == 0);
}

TEST_CASE("phases: a machine refuses a table with a row left unfinished") {
  trellis::TransitionTable<Machine, Event> t;
  (void)t.from(Phase::Idle).on<Coin>();
  trellis::Context ctx;
  CHECK_THROWS_AS((trellis::StateMachine<Machine, Event>{ctx, Machine{}, t}), trellis::table_error);
}

TEST_CASE("phases: a rejected send and a wrong-phase update leave the state as it was") {
  trellis::TransitionTable<Machine, Event> t = vending::table();
  t.from(Phase::OutOfOrder)
      .on<Cancel>()
      .update("forgets the phase",
              [](Machine m, const Cancel&) {
                ++m.refunded;
                return m;
              })
      .to(Phase::Idle);
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, t};
  m.send(Fault{"jam"});
  const Machine before = m.state();
  CHECK(m.send(Coin{25}) == trellis::SendResult::Rejected);
  CHECK_THROWS_AS(m.send(Cancel{}), trellis::phase_error);
  CHECK(m.state() == before);
}

TEST_CASE("phases: during one send, signals and effects run before on_transition observers") {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> m{ctx, Machine{}, vending::table()};
  std::vector<std::string> log;
  const auto paying = m.state_is(Phase::Paying);
  auto effect =
      ctx.effect([&] { log.push_back(paying.get() ? "effect: paying" : "effect: not paying"); });
  auto observer = m.on_transition([&](const Machine&, const Machine&) {
    log.push_back(paying.get() ? "observer: paying" : "observer: not paying");
  });
  log.clear();
  m.send(Coin{25});
  CHECK(log == std::vector<std::string>{"effect: paying", "observer: paying"});
}
