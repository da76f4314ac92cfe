// SPDX-License-Identifier: MIT
// SqliteStore's own side of issue 14: schema 5 (the run index, cancel requests, graph shapes),
// the upgrade of a schema 4 database written by the previous release (a checked-in fixture),
// read-only opens, and the new calls across store objects and processes.

#include <trellis/agent/operations.hpp>

#include <signal.h>

#include <algorithm>
#include <map>

#include "store_test_support.hpp"

namespace {

namespace ag = trellis::agent;
using ag::CancelRequest;
using ag::RunFilter;
using ag::RunSummary;
using ag::SqliteStoreOptions;

const SqliteStoreOptions kReadOnly{.read_only = true};

void exec_sql(const fs::path& db, const std::string& statement) {
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(handle, statement.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(handle);
  REQUIRE_MESSAGE(rc == SQLITE_OK, text);
}

// A copy of tests/agent/fixtures/sqlite-v4.db, a schema 4 database written by the SqliteStore
// of the release before issue 14 (commit 21eaec4) through Graph::run and resume over a graph
// lookup (an at_least_once effect "fetch_order") -> gate (an approval request, then "pay") ->
// pay (Halt): run "refund-done" was approved by ana and succeeded; run "refund-waiting" waits
// for approval, with its effect record.
fs::path copy_v4_fixture(const persist_test::ScratchDir& dir) {
  const fs::path db = dir / "runs.db";
  fs::copy_file(TRELLIS_SQLITE_V4_FIXTURE, db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
  return db;
}

// A copy of tests/agent/fixtures/sqlite-v5.db, a schema 5 database written by the SqliteStore of
// the release before durable timers and priorities (commit ba15926): seven runs of graph
// "draft,review,pay@1" in every status, described in fixtures/file-store-v2/README.md.
fs::path copy_v5_fixture(const persist_test::ScratchDir& dir) {
  const fs::path db = dir / "runs.db";
  fs::copy_file(TRELLIS_SQLITE_V5_FIXTURE, db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
  return db;
}

// The due times the fixture's runs have (RunSummary::due), by run id.
const std::map<std::string, std::string> kV5Due = {
    {"approval-expired", "2024-05-03T12:00:00.000Z"},
    {"approval-later", "2200-01-01T00:00:00.000Z"},
    {"approval-open", ""},
    {"cancelled-1", ""},
    {"done-1", ""},
    {"queued-1", "2024-05-02T09:00:00.000Z"},
    {"running-1", "1970-01-01T00:00:00.000Z"}};  // Running: due at once (kDueAtOnce)

std::map<std::string, std::string> due_by_run(const std::vector<RunSummary>& runs) {
  std::map<std::string, std::string> out;
  for (const RunSummary& s : runs) out[s.run_id] = s.due;
  return out;
}

bool exists_beside(const fs::path& db, const char* suffix) {
  return fs::exists(fs::path(db.string() + suffix));
}

// Every write a store has, each expected to be refused with store_error saying why.
void check_every_write_refused(Store& store, const std::string& run) {
  const auto refused = [](auto&& write) {
    CHECK_THROWS_WITH_AS(write(), doctest::Contains("opened read-only"), ag::store_error);
  };
  refused([&] { store.create(cp("new-run", 0)); });
  refused([&] { store.commit(cp(run, 99), 98); });
  refused([&] { (void)store.lease(run, "w"); });
  refused([&] { store.put_effect(started(run, "refund")); });
  refused([&] { store.append_event(run, {{"n", 1}}); });
  refused([&] { store.request_cancel(CancelRequest{run, 0, "ana", "", iso(kT0)}); });
  refused([&] { store.delete_run(run); });
  refused([&] { store.put_graph(ag::GraphShape{"fp", "a", {}}); });
  refused([&] { store.apply_retention(Retention{.keep_last = 1}); });
}

}  // namespace

// ---- schema 4 -> 5 -----------------------------------------------------------------------------

TEST_CASE("sqlite store: a schema 4 database opened read-only is read as it is, byte for byte") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v4_fixture(dir);
  const std::string before = persist_test::read_bytes(db);
  {
    SqliteStore store(db, kReadOnly);
    CHECK(store.runs() == std::vector<std::string>{"refund-done", "refund-waiting"});
    const std::vector<RunSummary> all = store.list_runs();
    REQUIRE(all.size() == 2);
    CHECK(all[0].status == RunStatus::Succeeded);
    CHECK(all[1].status == RunStatus::WaitingApproval);
    CHECK(all[1].request == std::to_string(all[1].seq));
    CHECK(all[1].node == "pay");
    CHECK(all[0].created_at == store.checkpoint("refund-done", 0)->created_at);
    CHECK(store.list_runs(RunFilter{.status = RunStatus::WaitingApproval}).size() == 1);
    CHECK(store.effects("refund-waiting").size() == 1);
    CHECK(store.cancel_requests("refund-waiting").empty());  // no request log before 5
    CHECK_FALSE(store.graph("any").has_value());
    CHECK_FALSE(store.events_after("refund-done", 0).empty());
    check_every_write_refused(store, "refund-waiting");
  }
  CHECK(persist_test::read_bytes(db) == before);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == 4);
}

TEST_CASE("sqlite store: a schema 4 database opened for writing is upgraded and listed") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v4_fixture(dir);
  std::vector<RunSummary> as_read;
  {
    SqliteStore old(db, kReadOnly);
    as_read = old.list_runs();
  }
  SqliteStore store(db);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == SqliteStore::schema_version);
  // The index the upgrade filled holds what the checkpoints say.
  const std::vector<RunSummary> all = store.list_runs();
  CHECK(all == as_read);
  REQUIRE(all.size() == 2);
  for (const RunSummary& s : all) {
    const auto newest = store.latest(s.run_id);
    REQUIRE(newest.has_value());
    CHECK(s == ag::summarize(*newest, store.checkpoint(s.run_id, 0)->created_at));
  }
  CHECK(store.list_runs(RunFilter{.status = RunStatus::Succeeded}).at(0).run_id == "refund-done");
  CHECK(store.list_runs(RunFilter{.node = "pay"}).at(0).run_id == "refund-waiting");
  // The old run goes on under the new schema: its index row follows.
  CHECK(store.request_cancel(CancelRequest{"refund-waiting", 0, "ana", "stop", iso(kT0)}) == 1);
  const ag::CancelResult cancelled = ag::cancel_run(store, "refund-waiting", "ana", "stop");
  CHECK(cancelled.status == RunStatus::Cancelled);
  CHECK(store.list_runs(RunFilter{.status = RunStatus::Cancelled}).at(0).run_id ==
        "refund-waiting");
  SqliteStore again(db);  // opening an upgraded database changes nothing
  CHECK(again.list_runs().size() == 2);
}

