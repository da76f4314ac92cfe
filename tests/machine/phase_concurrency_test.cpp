// SPDX-License-Identifier: MIT
// A typed table shared by threads: a ThreadSafeStateMachine calls one table from every
// sending thread (run under ThreadSanitizer with the concurrency label).
#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_table.hpp>

#include <doctest/doctest.h>

#include <thread>

#include "vending_machine.hpp"

using vending::Coin;
using vending::Event;
using vending::Machine;
using vending::Phase;

TEST_CASE("phases: a ThreadSafeStateMachine over a table loses no credit under two threads") {
  trellis::ThreadSafeContext ctx;
  trellis::TransitionTable<Machine, Event> t;
  t.from(Phase::Idle, Phase::Paying)
      .on<Coin>()
      .update("add credit",
              [](Machine m, const Coin& c) {
                m.credit += c.cents;
                m.phase = Phase::Paying;
                return m;
              })
      .to(Phase::Paying);
  trellis::ThreadSafeStateMachine<Machine, Event> m{ctx, Machine{}, t};
  constexpr int per_thread = 2000;
  std::thread a([&] {
    for (int i = 0; i < per_thread; ++i) m.send(Coin{5});
  });
  std::thread b([&] {
    for (int i = 0; i < per_thread; ++i) m.send(Coin{10});
  });
  a.join();
  b.join();
  CHECK(m.state().credit == per_thread * 15);
}
