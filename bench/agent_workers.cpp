/// @file
/// Workers (issue 15, section 4), beside hand-written baselines in the same binary:
///
/// - `agent/workers/<store>/threads:N` (N = 1, 2, 4, 8): 1,000 short runs (three steps: two
///   Gotos and a Halt, a small state) enqueued before the timing, then a Worker with N pool
///   threads advances them all (claim, advance, give back) until every run has succeeded.
///   Wall time (UseRealTime); counters `steps_per_s` (3,000 steps over the wall time) and
///   `cpu_per_wall` (process CPU time over wall time: 1.0 means one core busy on average, so the
///   threads took turns; near 2.0 on this machine means they overlapped).
/// - `baseline/run_each/<store>`: the same 1,000 runs, each started and finished by
///   Graph::run() in one thread (no claims, no pool): the floor a worker adds its claims to.
/// - `agent/claim_latency/<store>/poll_ms:P`: a run waits for a decision; an idle Worker (one
///   thread, poll interval P) runs; the time from record_decision() returning to the paused
///   node's next step starting, measured by the node itself (manual time, one sample per
///   iteration). Target: <= P + 50 ms. Counter `max_ms`.
///
/// Stores: SqliteStore (its default synchronous FULL: every commit fsync'd) and FileStore
/// (default sync), in $TRELLIS_BENCH_DIR (default /tmp); MemoryStore for the cost of the loop
/// without I/O. PostgreSQL rows are in bench/agent_postgres.cpp (they need a server).

#include <sys/resource.h>

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/operations.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/agent/worker.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace ag = trellis::agent;
using namespace std::chrono_literals;

constexpr int kRuns = 1000;
constexpr int kSteps = 3;

struct Small {
  int n = 0;
  std::string note;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Small, n, note)