TEST_CASE("sqlite store: a schema 8 database is refused untouched, read-only or not") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v5_fixture(dir);
  { SqliteStore upgraded(db); }
  exec_sql(db, "UPDATE trellis_schema SET version = 8");
  const std::string before = persist_test::read_bytes(db);
  CHECK_THROWS_WITH_AS(SqliteStore(db, kReadOnly), doctest::Contains("schema version 8 is newer"),
                       ag::store_error);
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains("schema version 8 is newer"),
                       ag::store_error);
  CHECK(persist_test::read_bytes(db) == before);
}

// ---- schema 5 -> 6 -----------------------------------------------------------------------------

TEST_CASE("sqlite store: a schema 5 database opened read-only gives due times, byte for byte") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v5_fixture(dir);
  const std::string before = persist_test::read_bytes(db);
  {
    SqliteStore store(db, kReadOnly);
    const std::vector<RunSummary> all = store.list_runs();
    CHECK(due_by_run(all) == kV5Due);
    for (const RunSummary& s : all) CHECK(s.priority == 0);
    std::vector<std::string> due;
    for (const RunSummary& s : store.due_runs(10)) due.push_back(s.run_id);
    CHECK(due == std::vector<std::string>{"running-1", "queued-1", "approval-expired"});
    CHECK(store.cancel_requests("cancelled-1").size() == 1);
    check_every_write_refused(store, "queued-1");
    CHECK_THROWS_AS(store.claim(ag::ClaimRequest{"w", {"draft,review,pay@1"}, 1}), ag::store_error);
  }
  CHECK(persist_test::read_bytes(db) == before);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == 5);
}

