// SPDX-License-Identifier: MIT
/// @file
/// Chaos: Worker processes (chaos_worker.cpp, the graph of chaos_graph.hpp) on one shared
/// store, killed, stopped and skewed; afterwards the store, the workers' records (acks) and the
/// external system's log (chaos_graph.hpp) are checked against the invariants every store
/// promises (store.hpp, worker.hpp):
///  - every run ended: Succeeded, or Failed with reconciliation_required where an at_most_once
///    call was cut off (a started record without a receipt; counted, and rare);
///  - histories contiguous (seq 0..n), steps growing by 0 or 1 per commit, the state's trail
///    (one token per step committed) growing by exactly the steps committed, as a prefix;
///  - every acknowledged commit (a commit that returned in some worker) is in the history with
///    the state it wrote, and no (run, seq) was acknowledged twice; every acknowledged effect
///    record is stored, an acknowledged receipt as a receipt;
///  - every at_most_once effect called at most once; every receipt names a call the external
///    system logged under its key; no call without a started record.
/// Cases:
///  - SIGKILL: 4 workers on 200 runs, one of them SIGKILLed every 20-100 ms and restarted at
///    once, >= 200 kills (both scaled by TRELLIS_TEST_SCALE); the runs' last node sleeps until
///    the kills are done, so every kill lands while there is work;
///  - SIGSTOP: a worker stopped in a long node past its lease; another takes the run over, and
///    the stopped one, continued, neither starts an effect nor commits (SqliteStore); on
///    FileStore, whose leases are flocks held by the stopped process, nobody advances the run
///    while it is stopped and it finishes after SIGCONT;
///  - clock skew: the same with the workers' run clocks 1 h ahead and behind (RunOptions::clock),
///    and the SIGKILL case with one worker under libfaketime 1 h behind (SqliteStore);
///  - PostgreSQL (trellis_chaos_postgres_tests, built with TRELLIS_CHAOS_POSTGRES, run inside
///    tests/support/with_postgres.sh): SIGKILL, SIGSTOP and clock skew as above (the stopped
///    worker under libfaketime 1 h behind instead of a SIGKILL run: the leases' clock is the
///    server's), and its own faults: 4 workers on 100 runs while the server terminates one
///    store connection at random every 50-200 ms (>= 100, pg_terminate_backend), and while the
///    server is stopped -m immediate 1 s in and started again 1 s later (fsync on): the workers
///    report store errors, go on, and stop gracefully at the end.
/// Every case is bounded by a deadline that fails it with the counts it reached.

#include "chaos_graph.hpp"
#include "chaos_store.hpp"

#include <doctest/doctest.h>
#include <test_support.hpp>

