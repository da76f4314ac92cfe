/// @file
/// Benchmarks of the durable agent graph (issue 5, section 7), per store (MemoryStore,
/// FileStore, SqliteStore with synchronous FULL), beside hand-written baselines in the same
/// binary that do the same disk work with no library:
///
/// - `agent/loop/<store>`: one run of a 1,000-step loop graph (one node `tick` going back to
///   itself with a counter, Halt at 1,000); counter `time_per_step`.
/// - `agent/three/<store>`: one run of draft -> review -> revise -> Halt; `time_per_step`
///   (the run's time / 3, its create, lease and first checkpoint included) and `time_per_run`.
/// - `agent/hitl/<store>`: draft -> approve -> revise, where approve interrupts with an
///   ApprovalRequest; one iteration is run() up to the interrupt, then resume() with Approve
///   to the end (the round trip of the LangGraph.js harness's `hitl`); `time_per_round_trip`.
/// - `agent/loop_4k/<store>`: the loop with an unchanged 4 KiB string in the state, and the
///   bytes it costs per step, measured after the timed loop on the last run: FileStore
///   `journal_bytes_per_step` (journal file size minus its first line, the run's creation, /
///   1,000) and `events_bytes_per_step` (the event log, not part of the commit); SqliteStore
///   `record_bytes_per_step` (SQL: sum of length(CAST(record AS BLOB)) over the run's
///   checkpoint rows after the first, / 1,000) and `db_bytes_per_step` (database file growth
///   over the timed runs, both ends after PRAGMA wal_checkpoint(TRUNCATE), / steps: b-tree
///   pages, the runs row, events and indexes included). MemoryStore keeps Checkpoint objects,
///   not encoded records, and the record codec is not public API: no bytes figure.
/// - `baseline/sqlite_upsert_commit`: BEGIN IMMEDIATE, one upsert of one row holding a
///   checkpoint of the loop graph as JSON (the same text the store is given), COMMIT, on a
///   WAL database with synchronous FULL, hand-written with the sqlite3 C API.
/// - `baseline/append_fdatasync`: one line of the loop's mean journal line size (measured on
///   an untimed FileStore run before anything is timed) write()n to an O_APPEND file, then
///   fdatasync, hand-written POSIX.
///
/// Every `time_per_*` counter is in seconds (an SI prefix on the console: `time_per_step=3.1u`
/// is 3.1 us) over the benchmark's own time: CPU time for MemoryStore, wall-clock
/// (`UseRealTime`) for the disk stores and baselines, whose work is waiting on fsync. Disk
/// cases run a fixed number of iterations (an fsync costs 0.1 to 10 ms depending on the disk
/// and its load). Files live in a fresh mkdtemp directory under $TRELLIS_BENCH_DIR (default
/// /tmp), removed at exit. Graphs and stores are built before the timed loop; outcomes are
/// checked after it (status, steps, final state, the store's newest checkpoint and its
/// history); a failed check reports the case with an error and the program exits 1. After the
/// run, the figures behind the targets are printed (medians of the run's repetitions).

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_support.hpp"

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/node.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
namespace ag = trellis::agent;

constexpr long kLoopSteps = 1000;
constexpr std::size_t kPayloadBytes = 4096;
constexpr std::int64_t kLoopIoIterations = 1;  // runs of 1,000 fsync'd steps
constexpr std::int64_t kRunIoIterations = 40;  // three-node runs, HITL round trips
constexpr std::int64_t kBaselineIterations = 300;
constexpr std::int64_t kMemoryResetEvery = 256;  // MemoryStore runs kept before a fresh store

// ---------------------------------------------------------------- states and nodes

struct LoopState {
  long i = 0;
  long limit = 0;
  long acc = 0;
  std::string payload;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LoopState, i, limit, acc, payload)

/// The loop of the LangGraph.js harness: i += 1, acc folds i in, back to itself until limit.
struct Tick final : ag::Node<LoopState> {
  std::string_view name() const override { return "tick"; }
  ag::NextStep run(LoopState& s, ag::RunContext&) override {
    s.acc = (s.acc * 31 + s.i) % 1000003;
    s.i += 1;
    if (s.i < s.limit) return ag::Goto{"tick"};
    return ag::Halt{};
  }
};

struct Doc {
  std::string topic;
  std::string text;
  std::vector<std::string> notes;
  int revision = 0;
  bool approved = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Doc, topic, text, notes, revision, approved)