TEST_CASE(
    "sqlite store: a schema 5 database opened for writing is upgraded; claims take its due "
    "runs in order") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v5_fixture(dir);
  std::vector<RunSummary> as_read;
  {
    SqliteStore old(db, kReadOnly);
    as_read = old.list_runs();
  }
  {
    SqliteStore store(db);
    CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == SqliteStore::schema_version);
    CHECK(store.list_runs() == as_read);
    CHECK(sql_integer(db, "SELECT count(*) FROM runs WHERE due IS NULL") == 3);
    std::vector<ag::Claim> claims = store.claim(ag::ClaimRequest{"w", {"draft,review,pay@1"}, 10});
    REQUIRE(claims.size() == 3);
    CHECK(claims[0].newest.run_id == "running-1");
    CHECK(claims[0].newest.seq == 1);
    CHECK(claims[0].lease.token().epoch == 2);  // the fixture's worker had epoch 1
    CHECK(claims[1].newest.run_id == "queued-1");
    CHECK(claims[1].lease.token().epoch == 1);
    CHECK(claims[2].newest.run_id == "approval-expired");
    CHECK(claims[2].newest.status == RunStatus::WaitingApproval);
    // Claimed: nothing more is due for another worker.
    CHECK(store.claim(ag::ClaimRequest{"w2", {"draft,review,pay@1"}, 10}).empty());
    CHECK(store.due_runs(10).empty());
  }
  const std::string upgraded = persist_test::read_bytes(db);
  {
    SqliteStore again(db);  // opening an upgraded database changes nothing
    CHECK(again.list_runs() == as_read);
  }
  CHECK(persist_test::read_bytes(db) == upgraded);
}

// ---- schema 6 -> 7 -----------------------------------------------------------------------------

namespace {

// A copy of tests/agent/fixtures/sqlite-v6.db, a schema 6 database written by the release
// before cache entries and the hash chain (commit 51be52f): three runs described in
// fixtures/file-store-v3/README.md (one with a fan-out).
fs::path copy_v6_fixture(const persist_test::ScratchDir& dir) {
  const fs::path db = dir / "runs.db";
  fs::copy_file(TRELLIS_SQLITE_V6_FIXTURE, db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
  return db;
}

void check_v6_runs(Store& store) {
  CHECK(store.runs() == std::vector<std::string>{"paid-1", "review-1", "shipped-1"});
  CHECK(store.latest("review-1")->status == RunStatus::WaitingApproval);
  const std::vector<EffectRecord> shipped = store.effects("shipped-1");
  REQUIRE(shipped.size() == 4);
  CHECK(shipped[0].result == "rf_300");
  for (std::uint32_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(shipped[1 + i].name == "ship");
    CHECK(shipped[1 + i].ordinal == i);
    CHECK(shipped[1 + i].result == nlohmann::json{{"tracking", "tr_" + std::to_string(i)}});
  }
  CHECK(store.effects("paid-1").size() == 1);
}

}  // namespace

TEST_CASE("sqlite store: a schema 6 database opened read-only is read as it is, byte for byte") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v6_fixture(dir);
  const std::string before = persist_test::read_bytes(db);
  {
    SqliteStore store(db, kReadOnly);
    check_v6_runs(store);
    CHECK_FALSE(store.cached(std::string(64, 'a')).has_value());  // no cache before schema 7
    check_every_write_refused(store, "review-1");
    ag::CacheEntry e;
    e.key = std::string(64, 'a');
    CHECK_THROWS_WITH_AS(store.put_cached(e), doctest::Contains("opened read-only"),
                         ag::store_error);
  }
  CHECK(persist_test::read_bytes(db) == before);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == 6);
}

