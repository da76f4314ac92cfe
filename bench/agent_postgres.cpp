/// @file
/// PostgresStore (issue 15, section 4), beside hand-written libpq baselines in the same binary.
/// It needs a server: bench/run_postgres.sh runs it inside a throw-away cluster (pg_virtualenv,
/// fsync on, synchronous_commit on: the settings a user's server has); run by hand, it uses
/// libpq's environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD) and works in schemas of
/// its own (`trellis_bench_*`), dropped at exit.
///
/// - `agent/postgres/commit`: one step commit, Store::commit of the run's next checkpoint with
///   the lease token (the three-step graph's checkpoint after its first step: a small state),
///   on one run whose lease the benchmark holds. Wall time per commit (UseRealTime).
/// - `baseline/libpq/upsert_insert`: the same work written by hand with plain libpq on the same
///   tables (a schema a PostgresStore created): one prepared statement, sent with
///   PQexecPrepared (one round trip, one implicit transaction), that updates the run's row only
///   if its newest seq, lease holder and epoch are the expected ones (and sets the same index
///   columns and lease end) and inserts the checkpoint row (the same record text and checksum
///   the store wrote, read back from its table) only when the update matched.
/// - `baseline/libpq/commits/clients:N` (N = 1, 2, 4, 8, 16): N threads, each on its own
///   connection and its own run, doing that baseline commit in a loop: the server's commits per
///   second with group commit (`commits_per_s`), the resource that bounds workers on many
///   machines.
/// - `agent/workers/PostgresStore/threads:N` (N = 1, 2, 4, 8): 1,000 short runs (three steps:
///   two Gotos and a Halt, a small state) enqueued before the timing, then a Worker with N pool
///   threads (and a pool of N connections) advances them all, as bench/agent_workers.cpp does
///   for the other stores.
/// - `baseline/run_each/PostgresStore`: the same 1,000 runs, each by Graph::run() in one thread.
/// - `agent/claim_latency/PostgresStore/poll_ms:200`: a run waits for a decision; an idle Worker
///   (one thread, poll 200 ms) runs; the time from record_decision() returning to the paused
///   node's next step starting, measured by the node (manual time). Target <= poll + 50 ms.
///
/// Counters: `time_per_step` (seconds; wall time per commit), `xacts_per_step` (write
/// transactions the server committed per step: the advance of its next transaction id, read on
/// a separate connection), `wal_bytes_per_step` (pg_current_wal_lsn advance), `steps_per_s`,
/// `cpu_per_wall` (this process's CPU time over wall time: 1.0 = one core busy on average),
/// `server_cpu_per_wall` (the server's processes, from /proc, over wall time; the server shares
/// the machine's cores with the benchmark) and `max_ms`. After the run, main() prints the
/// figures behind the targets (medians of the run's repetitions).

#include <sys/resource.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/operations.hpp>
#include <trellis/agent/postgres_store.hpp>
#include <trellis/agent/worker.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace ag = trellis::agent;
using namespace std::chrono_literals;

constexpr int kRuns = 1000;
constexpr int kSteps = 3;

// ---------------------------------------------------------------- libpq by hand

void ignore_notice(void*, const char*) {}

