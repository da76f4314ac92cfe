/// @file
/// Benchmarks of `trellis::testing::explore` (issue 12, §5: over 100,000 distinct states in
/// at most 1 s), beside a hand-written breadth-first search in the same binary.
///
/// The machine: a struct state with a phase (Idle, Busy, Done) and two counters a and b in
/// [0, 250); IncA and IncB count up to 249 (guarded), Flip toggles Idle and Busy, Finish goes
/// to Done once both counters are at 249. From the initial state every combination is
/// reachable: 2 x 250 x 250 + 1 = 125,001 distinct states, each tried with the 4 events.
///
/// - `baseline/bfs_unordered_set`: a plain BFS, `std::unordered_set<State>` of seen states and
///   a `std::deque` queue, over the hand-written step function (a switch on the event). No
///   parents, no coverage, no checks: the floor.
/// - `explore/function`: `explore` over the same step function: states stored once with
///   parent and event index (so a failure's path can be rebuilt), no invariant.
/// - `explore/table`: `explore` over the same machine as a `TransitionTable` (named guards and
///   updates), with row and guard coverage and the terminal analysis (the table declares Done
///   terminal: every state must have a way to it).
/// - `explore/table_checked`: as `explore/table`, plus a state invariant and a transition
///   invariant: a realistic test.
///
/// Counter `states_per_s`: distinct states explored per second. Each case checks, outside the
/// timed loop, that it found the 125,001 states (and, for explore, a clean report).

#include <benchmark/benchmark.h>
#include "bench_support.hpp"

#include <trellis/base/enumeration.hpp>
#include <trellis/machine/transition_table.hpp>
#include <trellis/testing/explore.hpp>

#include <cstddef>
#include <deque>
#include <optional>
#include <thread>
#include <unordered_set>
#include <variant>
#include <vector>

namespace grid {

enum class Phase { Idle, Busy, Done };
TRELLIS_ENUM(Phase, Idle, Busy, Done);

struct IncA {};
struct IncB {};
struct Flip {};
struct Finish {};
using Event = std::variant<IncA, IncB, Flip, Finish>;

struct State {
  Phase phase = Phase::Idle;
  int a = 0;
  int b = 0;
  bool operator==(const State&) const = default;
};
constexpr Phase phase_of(const State& s) { return s.phase; }

constexpr int top = 249;
constexpr std::size_t distinct_states = 2 * (top + 1) * (top + 1) + 1;

struct Hash {
  std::size_t operator()(const State& s) const {
    return trellis::testing::hash_values(s.phase, s.a, s.b);
  }
};

/// The hand-written step function: what the table below declares, as a switch.
std::optional<State> step(const State& s, const Event& e) {
  if (s.phase == Phase::Done) return std::nullopt;
  State n = s;
  switch (e.index()) {
    case 0:  // IncA
      if (s.a >= top) return std::nullopt;
      ++n.a;
      return n;
    case 1:  // IncB
      if (s.b >= top) return std::nullopt;
      ++n.b;
      return n;
    case 2:  // Flip
      n.phase = s.phase == Phase::Idle ? Phase::Busy : Phase::Idle;
      return n;
    default:  // Finish
      if (s.a < top || s.b < top) return std::nullopt;
      n.phase = Phase::Done;
      return n;
  }
}

trellis::TransitionTable<State, Event, Phase> table() {
  trellis::TransitionTable<State, Event, Phase> t;
  t.from(Phase::Idle, Phase::Busy)
      .on<IncA>()
      .when("a below top", [](const State& s) { return s.a < top; })
      .update("a + 1", [](State& s, const IncA&) { ++s.a; })
      .stay();
  t.from(Phase::Idle, Phase::Busy)
      .on<IncB>()
      .when("b below top", [](const State& s) { return s.b < top; })
      .update("b + 1", [](State& s, const IncB&) { ++s.b; })
      .stay();
  t.from(Phase::Idle)
      .on<Flip>()
      .update("busy", [](State& s, const Flip&) { s.phase = Phase::Busy; })
      .to(Phase::Busy);
  t.from(Phase::Busy)
      .on<Flip>()
      .update("idle", [](State& s, const Flip&) { s.phase = Phase::Idle; })
      .to(Phase::Idle);
  t.from(Phase::Idle, Phase::Busy)
      .on<Finish>()
      .when("both at top", [](const State& s) { return s.a == top && s.b == top; })
      .update("done", [](State& s, const Finish&) { s.phase = Phase::Done; })
      .to(Phase::Done);
  t.terminal(Phase::Done);
  return t;
}

const trellis::testing::Samples<State, Event> samples{IncA{}, IncB{}, Flip{}, Finish{}};

}  // namespace grid

