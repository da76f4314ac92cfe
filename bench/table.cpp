/// @file
/// Benchmarks of a typed transition table (issue 12 §5): a struct state with an enum phase, a
/// `std::variant` event, one guard and one update, decided by a `TransitionTable`, beside the
/// same decision written by hand as a `switch` in the same binary.
///
/// - `baseline/switch/call` and `table/call`: the transition alone, `step(state, event)`
///   returning the new state (no machine): what the table's lookup costs over the switch.
/// - `baseline/switch/send`: the switch with its state stored in a plain struct, the floor of a
///   send. `machine/StateMachine/switch_send`: a StateMachine whose transition is the switch.
///   `machine/StateMachine/table_send`: a StateMachine whose transition is the table.
/// - `.../rejected`: an event the guard refuses.
///
/// Every send is accepted and moves the state (the credit grows), so each iteration is one
/// committed transition; the final credit is checked after the timed loop.

#include <benchmark/benchmark.h>
#include "bench_support.hpp"

#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_table.hpp>

#include <optional>
#include <string>
#include <variant>

namespace till {

enum class Phase { Idle, Paying };
TRELLIS_ENUM(Phase, Idle, Paying);

struct Coin {
  long cents = 0;
};
struct Reset {};
using Event = std::variant<Coin, Reset>;

struct Till {
  Phase phase = Phase::Idle;
  long credit = 0;
  long coins = 0;
  bool operator==(const Till&) const = default;
};
constexpr Phase phase_of(const Till& t) { return t.phase; }

trellis::TransitionTable<Till, Event> table() {
  trellis::TransitionTable<Till, Event> t;
  t.from(Phase::Idle, Phase::Paying)
      .on<Coin>()
      .when("positive", [](const Till&, const Coin& c) { return c.cents > 0; })
      .update("add credit",
              [](Till& s, const Coin& c) {
                s.credit += c.cents;
                ++s.coins;
                s.phase = Phase::Paying;
              })
      .to(Phase::Paying);
  t.from(Phase::Paying)
      .on<Reset>()
      .update("clear", [](Till& s, const Reset&) { s = Till{}; })
      .to(Phase::Idle);
  return t;
}

/// The same rules as a hand-written switch.
std::optional<Till> switch_step(const Till& s, const Event& e) {
  switch (s.phase) {
    case Phase::Idle:
    case Phase::Paying:
      if (const Coin* c = std::get_if<Coin>(&e)) {
        if (c->cents <= 0) return std::nullopt;
        Till next = s;
        next.credit += c->cents;
        ++next.coins;
        next.phase = Phase::Paying;
        return next;
      }
      if (s.phase == Phase::Paying && std::holds_alternative<Reset>(e)) return Till{};
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace till

namespace {

using till::Coin;
using till::Event;
using till::Till;
using trellis_bench::check;

/// An event the optimizer cannot see through, by reference: copying a `std::variant` written
/// just before (its index and payload stored separately, then loaded as one) would stall on
/// store forwarding and measure the copy rather than the send.
const Event& opaque(const Event& e) {
  const Event* p = &e;
  benchmark::DoNotOptimize(p);
  return *p;
}

const Event one_cent = Coin{1};
const Event nothing = Coin{0};

void switch_call(benchmark::State& st) {
  Till s;
  const Event e = Coin{1};
  for (auto _ : st) {
    auto next = till::switch_step(s, opaque(e));
    benchmark::DoNotOptimize(next);
  }
}

void table_call(benchmark::State& st) {
  const auto t = till::table();
  Till s;
  const Event e = Coin{1};
  for (auto _ : st) {
    auto next = t(s, opaque(e));
    benchmark::DoNotOptimize(next);
  }
}

/// The switch, its state in a plain struct: what a send must at least do.
void switch_send(benchmark::State& st) {
  Till s;
  benchmark::DoNotOptimize(&s);
  for (auto _ : st) {
    if (auto next = till::switch_step(s, opaque(one_cent))) {
      if (!(*next == s)) s = *next;
    }
    benchmark::ClobberMemory();
  }
  check(st, s.credit == st.iterations(),
        "wrong final credit: " + std::to_string(s.credit) + " after " +
            std::to_string(st.iterations()));
}

template <class F>
void machine_send(benchmark::State& st, F step) {
  trellis::Context ctx;
  trellis::StateMachine<Till, Event> m{ctx, Till{}, std::move(step)};
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(one_cent)));
  }
  check(st, m.state().credit == st.iterations(), "wrong final credit");
}

void machine_switch_send(benchmark::State& st) {
  machine_send(st, [](const Till& s, const Event& e) { return till::switch_step(s, e); });
}

void machine_table_send(benchmark::State& st) { machine_send(st, till::table()); }

template <class F>
void machine_rejected(benchmark::State& st, F step) {
  trellis::Context ctx;
  trellis::StateMachine<Till, Event> m{ctx, Till{}, std::move(step)};
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(nothing)));
  }
  check(st, m.state() == Till{}, "a rejected event moved the state");
}

void machine_switch_rejected(benchmark::State& st) {
  machine_rejected(st, [](const Till& s, const Event& e) { return till::switch_step(s, e); });
}

void machine_table_rejected(benchmark::State& st) { machine_rejected(st, till::table()); }

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("baseline/switch/call", switch_call);
  benchmark::RegisterBenchmark("table/call", table_call);
  benchmark::RegisterBenchmark("baseline/switch/send", switch_send);
  benchmark::RegisterBenchmark("machine/StateMachine/switch_send", machine_switch_send);
  benchmark::RegisterBenchmark("machine/StateMachine/table_send", machine_table_send);
  benchmark::RegisterBenchmark("machine/StateMachine/switch_rejected", machine_switch_rejected);
  benchmark::RegisterBenchmark("machine/StateMachine/table_rejected", machine_table_rejected);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed.load() ? 1 : 0;
}