/// One connection (PQfinish at scope exit); libpq's environment; notices dropped.
struct Conn {
  PGconn* c = PQconnectdb("");
  Conn() { PQsetNoticeProcessor(c, &ignore_notice, nullptr); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() { PQfinish(c); }
  bool ok() const { return PQstatus(c) == CONNECTION_OK; }
  /// Simple-protocol SQL; false (and a message on stderr) on failure.
  bool exec(const std::string& sql) const {
    PGresult* r = PQexec(c, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    const bool good = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!good) std::fprintf(stderr, "error: %s: %s", sql.c_str(), PQresultErrorMessage(r));
    PQclear(r);
    return good;
  }
  /// The first column of the first row of `sql` (empty on failure or no row).
  std::string value(const std::string& sql) const {
    PGresult* r = PQexec(c, sql.c_str());
    std::string out;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
      out.assign(PQgetvalue(r, 0, 0), static_cast<std::size_t>(PQgetlength(r, 0, 0)));
    else
      std::fprintf(stderr, "error: %s: %s", sql.c_str(), PQresultErrorMessage(r));
    PQclear(r);
    return out;
  }
};

/// The connection the counters are read on (never one the measured code uses).
Conn* g_monitor = nullptr;

std::string fresh_schema(const std::string& stem) {
  static int next = 0;
  const std::string name = "trellis_bench_" + stem + "_" + std::to_string(next++);
  g_monitor->exec("DROP SCHEMA IF EXISTS " + name + " CASCADE");
  return name;
}

void drop_schema(const std::string& name) { g_monitor->exec("DROP SCHEMA " + name + " CASCADE"); }

/// Server-side figures: the next transaction id (every write transaction takes one), the WAL
/// position, and the CPU time of the server's processes.
struct ServerMark {
  double xid = 0;
  double wal = 0;
  std::map<int, double> cpu;  // by pid, seconds
};

double proc_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stod(f);
    if (i == 15) {
      stime = std::stod(f);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

ServerMark server_mark() {
  ServerMark m;
  m.xid = std::stod("0" + g_monitor->value("SELECT pg_snapshot_xmax(pg_current_snapshot())"));
  m.wal = std::stod("0" + g_monitor->value("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"));
  PGresult* r = PQexec(g_monitor->c, "SELECT pid FROM pg_stat_activity");
  if (PQresultStatus(r) == PGRES_TUPLES_OK)
    for (int i = 0; i < PQntuples(r); ++i) {
      const int pid = std::atoi(PQgetvalue(r, i, 0));
      m.cpu[pid] = proc_cpu_seconds(pid);
    }
  PQclear(r);
  return m;
}

/// The WAL fsyncs (pg_stat_wal.wal_sync) the server has counted: a backend adds its own to it
/// when it ends (or now and then), so a case reads it before it opens its connections and
/// after they have closed (settle()).
double wal_syncs() { return std::stod("0" + g_monitor->value("SELECT wal_sync FROM pg_stat_wal")); }
/// Lets the backends of closed connections end and report their counts.
void settle() { std::this_thread::sleep_for(300ms); }

/// What the server did between two marks.
struct ServerWork {
  double xacts = 0, wal_bytes = 0, cpu = 0, wal_syncs = 0;
  ServerWork& operator+=(const ServerWork& o) {
    xacts += o.xacts;
    wal_bytes += o.wal_bytes;
    cpu += o.cpu;
    wal_syncs += o.wal_syncs;
    return *this;
  }
};
ServerWork operator-(const ServerMark& end, const ServerMark& start) {
  ServerWork w{end.xid - start.xid, end.wal - start.wal, 0, 0};
  // A process that started in between counts from 0; one that ended in between is missed (the
  // measured code keeps its connections until after the end mark).
  for (const auto& [pid, cpu] : end.cpu) {
    const auto it = start.cpu.find(pid);
    w.cpu += cpu - (it == start.cpu.end() ? 0.0 : it->second);
  }
  return w;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// ---------------------------------------------------------------- the graph and its checkpoint

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

/// The three-step graph's checkpoints 0 (created) and 1 (after its first step), as a run on a
/// MemoryStore wrote them: what the commit case writes, with its seq advanced.
struct Shapes {
  ag::Checkpoint first, step;
  std::string record, checksum;  // checkpoint 1's row as PostgresStore wrote it
};
Shapes g_shapes;

ag::PostgresStore open_store(const std::string& schema, std::size_t connections) {
  ag::PostgresStoreOptions options;
  options.schema = schema;
  options.connections = std::max<std::size_t>(1, connections);
  return ag::PostgresStore(options);
}

bool measure_shapes() {
  ag::Graph<Small> g;
  build(g);
  ag::MemoryStore memory;
  g.run("run-0", Small{0, "a small state"}, memory);
  auto first = memory.checkpoint("run-0", 0);
  auto step = memory.checkpoint("run-0", 1);
  if (!first || !step) return false;
  g_shapes.first = *first;
  g_shapes.step = *step;
  // The row PostgresStore writes for it (the baseline inserts the same text).
  const std::string schema = fresh_schema("shape");
  {
    ag::PostgresStore store = open_store(schema, 1);
    store.create(g_shapes.first);
    ag::Lease lease = store.lease("run-0", "bench");
    store.commit(g_shapes.step, 0, lease.token());
  }
  g_shapes.record = g_monitor->value("SELECT record FROM " + schema + ".checkpoints WHERE seq=1");
  g_shapes.checksum =
      g_monitor->value("SELECT checksum FROM " + schema + ".checkpoints WHERE seq=1");
  drop_schema(schema);
  std::printf("checkpoint row: record %zu bytes, checksum %zu bytes\n", g_shapes.record.size(),
              g_shapes.checksum.size());
  return !g_shapes.record.empty() && !g_shapes.checksum.empty();
}

void set_server_counters(benchmark::State& st, const ServerWork& w, double steps, double wall) {
  if (steps > 0) {
    st.counters["xacts_per_step"] = w.xacts / steps;
    st.counters["wal_bytes_per_step"] = w.wal_bytes / steps;
    st.counters["wal_syncs_per_step"] = w.wal_syncs / steps;
  }
  if (wall > 0) st.counters["server_cpu_per_wall"] = w.cpu / wall;
}

// ---------------------------------------------------------------- 1. a step commit

void store_commit(benchmark::State& st) {
  const std::string schema = fresh_schema("commit");
  std::uint64_t seq = 0;
  double wall = 0;
  ServerWork work;
  settle();
  const double syncs0 = wal_syncs();  // (the case's 3 setup commits are counted too)
  {
    ag::PostgresStore store = open_store(schema, 1);
    store.create(g_shapes.first);
    ag::Lease lease = store.lease("run-0", "bench");
    ag::Checkpoint next = g_shapes.step;
    // Warm: the statement prepared on the pool's connection.
    next.seq = ++seq;
    store.commit(next, seq - 1, lease.token());
    const ServerMark m0 = server_mark();
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) {
      next.seq = ++seq;
      store.commit(next, seq - 1, lease.token());
    }
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    work = server_mark() - m0;
    auto newest = store.latest("run-0");
    trellis_bench::check(st, newest && newest->seq == seq, "the newest checkpoint is not the last");
  }
  settle();
  work.wal_syncs = wal_syncs() - syncs0;
  drop_schema(schema);
  const auto n = static_cast<double>(st.iterations());
  st.counters["time_per_step"] = benchmark::Counter(
      1, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  set_server_counters(st, work, n, wall);
}

/// The baseline's statement on a PostgresStore's tables: $1 run, $2 expected seq, $3 seq,
/// $4 holder, $5 epoch, $6 record, $7 checksum; the index columns as the store sets them.
std::string baseline_sql(const std::string& schema) {
  const ag::Checkpoint& c = g_shapes.step;
  auto lit = [](const std::string& s) {
    std::string out = "'";
    for (char ch : s) out += ch == '\'' ? std::string("''") : std::string(1, ch);
    return out + "'";
  };
  return "WITH u AS (UPDATE " + schema +
         ".runs SET newest_seq=$3::bigint, status='running', reason='none', finished=false, "
         "next_node=" +
         lit(c.next_node) + ", step=" + std::to_string(c.step) +
         ", updated_at=" + lit(c.created_at) + ", fingerprint=" + lit(c.fingerprint) +
         ", request='', due=" + lit(c.created_at) +
         ", priority=0, lease_until=now() + interval '15000 milliseconds' WHERE run_id=$1 AND "
         "newest_seq=$2::bigint AND lease_holder=$4 AND lease_epoch=$5::bigint RETURNING id) "
         "INSERT INTO " +
         schema + ".checkpoints(run, seq, record, checksum) SELECT id, $3::bigint, $6, $7 FROM u";
}

/// The baseline's lease holder: as long as a PostgresStore's (32 hex digits).
constexpr const char* kHolder = "0123456789abcdef0123456789abcdef";

/// A run in `schema` (tables a PostgresStore made) whose row is the size of the store's (the
/// same texts, a holder as long), its lease taken by hand, for the baseline; false on failure.
bool baseline_run(const Conn& c, const std::string& schema, const std::string& run_id) {
  const ag::Checkpoint& k = g_shapes.step;
  const std::string at = "'" + k.created_at + "'";
  // Checkpoint 0's row is a placeholder (its content is never read back).
  return c.exec("INSERT INTO " + schema +
                ".runs(run_id, newest_seq, status, next_node, step, created_at, updated_at, "
                "fingerprint, due, lease_holder, lease_epoch, lease_owner, lease_until) VALUES('" +
                run_id + "', 0, 'running', '" + k.next_node + "', " + std::to_string(k.step) +
                ", " + at + ", " + at + ", '" + k.fingerprint + "', " + at + ", '" + kHolder +
                "', 1, 'bench', now() + interval '15 seconds')") &&
         c.exec("INSERT INTO " + schema +
                ".checkpoints(run, seq, record, checksum) SELECT id, 0, 'x', 'x' FROM " + schema +
                ".runs WHERE run_id='" + run_id + "'");
}

/// One baseline commit on `c` (statement "commit" prepared); false when it failed or matched
/// no row.
bool baseline_commit(PGconn* c, const std::string& run_id, std::uint64_t seq) {
  const std::string expected = std::to_string(seq - 1), next = std::to_string(seq);
  const char* values[] = {
      run_id.c_str(),          expected.c_str(),         next.c_str(), kHolder, "1",
      g_shapes.record.c_str(), g_shapes.checksum.c_str()};
  PGresult* r = PQexecPrepared(c, "commit", 7, values, nullptr, nullptr, 0);
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK && std::string(PQcmdTuples(r)) == "1";
  if (!ok && PQresultStatus(r) != PGRES_COMMAND_OK)
    std::fprintf(stderr, "error: baseline commit: %s", PQresultErrorMessage(r));
  PQclear(r);
  return ok;
}

bool prepare_baseline(const Conn& c, const std::string& schema) {
  PGresult* r = PQprepare(c.c, "commit", baseline_sql(schema).c_str(), 7, nullptr);
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  if (!ok) std::fprintf(stderr, "error: prepare: %s", PQresultErrorMessage(r));
  PQclear(r);
  return ok;
}

/// A schema holding a PostgresStore's (empty) tables.
std::string store_tables(const std::string& stem) {
  const std::string schema = fresh_schema(stem);
  ag::PostgresStore store = open_store(schema, 1);
  return schema;
}

void libpq_upsert_insert(benchmark::State& st) {
  const std::string schema = store_tables("baseline");
  settle();
  const double syncs0 = wal_syncs();  // (the case's 3 setup commits are counted too)
  auto c = std::make_unique<Conn>();
  bool ok = c->ok() && baseline_run(*c, schema, "run-0") && prepare_baseline(*c, schema);
  std::uint64_t seq = 0;
  double wall = 0;
  ServerWork work;
  if (ok) {
    ok = baseline_commit(c->c, "run-0", ++seq);  // warm, as the store's case
    const ServerMark m0 = server_mark();
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) ok = baseline_commit(c->c, "run-0", ++seq) && ok;
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    work = server_mark() - m0;
  }
  c.reset();
  settle();
  work.wal_syncs = wal_syncs() - syncs0;
  const std::string stored =
      g_monitor->value("SELECT newest_seq FROM " + schema + ".runs WHERE run_id='run-0'");
  drop_schema(schema);
  if (!trellis_bench::check(st, ok, "a baseline commit failed")) return;
  if (!trellis_bench::check(st, stored == std::to_string(seq), "the run's row has the wrong seq"))
    return;
  const auto n = static_cast<double>(st.iterations());
  st.counters["time_per_step"] = benchmark::Counter(
      1, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  set_server_counters(st, work, n, wall);
}

/// N clients, each its own connection and run, committing in a loop: the server's commit rate.
void libpq_commits(benchmark::State& st) {
  const auto clients = static_cast<int>(st.range(0));
  constexpr int kPerClient = 400;
  const std::string schema = store_tables("clients");
  settle();
  const double syncs0 = wal_syncs();  // (each client's 2 setup commits are counted too)
  std::vector<std::unique_ptr<Conn>> conns;
  bool ok = true;
  for (int i = 0; i < clients; ++i) {
    conns.push_back(std::make_unique<Conn>());
    ok = ok && conns.back()->ok() &&
         baseline_run(*conns.back(), schema, "run-" + std::to_string(i)) &&
         prepare_baseline(*conns.back(), schema);
  }
  std::vector<std::uint64_t> seqs(static_cast<std::size_t>(clients), 0);
  double wall = 0, cpu = 0;
  ServerWork work;
  std::atomic<bool> all_ok{ok};
  for (auto _ : st) {
    if (!ok) break;
    const ServerMark m0 = server_mark();
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::jthread> threads;
    for (int i = 0; i < clients; ++i)
      threads.emplace_back([&, i] {
        const std::string run = "run-" + std::to_string(i);
        auto& seq = seqs[static_cast<std::size_t>(i)];
        for (int k = 0; k < kPerClient; ++k)
          if (!baseline_commit(conns[static_cast<std::size_t>(i)]->c, run, ++seq)) all_ok = false;
      });
    threads.clear();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu += cpu_seconds() - cpu0;
    work += server_mark() - m0;
  }
  conns.clear();
  settle();
  work.wal_syncs = wal_syncs() - syncs0;
  drop_schema(schema);
  if (!trellis_bench::check(st, all_ok.load(), "a baseline commit failed")) return;
  const double commits =
      static_cast<double>(clients * kPerClient) * static_cast<double>(st.iterations());
  st.counters["commits_per_s"] = benchmark::Counter(commits, benchmark::Counter::kIsRate);
  st.counters["cpu_per_wall"] = wall > 0 ? cpu / wall : 0;
  set_server_counters(st, work, commits, wall);
}

// ---------------------------------------------------------------- 2. workers

void workers(benchmark::State& st) {
  const auto threads = static_cast<std::size_t>(st.range(0));
  double wall = 0, cpu = 0;
  ServerWork work;
  for (auto _ : st) {
    st.PauseTiming();
    const std::string schema = fresh_schema("workers");
    ag::Graph<Small> g;
    build(g);
    {  // enqueued on connections of their own, closed before the counts start
      ag::PostgresStore setup = open_store(schema, 1);
      for (int i = 0; i < kRuns; ++i) g.enqueue("run-" + std::to_string(i), Small{}, setup);
    }
    settle();
    const double syncs0 = wal_syncs();
    {
      ag::PostgresStore store = open_store(schema, threads);
      std::atomic<int> done{0};
      ag::Worker w(store, {.name = "bench",
                           .threads = threads,
                           .poll = 20ms,
                           .run = {},
                           .on_event = [&](const ag::WorkerEvent& e) {
                             if (e.status == ag::RunStatus::Succeeded) ++done;
                           }});
      w.add(g);
      const ServerMark m0 = server_mark();
      st.ResumeTiming();
      const double cpu0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      w.start();
      while (done.load() < kRuns) std::this_thread::sleep_for(200us);
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cpu += cpu_seconds() - cpu0;
      st.PauseTiming();
      work += server_mark() - m0;
      w.stop();
      w.join();
      trellis_bench::check(st, w.stats().errors == 0 && w.stats().lost == 0,
                           "a worker reported errors or lost leases");
    }
    settle();
    work.wal_syncs += wal_syncs() - syncs0;
    drop_schema(schema);
    st.ResumeTiming();
  }
  const double steps = static_cast<double>(kRuns * kSteps) * static_cast<double>(st.iterations());
  st.counters["steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  st.counters["cpu_per_wall"] = wall > 0 ? cpu / wall : 0;
  set_server_counters(st, work, steps, wall);
}

void run_each(benchmark::State& st) {
  double wall = 0, cpu = 0;
  ServerWork work;
  for (auto _ : st) {
    st.PauseTiming();
    const std::string schema = fresh_schema("run_each");
    settle();
    const double syncs0 = wal_syncs();
    {
      ag::PostgresStore store = open_store(schema, 1);
      ag::Graph<Small> g;
      build(g);
      const ServerMark m0 = server_mark();
      st.ResumeTiming();
      const double cpu0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kRuns; ++i) {
        const auto out = g.run("run-" + std::to_string(i), Small{}, store);
        if (!out.succeeded()) trellis_bench::check(st, false, "a run did not succeed");
      }
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cpu += cpu_seconds() - cpu0;
      st.PauseTiming();
      work += server_mark() - m0;
    }
    settle();
    work.wal_syncs += wal_syncs() - syncs0;
    drop_schema(schema);
    st.ResumeTiming();
  }
  const double steps = static_cast<double>(kRuns * kSteps) * static_cast<double>(st.iterations());
  st.counters["steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  st.counters["cpu_per_wall"] = wall > 0 ? cpu / wall : 0;
  set_server_counters(st, work, steps, wall);
}

// ---------------------------------------------------------------- 3. claim latency

/// The paused node stamps when it runs again.
std::atomic<std::int64_t> g_stamp{0};

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
    g_stamp = steady_ns();
    return ag::Halt{};
  }
};

void claim_latency(benchmark::State& st) {
  const auto poll = std::chrono::milliseconds(st.range(0));
  const std::string schema = fresh_schema("claim");
  double max_ms = 0;
  {
    ag::PostgresStore store = open_store(schema, 2);
    ag::Graph<Small> g;
    g.add(std::make_unique<AskNode>()).entry("ask");
    ag::Worker w(store, {.name = "bench", .threads = 1, .poll = poll});
    w.add(g);
    w.start();
    int i = 0;
    for (auto _ : st) {
      const std::string id = "ask-" + std::to_string(i++);
      g.run(id, Small{}, store);              // paused
      std::this_thread::sleep_for(poll / 3);  // the worker is somewhere in its idle wait
      g_stamp = 0;
      ag::record_decision(store, id, ag::request_id(*store.latest(id)), ag::Approve{"bench", ""});
      const std::int64_t t0 = steady_ns();
      while (g_stamp.load() == 0) std::this_thread::sleep_for(100us);
      const double s = static_cast<double>(g_stamp.load() - t0) / 1e9;
      max_ms = std::max(max_ms, s * 1e3);
      st.SetIterationTime(s);
    }
    w.stop();
    w.join();
  }
  drop_schema(schema);
  st.counters["max_ms"] = max_ms;
}

// ---------------------------------------------------------------- registration, summary

/// Every repetition's real time per iteration (ms) and counters, by benchmark name.
class Recorder : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred && r.run_type == Run::RT_Iteration) {
        std::string name = r.run_name.function_name;
        if (!r.run_name.args.empty()) name += "/" + r.run_name.args;
        auto& f = figures_[name];
        f["ms"].push_back(r.GetAdjustedRealTime());
        for (const auto& [name, counter] : r.counters) f[name].push_back(counter.value);
      }
    ConsoleReporter::ReportRuns(runs);
  }
  std::optional<double> median(const std::string& bench, const std::string& what) const {
    const auto b = figures_.find(bench);
    if (b == figures_.end()) return std::nullopt;
    const auto it = b->second.find(what);
    if (it == b->second.end() || it->second.empty()) return std::nullopt;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> figures_;
};