TEST_CASE("sqlite store: a schema 6 database opened for writing is upgraded and caches") {
  persist_test::ScratchDir dir;
  const fs::path db = copy_v6_fixture(dir);
  std::vector<RunSummary> as_read;
  {
    SqliteStore old(db, kReadOnly);
    as_read = old.list_runs();
  }
  SqliteStore store(db);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == 7);
  CHECK(store.list_runs() == as_read);
  check_v6_runs(store);
  CHECK(ag::cancel_run(store, "review-1", "ana", "duplicate").status == RunStatus::Cancelled);
  ag::CacheEntry e;
  e.key = ag::cache_key("g", "pay", {{"amount", 300}}, "refund", "1");
  e.result = "rf_300";
  store.put_cached(e);
  CHECK(SqliteStore(db).cached(e.key) == e);
  CHECK(sql_integer(db, "SELECT count(*) FROM cache_entries") == 1);
}

TEST_CASE("sqlite store: a schema 3 database opened read-only asks for the upgrade") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
  }
  exec_sql(db, "UPDATE trellis_schema SET version = 3");
  const std::string before = persist_test::read_bytes(db);
  CHECK_THROWS_WITH_AS(SqliteStore(db, kReadOnly), doctest::Contains("open it for writing once"),
                       ag::store_error);
  CHECK(persist_test::read_bytes(db) == before);
}

// ---- read-only opens ---------------------------------------------------------------------------

TEST_CASE("sqlite store: a missing database opened read-only is not_a_store and creates nothing") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  CHECK_THROWS_WITH_AS(SqliteStore(db, kReadOnly), doctest::Contains(db.string().c_str()),
                       ag::not_a_store);
  CHECK_FALSE(fs::exists(db));
  CHECK_FALSE(exists_beside(db, "-wal"));
  CHECK_FALSE(exists_beside(db, "-shm"));
  CHECK_FALSE(exists_beside(db, "-journal"));
  CHECK(fs::is_empty(dir.path()));
  CHECK_THROWS_AS(SqliteStore(dir / "no-dir" / "runs.db", kReadOnly), ag::not_a_store);
  CHECK_THROWS_AS(SqliteStore(dir.path(), kReadOnly), ag::not_a_store);  // a directory
}

TEST_CASE("sqlite store: what is not a trellis database is not_a_store, read-only or not") {
  persist_test::ScratchDir dir;
  const fs::path other = dir / "other.db";
  exec_sql(other, "CREATE TABLE app_users(id INTEGER)");
  const std::string other_bytes = persist_test::read_bytes(other);
  CHECK_THROWS_AS(SqliteStore(other, kReadOnly), ag::not_a_store);
  CHECK_THROWS_WITH_AS(SqliteStore{other}, doctest::Contains("app_users"), ag::not_a_store);
  CHECK(persist_test::read_bytes(other) == other_bytes);

  const fs::path text = dir / "notes.db";
  persist_test::write_bytes(text, std::string(4096, 'x'));
  CHECK_THROWS_WITH_AS(SqliteStore(text, kReadOnly), doctest::Contains(text.string().c_str()),
                       ag::not_a_store);
  CHECK_THROWS_AS(SqliteStore{text}, ag::not_a_store);
  CHECK(persist_test::read_bytes(text) == std::string(4096, 'x'));

  const fs::path empty = dir / "empty.db";
  persist_test::write_bytes(empty, "");
  CHECK_THROWS_WITH_AS(SqliteStore(empty, kReadOnly), doctest::Contains("holds no trellis store"),
                       ag::not_a_store);
  CHECK(fs::file_size(empty) == 0);
}

