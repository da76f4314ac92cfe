/// @file
/// Benchmarks of the durable agent graph (issue 5, section 7; effects: issue 6, section 4), per
/// store (MemoryStore, FileStore, SqliteStore with synchronous FULL), beside hand-written
/// baselines in the same binary that do the same disk work with no library:
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
/// - `agent/effect/<store>`: one run of a loop graph whose one node makes one effect per step
///   (`ctx.effect`, at_most_once: its started record and its receipt, two durable commits) and
///   goes back to itself (1,000 steps on MemoryStore, 200 on the disk stores); counters
///   `time_per_effect` (time inside the ctx.effect call, bracketed in the node: thread CPU time
///   for MemoryStore, steady wall-clock for the disk stores) and `time_per_step` (effect
///   included). Registered right after `agent/loop/<store>`, whose `time_per_step` is the bare
///   step commit the effect is compared with.
/// - `agent/effect_replay/<store>/<N>`: a replayed effect (receipt hit). One node makes N
///   effects in one step and throws a transient error; the retry (same step, same keys, no
///   backoff) gets all N results from their receipts. Only those N replayed calls are timed
///   (manual time, the node's clock as above); counter `time_per_effect`. N = 1, 10, 100 on
///   MemoryStore, 10 on the disk stores.
/// - `effect_parts/...` (MemoryStore, CPU time): a replay's parts alone, to see where its time
///   goes: `effect_key`, its canonical JSON alone (`key_json`), SHA-256 through one-shot
///   EVP_Digest (`sha256`) and through a reused context (`sha256_reused`), the receipt lookup
///   (`store_lookup/MemoryStore`), and the effect_replayed event as the graph emits it
///   (`event/MemoryStore`: detail JSON, timestamp, record JSON, store log, bus) and its parts
///   (`event/timestamp`, `event/json`, `event/append/MemoryStore`, `event/bus`).
/// - `baseline/receipt_hit`: the floor of a replay by hand: the same key bytes, SHA-256, hex,
///   a std::unordered_map lookup and a copy of the stored result.
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
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bench_support.hpp"

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/node.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/signals2/event_bus.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
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
#include <unordered_map>
#include <utility>
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

/// The timed loop of the whole-run cases: one run of `g` from `initial` per iteration, each
/// under a fresh run id (on MemoryStore a fresh store every run, untimed). Returns the last run
/// id, or nothing when a run did not succeed after `steps` steps (the failure is reported).
template <class S>
std::optional<std::string> run_per_iteration(benchmark::State& st, Kind k, ag::Graph<S>& g,
                                             std::unique_ptr<ag::Store>& store, const S& initial,
                                             std::uint64_t steps, const char* what) {
  std::string run_id;
  bool ok = true;
  std::int64_t runs = 0;
  for (auto _ : st) {
    maybe_reset(st, k, store, runs, 1);
    run_id = fresh_run_id();
    ag::Outcome<S> out = g.run(run_id, initial, *store);
    ok = out.succeeded() && out.steps == steps && ok;
    benchmark::DoNotOptimize(out);
  }
  if (!check(st, ok, what)) return std::nullopt;
  return run_id;
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
  const std::optional<std::string> ran =
      run_per_iteration(st, k, g, store, initial, static_cast<std::uint64_t>(kLoopSteps),
                        "a loop run did not succeed after 1,000 steps");
  if (!ran) return;
  const std::string& run_id = *ran;
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
  // create, draft, approve (interrupt), the decision, approve (after it), revise.
  if (!check(st, stored_run_ok(*store, run_id, 4, 6), "the store's newest checkpoint is wrong"))
    return;
  st.counters["time_per_round_trip"] = time_per(1);
}

// ---------------------------------------------------------------- effects (issue 6, section 4)

constexpr long kEffectSteps = 1000;               // MemoryStore: steps (one effect each) per run
constexpr long kEffectIoSteps = 200;              // disk stores: 600 durable commits per run
constexpr std::int64_t kReplayIoIterations = 20;  // disk stores: runs whose receipts are replayed