namespace {

using trellis_bench::check;

void count(benchmark::State& st, std::size_t states) {
  st.counters["states"] = static_cast<double>(states);
  st.counters["states_per_s"] = benchmark::Counter(static_cast<double>(states),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

void bfs_unordered_set(benchmark::State& st) {
  const std::vector<grid::Event> events{grid::IncA{}, grid::IncB{}, grid::Flip{}, grid::Finish{}};
  std::size_t states = 0;
  for (auto _ : st) {
    std::unordered_set<grid::State, grid::Hash> seen;
    std::deque<grid::State> todo;
    seen.insert(grid::State{});
    todo.push_back(grid::State{});
    while (!todo.empty()) {
      const grid::State s = todo.front();
      todo.pop_front();
      for (const grid::Event& e : events) {
        if (auto next = grid::step(s, e)) {
          if (seen.insert(*next).second) todo.push_back(*next);
        }
      }
    }
    states = seen.size();
    benchmark::DoNotOptimize(states);
  }
  check(st, states == grid::distinct_states, "wrong number of states");
  count(st, states);
}

void explore_function(benchmark::State& st) {
  const trellis::testing::ExploreOptions<grid::State, grid::Event, grid::Hash> options;
  trellis::testing::ExploreReport<grid::State, grid::Event> report;
  for (auto _ : st) {
    report = trellis::testing::explore(grid::step, grid::State{}, grid::samples, options);
    benchmark::DoNotOptimize(report.states);
  }
  check(st, report.states == grid::distinct_states && report.ok(), "wrong report");
  count(st, report.states);
}

void explore_table(benchmark::State& st) {
  const auto t = grid::table();
  const trellis::testing::ExploreOptions<grid::State, grid::Event, grid::Hash> options;
  trellis::testing::ExploreReport<grid::State, grid::Event> report;
  for (auto _ : st) {
    report = trellis::testing::explore(t, grid::State{}, grid::samples, options);
    benchmark::DoNotOptimize(report.states);
  }
  check(st,
        report.states == grid::distinct_states && report.ok() && report.rows_never_fired().empty(),
        "wrong report");
  count(st, report.states);
}

void explore_table_checked(benchmark::State& st) {
  const auto t = grid::table();
  trellis::testing::ExploreOptions<grid::State, grid::Event, grid::Hash> options;
  options.invariant("counters in range", [](const grid::State& s) {
    return s.a >= 0 && s.a <= grid::top && s.b >= 0 && s.b <= grid::top;
  });
  options.invariant("counters never go back",
                    [](const grid::State& from, const grid::Event&, const grid::State& to) {
                      return to.a >= from.a && to.b >= from.b;
                    });
  trellis::testing::ExploreReport<grid::State, grid::Event> report;
  for (auto _ : st) {
    report = trellis::testing::explore(t, grid::State{}, grid::samples, options);
    benchmark::DoNotOptimize(report.states);
  }
  check(st, report.states == grid::distinct_states && report.ok() && report.terminal_checked,
        "wrong report");
  count(st, report.states);
}

void register_all() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("baseline/bfs_unordered_set", bfs_unordered_set)->Unit(benchmark::kMillisecond);
  RegisterBenchmark("explore/function", explore_function)->Unit(benchmark::kMillisecond);
  RegisterBenchmark("explore/table", explore_table)->Unit(benchmark::kMillisecond);
  RegisterBenchmark("explore/table_checked", explore_table_checked)->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed.load() ? 1 : 0;
}
