/// @file
/// Listing runs (issue 14, section 6: `trellis runs ls` over 100,000 runs in <= 1 s): FileStore's
/// list_runs over its run index, beside hand-written baselines in the same binary.
///
/// Setup (untimed): one FileStore (sync off, so that building it takes seconds, not hours)
/// holding N runs (100,000; $TRELLIS_BENCH_LIST_RUNS overrides), each created and then
/// committed twice (every tenth ends WaitingApproval, the others Running), then listed once so
/// that the index is compacted; every later case reads a warm page cache.
///
/// - `list/FileStore/<N>`: list_runs() with no filter (every run's summary), checked: N
///   summaries, ordered by run id.
/// - `list/FileStore/<N>/status`: list_runs(status = WaitingApproval): N/10 summaries.
/// - `list/FileStore_read_only/<N>`: the same listing through a read-only FileStore.
/// - `list/FileStore_stale/<N>`: the listing after every run's index line went stale (each run
///   committed once more with the index file put back as it was: the journals are ahead), on
///   a read-only store, which re-reads every journal and repairs nothing: the worst case.
/// - `baseline/latest_each/<N>`: what a store without an index does (Store::list_runs's
///   default): runs(), then latest() and checkpoint(id, 0) of each run, then summarize().
/// - `baseline/readdir_fstatat/<N>`: the floor of any listing that validates against the
///   journals: readdir of the root and one fstatat per run, hand-written POSIX.
///
/// Wall-clock (UseRealTime), milliseconds. After the run, the figure behind the target is
/// printed (median of the repetitions).

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_support.hpp"

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/run_summary.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace ag = trellis::agent;
namespace fs = std::filesystem;
using trellis_bench::check;

std::size_t g_runs = 100'000;
fs::path g_root;        // the listed store
fs::path g_stale_root;  // the same runs, every index line stale
std::map<std::string, std::vector<double>> g_medians;

std::string run_id(std::size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "run-%07zu", i);
  return buf;
}

ag::Checkpoint checkpoint(const std::string& id, std::uint64_t seq, std::size_t i) {
  ag::Checkpoint c;
  c.run_id = id;
  c.seq = seq;
  const bool waits = seq == 2 && i % 10 == 0;
  c.status = seq == 0 ? ag::RunStatus::Queued
                      : (waits ? ag::RunStatus::WaitingApproval : ag::RunStatus::Running);
  c.next_node = seq % 2 == 0 ? "draft" : "review";
  c.step = seq;
  c.state = {{"count", seq}, {"text", "a small state of a few members"}, {"tags", {"a", "b"}}};
  c.fingerprint = "draft,review@1";
  c.created_at = "2024-05-01T12:00:0" + std::to_string(seq) + ".000Z";
  if (waits) c.interrupt = ag::Interrupt{.reason = "publish?", .then = "publish"};
  return c;
}

void build(const fs::path& root, bool stale) {
  ag::FileStore store(root, ag::FileStoreOptions{.sync = false});
  for (std::size_t i = 0; i < g_runs; ++i) {
    const std::string id = run_id(i);
    store.create(checkpoint(id, 0, i));
    store.commit(checkpoint(id, 1, i), 0);
    store.commit(checkpoint(id, 2, i), 1);
  }
  (void)store.list_runs(ag::RunFilter{});  // compacts the index
  if (!stale) return;
  const fs::path index = root / "@index.jsonl";
  const fs::path saved = root.parent_path() / "saved-index";
  fs::copy_file(index, saved);
  for (std::size_t i = 0; i < g_runs; ++i) {
    ag::Checkpoint c = checkpoint(run_id(i), 3, i);
    c.status = ag::RunStatus::Running;
    store.commit(c, 2);
  }
  fs::rename(saved, index);
}

bool ordered(const std::vector<ag::RunSummary>& runs) {
  return std::is_sorted(runs.begin(), runs.end(),
                        [](const auto& a, const auto& b) { return a.run_id < b.run_id; });
}