struct StepNode final : ag::Node<Small> {
  StepNode(std::string name, std::string next) : name_(std::move(name)), next_(std::move(next)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(Small& s, ag::RunContext&) override {
    ++s.n;
    if (next_.empty()) return ag::Halt{};
    return ag::Goto{next_};
  }
  std::string name_, next_;
};

void build(ag::Graph<Small>& g) {
  g.add(std::make_unique<StepNode>("a", "b"))
      .add(std::make_unique<StepNode>("b", "c"))
      .add(std::make_unique<StepNode>("c", ""))
      .entry("a");
}

enum class Kind { memory, file, sqlite };

const char* name_of(Kind k) {
  switch (k) {
    case Kind::memory:
      return "MemoryStore";
    case Kind::file:
      return "FileStore";
    case Kind::sqlite:
      return "SqliteStore";
  }
  return "?";
}

trellis_bench::ScratchDir& scratch() {
  static trellis_bench::ScratchDir dir("trellis-bench-workers");
  return dir;
}

std::unique_ptr<ag::Store> open(Kind k) {
  switch (k) {
    case Kind::memory:
      return std::make_unique<ag::MemoryStore>();
    case Kind::file:
      return std::make_unique<ag::FileStore>(scratch().fresh("files", ""));
    case Kind::sqlite:
      return std::make_unique<ag::SqliteStore>(scratch().fresh("runs", ".db"));
  }
  return nullptr;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void workers(benchmark::State& st, Kind kind) {
  const auto threads = static_cast<std::size_t>(st.range(0));
  double wall = 0, cpu = 0;
  for (auto _ : st) {
    st.PauseTiming();
    std::unique_ptr<ag::Store> store = open(kind);
    ag::Graph<Small> g;
    build(g);
    for (int i = 0; i < kRuns; ++i) g.enqueue("run-" + std::to_string(i), Small{}, *store);
    std::atomic<int> done{0};
    ag::Worker w(*store, {.name = "bench",
                          .threads = threads,
                          .poll = 20ms,
                          .run = {},
                          .on_event = [&](const ag::WorkerEvent& e) {
                            if (e.status == ag::RunStatus::Succeeded) ++done;
                          }});
    w.add(g);
    st.ResumeTiming();
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    w.start();
    while (done.load() < kRuns) std::this_thread::sleep_for(200us);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu += cpu_seconds() - cpu0;
    st.PauseTiming();
    w.stop();
    w.join();
    trellis_bench::check(st, w.stats().errors == 0 && w.stats().lost == 0,
                         "a worker reported errors or lost leases");
    st.ResumeTiming();
  }
  st.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(kRuns * kSteps) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
  st.counters["cpu_per_wall"] = wall > 0 ? cpu / wall : 0;
}

void run_each(benchmark::State& st, Kind kind) {
  for (auto _ : st) {
    st.PauseTiming();
    std::unique_ptr<ag::Store> store = open(kind);
    ag::Graph<Small> g;
    build(g);
    st.ResumeTiming();
    for (int i = 0; i < kRuns; ++i) {
      const auto out = g.run("run-" + std::to_string(i), Small{}, *store);
      if (!out.succeeded()) trellis_bench::check(st, false, "a run did not succeed");
    }
  }
  st.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(kRuns * kSteps) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
}

/// The paused node stamps when it runs again.
struct Stamp {
  std::atomic<std::int64_t> ns{0};
};
Stamp g_stamp;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct AskNode final : ag::Node<Small> {
  std::string_view name() const override { return "ask"; }
  ag::NextStep run(Small&, ag::RunContext& ctx) override {
    if (!ctx.resume())
      return ag::Interrupt{
          .reason = "approve",
          .approval = ag::ApprovalRequest{
              .action = "go", .proposed_input = {}, .risk_reason = "", .expires_at = std::nullopt}};
    g_stamp.ns = steady_ns();
    return ag::Halt{};
  }
};

void claim_latency(benchmark::State& st, Kind kind) {
  const auto poll = std::chrono::milliseconds(st.range(0));
  std::unique_ptr<ag::Store> store = open(kind);
  ag::Graph<Small> g;
  g.add(std::make_unique<AskNode>()).entry("ask");
  ag::Worker w(*store, {.name = "bench", .threads = 1, .poll = poll});
  w.add(g);
  w.start();
  double max_ms = 0;
  int i = 0;
  for (auto _ : st) {
    const std::string id = "ask-" + std::to_string(i++);
    g.run(id, Small{}, *store);             // paused
    std::this_thread::sleep_for(poll / 3);  // the worker is somewhere in its idle wait
    g_stamp.ns = 0;
    ag::record_decision(*store, id, ag::request_id(*store->latest(id)), ag::Approve{"bench", ""});
    const std::int64_t t0 = steady_ns();
    while (g_stamp.ns.load() == 0) std::this_thread::sleep_for(100us);
    const double s = static_cast<double>(g_stamp.ns.load() - t0) / 1e9;
    max_ms = std::max(max_ms, s * 1e3);
    st.SetIterationTime(s);
  }
  w.stop();
  w.join();
  st.counters["max_ms"] = max_ms;
}

}  // namespace

int main(int argc, char** argv) {
  for (Kind k : {Kind::memory, Kind::file, Kind::sqlite}) {
    const std::string store = name_of(k);
    benchmark::RegisterBenchmark(("agent/workers/" + store).c_str(), workers, k)
        ->ArgName("threads")
        ->Arg(1)
        ->Arg(2)
        ->Arg(4)
        ->Arg(8)
        ->Iterations(1)
        ->Repetitions(3)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("baseline/run_each/" + store).c_str(), run_each, k)
        ->Iterations(1)
        ->Repetitions(3)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (Kind k : {Kind::file, Kind::sqlite})
    benchmark::RegisterBenchmark(("agent/claim_latency/" + std::string(name_of(k))).c_str(),
                                 claim_latency, k)
        ->ArgName("poll_ms")
        ->Arg(200)
        ->Iterations(20)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed ? 1 : 0;
}
