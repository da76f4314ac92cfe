// SPDX-License-Identifier: MIT
// Benchmark your own machine (README): a vending machine sent to by 1, 2, 4 and 8 threads,
// as a ThreadSafeStateMachine and beside a std::mutex around the same step, in one run. Any
// Google Benchmark flag works (--benchmark_repetitions=5, --benchmark_filter=threads:2/); the
// summary at the end goes to stderr, and the exit status is 1 if a transition was lost.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <trellis/testing/bench.hpp>  // target trellis::bench_kit (links Google Benchmark)
#include <variant>

struct Vending {
  int credit = 0;
  std::uint64_t coins = 0, sales = 0;  // what the state counts: one per accepted event
  friend bool operator==(const Vending&, const Vending&) = default;
};
struct Coin {
  int cents;
};
struct Select {
  int price;
};
using Event = std::variant<Coin, Select>;

std::optional<Vending> step(const Vending& s, const Event& e) {  // pure, as for any machine
  if (const Coin* c = std::get_if<Coin>(&e))
    return Vending{s.credit + c->cents, s.coins + 1, s.sales};
  if (s.credit < std::get<Select>(e).price) return std::nullopt;  // rejected: not enough credit
  return Vending{s.credit - std::get<Select>(e).price, s.coins, s.sales + 1};
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  trellis::testing::register_send_benchmarks<Vending, Event>(
      "vending", Vending{}, step,
      [](std::size_t /*thread*/, std::uint64_t i) -> Event {  // each thread's i-th event
        return i % 4 == 3 ? Event{Select{75}} : Event{Coin{25}};
      },
      {.threads = {1, 2, 4, 8},
       .observed = true,  // an on_transition observer counts the transitions
       .state_count = [](const Vending& v) { return v.coins + v.sales; }});
  benchmark::RunSpecifiedBenchmarks();
  return trellis::testing::report_send_benchmarks();  // the summary; 1 if a transition was lost
}