void record(benchmark::State& st, const std::string& name, double ms) {
  g_medians[name].push_back(ms);
  st.counters["ms_per_listing"] = ms;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void list_file_store(benchmark::State& st, const std::string& name, const fs::path& root,
                     bool read_only, ag::RunFilter filter, std::size_t expected) {
  ag::FileStore store(root, ag::FileStoreOptions{.read_only = read_only});
  std::vector<ag::RunSummary> out;
  double total = 0;
  std::int64_t n = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    out = store.list_runs(filter);
    total += ms_since(t0);
    ++n;
    benchmark::DoNotOptimize(out.data());
  }
  if (!check(st, out.size() == expected && ordered(out),
             name + ": listed " + std::to_string(out.size()) + " runs, expected " +
                 std::to_string(expected)))
    return;
  record(st, name, total / static_cast<double>(n));
}

void baseline_latest_each(benchmark::State& st) {
  ag::FileStore store(g_root, ag::FileStoreOptions{.read_only = true});
  std::vector<ag::RunSummary> out;
  double total = 0;
  std::int64_t n = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    out.clear();
    for (const std::string& id : store.runs()) {
      const auto newest = store.latest(id);
      const auto first = store.checkpoint(id, 0);
      if (newest) out.push_back(ag::summarize(*newest, first ? first->created_at : ""));
    }
    total += ms_since(t0);
    ++n;
  }
  if (!check(st, out.size() == g_runs, "baseline/latest_each: wrong count")) return;
  record(st, "baseline/latest_each", total / static_cast<double>(n));
}

void baseline_readdir_fstatat(benchmark::State& st) {
  const int root = ::open(g_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::size_t found = 0;
  double total = 0;
  std::int64_t n = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    found = 0;
    const int dup = ::openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = ::fdopendir(dup);
    std::string rel;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || e->d_name[0] == '@') continue;
      rel.assign(e->d_name).append("/journal.jsonl");
      struct stat s {};
      if (::fstatat(root, rel.c_str(), &s, AT_SYMLINK_NOFOLLOW) == 0 && s.st_size > 0) ++found;
    }
    ::closedir(d);
    total += ms_since(t0);
    ++n;
  }
  ::close(root);
  if (!check(st, found == g_runs, "baseline/readdir_fstatat: wrong count")) return;
  record(st, "baseline/readdir_fstatat", total / static_cast<double>(n));
}

void register_all() {
  const std::string n = std::to_string(g_runs);
  auto reg = [](const std::string& name, auto fn, int iterations) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(iterations)
        ->Repetitions(3)
        ->ReportAggregatesOnly(false);
  };
  reg(
      "list/FileStore/" + n,
      [](benchmark::State& st) {
        list_file_store(st, "list/FileStore", g_root, false, {}, g_runs);
      },
      5);
  reg(
      "list/FileStore/" + n + "/status",
      [](benchmark::State& st) {
        list_file_store(st, "list/FileStore/status", g_root, false,
                        ag::RunFilter{.status = ag::RunStatus::WaitingApproval}, g_runs / 10);
      },
      5);
  reg(
      "list/FileStore_read_only/" + n,
      [](benchmark::State& st) {
        list_file_store(st, "list/FileStore_read_only", g_root, true, {}, g_runs);
      },
      5);
  reg(
      "list/FileStore_stale/" + n,
      [](benchmark::State& st) {
        list_file_store(st, "list/FileStore_stale", g_stale_root, true, {}, g_runs);
      },
      1);
  reg("baseline/latest_each/" + n, baseline_latest_each, 1);
  reg("baseline/readdir_fstatat/" + n, baseline_readdir_fstatat, 5);
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print_targets() {
  std::printf("\nlisting %zu runs (median of the repetitions, warm page cache):\n", g_runs);
  for (const auto& [name, values] : g_medians)
    std::printf("  %-28s %10.1f ms%s\n", name.c_str(), median(values),
                name == "list/FileStore" ? "   (target <= 1000 ms)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* n = std::getenv("TRELLIS_BENCH_LIST_RUNS"); n != nullptr && *n != '\0')
    g_runs = static_cast<std::size_t>(std::strtoull(n, nullptr, 10));
  trellis_bench::ScratchDir dir("trellis-bench-list");
  std::printf("scratch directory: %s\nbuilding two stores of %zu runs...\n", dir.path().c_str(),
              g_runs);
  std::fflush(stdout);
  g_root = dir.path() / "store";
  g_stale_root = dir.path() / "stale" / "store";
  fs::create_directories(g_stale_root.parent_path());
  build(g_root, false);
  build(g_stale_root, true);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_targets();
  return trellis_bench::failed.load() ? 1 : 0;
}