struct PayState {
  long i = 0;
  long limit = 0;
  std::string last;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PayState, i, limit, last)

/// Time spent inside ctx.effect calls (the node brackets them), on the clock the case is timed
/// by: the thread's CPU time for MemoryStore (as its benchmark time), steady wall-clock time for
/// the disk stores (their work is waiting on fsync).
struct EffectTimer {
  bool cpu = false;
  double seconds = 0;
  std::int64_t calls = 0;

  explicit EffectTimer(Kind k) : cpu(k == Kind::memory) {}
  std::int64_t now_ns() const {
    if (cpu) {
      timespec ts{};
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void add(std::int64_t since_ns, std::int64_t n) {
    seconds += static_cast<double>(now_ns() - since_ns) * 1e-9;
    calls += n;
  }
};

/// The effect both cases make: a refund-like call, its arguments and a small result.
nlohmann::json pay_args(long i) { return {{"order", "o-1"}, {"cents", 2500 + i}}; }
nlohmann::json pay(const ag::EffectCall& call) {
  return nlohmann::json{{"refund_id", call.key.substr(0, 8)}};
}

/// One effect per step (at_most_once, so two durable commits), then back to itself until limit.
struct PayOnce final : ag::Node<PayState> {
  EffectTimer& timer;
  explicit PayOnce(EffectTimer& t) : timer(t) {}
  std::string_view name() const override { return "pay"; }
  ag::NextStep run(PayState& s, ag::RunContext& ctx) override {
    const std::int64_t t0 = timer.now_ns();
    nlohmann::json r = ctx.effect("refund", pay_args(s.i), ag::EffectPolicy::at_most_once, pay);
    timer.add(t0, 1);
    s.last = r.at("refund_id").get<std::string>();
    s.i += 1;
    if (s.i < s.limit) return ag::Goto{"pay"};
    return ag::Halt{};
  }
};

/// `limit` effects in one step. The first try makes them (receipts stored), then throws a
/// transient error; the retry (same step, so the same keys) gets every result from its
/// receipt, and the node times those replayed calls alone.
struct PayMany final : ag::Node<PayState> {
  EffectTimer& timer;
  bool replayed_ok = true;
  explicit PayMany(EffectTimer& t) : timer(t) {}
  std::string_view name() const override { return "pay"; }
  ag::NextStep run(PayState& s, ag::RunContext& ctx) override {
    if (ctx.attempt() == 0) {
      for (long i = 0; i < s.limit; ++i)
        ctx.effect("refund", pay_args(i), ag::EffectPolicy::at_most_once, pay);
      throw ag::transient_error("bench: retry to replay the receipts");
    }
    std::vector<nlohmann::json> args;  // built before the clock starts
    args.reserve(static_cast<std::size_t>(s.limit));
    for (long i = 0; i < s.limit; ++i) args.push_back(pay_args(i));
    std::int64_t called = 0;
    auto counting = [&called](const ag::EffectCall& c) {
      ++called;
      return pay(c);
    };
    std::vector<nlohmann::json> results(static_cast<std::size_t>(s.limit));
    const std::int64_t t0 = timer.now_ns();
    for (long i = 0; i < s.limit; ++i)
      results[static_cast<std::size_t>(i)] =
          ctx.effect("refund", std::move(args[static_cast<std::size_t>(i)]),
                     ag::EffectPolicy::at_most_once, counting);
    timer.add(t0, s.limit);
    replayed_ok = called == 0 && results.back().contains("refund_id") && replayed_ok;
    s.last = results.back().at("refund_id").get<std::string>();
    s.i = s.limit;
    return ag::Halt{};
  }
};

/// One retry, at once: the replay of PayMany's receipts.
const ag::RetryPolicy kReplayRetry{.attempts = 2,
                                   .initial_backoff = std::chrono::milliseconds(0),
                                   .multiplier = 1,
                                   .max_backoff = std::chrono::milliseconds(0),
                                   .jitter = 0};

/// One ctx.effect that runs, per step: its started record and its receipt, two durable commits
/// (timed in the node), beside the step's own checkpoint commit. Counters: time_per_step (the
/// benchmark's time per step, effect included) and time_per_effect (the time inside the
/// ctx.effect call, on the EffectTimer's clock).
void effect_case(benchmark::State& st, Kind k) {
  const long steps = k == Kind::memory ? kEffectSteps : kEffectIoSteps;
  EffectTimer timer(k);
  ag::Graph<PayState> g;
  g.add<PayOnce>(timer).entry("pay").max_steps(static_cast<std::uint64_t>(steps));
  std::unique_ptr<ag::Store> store = make_store(k);
  const PayState initial{0, steps, {}};
  const std::optional<std::string> ran = run_per_iteration(
      st, k, g, store, initial, static_cast<std::uint64_t>(steps), "an effect run did not succeed");
  if (!ran) return;
  const std::string& run_id = *ran;
  if (!check(st,
             stored_run_ok(*store, run_id, static_cast<std::uint64_t>(steps),
                           static_cast<std::size_t>(steps) + 1),
             "the store's newest checkpoint or history is wrong"))
    return;
  const std::vector<ag::EffectRecord> effects = store->effects(run_id);
  const bool receipts_ok =
      effects.size() == static_cast<std::size_t>(steps) &&
      std::all_of(effects.begin(), effects.end(),
                  [](const ag::EffectRecord& r) {
                    return r.status == ag::EffectStatus::succeeded && r.issued == 1 &&
                           r.result.contains("refund_id");
                  }) &&
      // Each step's checkpoint lists the key of its one effect.
      store->checkpoint(run_id, 1)->effects == std::vector<std::string>{effects.front().key} &&
      store->latest(run_id)->effects == std::vector<std::string>{effects.back().key};
  if (!check(st, receipts_ok, "the run's effect records are wrong")) return;
  st.counters["time_per_step"] = time_per(static_cast<double>(steps));
  st.counters["time_per_effect"] = timer.seconds / static_cast<double>(timer.calls);
}

/// A replayed effect: `per_run` effects whose receipts exist, each ctx.effect call returning
/// the stored result (no call, no commit). Manual time: only the replayed calls are timed;
/// counter time_per_effect.
void replay_case(benchmark::State& st, Kind k, long per_run) {
  EffectTimer timer(k);
  ag::Graph<PayState> g;
  auto node = std::make_unique<PayMany>(timer);
  PayMany& pay_many = *node;
  g.add(std::move(node)).entry("pay").max_steps(10).retry(kReplayRetry);
  std::unique_ptr<ag::Store> store = make_store(k);
  const PayState initial{0, per_run, {}};
  std::string run_id;
  bool ok = true;
  std::int64_t runs = 0;
  for (auto _ : st) {
    maybe_reset(st, k, store, runs, kMemoryResetEvery);
    run_id = fresh_run_id();
    const double before = timer.seconds;
    ag::Outcome<PayState> out = g.run(run_id, initial, *store);
    st.SetIterationTime(timer.seconds - before);
    ok = out.succeeded() && out.steps == 1 && ok;
    benchmark::DoNotOptimize(out);
  }
  if (!check(st, ok && pay_many.replayed_ok, "a replay run failed or called an effect again"))
    return;
  const std::vector<ag::EffectRecord> effects = store->effects(run_id);
  std::size_t replayed = 0;
  for (const nlohmann::json& e : store->events(run_id))  // step_completed lists the replays
    if (e.at("kind") == "step_completed" && e.at("detail").contains("replayed"))
      replayed += e.at("detail").at("replayed").size();
  if (!check(st,
             effects.size() == static_cast<std::size_t>(per_run) &&
                 replayed == static_cast<std::size_t>(per_run) &&
                 std::all_of(effects.begin(), effects.end(),
                             [](const ag::EffectRecord& r) { return r.issued == 1; }),
             "the replay did not replay every receipt once"))
    return;
  st.counters["time_per_effect"] = time_per(static_cast<double>(per_run));
}

/// The parts of a replayed effect, each alone (MemoryStore), to see where its time goes.
namespace parts {

const nlohmann::json kArgs = pay_args(0);

/// The idempotency key: canonical JSON of the six parts, SHA-256, hex.
void effect_key(benchmark::State& st) {
  std::uint32_t ordinal = 0;
  std::string key;
  for (auto _ : st) {
    key = ag::effect_key("run-0", "pay", 0, ordinal++ & 63, "refund", kArgs);
    benchmark::DoNotOptimize(key);
  }
  check(st, key.size() == 64, "wrong key size");
}

/// The key's canonical JSON alone (the array built and dumped, no hash).
void key_json(benchmark::State& st) {
  std::uint32_t ordinal = 0;
  std::string text;
  for (auto _ : st) {
    const nlohmann::json tuple = {"run-0", "pay", 0, ordinal++ & 63, "refund", kArgs};
    text = tuple.dump();
    benchmark::DoNotOptimize(text);
  }
  check(st, text.starts_with("[\"run-0\""), "wrong text");
}

/// SHA-256 of the key's canonical JSON through OpenSSL's one-shot EVP_Digest, by hand.
void sha256(benchmark::State& st) {
  const std::string text = nlohmann::json{"run-0", "pay", 0, 7, "refund", kArgs}.dump();
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int n = 0;
  bool ok = true;
  for (auto _ : st) {
    ok = EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_sha256(), nullptr) == 1 && ok;
    benchmark::DoNotOptimize(digest);
  }
  check(st, ok && n == 32, "EVP_Digest failed");
}

/// The same digest through a reused EVP_MD_CTX and an MD fetched once (OpenSSL 3's cheap path).
void sha256_reused(benchmark::State& st) {
  const std::string text = nlohmann::json{"run-0", "pay", 0, 7, "refund", kArgs}.dump();
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int n = 0;
  bool ok = md != nullptr && ctx != nullptr;
  if (ok) {
    for (auto _ : st) {
      ok = EVP_DigestInit_ex(ctx, md, nullptr) == 1 &&
           EVP_DigestUpdate(ctx, text.data(), text.size()) == 1 &&
           EVP_DigestFinal_ex(ctx, digest.data(), &n) == 1 && ok;
      benchmark::DoNotOptimize(digest);
    }
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  check(st, ok && n == 32, "EVP digest failed");
}

/// A MemoryStore run with `count` receipts (made by a replay run), and their keys.
std::vector<std::string> receipts(ag::MemoryStore& store, const std::string& run_id, long count) {
  EffectTimer timer(Kind::memory);
  ag::Graph<PayState> g;
  g.add<PayMany>(timer).entry("pay").max_steps(10).retry(kReplayRetry);
  g.run(run_id, PayState{0, count, {}}, store);
  std::vector<std::string> keys;
  for (const ag::EffectRecord& r : store.effects(run_id)) keys.push_back(r.key);
  return keys;
}

/// MemoryStore::effect: the receipt looked up by key (and copied out, as the store returns it).
void store_lookup(benchmark::State& st) {
  ag::MemoryStore store;
  const std::vector<std::string> keys = receipts(store, "run-0", 100);
  if (!check(st, keys.size() == 100, "no receipts to look up")) return;
  std::size_t i = 0;
  bool ok = true;
  for (auto _ : st) {
    std::optional<ag::EffectRecord> r = store.effect("run-0", keys[i++ % keys.size()]);
    ok = r.has_value() && ok;
    benchmark::DoNotOptimize(r);
  }
  check(st, ok, "a receipt was not found");
}

/// A MemoryStore holding one run, "run-0", to append events to.
std::unique_ptr<ag::MemoryStore> store_with_run() {
  auto store = std::make_unique<ag::MemoryStore>();
  ag::Checkpoint first;
  first.run_id = "run-0";
  first.next_node = "pay";
  store->create(first);
  return store;
}

/// A per-effect log event (what each replay cost before replays were listed once per step in
/// step_completed): detail JSON, timestamp, the record as JSON appended to the store's log, and
/// the EventBus (no subscriber).
void event(benchmark::State& st) {
  std::unique_ptr<ag::MemoryStore> store = store_with_run();
  ag::EventBus bus;
  const std::string key(64, 'a');
  std::int64_t n = 0;
  for (auto _ : st) {
    nlohmann::json detail = {{"effect", "refund"},
                             {"key", key},
                             {"policy", ag::EffectPolicy::at_most_once},
                             {"issue", 1}};
    ag::RunEventRecord e{"effect_replayed",
                         "run-0",
                         0,
                         "pay",
                         ag::detail::now_iso8601(ag::SystemClock::instance()),
                         0.0,
                         std::move(detail)};
    store->append_event("run-0", nlohmann::json(e));
    bus(e);
    if (++n % 65536 == 0) {  // the log grows: a fresh store now and then, untimed
      st.PauseTiming();
      store = store_with_run();
      st.ResumeTiming();
    }
  }
  check(st, n % 65536 == 0 || store->events("run-0").size() == static_cast<std::size_t>(n % 65536),
        "an event was not appended");
}

/// The event's parts: its timestamp; its record as JSON; MemoryStore::append_event; the bus.
ag::RunEventRecord sample_event() {
  return {"effect_replayed",
          "run-0",
          0,
          "pay",
          ag::detail::now_iso8601(ag::SystemClock::instance()),
          0.0,
          {{"effect", "refund"},
           {"key", std::string(64, 'a')},
           {"policy", ag::EffectPolicy::at_most_once},
           {"issue", 1}}};
}
void timestamp(benchmark::State& st) {
  std::string at;
  for (auto _ : st) {
    at = ag::detail::now_iso8601(ag::SystemClock::instance());
    benchmark::DoNotOptimize(at);
  }
  check(st, at.size() >= 20 && at.back() == 'Z', "not an ISO-8601 UTC time: " + at);
}
void event_json(benchmark::State& st) {
  const ag::RunEventRecord e = sample_event();
  nlohmann::json j;
  for (auto _ : st) {
    j = nlohmann::json(e);
    benchmark::DoNotOptimize(j);
  }
  check(st, j.at("kind") == "effect_replayed", "wrong event JSON");
}
void append_event(benchmark::State& st) {
  std::unique_ptr<ag::MemoryStore> store = store_with_run();
  const nlohmann::json j = sample_event();
  std::int64_t n = 0;
  for (auto _ : st) {
    store->append_event("run-0", j);
    if (++n % 65536 == 0) {
      st.PauseTiming();
      store = store_with_run();
      st.ResumeTiming();
    }
  }
  check(st, n % 65536 == 0 || store->events("run-0").size() == static_cast<std::size_t>(n % 65536),
        "an event was not appended");
}
void bus(benchmark::State& st) {
  ag::EventBus events;
  const ag::RunEventRecord e = sample_event();
  for (auto _ : st) events(e);
  check(st, events.empty(), "the bus has a subscriber");
}

}  // namespace parts

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

/// The bytes ag::effect_key hashes for the benchmark's effect, written by hand.
std::string key_text(std::uint32_t ordinal, const nlohmann::json& args) {
  return "[\"run-0\",\"pay\",0," + std::to_string(ordinal) + ",\"refund\"," + args.dump() + "]";
}
std::string hex_sha256(const std::string& text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xF];
  }
  return hex;
}