TEST_CASE("sqlite store: a read-only store reads everything and writes nothing, byte for byte") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  ag::GraphShape shape{"fp-1", "draft", {ag::NodeShape{"draft", {"review"}, true, false, {}}}};
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
    advance(store, "run-1", 3);
    store.put_effect(started("run-1", "refund"));
    store.append_event("run-1", {{"n", 1}});
    store.request_cancel(CancelRequest{"run-1", 0, "ana", "stop", iso(kT0)});
    store.put_graph(shape);
  }
  REQUIRE_FALSE(exists_beside(db, "-wal"));  // the last writer closed it
  const std::string before = persist_test::read_bytes(db);
  {
    SqliteStore store(db, kReadOnly);
    CHECK(store.latest("run-1")->seq == 3);
    CHECK(store.history("run-1").size() == 4);
    CHECK(store.effects("run-1").size() == 1);
    CHECK(store.events_after("run-1", 0).size() == 1);
    CHECK(store.cancel_requests("run-1").size() == 1);
    CHECK(store.graph("fp-1") == shape);
    CHECK(store.list_runs().at(0) == ag::summarize(cp("run-1", 3), iso(kT0)));
    check_every_write_refused(store, "run-1");
    CHECK(store.latest("run-1")->seq == 3);
  }
  CHECK(persist_test::read_bytes(db) == before);
  // What SQLite needs to read a WAL database while others may write: its -wal and -shm (empty
  // of frames), left for the next writer.
  if (exists_beside(db, "-wal")) CHECK(fs::file_size(db.string() + "-wal") == 0);
}

TEST_CASE("sqlite store: a read-only store sees what a writer commits after it opened") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore writer(db);
  writer.create(cp("run-1", 0));
  SqliteStore reader(db, kReadOnly);
  advance(writer, "run-1", 2);
  writer.request_cancel(CancelRequest{"run-1", 0, "ana", "", iso(kT0)});
  CHECK(reader.latest("run-1")->seq == 2);
  CHECK(reader.list_runs().at(0).seq == 2);
  CHECK(reader.cancel_requests("run-1").size() == 1);
}

// ---- the new calls -----------------------------------------------------------------------------

TEST_CASE("sqlite store: list_runs reads the index another store object keeps up to date") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore a(db);
  SqliteStore b(db);
  for (int i = 0; i < 5; ++i) a.create(cp("run-" + std::to_string(i), 0, RunStatus::Queued));
  advance(b, "run-3", 3);
  Checkpoint paused = cp("run-1", 1, RunStatus::WaitingApproval);
  paused.interrupt = ag::Interrupt{.reason = "ok?"};
  b.commit(paused, 0);
  Checkpoint failed = cp("run-4", 1, RunStatus::Failed);
  failed.reason = ag::Reason::max_steps;
  b.commit(failed, 0);
  const std::vector<RunSummary> all = a.list_runs();
  REQUIRE(all.size() == 5);
  for (const RunSummary& s : all)
    CHECK(s == ag::summarize(*b.latest(s.run_id), b.checkpoint(s.run_id, 0)->created_at));
  CHECK(all[1].request == "1");
  CHECK(all[4].reason == ag::Reason::max_steps);
  const auto queued = a.list_runs(RunFilter{.status = RunStatus::Queued});
  REQUIRE(queued.size() == 2);
  CHECK(queued[0].run_id == "run-0");
  CHECK(queued[1].run_id == "run-2");
  const auto queued_at_draft =
      a.list_runs(RunFilter{.status = RunStatus::Queued, .since = iso(kT0), .node = "draft"});
  CHECK(queued_at_draft.size() == 2);
  CHECK(a.list_runs(RunFilter{.since = iso(kT0 + 2s)}).at(0).run_id == "run-3");
  CHECK(sql_integer(db, "SELECT count(*) FROM sqlite_master WHERE name='runs_by_status'") == 1);
}

TEST_CASE("sqlite store: cancel request ids continue across two store objects on one file") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore a(db);
  SqliteStore b(db);
  a.create(cp("run-1", 0));
  CHECK(a.request_cancel(CancelRequest{"run-1", 0, "ana", "", iso(kT0)}) == 1);
  CHECK(b.request_cancel(CancelRequest{"run-1", 0, "bo", "", iso(kT0)}) == 2);
  CHECK(a.request_cancel(CancelRequest{"run-1", 0, "cy", "", iso(kT0)}) == 3);
  const auto all = b.cancel_requests("run-1");
  REQUIRE(all.size() == 3);
  CHECK(all[0].by == "ana");
  CHECK(all[1].by == "bo");
  CHECK(all[2].by == "cy");
  CHECK(a.cancel_requests("run-1", 2).size() == 1);
}

