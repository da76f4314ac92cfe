/// @file
/// The operator console (issue 17, section 4), served on 127.0.0.1 and asked by cpp-httplib's
/// client in the same process, beside hand-written baselines in the same binary:
///
/// - `console/runs_page/SqliteStore/100000`: GET /runs (the first page of 50, and the count of
///   waiting approvals the navigation shows) over a SqliteStore of 100,000 runs, signed in; the
///   time is the client's (request, server, response over loopback), an upper bound of the
///   server's time. Target <= 200 ms.
/// - `console/runs_page_far/SqliteStore/100000`: GET /runs?after=run-090000 (a page 1,800
///   pages in: the store seeks to it in its run id index; nothing before it is read).
/// - `baseline/runs_page_reads/SqliteStore/100000`: what that page reads, without HTTP or HTML:
///   list_runs of a page (limit 51: one more tells whether a next page exists) and count_runs
///   of the waiting runs, on the same store object.
/// - `baseline/list_runs/SqliteStore/100000`: list_runs() of every run and of the waiting ones:
///   what the page read before the stores paged (RunFilter::limit, after) and counted.
/// - `console/approval_round_trip/SqliteStore`: POST /api/v1/runs/RUN/decision (an approval,
///   bearer token) until its answer, each on another waiting run of a small SqliteStore (its
///   default durability: the commit is fsync'd). Target: <= 50 ms plus the store's commit.
/// - `baseline/record_decision/SqliteStore`: record_decision() on the same kind of store: the
///   store's commit, the floor of the round trip.
/// - `console/load/50_clients`: 50 client threads, each with its own connection (kept alive),
///   alternately GET /runs and GET /runs/RUN over the 100,000-run store for
///   $TRELLIS_LOAD_SECONDS (default 30) seconds; counters: requests, errors (a status other than
///   200, or no answer), p50, p99 and max latency (ms). Threads overlap (wall time).

#include <trellis/agent/operations.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/web/console.hpp>

#include <benchmark/benchmark.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "sqlite_runs.hpp"