#ifdef TRELLIS_CHAOS_POSTGRES
#include <libpq-fe.h>
#endif

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace trellis_chaos;
namespace fs = std::filesystem;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A scratch directory, removed at the end unless TRELLIS_CHAOS_KEEP is set.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "trellis-chaos-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("chaos: mkdtemp failed");
    path_ = pattern;
  }
  ~Scratch() {
    if (std::getenv("TRELLIS_CHAOS_KEEP") != nullptr) {
      MESSAGE("kept " << path_.string());
      return;
    }
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

/// What a worker process is started with.
struct WorkerArgs {
  std::string spec, log, acks, release, gate, err;
  milliseconds ttl{1000};
  milliseconds clock_offset{0};
  double flaky = 0.3;
  std::string faketime;  ///< libfaketime's FAKETIME ("-1h"); empty: none
};

std::string faketime_library() {
#ifdef TRELLIS_LIBFAKETIME
  return TRELLIS_LIBFAKETIME;
#else
  return {};
#endif
}

/// Starts a chaos_worker; its stdout goes to /dev/null, its stderr is appended to `a.err`.
pid_t spawn_worker(const WorkerArgs& a) {
  std::vector<std::string> argv = {TRELLIS_CHAOS_WORKER,
                                   "--store",
                                   a.spec,
                                   "--log",
                                   a.log,
                                   "--acks",
                                   a.acks,
                                   "--ttl-ms",
                                   std::to_string(a.ttl.count()),
                                   "--clock-offset-ms",
                                   std::to_string(a.clock_offset.count()),
                                   "--flaky",
                                   std::to_string(a.flaky),
                                   "--poll-ms",
                                   "20"};
  if (!a.release.empty()) argv.insert(argv.end(), {"--release", a.release});
  if (!a.gate.empty()) argv.insert(argv.end(), {"--gate", a.gate});
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  if (!a.faketime.empty()) {
    env.push_back("LD_PRELOAD=" + faketime_library());
    env.push_back("FAKETIME=" + a.faketime);
    env.push_back("DONT_FAKE_MONOTONIC=1");  // only the wall clock is skewed
    // Under AddressSanitizer the preloaded libfaketime comes before ASan's runtime, which ASan
    // refuses by default; the order is harmless here (libfaketime does not allocate through
    // what ASan intercepts first).
    std::string asan = "ASAN_OPTIONS=verify_asan_link_order=0";
    for (auto it = env.begin(); it != env.end(); ++it)
      if (it->starts_with("ASAN_OPTIONS=")) {
        asan = *it + ":verify_asan_link_order=0";
        env.erase(it);
        break;
      }
    env.push_back(asan);
  }
  std::vector<char*> cargv, cenv;
  for (std::string& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  for (std::string& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, a.err.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("chaos: posix_spawn: " + std::string(std::strerror(rc)));
  return pid;
}

/// SIGKILLs `pid` and reaps it.
void kill_now(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

/// Asks `pid` to stop (SIGTERM: the worker stops gracefully), SIGKILLs it after `grace`;
/// returns its exit code (-1 when it was killed or died of a signal).
int stop_worker(pid_t pid, milliseconds grace = milliseconds(10000)) {
  ::kill(pid, SIGCONT);
  ::kill(pid, SIGTERM);
  const auto end = Clock::now() + grace;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > end) {
      kill_now(pid);
      return -1;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The JSON lines of `path` (a missing file has none; a torn last line is skipped).
std::vector<json> read_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool ended(ag::RunStatus s) {
  return s == ag::RunStatus::Succeeded || s == ag::RunStatus::Failed ||
         s == ag::RunStatus::Cancelled;
}

/// The parent's copy of the graph: for its fingerprint and enqueue; its nodes never run.
struct ParentGraph {
  ExternalSystem external{"/dev/null"};
  ChaosConfig config;
  ag::Graph<ChaosState> graph;
  ParentGraph() { build_chaos_graph(graph, external, config); }
};

/// What the invariants' check found besides failures.
struct Findings {
  std::vector<std::string> failures;
  int succeeded = 0;
  int reconciliation = 0;  ///< Failed with reconciliation_required (an at_most_once call cut off)
  int calls = 0;           ///< external calls logged
  int commits = 0;         ///< commits acknowledged
  int lost = 0;            ///< leases lost (workers' events)
  int errors = 0;          ///< store errors (workers' events: the store was away)
};

/// Checks every invariant of the file comment over the runs `ids`.
Findings check_invariants(ag::Store& store, const std::vector<std::string>& ids,
                          const std::string& log, const std::string& acks) {
  Findings f;
  auto fail = [&f](const std::string& what) { f.failures.push_back(what); };
  // The external system's calls by key; the acknowledged commits by (run, seq).
  std::map<std::string, std::vector<json>> calls;
  for (const json& l : read_lines(log))
    if (l.at("ev") == "call") {
      calls[l.at("key").get<std::string>()].push_back(l);
      ++f.calls;
    }
  std::map<std::pair<std::string, std::uint64_t>, json> acked;
  std::vector<json> acked_effects;
  for (const json& l : read_lines(acks)) {
    if (l.at("ev") == "lost") ++f.lost;
    if (l.at("ev") == "error") ++f.errors;
    if (l.at("ev") == "effect") acked_effects.push_back(l);
    if (l.at("ev") != "commit") continue;
    ++f.commits;
    const auto at =
        std::make_pair(l.at("run").get<std::string>(), l.at("seq").get<std::uint64_t>());
    if (!acked.emplace(at, l).second)
      fail("run " + at.first + ": seq " + std::to_string(at.second) +
           " acknowledged twice: " + acked.at(at).dump() + " and " + l.dump());
  }
  std::set<std::string> keys_seen;
  for (const std::string& id : ids) {
    const std::vector<ag::Checkpoint> h = store.history(id);
    if (h.empty()) {
      fail("run " + id + ": no history");
      continue;
    }
    for (std::size_t k = 0; k < h.size(); ++k) {
      const ag::Checkpoint& c = h[k];
      const auto trail = c.state.at("trail").get<std::vector<std::string>>();
      if (c.seq != k)
        fail("run " + id + ": checkpoint " + std::to_string(k) + " has seq " +
             std::to_string(c.seq));
      if (trail.size() != c.step)
        fail("run " + id + " seq " + std::to_string(k) + ": step " + std::to_string(c.step) +
             " but " + std::to_string(trail.size()) + " nodes in the trail");
      if (k > 0) {
        const auto before = h[k - 1].state.at("trail").get<std::vector<std::string>>();
        if (c.step < h[k - 1].step || c.step > h[k - 1].step + 1)
          fail("run " + id + " seq " + std::to_string(k) + ": step " +
               std::to_string(h[k - 1].step) + " -> " + std::to_string(c.step));
        if (trail.size() < before.size() ||
            !std::equal(before.begin(), before.end(), trail.begin()))
          fail("run " + id + " seq " + std::to_string(k) + ": the trail was rewritten");
      }
      const auto a = acked.find({id, c.seq});
      if (a != acked.end()) {
        if (a->second.at("state") != std::to_string(std::hash<std::string>{}(c.state.dump())))
          fail("run " + id + " seq " + std::to_string(k) + ": acknowledged with another state (" +
               a->second.dump() + ")");
        acked.erase(a);
      }
    }
    const ag::Checkpoint& last = h.back();
    const std::vector<ag::EffectRecord> effects = store.effects(id);
    bool cut_off = false;
    for (const ag::EffectRecord& e : effects) {
      keys_seen.insert(e.key);
      const std::vector<json>& made = calls[e.key];
      if (e.policy == ag::EffectPolicy::at_most_once && made.size() > 1)
        fail("run " + id + ": at_most_once effect " + e.name + " called " +
             std::to_string(made.size()) + " times");
      if (e.status == ag::EffectStatus::succeeded) {
        const bool matches = std::any_of(made.begin(), made.end(), [&](const json& m) {
          return e.result.contains("call") && m.at("call") == e.result.at("call");
        });
        if (!matches)
          fail("run " + id + ": the receipt of " + e.name + " (" + e.result.dump() +
               ") names no call of its key");
      } else if (e.status == ag::EffectStatus::started &&
                 e.policy == ag::EffectPolicy::at_most_once) {
        cut_off = true;
      }
    }
    if (last.status == ag::RunStatus::Succeeded) {
      ++f.succeeded;
      for (const char* name : {"charge", "notify"})
        if (std::none_of(effects.begin(), effects.end(), [&](const ag::EffectRecord& e) {
              return e.name == name && e.status == ag::EffectStatus::succeeded;
            }))
          fail("run " + id + " succeeded without a receipt of " + name);
    } else if (last.status == ag::RunStatus::Failed &&
               last.reason == ag::Reason::reconciliation_required && cut_off) {
      ++f.reconciliation;
    } else {
      fail("run " + id + " is " +
           std::string(trellis::enumeration<ag::RunStatus>::name(last.status)) + " (" +
           std::string(trellis::enumeration<ag::Reason>::name(last.reason)) + ": " + last.detail +
           ")");
    }
  }
  for (const auto& [key, made] : calls)
    if (!keys_seen.contains(key)) fail("a call without a started record: " + made.front().dump());
  for (const auto& [at, line] : acked)
    fail("run " + at.first + ": acknowledged seq " + std::to_string(at.second) +
         " is not in the history (" + line.dump() + ")");
  // Every acknowledged effect record is stored, a receipt as a receipt (nothing calls the
  // external system again after a receipt, so none goes back to started).
  for (const json& l : acked_effects) {
    const std::string run = l.at("run").get<std::string>();
    const std::optional<ag::EffectRecord> e = store.effect(run, l.at("key").get<std::string>());
    if (!e)
      fail("run " + run + ": acknowledged effect record is not in the store (" + l.dump() + ")");
    else if (l.at("status") == "succeeded" && e->status != ag::EffectStatus::succeeded)
      fail("run " + run + ": acknowledged receipt is stored as " +
           std::string(trellis::enumeration<ag::EffectStatus>::name(e->status)) + " (" + l.dump() +
           ")");
  }
  return f;
}

void report(const Findings& f, const std::string& where) {
  std::string first;
  for (std::size_t i = 0; i < f.failures.size() && i < 20; ++i) first += f.failures[i] + "\n";
  INFO(where << ": " << f.failures.size() << " invariant(s) broken; the first:\n" << first);
  CHECK(f.failures.empty());
}

std::vector<std::string> enqueue_runs(ag::Store& store, int count, const ChaosState& base) {
  ParentGraph parent;
  std::vector<std::string> ids;
  for (int k = 0; k < count; ++k) {
    char id[32];
    std::snprintf(id, sizeof id, "run-%04d", k);
    ChaosState s = base;
    s.n = base.n + k % 4;
    parent.graph.enqueue(id, s, store, {.priority = k % 3});
    ids.emplace_back(id);
  }
  return ids;
}

/// The runs of `ids` not ended yet.
int unfinished(ag::Store& store, const std::vector<std::string>& ids) {
  int n = 0;
  for (const ag::RunSummary& s : store.list_runs({}))
    if (std::find(ids.begin(), ids.end(), s.run_id) != ids.end() && !ended(s.status)) ++n;
  return n;
}

std::string specs_of(const Scratch& dir, std::string_view kind) {
  if (kind == "postgres") {  // a schema of its own per case, in the database of libpq's env
    static int cases = 0;
    return "postgres:chaos_" + std::to_string(::getpid()) + "_" + std::to_string(++cases);
  }
  return kind == "file" ? "file:" + (dir / "store") : "sqlite:" + (dir / "store.db");
}

#ifdef TRELLIS_CHAOS_POSTGRES
/// The parent's own libpq connection (libpq's environment; application_name
/// "trellis-chaos-parent"), to act on the server behind the workers' backs.
class Server {
 public:
  Server() { connect(); }
  ~Server() { PQfinish(c_); }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// The one value `sql` returns; throws std::runtime_error with the server's message.
  std::string value(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    const std::string out = ok ? PQgetvalue(r, 0, 0) : PQerrorMessage(c_);
    PQclear(r);
    if (!ok) throw std::runtime_error("chaos: " + sql + ": " + out);
    return out;
  }
  /// Terminates one connection of a PostgresStore (application_name "trellis": the workers'
  /// and the parent's store's), chosen at random; true when there was one.
  bool terminate_one() {
    return value(
               "SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity "
               "WHERE application_name = 'trellis' AND backend_type = 'client backend' ORDER BY "
               "random() LIMIT 1) t") == "1";
  }
  /// Connects again (after a restart of the server).
  void connect() {
    if (c_ != nullptr) PQfinish(c_);
    c_ = PQconnectdb("application_name=trellis-chaos-parent");
    if (PQstatus(c_) != CONNECTION_OK)
      throw std::runtime_error(std::string("chaos: cannot connect to the server: ") +
                               PQerrorMessage(c_));
  }

 private:
  PGconn* c_ = nullptr;
};

/// Runs `pg_ctlcluster $PGVERSION regress ARGS` (the cluster pg_virtualenv made; root or not),
/// its output appended to `log`; true when it succeeded.
bool pg_ctlcluster(const std::string& args, const std::string& log) {
  const char* version = std::getenv("PGVERSION");
  if (version == nullptr) return false;
  const std::string command =
      "pg_ctlcluster " + std::string(version) + " regress " + args + " >>" + log + " 2>&1";
  return std::system(command.c_str()) == 0;
}
#endif

/// What a pool of 4 workers on `runs` runs goes through (pool_chaos).
struct Plan {
  int runs = 200;
  int kills = 0;         ///< workers SIGKILLed (and restarted at once), one per 20-100 ms
  int terminations = 0;  ///< connections terminated by the server, one per 50-200 ms
  bool restart = false;  ///< the server stopped -m immediate 1 s in, restarted 1 s later
  std::string faketime;  ///< FAKETIME of worker 0 (empty: none)
};

/// The pool chaos: 4 workers on `plan.runs` runs, disrupted as `plan` says until the wanted
/// disruptions are done and every run ended (the runs' last node sleeps until the disruptions
/// are done, so that every one lands while there is work); then the invariants.
void pool_chaos(std::string_view kind, const Plan& plan) {
  Scratch dir;
  const std::string spec = specs_of(dir, kind);
  std::unique_ptr<ag::Store> store = open_chaos_store(spec, {});
  const std::vector<std::string> ids = enqueue_runs(*store, plan.runs, ChaosState{});
  WorkerArgs args;
  args.spec = spec;
  args.log = dir / "external.log";
  args.acks = dir / "acks.log";
  args.gate = dir / "gate";
  args.err = dir / "workers.err";
  auto start_worker = [&](std::size_t w) {
    WorkerArgs a = args;
    if (w == 0) a.faketime = plan.faketime;
    return spawn_worker(a);
  };
  std::vector<pid_t> workers;
  for (std::size_t w = 0; w < 4; ++w) workers.push_back(start_worker(w));
#ifdef TRELLIS_CHAOS_POSTGRES
  std::optional<Server> server;
  if (plan.terminations > 0 || plan.restart) server.emplace();
  const std::string ctl_log = dir / "pg_ctlcluster.log";
#endif
  std::mt19937 engine(std::random_device{}());
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(150);
  int killed = 0, terminated = 0, restarts = 0, ticks = 0;
  int left = plan.runs;
  bool restarted_ok = true;
  while (Clock::now() < deadline) {
    const int pause = plan.kills > 0 ? std::uniform_int_distribution<int>(20, 100)(engine)
                                     : std::uniform_int_distribution<int>(50, 200)(engine);
    std::this_thread::sleep_for(milliseconds(pause));
    ++ticks;
    if (plan.kills > 0 && (killed < plan.kills || left > 0)) {
      const std::size_t w = std::uniform_int_distribution<std::size_t>(0, 3)(engine);
      kill_now(workers[w]);
      ++killed;
      workers[w] = start_worker(w);
    }
#ifdef TRELLIS_CHAOS_POSTGRES
    if (plan.terminations > 0 && (terminated < plan.terminations || left > 0) &&
        server->terminate_one())
      ++terminated;
    if (plan.restart && restarts == 0 && Clock::now() - start > std::chrono::seconds(1)) {
      restarted_ok = pg_ctlcluster("stop -m immediate", ctl_log);
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the workers find it down
      restarted_ok = pg_ctlcluster("start", ctl_log) && restarted_ok;
      ++restarts;
      if (!restarted_ok) break;
      server->connect();
    }
#endif
    const bool disrupted = killed >= plan.kills && terminated >= plan.terminations &&
                           restarts >= (plan.restart ? 1 : 0);
    if (!disrupted) continue;
    if (!file_exists(args.gate)) append_line(args.gate, "open", true);  // the runs may end now
    if (ticks % 5 == 0) {
      try {  // the parent's store is the server's victim too: a failed look is no answer
        left = unfinished(*store, ids);
      } catch (const ag::store_error&) {
        store = open_chaos_store(spec, {});
      }
      if (left == 0) break;
    }
  }
  // Workers that were never killed must have survived everything and stop gracefully.
  std::vector<int> exits;
  for (pid_t pid : workers) exits.push_back(stop_worker(pid));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store = open_chaos_store(spec, {});  // fresh connections for the check
  left = unfinished(*store, ids);
  std::string ctl_text;
#ifdef TRELLIS_CHAOS_POSTGRES
  ctl_text = "pg_ctlcluster:\n" + text_of(ctl_log);
#endif
  INFO(kind << (plan.faketime.empty() ? "" : " (one worker under faketime " + plan.faketime + ")")
            << ": " << killed << " kills, " << terminated << " connections terminated, " << restarts
            << " restarts in " << seconds << " s; workers' stderr:\n"
            << text_of(args.err) << ctl_text);
  REQUIRE_MESSAGE(restarted_ok, "the server could not be stopped and started again");
  CHECK_MESSAGE(left == 0, left << " of " << plan.runs << " runs not ended within 150 s");
  CHECK(killed >= plan.kills);
  CHECK(terminated >= plan.terminations);
  if (plan.kills == 0)
    for (int code : exits) CHECK_MESSAGE(code == 0, "a worker did not stop gracefully: " << code);
  const Findings f = check_invariants(*store, ids, args.log, args.acks);
  MESSAGE(kind << ": " << plan.runs << " runs, " << killed << " kills, " << terminated
               << " connections terminated, " << restarts << " restarts, " << f.commits
               << " commits acknowledged, " << f.calls << " external calls, " << f.lost
               << " leases lost, " << f.errors << " store errors, " << f.reconciliation
               << " reconciliation_required, " << seconds << " s");
  report(f, std::string(kind));
  // Workers see the server away as store errors (and go on: they stopped gracefully above).
  if (plan.restart) CHECK_MESSAGE(f.errors > 0, "no worker noticed the server was down");
  // An at_most_once call cut off by a kill (or a lost connection) is rare: a kill must land
  // between its started record and its receipt.
  CHECK_MESSAGE(f.reconciliation <= std::max(2, plan.runs / 4),
                f.reconciliation << " of " << plan.runs << " runs need a reconciliation");
}

/// The SIGKILL case: see the file comment. `faketime`: FAKETIME of worker 0 (empty: none).
void kill_chaos(std::string_view kind, const std::string& faketime = {}) {
  Plan plan;
  plan.runs = trellis_test::scaled(200, 12);
  plan.kills = trellis_test::scaled(200, 20);
  plan.faketime = faketime;
  pool_chaos(kind, plan);
}

/// Waits until `done()` or the deadline; false at the deadline.
template <class F>
bool wait_until(F done, milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

/// A hold line of the external log for `run` by `pid` (any pid: 0)?
bool holding(const std::string& log, const std::string& run, pid_t pid) {
  for (const json& l : read_lines(log))
    if (l.at("ev") == "hold" && l.at("run") == run && (pid == 0 || l.at("pid") == pid)) return true;
  return false;
}

/// The SIGSTOP case (file comment), with the workers' run clocks skewed by `skew_a` (the worker
/// stopped) and `skew_b` (the one that takes over); `faketime_a`: FAKETIME of the worker
/// stopped (empty: none).
void stop_chaos(std::string_view kind, milliseconds skew_a = {}, milliseconds skew_b = {},
                const std::string& faketime_a = {}) {
  Scratch dir;
  const std::string spec = specs_of(dir, kind);
  const milliseconds ttl(400);
  const auto store = open_chaos_store(spec, {.lease_ttl = ttl});
  ChaosState held;
  held.n = 3;
  held.naps = false;  // a Sleep's timer is set by the run call's clock (see the skew cases)
  held.hold = true;
  ParentGraph parent;
  parent.graph.enqueue("held", held, *store);
  ChaosState plain = held;
  plain.hold = false;
  std::vector<std::string> ids = {"held"};
  for (int k = 0; k < 3; ++k) {
    ids.push_back("plain-" + std::to_string(k));
    parent.graph.enqueue(ids.back(), plain, *store);
  }
  WorkerArgs args;
  args.spec = spec;
  args.log = dir / "external.log";
  args.acks = dir / "acks.log";
  args.release = dir / "release";
  args.err = dir / "workers.err";
  args.ttl = ttl;
  args.flaky = 0;  // a retry backoff is a timer too
  WorkerArgs a_args = args;
  a_args.clock_offset = skew_a;
  a_args.faketime = faketime_a;
  WorkerArgs b_args = args;
  b_args.clock_offset = skew_b;
  const pid_t a = spawn_worker(a_args);
  REQUIRE_MESSAGE(wait_until([&] { return holding(args.log, "held", a); }, milliseconds(20000)),
                  "worker A never reached the hold node; stderr:\n"
                      << text_of(args.err));
  // B runs while A holds the run, renewing its lease: B must not take it (3 TTLs).
  const pid_t b = spawn_worker(b_args);
  std::this_thread::sleep_for(3 * ttl);
  CHECK_MESSAGE(!holding(args.log, "held", b), "B took the run while A held a live lease");
  ::kill(a, SIGSTOP);
  const std::size_t seen = store->history("held").size();
  if (leases_expire(spec)) {
    // A's lease runs out; B takes the run over and reaches the hold node; then A continues,
    // and both find the release file: A must neither start the effect nor commit.
    // On SqliteStore a worker stopped inside one of its write transactions (a lease renewal
    // every TTL/3, a few milliseconds, longer when the disk is busy) holds the database's write
    // lock: every writer waits until it continues (docs/workers.md). A stopped there is let go
    // for a moment (it commits nothing meanwhile: its node waits for the release file) and
    // stopped again, until B takes over.
    bool took = false;
    for (int attempt = 0; attempt < 6 && !took; ++attempt) {
      if (attempt > 0) {
        ::kill(a, SIGCONT);
        std::this_thread::sleep_for(milliseconds(20));
        ::kill(a, SIGSTOP);
      }
      took = wait_until([&] { return holding(args.log, "held", b); }, milliseconds(4000));
    }
    CHECK_MESSAGE(took, "B never took over the run of the stopped worker");
    ::kill(a, SIGCONT);
    append_line(args.release, "go", true);
  } else {
    // FileStore: A's flock lives on while A is stopped; nobody advances the run.
    std::this_thread::sleep_for(4 * ttl);
    CHECK_MESSAGE(!holding(args.log, "held", b), "B took the run while A's flock was held");
    CHECK(store->history("held").size() == seen);
    ::kill(a, SIGCONT);
    append_line(args.release, "go", true);
  }
  const bool done = wait_until([&] { return unfinished(*store, ids) == 0; }, milliseconds(30000));
  if (leases_expire(spec))  // A finds out it lost the lease (or is told so at its next write)
    wait_until(
        [&] {
          for (const json& l : read_lines(args.acks))
            if (l.at("ev") == "lost" && l.at("pid") == a && l.at("run") == "held") return true;
          return false;
        },
        milliseconds(5000));
  stop_worker(a);
  stop_worker(b);
  INFO(kind << ": workers' stderr:\n" << text_of(args.err));
  CHECK_MESSAGE(done, unfinished(*store, ids) << " runs not ended 30 s after the release");
  // What A did to the held run after it was stopped: nothing, where leases expire; all of it
  // on FileStore.
  int a_commits = 0, b_commits = 0, a_effects = 0;
  bool a_lost = false;
  for (const json& l : read_lines(args.acks)) {
    if (l.at("run") != "held") continue;
    if (l.at("ev") == "commit" && l.at("seq").get<std::size_t>() >= seen)
      ++(l.at("pid") == a ? a_commits : b_commits);
    if (l.at("ev") == "effect" && l.at("pid") == a) ++a_effects;
    if (l.at("ev") == "lost" && l.at("pid") == a) a_lost = true;
  }
  int a_calls = 0;
  for (const json& l : read_lines(args.log))
    if (l.at("ev") == "call" && l.at("run") == "held" && l.at("pid") == a) ++a_calls;
  if (leases_expire(spec)) {
    CHECK_MESSAGE(a_commits == 0, "the stopped worker committed " << a_commits << " step(s)");
    CHECK_MESSAGE(a_effects == 0, "the stopped worker wrote " << a_effects << " effect record(s)");
    CHECK_MESSAGE(a_calls == 0,
                  "the stopped worker called the external system " << a_calls << " time(s)");
    CHECK(b_commits > 0);
    CHECK_MESSAGE(a_lost, "the stopped worker did not report the lease it lost");
  } else {
    CHECK(b_commits == 0);
    CHECK(a_commits > 0);
    CHECK(a_calls > 0);
  }
  const Findings f = check_invariants(*store, ids, args.log, args.acks);
  report(f, std::string(kind));
  CHECK(f.reconciliation == 0);
}

}  // namespace

#ifndef TRELLIS_CHAOS_POSTGRES
TEST_SUITE("chaos") {
  TEST_CASE("chaos: workers SIGKILLed at random lose no step and repeat no effect? FileStore") {
    kill_chaos("file");
  }
  TEST_CASE("chaos: workers SIGKILLed at random lose no step and repeat no effect? SqliteStore") {
    kill_chaos("sqlite");
  }
  TEST_CASE(
      "chaos: a worker stopped past its lease neither commits nor starts an effect? "
      "SqliteStore") {
    stop_chaos("sqlite");
  }
  TEST_CASE(
      "chaos: a worker stopped holding a flock keeps its run, then finishes it? "
      "FileStore") {
    stop_chaos("file");
  }
  TEST_CASE(
      "chaos: leases ignore the workers' run clocks, the stopped one 1 h behind? "
      "SqliteStore") {
    stop_chaos("sqlite", -std::chrono::hours(1), std::chrono::hours(1));
  }
  // A worker 1 h ahead that stops leaves its Running run due at once (kDueAtOnce), not 1 h
  // from now: the other takes it over when its lease expires.
  TEST_CASE(
      "chaos: leases ignore the workers' run clocks, the stopped one 1 h ahead? "
      "SqliteStore") {
    stop_chaos("sqlite", std::chrono::hours(1), -std::chrono::hours(1));
  }
  TEST_CASE("chaos: one worker under faketime 1 h behind breaks no invariant? SqliteStore") {
    if (faketime_library().empty()) {
      MESSAGE("SKIPPED: libfaketime not found (scripts/deps.sh installs faketime)");
      return;
    }
    kill_chaos("sqlite", "-1h");
  }
}
#else
// The PostgreSQL cases (trellis_chaos_postgres_tests, inside tests/support/with_postgres.sh:
// libpq's environment names a throw-away server).
TEST_SUITE("chaos") {
  TEST_CASE("chaos: workers SIGKILLed at random lose no step and repeat no effect? PostgresStore") {
    kill_chaos("postgres");
  }
  TEST_CASE(
      "chaos: a worker stopped past its lease neither commits nor starts an effect? "
      "PostgresStore") {
    stop_chaos("postgres");
  }
  TEST_CASE(
      "chaos: leases ignore the workers' run clocks, the stopped one 1 h behind? "
      "PostgresStore") {
    stop_chaos("postgres", -std::chrono::hours(1), std::chrono::hours(1));
  }
  TEST_CASE(
      "chaos: leases ignore the workers' run clocks, the stopped one 1 h ahead? "
      "PostgresStore") {
    stop_chaos("postgres", std::chrono::hours(1), -std::chrono::hours(1));
  }
  // The database's clock is the server's: a worker process whose wall clock is 1 h behind
  // (libfaketime) and is stopped past its lease loses it on time all the same.
  TEST_CASE(
      "chaos: a worker under faketime 1 h behind, stopped past its lease, neither commits nor "
      "starts an effect? PostgresStore") {
    if (faketime_library().empty()) {
      MESSAGE("SKIPPED: libfaketime not found (scripts/deps.sh installs faketime)");
      return;
    }
    stop_chaos("postgres", {}, {}, "-1h");
  }
  TEST_CASE(
      "chaos: connections terminated by the server at random lose no step and repeat no "
      "effect? PostgresStore") {
    Plan plan;
    plan.runs = trellis_test::scaled(100, 12);
    plan.terminations = trellis_test::scaled(100, 10);
    pool_chaos("postgres", plan);
  }
  // Needs fsync on (the ctest test trellis_chaos_postgres_restart runs with_postgres.sh with
  // WITH_POSTGRES_OPTIONS="-o fsync=on"): an acknowledged commit is on disk.
  TEST_CASE(
      "chaos: the server stopped -m immediate and restarted mid-run loses no acknowledged "
      "step? PostgresStore") {
    REQUIRE_MESSAGE(std::getenv("PGVERSION") != nullptr,
                    "run inside tests/support/with_postgres.sh (pg_virtualenv sets PGVERSION)");
    REQUIRE_MESSAGE(Server().value("SHOW fsync") == "on",
                    "fsync is off: run with WITH_POSTGRES_OPTIONS='-o fsync=on'");
    Plan plan;
    plan.runs = trellis_test::scaled(100, 12);
    plan.restart = true;
    pool_chaos("postgres", plan);
  }
}
#endif
