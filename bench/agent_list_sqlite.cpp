/// @file
/// `trellis runs ls` over a SqliteStore of 100,000 runs (issue 14, section 6: <= 1 s), beside
/// hand-written baselines in the same binary:
///
/// - `agent/list_runs/SqliteStore/100000`: Store::list_runs() of every run, from a store object
///   opened for the iteration (as the command does), its open included; counter `time_per_run`.
/// - `agent/list_runs/SqliteStore-read_only/100000`: the same through a read-only open (what
///   `trellis runs ls` uses).
/// - `agent/list_runs_waiting/SqliteStore/100000`: list_runs filtered on WaitingApproval (one
///   run in ten), the filter in SQL over the status index.
/// - `baseline/latest_each/SqliteStore/100000`: what listing took before the index: runs(),
///   then latest() and checkpoint(id, 0) of each run (its newest checkpoint and its creation
///   time, decoded from their records), summarize() each.
/// - `baseline/sqlite_select/100000`: the floor: the same rows of the `runs` table read with
///   raw sqlite3 calls (one prepared SELECT, each column copied into a std::string), no store.
///
/// The database is built once per process (synchronous OFF: building it is not what is
/// measured) in $TRELLIS_BENCH_DIR (default /tmp): each run is created Queued and committed
/// twice (a step, then a status: a tenth WaitingApproval, the rest spread over Running,
/// Succeeded, Failed and Cancelled), with a small state. A summary line compares the figure
/// with the target.

#include <trellis/agent/clock.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "sqlite_runs.hpp"

namespace {

namespace ag = trellis::agent;
namespace fs = std::filesystem;

using trellis_bench::build_database;
using trellis_bench::kRuns;

fs::path g_db;

void set_counters(benchmark::State& st, std::size_t listed) {
  st.counters["runs"] = static_cast<double>(listed);
  st.counters["time_per_run"] =
      benchmark::Counter(static_cast<double>(kRuns), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

void list_runs(benchmark::State& st, bool read_only) {
  std::size_t listed = 0;
  for (auto _ : st) {
    ag::SqliteStore store(g_db, {.read_only = read_only});
    const std::vector<ag::RunSummary> all = store.list_runs();
    listed = all.size();
    benchmark::DoNotOptimize(all.data());
  }
  if (!trellis_bench::check(st, listed == kRuns, "list_runs did not list every run")) return;
  set_counters(st, listed);
}

void list_waiting(benchmark::State& st) {
  std::size_t listed = 0;
  for (auto _ : st) {
    ag::SqliteStore store(g_db, {.read_only = true});
    const auto waiting = store.list_runs(ag::RunFilter{.status = ag::RunStatus::WaitingApproval});
    listed = waiting.size();
    benchmark::DoNotOptimize(waiting.data());
  }
  if (!trellis_bench::check(st, listed == kRuns / 10, "the filter kept the wrong runs")) return;
  set_counters(st, listed);
}

void latest_each(benchmark::State& st) {
  std::size_t listed = 0;
  for (auto _ : st) {
    ag::SqliteStore store(g_db, {.read_only = true});
    std::vector<ag::RunSummary> all;
    for (const std::string& id : store.runs()) {
      const std::optional<ag::Checkpoint> newest = store.latest(id);
      const std::optional<ag::Checkpoint> first = store.checkpoint(id, 0);
      if (newest && first) all.push_back(ag::summarize(*newest, first->created_at));
    }
    listed = all.size();
    benchmark::DoNotOptimize(all.data());
  }
  if (!trellis_bench::check(st, listed == kRuns, "the baseline did not list every run")) return;
  set_counters(st, listed);
}

void sqlite_select(benchmark::State& st) {
  std::size_t listed = 0;
  for (auto _ : st) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(g_db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT run_id, status, reason, next_node, step, newest_seq, created_at, "
                       "newest_at, fingerprint, request FROM runs ORDER BY run_id",
                       -1, &s, nullptr);
    struct Row {
      std::string text[8];
      std::int64_t step = 0;
      std::int64_t seq = 0;
    };
    std::vector<Row> rows;
    const auto text = [&](int col) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
      return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, col)))
               : std::string();
    };
    while (sqlite3_step(s) == SQLITE_ROW) {
      Row& r = rows.emplace_back();
      r.text[0] = text(0);
      r.text[1] = text(1);
      r.text[2] = text(2);
      r.text[3] = text(3);
      r.step = sqlite3_column_int64(s, 4);
      r.seq = sqlite3_column_int64(s, 5);
      r.text[4] = text(6);
      r.text[5] = text(7);
      r.text[6] = text(8);
      r.text[7] = text(9);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    listed = rows.size();
    benchmark::DoNotOptimize(rows.data());
  }
  if (!trellis_bench::check(st, listed == kRuns, "the SELECT did not read every run")) return;
  set_counters(st, listed);
}

// Median real time per iteration (ms) of each benchmark, for the summary.
class Recorder : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred && (r.run_type == Run::RT_Iteration || r.aggregate_name == "median"))
        ms_[r.run_name.function_name].push_back(r.GetAdjustedRealTime());
    ConsoleReporter::ReportRuns(runs);
  }
  std::optional<double> median(const std::string& name) const {
    const auto it = ms_.find(name);
    if (it == ms_.end() || it->second.empty()) return std::nullopt;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> ms_;
};

}  // namespace

int main(int argc, char** argv) {
  trellis_bench::ScratchDir dir("trellis-bench-list");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_db = dir.path() / "runs.db";
  build_database(g_db);
  const std::string n = "/" + std::to_string(kRuns);
  const auto reg = [](const std::string& name, auto fn) {
    return benchmark::RegisterBenchmark(name.c_str(), fn)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(5);
  };
  reg("agent/list_runs/SqliteStore" + n, [](benchmark::State& st) { list_runs(st, false); });
  reg("agent/list_runs/SqliteStore-read_only" + n,
      [](benchmark::State& st) { list_runs(st, true); });
  reg("agent/list_runs_waiting/SqliteStore" + n, list_waiting);
  reg("baseline/latest_each/SqliteStore" + n, latest_each);
  reg("baseline/sqlite_select" + n, sqlite_select);
  std::fflush(stdout);
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();
  const auto ms = recorder.median("agent/list_runs/SqliteStore-read_only" + n);
  if (ms)
    std::printf(
        "list_runs over %d runs (SqliteStore, read-only open): %.0f ms (target <= 1000 ms)\n",
        kRuns, *ms);
  return trellis_bench::failed.load() ? 1 : 0;
}