TEST_CASE("sqlite store: concurrent cancel requests from two store objects get distinct ids" *
          doctest::test_suite("concurrency")) {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore a(db);
  SqliteStore b(db);
  a.create(cp("run-1", 0));
  std::vector<std::uint64_t> ids_a;
  std::vector<std::uint64_t> ids_b;
  std::thread ta([&] {
    for (int i = 0; i < 20; ++i)
      ids_a.push_back(a.request_cancel(CancelRequest{"run-1", 0, "a", "", iso(kT0)}));
  });
  std::thread tb([&] {
    for (int i = 0; i < 20; ++i)
      ids_b.push_back(b.request_cancel(CancelRequest{"run-1", 0, "b", "", iso(kT0)}));
  });
  ta.join();
  tb.join();
  std::vector<std::uint64_t> ids = ids_a;
  ids.insert(ids.end(), ids_b.begin(), ids_b.end());
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint64_t> expected(40);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i + 1;
  CHECK(ids == expected);
}

TEST_CASE("sqlite store: delete_run is refused while another process holds the lease") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  persist_test::Child child = persist_test::spawn_program(
      TRELLIS_STORE_LEASE_CHILD, {"sqlite", db.string(), "run-1", "600000"});
  REQUIRE(persist_test::read_line(child).starts_with("leased "));
  CHECK_THROWS_WITH_AS(store.delete_run("run-1"), doctest::Contains("'child'"), ag::run_busy);
  CHECK(store.latest("run-1").has_value());
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  store.delete_run("run-1");  // its holder is provably dead
  CHECK_FALSE(store.latest("run-1").has_value());
  CHECK(sql_integer(db, "SELECT count(*) FROM leases WHERE run_id='run-1'") == 0);
}

TEST_CASE("sqlite store: a run whose lease holder was SIGKILLed is claimed at once") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0, RunStatus::Queued));
  const ag::ClaimRequest request{"w", {"draft,review@1"}, 1};
  persist_test::Child child = persist_test::spawn_program(
      TRELLIS_STORE_LEASE_CHILD, {"sqlite", db.string(), "run-1", "600000"});
  REQUIRE(persist_test::read_line(child).starts_with("leased "));
  CHECK(store.claim(request).empty());  // a live holder, its lease for 10 minutes more
  CHECK(store.due_runs(10).empty());
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  const std::vector<ag::Claim> claims = store.claim(request);  // provably dead: not its TTL
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].lease.token().epoch == 2);
  store.commit(cp("run-1", 1), 0, claims[0].lease.token());
}

TEST_CASE("sqlite store: a claim takes a run whose lease expired; the old holder is fenced") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore old_worker(db, SqliteStoreOptions{.lease_ttl = 50ms});
  old_worker.create(cp("run-1", 0, RunStatus::Queued));
  const Lease stale = old_worker.lease("run-1", "stalled");  // alive, never renewed
  SqliteStore store(db);
  const ag::ClaimRequest request{"w", {"draft,review@1"}, 1};
  CHECK(store.claim(request).empty());
  std::vector<ag::Claim> claims;
  for (int i = 0; i < 100 && claims.empty(); ++i) {  // the TTL runs out (bounded: 5 s)
    std::this_thread::sleep_for(50ms);
    claims = store.claim(request);
  }
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].lease.token().epoch == stale.token().epoch + 1);
  CHECK_THROWS_AS(old_worker.commit(cp("run-1", 1), 0, stale.token()), ag::run_busy);
  store.commit(cp("run-1", 1), 0, claims[0].lease.token());
}