struct Draft final : ag::Node<Doc> {
  std::string next;
  explicit Draft(std::string n) : next(std::move(n)) {}
  std::string_view name() const override { return "draft"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    s.text = "Draft about " + s.topic;
    s.revision = 1;
    return ag::Goto{next};
  }
};
struct Review final : ag::Node<Doc> {
  std::string_view name() const override { return "review"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    s.notes.push_back("review of r" + std::to_string(s.revision) + ": ok");
    return ag::Goto{"revise"};
  }
};
/// Interrupts with an approval request; rerun on resume, it records the decision.
struct ApproveGate final : ag::Node<Doc> {
  std::string_view name() const override { return "approve"; }
  ag::NextStep run(Doc& s, ag::RunContext& ctx) override {
    if (!ctx.resume()) {
      return ag::Interrupt{
          "approve draft?",
          ag::ApprovalRequest{"publish the draft", nlohmann::json{{"text", s.text}},
                              "the draft goes out as is", std::nullopt}};
    }
    s.approved = ctx.approved();
    s.notes.push_back(std::string("approval: ") + (s.approved ? "yes" : "no"));
    return ag::Goto{"revise"};
  }
};
struct Revise final : ag::Node<Doc> {
  std::string_view name() const override { return "revise"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    s.text += s.approved ? " (approved)" : " (revised)";
    s.revision += 1;
    return ag::Halt{};
  }
};

// ---------------------------------------------------------------- setup

using trellis_bench::check;

/// The run's scratch directory; fresh() names a new file in it.
class ScratchDir : public trellis_bench::ScratchDir {
 public:
  ScratchDir() : trellis_bench::ScratchDir("trellis-bench-agent") {}
  std::filesystem::path fresh(const std::string& stem, const char* extension = "") {
    return trellis_bench::ScratchDir::fresh(stem, extension);
  }
};

ScratchDir* g_dir = nullptr;

enum class Kind { memory, file, sqlite };
constexpr const char* kind_name(Kind k) {
  return k == Kind::memory ? "MemoryStore" : k == Kind::file ? "FileStore" : "SqliteStore";
}

/// A fresh store of kind `k`, in its own file or directory.
std::unique_ptr<ag::Store> make_store(Kind k) {
  switch (k) {
    case Kind::memory:
      return std::make_unique<ag::MemoryStore>();
    case Kind::file:
      return std::make_unique<ag::FileStore>(g_dir->fresh("file-store"));
    case Kind::sqlite:
      return std::make_unique<ag::SqliteStore>(
          g_dir->fresh("sqlite-store", ".db"),
          ag::SqliteStoreOptions{.synchronous = ag::SqliteSynchronous::full});
  }
  return nullptr;
}

std::string fresh_run_id() {
  static std::uint64_t next = 0;
  return "run-" + std::to_string(next++);
}