namespace {

namespace ag = trellis::agent;
namespace web = trellis::web;
namespace fs = std::filesystem;
using trellis_bench::kRuns;

fs::path g_db;
fs::path g_dir;

/// A console over `store` on a free port, served by a thread; signed in once.
struct Served {
  web::Console console;
  std::jthread thread;
  std::string token, cookie;
  explicit Served(ag::Store& store)
      : console(store, {.port = 0, .user = "bench"}), thread([this] { console.serve(); }) {
    const std::string url = console.login_url();
    token = url.substr(url.find("token=") + 6);
    httplib::Client c("127.0.0.1", console.port());
    const auto res = c.Post("/login", "token=" + token, "application/x-www-form-urlencoded");
    if (res && res->status == 303) {
      const std::string set = res->get_header_value("Set-Cookie");
      cookie = set.substr(0, set.find(';'));
    }
  }
  ~Served() { console.stop(); }
};

/// GET `target` over the 100,000-run store, which must show `first` and `last` and not `beyond`.
void runs_page_at(benchmark::State& st, const std::string& target, const std::string& first,
                  const std::string& last, const std::string& beyond) {
  ag::SqliteStore store(g_db, {.read_only = true});
  Served s(store);
  httplib::Client c("127.0.0.1", s.console.port());
  c.set_keep_alive(true);
  const httplib::Headers headers{{"Cookie", s.cookie}};
  bool ok = true;
  for (auto _ : st) {
    const auto res = c.Get(target, headers);
    ok = ok && res && res->status == 200 && res->body.find(first) != std::string::npos &&
         res->body.find(last) != std::string::npos && res->body.find(beyond) == std::string::npos;
  }
  trellis_bench::check(st, ok, "GET " + target + " did not answer its page of 50");
}

void runs_page(benchmark::State& st) {
  runs_page_at(st, "/runs", "run-000000", "run-000049", "run-000050");
}

void runs_page_far(benchmark::State& st) {
  runs_page_at(st, "/runs?after=run-090000", "run-090001", "run-090050", "run-090051");
}

void runs_page_reads_baseline(benchmark::State& st) {
  ag::SqliteStore store(g_db, {.read_only = true});
  std::size_t listed = 0;
  for (auto _ : st) {
    const auto page = store.list_runs(ag::RunFilter{.limit = 51});
    listed =
        page.size() + store.count_runs(ag::RunFilter{.status = ag::RunStatus::WaitingApproval});
    benchmark::DoNotOptimize(listed);
  }
  trellis_bench::check(st, listed == 51 + kRuns / 10, "the page's reads listed the wrong runs");
}

void list_runs_baseline(benchmark::State& st) {
  ag::SqliteStore store(g_db, {.read_only = true});
  std::size_t listed = 0;
  for (auto _ : st) {
    const auto all = store.list_runs();
    const auto waiting = store.list_runs(ag::RunFilter{.status = ag::RunStatus::WaitingApproval});
    listed = all.size() + waiting.size();
    benchmark::DoNotOptimize(listed);
  }
  trellis_bench::check(st, listed == kRuns + kRuns / 10, "list_runs listed the wrong runs");
}

constexpr int kDecisions = 200;

/// A fresh SqliteStore (default durability) of kDecisions runs waiting for a decision.
std::unique_ptr<ag::SqliteStore> waiting_store(const std::string& name) {
  const fs::path path = g_dir / name;
  fs::remove(path);
  auto store = std::make_unique<ag::SqliteStore>(path);
  for (int i = 0; i < kDecisions; ++i) {
    ag::Checkpoint c = trellis_bench::checkpoint(i, 0, ag::RunStatus::WaitingApproval);
    c.interrupt = ag::Interrupt{"ok?"};
    c.resume_node = "review";
    store->create(c);
  }
  return store;
}

void approval_round_trip(benchmark::State& st) {
  auto store = waiting_store("round_trip.db");
  Served s(*store);
  httplib::Client c("127.0.0.1", s.console.port());
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  const httplib::Headers headers{{"Authorization", "Bearer " + s.token}};
  int i = 0;
  bool ok = true;
  for (auto _ : st) {
    const std::string run = trellis_bench::run_id(i++);
    const auto res = c.Post("/api/v1/runs/" + run + "/decision", headers,
                            R"({"request":"0","decision":"approve"})", "application/json");
    ok = ok && res && res->status == 200;
  }
  trellis_bench::check(st, ok, "a decision was not committed");
}

void record_decision_baseline(benchmark::State& st) {
  auto store = waiting_store("record_decision.db");
  int i = 0;
  for (auto _ : st) {
    (void)ag::record_decision(*store, trellis_bench::run_id(i++), "0", ag::Approve{"bench"});
  }
}

void load(benchmark::State& st) {
  const char* env = std::getenv("TRELLIS_LOAD_SECONDS");
  const double seconds = env ? std::atof(env) : 30.0;
  ag::SqliteStore store(g_db, {.read_only = true});
  Served s(store);
  constexpr int kClients = 50;
  std::mutex mutex;
  std::vector<double> latencies;
  std::atomic<long> errors{0};
  for (auto _ : st) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::jthread> clients;
    for (int k = 0; k < kClients; ++k)
      clients.emplace_back([&, k] {
        httplib::Client c("127.0.0.1", s.console.port());
        c.set_keep_alive(true);
        c.set_read_timeout(60);
        const httplib::Headers headers{{"Cookie", s.cookie}};
        std::vector<double> mine;
        for (int n = 0; std::chrono::steady_clock::now() < until; ++n) {
          const std::string path =
              n % 2 == 0 ? "/runs" : "/runs/" + trellis_bench::run_id((k * 997 + n) % kRuns);
          const auto t0 = std::chrono::steady_clock::now();
          const auto res = c.Get(path, headers);
          mine.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
          if (!res || res->status != 200) errors.fetch_add(1);
        }
        std::lock_guard lock(mutex);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
      });
  }
  std::sort(latencies.begin(), latencies.end());
  const auto pct = [&](double p) {
    return latencies.empty() ? 0.0
                             : latencies[std::min(latencies.size() - 1,
                                                  static_cast<std::size_t>(p * latencies.size()))];
  };
  st.counters["clients"] = kClients;
  st.counters["requests"] = static_cast<double>(latencies.size());
  st.counters["errors"] = static_cast<double>(errors.load());
  st.counters["p50_ms"] = pct(0.50);
  st.counters["p99_ms"] = pct(0.99);
  st.counters["max_ms"] = latencies.empty() ? 0.0 : latencies.back();
  trellis_bench::check(st, errors.load() == 0, "some requests failed");
}

}  // namespace

int main(int argc, char** argv) {
  trellis_bench::ScratchDir dir("trellis-bench-console");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_dir = dir.path();
  g_db = dir.path() / "runs.db";
  trellis_bench::build_database(g_db);
  const std::string n = "/" + std::to_string(kRuns);
  benchmark::RegisterBenchmark(("console/runs_page/SqliteStore" + n).c_str(), runs_page)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(20);
  benchmark::RegisterBenchmark(("console/runs_page_far/SqliteStore" + n).c_str(), runs_page_far)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(20);
  benchmark::RegisterBenchmark(("baseline/runs_page_reads/SqliteStore" + n).c_str(),
                               runs_page_reads_baseline)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(20);
  benchmark::RegisterBenchmark(("baseline/list_runs/SqliteStore" + n).c_str(), list_runs_baseline)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(20);
  benchmark::RegisterBenchmark("console/approval_round_trip/SqliteStore", approval_round_trip)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(kDecisions);
  benchmark::RegisterBenchmark("baseline/record_decision/SqliteStore", record_decision_baseline)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(kDecisions);
  benchmark::RegisterBenchmark("console/load/50_clients", load)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed.load() ? 1 : 0;
}