/// A receipt hit by hand: the same key (the same bytes, SHA-256, hex), a std::unordered_map
/// lookup, the stored result copied out. No record, no event, no lock: the floor of a replay.
void receipt_hit(benchmark::State& st) {
  const nlohmann::json args = pay_args(0);
  std::unordered_map<std::string, nlohmann::json> receipts;
  for (std::uint32_t i = 0; i < 100; ++i) {
    const std::string key = hex_sha256(key_text(i, args));
    receipts[key] = nlohmann::json{{"refund_id", key.substr(0, 8)}};
  }
  bool ok = hex_sha256(key_text(7, args)) == ag::effect_key("run-0", "pay", 0, 7, "refund", args);
  std::uint32_t i = 0;
  for (auto _ : st) {
    const auto it = receipts.find(hex_sha256(key_text(i++ % 100, args)));
    ok = it != receipts.end() && ok;
    nlohmann::json result = it->second;
    benchmark::DoNotOptimize(result);
  }
  check(st, ok, "the hand-written key differs from effect_key, or a receipt was not found");
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
    // Right after the loop, whose time per step is the bare step commit it is compared with.
    auto* effect = RegisterBenchmark(("agent/effect/" + store).c_str(),
                                     [k](benchmark::State& st) { effect_case(st, k); });
    effect->Unit(benchmark::kMicrosecond);
    if (disk) effect->Iterations(1)->UseRealTime();
    if (k == Kind::memory) {
      // A replayed effect, its parts alone, and the hand-written floor.
      using Case = std::pair<const char*, void (*)(benchmark::State&)>;
      for (auto [name, fn] : {Case{"effect_parts/effect_key", parts::effect_key},
                              Case{"effect_parts/key_json", parts::key_json},
                              Case{"effect_parts/sha256", parts::sha256},
                              Case{"effect_parts/sha256_reused", parts::sha256_reused},
                              Case{"effect_parts/store_lookup/MemoryStore", parts::store_lookup},
                              Case{"effect_parts/event/MemoryStore", parts::event},
                              Case{"effect_parts/event/timestamp", parts::timestamp},
                              Case{"effect_parts/event/json", parts::event_json},
                              Case{"effect_parts/event/append/MemoryStore", parts::append_event},
                              Case{"effect_parts/event/bus", parts::bus},
                              Case{"baseline/receipt_hit", baseline::receipt_hit}})
        RegisterBenchmark(name, fn)->Unit(benchmark::kNanosecond);
    }
    for (long per_run : disk ? std::vector<long>{10} : std::vector<long>{1, 10, 100}) {
      auto* replay = RegisterBenchmark(
          ("agent/effect_replay/" + store + "/" + std::to_string(per_run)).c_str(),
          [k, per_run](benchmark::State& st) { replay_case(st, k, per_run); });
      replay->UseManualTime()->Unit(benchmark::kMicrosecond);
      if (disk) replay->Iterations(kReplayIoIterations);
    }
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
  line(
      "MemoryStore replayed effect (N = 10), us",
      [&]() -> std::optional<double> {
        auto v = median("agent/effect_replay/MemoryStore/10", "time_per_effect");
        return v ? std::optional(*v * 1e6) : std::nullopt;
      }(),
      2, "", "");
  for (auto [label, store] : {std::pair{"SqliteStore effect / step commit", "SqliteStore"},
                              std::pair{"FileStore effect / step commit", "FileStore"}}) {
    const std::string s = store;
    auto effect = median("agent/effect/" + s, "time_per_effect");
    auto step = median("agent/loop/" + s, "time_per_step");
    auto with_effect = median("agent/effect/" + s, "time_per_step");
    std::optional<double> ratio;
    if (effect && step && *step > 0) ratio = *effect / *step;
    // Cross-check from the effect run alone: its step minus the effect in it.
    double in_run = -1;
    if (effect && with_effect && *with_effect > *effect)
      in_run = *effect / (*with_effect - *effect);
    std::snprintf(extra, sizeof extra, "  [%.0f us vs %.0f us; in-run %.2fx]", us(effect), us(step),
                  in_run);
    line(label, ratio, 2.3, "x", extra);
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