void print_summary(const Recorder& r) {
  std::printf("\nsummary (medians of this run's repetitions):\n");
  const auto store = r.median("agent/postgres/commit", "time_per_step");
  const auto base = r.median("baseline/libpq/upsert_insert", "time_per_step");
  if (store && base && *base > 0)
    std::printf(
        "  PostgresStore step commit / bare libpq transaction: %.0f us / %.0f us = %.2fx "
        "(target <= 1.3x): %s\n",
        *store * 1e6, *base * 1e6, *store / *base, *store / *base <= 1.3 ? "met" : "MISSED");
  for (int n : {1, 2, 4, 8, 16})
    if (auto c = r.median("baseline/libpq/commits/clients:" + std::to_string(n), "commits_per_s"))
      std::printf(
          "  server commits/s, %2d clients (bare libpq): %.0f (WAL fsyncs per commit %.2f)\n", n,
          *c,
          r.median("baseline/libpq/commits/clients:" + std::to_string(n), "wal_syncs_per_step")
              .value_or(0));
  const auto one = r.median("agent/workers/PostgresStore/threads:1", "steps_per_s");
  for (int n : {1, 2, 4, 8}) {
    const std::string name = "agent/workers/PostgresStore/threads:" + std::to_string(n);
    const auto s = r.median(name, "steps_per_s");
    if (!s) continue;
    std::printf(
        "  workers, %d thread%s: %.0f steps/s (x%.2f of 1 thread), cpu_per_wall %.2f, "
        "server_cpu_per_wall %.2f, xacts/step %.2f, WAL fsyncs/step %.2f\n",
        n, n == 1 ? " " : "s", *s, one && *one > 0 ? *s / *one : 0.0,
        r.median(name, "cpu_per_wall").value_or(0),
        r.median(name, "server_cpu_per_wall").value_or(0),
        r.median(name, "xacts_per_step").value_or(0),
        r.median(name, "wal_syncs_per_step").value_or(0));
  }
  if (auto s = r.median("baseline/run_each/PostgresStore", "steps_per_s"))
    std::printf(
        "  Graph::run of each run, one thread: %.0f steps/s, xacts/step %.2f, WAL "
        "fsyncs/step %.2f\n",
        *s, r.median("baseline/run_each/PostgresStore", "xacts_per_step").value_or(0),
        r.median("baseline/run_each/PostgresStore", "wal_syncs_per_step").value_or(0));
  for (int poll : {200, 1000}) {
    const std::string latency = "agent/claim_latency/PostgresStore/poll_ms:" + std::to_string(poll);
    if (auto ms = r.median(latency, "ms"))
      std::printf(
          "  claim latency, poll %d ms: median %.1f ms, max %.1f ms (target <= %d ms): %s\n", poll,
          *ms, r.median(latency, "max_ms").value_or(0), poll + 50,
          r.median(latency, "max_ms").value_or(1e9) <= poll + 50 ? "met" : "MISSED");
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Conn monitor;
  if (!monitor.ok()) {
    std::fprintf(stderr,
                 "error: no PostgreSQL server (libpq's environment: PGHOST, PGPORT, ...): %s"
                 "run bench/run_postgres.sh, which starts a throw-away one\n",
                 PQerrorMessage(monitor.c));
    return 1;
  }
  g_monitor = &monitor;
  std::printf(
      "server: PostgreSQL %s, fsync %s, synchronous_commit %s, wal_sync_method %s, "
      "full_page_writes %s\n",
      monitor.value("SHOW server_version").c_str(), monitor.value("SHOW fsync").c_str(),
      monitor.value("SHOW synchronous_commit").c_str(),
      monitor.value("SHOW wal_sync_method").c_str(),
      monitor.value("SHOW full_page_writes").c_str());
  if (!measure_shapes()) {
    std::fprintf(stderr, "error: could not measure the checkpoint row\n");
    return 1;
  }
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("agent/postgres/commit", store_commit)
      ->Iterations(1000)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("baseline/libpq/upsert_insert", libpq_upsert_insert)
      ->Iterations(1000)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  RegisterBenchmark("baseline/libpq/commits", libpq_commits)
      ->ArgName("clients")
      ->Arg(1)
      ->Arg(2)
      ->Arg(4)
      ->Arg(8)
      ->Arg(16)
      ->Iterations(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("agent/workers/PostgresStore", workers)
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->Arg(4)
      ->Arg(8)
      ->Iterations(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("baseline/run_each/PostgresStore", run_each)
      ->Iterations(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("agent/claim_latency/PostgresStore", claim_latency)
      ->ArgName("poll_ms")
      ->Arg(200)
      ->Arg(1000)
      ->Iterations(20)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  std::fflush(stdout);
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();
  print_summary(recorder);
  return trellis_bench::failed.load() ? 1 : 0;
}