/// Counter: the benchmark's time (CPU or real, as the case is timed) per `per_iteration` units.
benchmark::Counter time_per(double per_iteration) {
  return benchmark::Counter(
      per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// MemoryStore keeps every checkpoint of every run: a fresh store now and then (untimed) keeps
/// memory bounded over Google Benchmark's automatic iteration counts.
void maybe_reset(benchmark::State& st, Kind k, std::unique_ptr<ag::Store>& store,
                 std::int64_t& runs, std::int64_t every) {
  if (k != Kind::memory || ++runs % every != 0) return;
  st.PauseTiming();
  store = make_store(k);
  st.ResumeTiming();
}

/// The newest checkpoint and history of `run_id` after a run (outside the timed loop).
bool stored_run_ok(ag::Store& store, const std::string& run_id, std::uint64_t steps,
                   std::size_t checkpoints) {
  const std::optional<ag::Checkpoint> cp = store.latest(run_id);
  if (!cp || cp->status != ag::RunStatus::Succeeded || cp->step != steps) return false;
  return store.history(run_id).size() == checkpoints;
}

std::uint64_t bytes_of(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

/// Size of the first line of `p` (newline included), 0 if unreadable.
std::uint64_t first_line_size(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string line;
  if (!std::getline(in, line)) return 0;
  return line.size() + 1;
}

// ---------------------------------------------------------------- SQLite helpers (read side)

/// A second connection to a store's database, for measuring it between timed loops.
class SqliteProbe {
 public:
  explicit SqliteProbe(const fs::path& db) : path_(db) {
    if (sqlite3_open_v2(db.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
    }
  }
  ~SqliteProbe() { sqlite3_close(db_); }
  SqliteProbe(const SqliteProbe&) = delete;
  SqliteProbe& operator=(const SqliteProbe&) = delete;
  bool ok() const { return db_ != nullptr; }

  /// Database file size after the WAL is checkpointed into it and truncated (0: failed).
  std::uint64_t checkpointed_size() {
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, &log, &done) !=
        SQLITE_OK)
      return 0;
    return bytes_of(path_);
  }

  /// Bytes of the checkpoint records of `run_id` with seq > 0 (-1: failed).
  std::int64_t record_bytes(const std::string& run_id) {
    sqlite3_stmt* s = nullptr;
    const char* sql =
        "SELECT coalesce(sum(length(CAST(c.record AS BLOB))), 0) FROM checkpoints c "
        "JOIN runs r ON r.id = c.run WHERE r.run_id = ?1 AND c.seq > 0";
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return -1;
    sqlite3_bind_text(s, 1, run_id.c_str(), -1, SQLITE_TRANSIENT);
    std::int64_t n = -1;
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  }

 private:
  fs::path path_;
  sqlite3* db_ = nullptr;
};

// ---------------------------------------------------------------- graphs

void build_loop(ag::Graph<LoopState>& g) { g.add<Tick>().entry("tick").max_steps(kLoopSteps); }
void build_three(ag::Graph<Doc>& g) {
  g.add<Draft>("review").add<Review>().add<Revise>().entry("draft").max_steps(10);
}
void build_hitl(ag::Graph<Doc>& g) {
  g.add<Draft>("approve").add<ApproveGate>().add<Revise>().entry("draft").max_steps(10);
}

// ---------------------------------------------------------------- the agent cases

/// The loop: one run of 1,000 steps per iteration; `payload` bytes of unchanged state.
void loop_case(benchmark::State& st, Kind k, std::size_t payload) {
  ag::Graph<LoopState> g;
  build_loop(g);
  std::unique_ptr<ag::Store> store = make_store(k);
  const LoopState initial{0, kLoopSteps, 0, std::string(payload, 'x')};
  // SqliteStore: the database size before the timed runs (its schema, already created).
  std::optional<SqliteProbe> probe;
  std::uint64_t db_before = 0;
  if (k == Kind::sqlite) {
    probe.emplace(static_cast<ag::SqliteStore&>(*store).path());
    if (!check(st, probe->ok(), "cannot open the store's database")) return;
    db_before = probe->checkpointed_size();
  }
  std::string run_id;
  bool ok = true;
  std::int64_t runs = 0;
  for (auto _ : st) {
    maybe_reset(st, k, store, runs, 1);
    run_id = fresh_run_id();
    ag::Outcome<LoopState> out = g.run(run_id, initial, *store);
    ok = out.succeeded() && out.steps == static_cast<std::uint64_t>(kLoopSteps) && ok;
    benchmark::DoNotOptimize(out);
  }
  if (!check(st, ok, "a loop run did not succeed after 1,000 steps")) return;
  if (!check(st, stored_run_ok(*store, run_id, kLoopSteps, kLoopSteps + 1),
             "the store's newest checkpoint or history is wrong"))
    return;
  const std::optional<ag::Checkpoint> cp = store->latest(run_id);
  const LoopState last = g.decode_state(*cp);
  if (!check(st, last.i == kLoopSteps && last.payload.size() == payload, "wrong final state"))
    return;
  st.counters["time_per_step"] = time_per(kLoopSteps);
  const double steps = static_cast<double>(kLoopSteps);
  if (k == Kind::file) {
    const fs::path dir = static_cast<ag::FileStore&>(*store).run_directory(run_id);
    const fs::path journal = dir / "journal.jsonl";
    const std::uint64_t size = bytes_of(journal), first = first_line_size(journal);
    if (!check(st, size > first && first > 0, "cannot measure the journal")) return;
    st.counters["journal_bytes_per_step"] = static_cast<double>(size - first) / steps;
    st.counters["events_bytes_per_step"] =
        static_cast<double>(bytes_of(dir / "events.jsonl")) / steps;
  } else if (k == Kind::sqlite) {
    const std::int64_t records = probe->record_bytes(run_id);
    const std::uint64_t db_after = probe->checkpointed_size();
    if (!check(st, records > 0 && db_before > 0 && db_after >= db_before,
               "cannot measure the database"))
      return;
    st.counters["record_bytes_per_step"] = static_cast<double>(records) / steps;
    st.counters["db_bytes_per_step"] =
        static_cast<double>(db_after - db_before) / (steps * static_cast<double>(st.iterations()));
  }
}

/// draft -> review -> revise: one run (3 steps) per iteration.
void three_case(benchmark::State& st, Kind k) {
  ag::Graph<Doc> g;
  build_three(g);
  std::unique_ptr<ag::Store> store = make_store(k);
  const Doc initial{.topic = "checkpoints", .text = {}, .notes = {}};
  std::string run_id;
  bool ok = true;
  std::int64_t runs = 0;
  for (auto _ : st) {
    maybe_reset(st, k, store, runs, kMemoryResetEvery);
    run_id = fresh_run_id();
    ag::Outcome<Doc> out = g.run(run_id, initial, *store);
    ok = out.succeeded() && out.steps == 3 && out.state->revision == 2 && ok;
    benchmark::DoNotOptimize(out);
  }
  if (!check(st, ok, "a three-node run did not succeed")) return;
  if (!check(st, stored_run_ok(*store, run_id, 3, 4), "the store's newest checkpoint is wrong"))
    return;
  const Doc last = g.decode_state(*store->latest(run_id));
  if (!check(st, last.text == "Draft about checkpoints (revised)" && last.notes.size() == 1,
             "wrong final state"))
    return;
  st.counters["time_per_step"] = time_per(3);
  st.counters["time_per_run"] = time_per(1);
}

/// draft -> approve (interrupt) ... resume(Approve) -> approve -> revise: one round trip.
void hitl_case(benchmark::State& st, Kind k) {
  ag::Graph<Doc> g;
  build_hitl(g);
  std::unique_ptr<ag::Store> store = make_store(k);
  const Doc initial{.topic = "checkpoints", .text = {}, .notes = {}};
  const ag::Resume decision = ag::Approve{.reviewer = "bench"};
  std::string run_id;
  bool ok = true;
  std::int64_t runs = 0;
  for (auto _ : st) {
    maybe_reset(st, k, store, runs, kMemoryResetEvery);
    run_id = fresh_run_id();
    ag::Outcome<Doc> first = g.run(run_id, initial, *store);
    ok = first.interrupted() && first.interrupt && first.interrupt->approval && ok;
    ag::Outcome<Doc> done = g.resume(run_id, *store, decision);
    ok = done.succeeded() && done.state->approved && done.state->revision == 2 && ok;
    benchmark::DoNotOptimize(done);
  }
  if (!check(st, ok, "a round trip did not pause, then succeed approved")) return;
  // create, draft, approve (interrupt), approve (after the decision), revise.
  if (!check(st, stored_run_ok(*store, run_id, 4, 5), "the store's newest checkpoint is wrong"))
    return;
  st.counters["time_per_round_trip"] = time_per(1);
}

// ---------------------------------------------------------------- baselines (by hand)

namespace baseline {

/// The JSON text of a loop-graph checkpoint (as the graph gives it to the store), and the mean
/// journal line FileStore appends per loop step; measured once, untimed, before the cases.
struct Shapes {
  std::string checkpoint_json;
  std::size_t journal_line = 0;
};
Shapes g_shapes;

void measure_shapes() {
  ag::Graph<LoopState> g;
  build_loop(g);
  const LoopState initial{0, kLoopSteps, 0, {}};
  {
    ag::MemoryStore store;
    g.run("shape", initial, store);
    std::optional<ag::Checkpoint> cp = store.checkpoint("shape", kLoopSteps / 2);
    if (cp) g_shapes.checkpoint_json = nlohmann::json(*cp).dump();
  }
  {
    ag::FileStore store(g_dir->fresh("shape-file"), ag::FileStoreOptions{.sync = false});
    g.run("shape", initial, store);
    const fs::path journal = store.run_directory("shape") / "journal.jsonl";
    const std::uint64_t size = bytes_of(journal), first = first_line_size(journal);
    if (size > first) g_shapes.journal_line = static_cast<std::size_t>((size - first) / kLoopSteps);
  }
  if (g_shapes.checkpoint_json.empty() || g_shapes.journal_line < 2) {
    std::fprintf(stderr, "error: could not measure the checkpoint and journal line sizes\n");
    std::exit(1);
  }
  std::printf("baseline shapes: checkpoint JSON %zu bytes, mean journal line %zu bytes\n",
              g_shapes.checkpoint_json.size(), g_shapes.journal_line);
}

bool exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

/// One row per run, upserted with its newest checkpoint in one transaction per iteration.
void sqlite_upsert_commit(benchmark::State& st) {
  const fs::path path = g_dir->fresh("raw-sqlite", ".db");
  sqlite3* db = nullptr;
  sqlite3_stmt *begin = nullptr, *upsert = nullptr, *commit = nullptr;
  bool ok = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr) == SQLITE_OK &&
            exec(db, "PRAGMA journal_mode=WAL") && exec(db, "PRAGMA synchronous=FULL") &&
            exec(db,
                 "CREATE TABLE runs(run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, "
                 "checkpoint TEXT NOT NULL)") &&
            sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr) == SQLITE_OK &&
            sqlite3_prepare_v2(db,
                               "INSERT INTO runs(run_id, seq, checkpoint) VALUES(?1, ?2, ?3) "
                               "ON CONFLICT(run_id) DO UPDATE SET seq = excluded.seq, "
                               "checkpoint = excluded.checkpoint",
                               -1, &upsert, nullptr) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr) == SQLITE_OK;
  const std::string& row = baseline::g_shapes.checkpoint_json;
  std::int64_t seq = 0;
  if (ok) {
    for (auto _ : st) {
      ++seq;
      bool step = sqlite3_step(begin) == SQLITE_DONE;
      sqlite3_reset(begin);
      sqlite3_bind_text(upsert, 1, "run-0", -1, SQLITE_STATIC);
      sqlite3_bind_int64(upsert, 2, seq);
      sqlite3_bind_text(upsert, 3, row.data(), static_cast<int>(row.size()), SQLITE_STATIC);
      step = sqlite3_step(upsert) == SQLITE_DONE && step;
      sqlite3_reset(upsert);
      step = sqlite3_step(commit) == SQLITE_DONE && step;
      sqlite3_reset(commit);
      ok = step && ok;
    }
  }
  // Check: the row holds the last seq, and synchronous really is FULL (2).
  std::int64_t stored = -1, sync = -1;
  sqlite3_stmt* q = nullptr;
  if (db != nullptr &&
      sqlite3_prepare_v2(db, "SELECT seq FROM runs", -1, &q, nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    stored = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  q = nullptr;
  if (db != nullptr && sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &q, nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    sync = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_finalize(begin);
  sqlite3_finalize(upsert);
  sqlite3_finalize(commit);
  sqlite3_close(db);
  if (!check(st, ok, "a raw SQLite commit failed")) return;
  if (!check(st, stored == seq && sync == 2, "wrong row or synchronous setting")) return;
  st.counters["time_per_step"] = time_per(1);
}

bool write_all(int fd, const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/// One journal-sized line appended and fdatasync'd per iteration.
void append_fdatasync(benchmark::State& st) {
  const fs::path file = g_dir->fresh("raw-journal", ".jsonl");
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (!check(st, fd >= 0, "cannot open " + file.string())) return;
  // FileStore fsyncs the directory once when it creates a run, outside the steps.
  const int dfd = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  std::string line(baseline::g_shapes.journal_line - 1, 'x');
  line += '\n';
  std::uint64_t bytes = 0;
  bool ok = true;
  for (auto _ : st) {
    ok = write_all(fd, line.data(), line.size()) && ::fdatasync(fd) == 0 && ok;
    bytes += line.size();
  }
  ::close(fd);
  if (!check(st, ok, "a raw append failed")) return;
  if (!check(st, bytes_of(file) == bytes, "wrong journal size")) return;
  st.counters["time_per_step"] = time_per(1);
}

}  // namespace baseline

// ---------------------------------------------------------------- registration, summary

/// Counters of every (non-aggregate) run, by benchmark name, for the summary of targets.
std::map<std::string, std::map<std::string, std::vector<double>>> g_figures;

/// Records every run's counters, then hands the runs to the display reporter that
/// --benchmark_format asks for (console by default).
class Recorder : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      for (const auto& [name, counter] : r.counters)
        g_figures[r.run_name.function_name][name].push_back(counter.value);
    }
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  benchmark::BenchmarkReporter* inner_ = benchmark::CreateDefaultDisplayReporter();  // not owned
};

std::optional<double> median(const std::string& bench, const std::string& counter) {
  auto b = g_figures.find(bench);
  if (b == g_figures.end()) return std::nullopt;
  auto c = b->second.find(counter);
  if (c == b->second.end() || c->second.empty()) return std::nullopt;
  std::vector<double> v = c->second;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void register_all() {
  using benchmark::RegisterBenchmark;
  // Baselines first, each right before the store it is compared with (fsync costs drift).
  for (Kind k : {Kind::memory, Kind::sqlite, Kind::file}) {
    const std::string store = kind_name(k);
    const bool disk = k != Kind::memory;
    if (k == Kind::sqlite)
      RegisterBenchmark("baseline/sqlite_upsert_commit", baseline::sqlite_upsert_commit)
          ->Iterations(kBaselineIterations)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    if (k == Kind::file)
      RegisterBenchmark("baseline/append_fdatasync", baseline::append_fdatasync)
          ->Iterations(kBaselineIterations)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    auto* loop = RegisterBenchmark(("agent/loop/" + store).c_str(),
                                   [k](benchmark::State& st) { loop_case(st, k, 0); });
    auto* three = RegisterBenchmark(("agent/three/" + store).c_str(),
                                    [k](benchmark::State& st) { three_case(st, k); });
    auto* hitl = RegisterBenchmark(("agent/hitl/" + store).c_str(),
                                   [k](benchmark::State& st) { hitl_case(st, k); });
    auto* loop4k = RegisterBenchmark(("agent/loop_4k/" + store).c_str(), [k](benchmark::State& st) {
      loop_case(st, k, kPayloadBytes);
    });
    for (auto* b : {loop, three, hitl, loop4k}) {
      b->Unit(benchmark::kMicrosecond);
      if (disk) b->UseRealTime();
    }
    if (disk) {
      loop->Iterations(kLoopIoIterations);
      loop4k->Iterations(kLoopIoIterations);
      three->Iterations(kRunIoIterations);
      hitl->Iterations(kRunIoIterations);
    }
  }
}

void print_targets() {
  std::printf("\ntargets (medians of this run; times per step in us):\n");
  auto us = [](std::optional<double> s) { return s ? *s * 1e6 : -1.0; };
  auto line = [](const char* label, std::optional<double> value, double limit, const char* unit,
                 const std::string& extra) {
    if (!value) {
      std::printf("  %-44s %10s  (target <= %g%s)  no figure\n", label, "-", limit, unit);
      return;
    }
    std::printf("  %-44s %10.2f%s (target <= %g%s)  %s%s\n", label, *value, unit, limit, unit,
                *value <= limit ? "met" : "MISSED", extra.c_str());
  };
  line(
      "MemoryStore loop, us per step",
      [&]() -> std::optional<double> {
        auto v = median("agent/loop/MemoryStore", "time_per_step");
        return v ? std::optional(*v * 1e6) : std::nullopt;
      }(),
      5, "", "");
  char extra[128];
  for (auto [label, store, base] :
       {std::tuple{"SqliteStore loop / sqlite_upsert_commit", "agent/loop/SqliteStore",
                   "baseline/sqlite_upsert_commit"},
        std::tuple{"FileStore loop / append_fdatasync", "agent/loop/FileStore",
                   "baseline/append_fdatasync"}}) {
    auto s = median(store, "time_per_step");
    auto b = median(base, "time_per_step");
    std::optional<double> ratio;
    if (s && b && *b > 0) ratio = *s / *b;
    std::snprintf(extra, sizeof extra, "  [%.0f us vs %.0f us per step]", us(s), us(b));
    line(label, ratio, 1.3, "x", extra);
  }
  auto hitl = median("agent/hitl/MemoryStore", "time_per_round_trip");
  line("MemoryStore interrupt + resume, us", hitl ? std::optional(*hitl * 1e6) : std::nullopt, 1000,
       "", "");
  line("FileStore 4 KiB unchanged, journal bytes/step",
       median("agent/loop_4k/FileStore", "journal_bytes_per_step"), 400, "", "");
  line("SqliteStore 4 KiB unchanged, record bytes/step",
       median("agent/loop_4k/SqliteStore", "record_bytes_per_step"), 400, "", "");
  if (auto db = median("agent/loop_4k/SqliteStore", "db_bytes_per_step"))
    std::printf("  %-44s %10.0f  (reported: file growth after wal_checkpoint, events included)\n",
                "SqliteStore 4 KiB unchanged, db bytes/step", *db);
}

}  // namespace

int main(int argc, char** argv) {
  ScratchDir dir;
  g_dir = &dir;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("scratch directory: %s\n", dir.path().c_str());
  baseline::measure_shapes();
  register_all();
  std::fflush(stdout);
  Recorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  std::cout.flush();
  benchmark::Shutdown();
  print_targets();
  return trellis_bench::failed.load() ? 1 : 0;
}