TEST_CASE("sqlite store: delete_run leaves nothing of the run in any table") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  store.create(cp("run-2", 0));
  advance(store, "run-1", 2);
  store.put_effect(started("run-1", "refund"));
  store.append_event("run-1", {{"n", 1}});
  store.request_cancel(CancelRequest{"run-1", 0, "ana", "", iso(kT0)});
  { const Lease held = store.lease("run-1", "w"); }
  store.delete_run("run-1");
  for (const char* table : {"checkpoints", "effects", "events", "cancel_requests"})
    CHECK(sql_integer(db, std::string("SELECT count(*) FROM ") + table +
                              " WHERE run NOT IN (SELECT id FROM runs)") == 0);
  CHECK(sql_integer(db, "SELECT count(*) FROM runs") == 1);
  CHECK(sql_integer(db, "SELECT count(*) FROM leases WHERE run_id='run-1'") == 0);
  // A run of the same id starts anew, and this object's old lease does not stand in its way.
  store.create(cp("run-1", 0));
  store.commit(cp("run-1", 1), 0);
  CHECK(store.latest("run-1")->seq == 1);
}

TEST_CASE("sqlite store: retention that deletes a finished run deletes its cancel requests") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  store.request_cancel(CancelRequest{"run-1", 0, "ana", "", iso(kT0)});
  store.commit(cp("run-1", 1, RunStatus::Succeeded), 0);
  store.apply_retention(Retention{.finished_older_than = 1s});  // kT0 is long ago
  CHECK(store.runs().empty());
  CHECK(sql_integer(db, "SELECT count(*) FROM cancel_requests") == 0);
}

TEST_CASE("sqlite store: event positions grow across runs and continue after a reopen") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  std::uint64_t last_of_1 = 0;
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
    store.create(cp("run-2", 0));
    store.append_event("run-1", {{"n", 1}});
    store.append_event("run-2", {{"n", 1}});
    store.append_event("run-1", {{"n", 2}});
    const auto one = store.events_after("run-1", 0);
    const auto two = store.events_after("run-2", 0);
    REQUIRE(one.size() == 2);
    REQUIRE(two.size() == 1);
    CHECK(one[0].seq < two[0].seq);  // one sequence over every run
    CHECK(two[0].seq < one[1].seq);
    CHECK(store.events_after("run-1", one[0].seq) ==
          std::vector<ag::StoredEvent>{one[1]});                 // after a position of run-1 ...
    CHECK(store.events_after("run-1", two[0].seq).size() == 1);  // ... or of another run
    last_of_1 = one[1].seq;
  }
  SqliteStore store(db);
  store.append_event("run-1", {{"n", 3}});
  const auto rest = store.events_after("run-1", last_of_1);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].event == nlohmann::json{{"n", 3}});
  CHECK(rest[0].seq > last_of_1);
}

TEST_CASE("sqlite store: putting an unchanged graph shape writes nothing") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  ag::GraphShape shape{"fp-1", "a", {ag::NodeShape{"a", {"b"}, true, false, {}}}};
  store.put_graph(shape);
  const fs::path wal = db.string() + "-wal";
  const std::string wal_bytes = persist_test::read_bytes(wal);
  const std::string db_bytes = persist_test::read_bytes(db);
  store.put_graph(shape);  // as run() does on every start
  CHECK(persist_test::read_bytes(wal) == wal_bytes);
  CHECK(persist_test::read_bytes(db) == db_bytes);
  shape.entry = "b";
  store.put_graph(shape);
  CHECK(SqliteStore(db, kReadOnly).graph("fp-1") == shape);
}

TEST_CASE("sqlite store: an edited cancel request or graph row is refused by its checksum") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
    store.request_cancel(CancelRequest{"run-1", 0, "ana", "stop", iso(kT0)});
    store.put_graph(ag::GraphShape{"fp-1", "a", {}});
  }
  exec_sql(db,
           "UPDATE cancel_requests SET record=replace(record, 'ana', 'eve'); "
           "UPDATE graphs SET shape=replace(shape, '\"a\"', '\"b\"')");
  SqliteStore store(db);
  CHECK_THROWS_WITH_AS((void)store.cancel_requests("run-1"), doctest::Contains("bad checksum"),
                       ag::store_error);
  CHECK_THROWS_WITH_AS((void)store.graph("fp-1"), doctest::Contains("bad checksum"),
                       ag::store_error);
}
