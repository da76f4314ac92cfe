// SPDX-License-Identifier: MIT
// FileStore layout versions 2 (issue 14), 3 (issue 15: due times and priorities) and 4 (issue 16:
// cache entries, the hash chain): the marker and the upgrade of a version 1, 2 and 3 store (the
// checked-in fixtures), claims over
// the index and across a SIGKILLed lease holder, the read-only open, the run index behind list_runs
// (filters, a crash between a commit and its index line, compaction), cancel requests, delete_run
// against a lease held here or in another process, events_after positions and graph shapes.

#include <trellis/agent/errors.hpp>
#include <trellis/agent/operations.hpp>

#include <sys/stat.h>

#include <map>
#include <sstream>
#include <tuple>

#include "store_test_support.hpp"

namespace {

using trellis::agent::CancelRequest;
using trellis::agent::FileStoreOptions;
using trellis::agent::GraphShape;
using trellis::agent::NodeShape;
using trellis::agent::RunFilter;
using trellis::agent::RunSummary;

const fs::path kFixture = fs::path(TRELLIS_AGENT_FIXTURES) / "file-store-v1" / "store";

// Everything under `root` (itself included): per entry its type, mode, size, mtime and, for
// files, content. Equal snapshots: nothing was created, removed, written or touched.
using Snapshot =
    std::map<std::string, std::tuple<unsigned, std::int64_t, std::int64_t, std::string>>;

Snapshot snapshot(const fs::path& root) {
  Snapshot out;
  auto add = [&](const fs::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    const std::int64_t mtime =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    std::string content;
    if (S_ISREG(st.st_mode)) content = persist_test::read_bytes(p);
    out[fs::relative(p, root.parent_path()).string()] = {
        static_cast<unsigned>(st.st_mode), static_cast<std::int64_t>(st.st_size), mtime, content};
  };
  add(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) add(e.path());
  return out;
}

// A copy of the version 1 fixture at `dir`/store.
fs::path copy_fixture(const persist_test::ScratchDir& dir) {
  const fs::path root = dir / "store";
  fs::copy(kFixture, root, fs::copy_options::recursive);
  return root;
}

// A copy of the version 2 fixture (fixtures/file-store-v2/README.md) at `dir`/store, its index
// lines given the stamps of the copied journals: as if the release before had written it there
// (so its lines, current but without due times, must not be trusted for them).
fs::path copy_v2_fixture(const persist_test::ScratchDir& dir) {
  const fs::path root = dir / "store";
  fs::copy(fs::path(TRELLIS_AGENT_FIXTURES) / "file-store-v2" / "store", root,
           fs::copy_options::recursive);
  std::istringstream text(persist_test::read_bytes(root / "@index.jsonl"));
  std::string restamped;
  for (std::string line; std::getline(text, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    REQUIRE(j.size() == 13);
    struct stat st {};
    REQUIRE(::stat((root / j[3].get<std::string>() / "journal.jsonl").c_str(), &st) == 0);
    j[0] = static_cast<std::uint64_t>(st.st_ino);
    j[1] = static_cast<std::uint64_t>(st.st_size);
    j[2] = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    restamped += j.dump() + "\n";
  }
  persist_test::write_bytes(root / "@index.jsonl", restamped);
  return root;
}

// The due times of the version 2 fixture's runs (RunSummary::due), by run id.
const std::map<std::string, std::string> kV2Due = {
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

const std::string kV2Graph = "draft,review,pay@1";

std::vector<std::string> ids(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const RunSummary& s : runs) out.push_back(s.run_id);
  return out;
}

FileStoreOptions read_only() { return FileStoreOptions{.read_only = true}; }

FileStoreOptions unsynced() { return FileStoreOptions{.sync = false}; }

// What a store holds for the fixture's runs, for comparing two opens of it.
struct Contents {
  std::vector<RunSummary> listed;
  std::vector<std::vector<Checkpoint>> histories;
  std::vector<std::vector<EffectRecord>> effects;
  std::vector<std::vector<nlohmann::json>> events;
  friend bool operator==(const Contents&, const Contents&) = default;
};

Contents contents(Store& store) {
  Contents c;
  c.listed = store.list_runs({});
  for (const std::string& id : store.runs()) {
    c.histories.push_back(store.history(id));
    c.effects.push_back(store.effects(id));
    c.events.push_back(store.events(id));
  }
  return c;
}

// The index lines (JSON arrays: docs/formats.md) of run `id`, oldest first.
std::vector<nlohmann::json> index_lines_of(const fs::path& index, const std::string& id) {
  std::vector<nlohmann::json> out;
  std::istringstream text(persist_test::read_bytes(index));
  for (std::string line; std::getline(text, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_array() && j.size() == 15 && j[3] == id) out.push_back(j);
  }
  return out;
}

Checkpoint waiting(const std::string& id, std::uint64_t seq,
                   std::chrono::system_clock::time_point at) {
  Checkpoint c = cp(id, seq, RunStatus::WaitingApproval, at);
  c.next_node = "approve";
  c.interrupt = trellis::agent::Interrupt{.reason = "publish?", .then = "publish"};
  return c;
}

}  // namespace

// ---- opening: the marker, version 1, read-only ---------------------------------------------

TEST_CASE("file store: a new root gets the version 4 marker") {
  persist_test::ScratchDir dir;
  FileStore store(dir / "runs");
  CHECK(store.version() == 4);
  const nlohmann::json marker =
      nlohmann::json::parse(persist_test::read_bytes(dir / "runs" / "@store.json"));
  CHECK(marker == nlohmann::json{{"format", "trellis.file_store"}, {"version", 4}});
}

TEST_CASE("file store: a read-only open of a version 1 store reads it without changing a byte") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_fixture(dir);
  const Snapshot before = snapshot(root);
  {
    FileStore store(root, read_only());
    CHECK(store.version() == 1);
    CHECK(store.runs() == std::vector<std::string>{"refund-1", "review-7"});
    const std::vector<RunSummary> listed = store.list_runs({});
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].run_id == "refund-1");
    CHECK(listed[0].status == RunStatus::Succeeded);
    CHECK(listed[0].seq == 2);
    CHECK(listed[0].created_at == "2024-05-01T12:00:00.000Z");
    CHECK(listed[0].updated_at == "2024-05-01T12:00:02.000Z");
    CHECK(listed[0].request.empty());
    CHECK(listed[1].run_id == "review-7");
    CHECK(listed[1].status == RunStatus::WaitingApproval);
    CHECK(listed[1].node == "approve");
    CHECK(listed[1].request == "2");
    CHECK(listed[1].created_at == "2024-05-02T08:30:00.000Z");
    const auto newest = store.latest("review-7");
    REQUIRE(newest);
    REQUIRE(newest->interrupt);
    CHECK(newest->interrupt->reason == "second refund over 500?");
    CHECK(store.history("refund-1").size() == 3);
    const auto effects = store.effects("review-7");
    REQUIRE(effects.size() == 1);
    CHECK(effects[0].status == EffectStatus::succeeded);
    CHECK(effects[0].result == nlohmann::json{{"refund_id", "rf_1"}});
    CHECK(store.events("refund-1").size() == 2);
    CHECK(store.events_after("refund-1", 1).size() == 1);
    CHECK(store.cancel_requests("review-7", 0).empty());
    CHECK_FALSE(store.graph("draft,review,pay@1"));
    CHECK(store.list_runs(RunFilter{.status = RunStatus::WaitingApproval}).size() == 1);
  }
  CHECK(snapshot(root) == before);
}

TEST_CASE("file store: a writable open upgrades a version 1 store, which reads the same") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_fixture(dir);
  Contents old;
  {
    FileStore store(root, read_only());
    old = contents(store);
  }
  FileStore store(root);
  CHECK(store.version() == FileStore::format_version);
  const nlohmann::json marker =
      nlohmann::json::parse(persist_test::read_bytes(root / "@store.json"));
  CHECK(marker["version"] == FileStore::format_version);
  CHECK(fs::exists(root / "@index.jsonl"));
  CHECK(contents(store) == old);
  // The index holds a line per run, and the upgraded store goes on.
  CHECK(persist_test::read_bytes(root / "@index.jsonl").find("\"review-7\"") != std::string::npos);
  store.commit(cp("refund-1", 3, RunStatus::Succeeded), 2);
  CHECK(store.list_runs({})[0].seq == 3);
  CHECK(store.list_runs({})[0].created_at == "2024-05-01T12:00:00.000Z");
}

TEST_CASE("file store: a read-only open of a version 2 store gives due times, changing no byte") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_v2_fixture(dir);
  const Snapshot before = snapshot(root);
  {
    FileStore store(root, read_only());
    CHECK(store.version() == 2);
    const std::vector<RunSummary> listed = store.list_runs({});
    CHECK(due_by_run(listed) == kV2Due);
    for (const RunSummary& s : listed) CHECK(s.priority == 0);
    CHECK(ids(store.due_runs(10)) ==
          std::vector<std::string>{"running-1", "queued-1", "approval-expired"});
    CHECK(store.cancel_requests("cancelled-1").size() == 1);
    CHECK_THROWS_AS(store.claim(trellis::agent::ClaimRequest{"w", {kV2Graph}, 1}),
                    trellis::agent::store_error);
  }
  CHECK(snapshot(root) == before);
}

TEST_CASE(
    "file store: a writable open upgrades a version 2 store; claims take its due runs in "
    "order") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_v2_fixture(dir);
  Contents old;
  {
    FileStore store(root, read_only());
    old = contents(store);
  }
  {
    FileStore store(root);
    CHECK(store.version() == FileStore::format_version);
    CHECK(nlohmann::json::parse(persist_test::read_bytes(root / "@store.json"))["version"] ==
          FileStore::format_version);
    CHECK(contents(store) == old);
    CHECK(due_by_run(store.list_runs({})) == kV2Due);
    // The index was rebuilt: a line of 15 members per run, the due time second to last.
    CHECK(index_lines_of(root / "@index.jsonl", "approval-expired").back()[13] ==
          "2024-05-03T12:00:00.000Z");
    std::vector<trellis::agent::Claim> claims =
        store.claim(trellis::agent::ClaimRequest{"w", {kV2Graph}, 10});
    REQUIRE(claims.size() == 3);
    CHECK(claims[0].newest.run_id == "running-1");
    CHECK(claims[0].lease.token().epoch == 2);  // the fixture's worker had epoch 1
    CHECK(claims[1].newest.run_id == "queued-1");
    CHECK(claims[2].newest.run_id == "approval-expired");
    CHECK(claims[2].newest.interrupt->approval->expires_at.has_value());
    // Claimed, by this object and by another one (through the index alone): nothing is left.
    CHECK(store.claim(trellis::agent::ClaimRequest{"w", {kV2Graph}, 10}).empty());
    FileStore other(root);
    CHECK(other.claim(trellis::agent::ClaimRequest{"w2", {kV2Graph}, 10}).empty());
  }
  const Snapshot upgraded = snapshot(root);
  {
    FileStore again(root);  // opening an upgraded store changes nothing
    CHECK(again.version() == FileStore::format_version);
  }
  CHECK(snapshot(root) == upgraded);
}

// ---- version 3 (the release before cache entries and the hash chain) ---------------------------

namespace {

// A copy of the version 3 fixture (fixtures/file-store-v3/README.md) at `dir`/store.
fs::path copy_v3_fixture(const persist_test::ScratchDir& dir) {
  const fs::path root = dir / "store";
  fs::copy(fs::path(TRELLIS_AGENT_FIXTURES) / "file-store-v3" / "store", root,
           fs::copy_options::recursive);
  return root;
}

// What the version 3 fixture holds, as any release must read it.
void check_v3_runs(Store& store) {
  CHECK(store.runs() == std::vector<std::string>{"paid-1", "review-1", "shipped-1"});
  CHECK(store.latest("paid-1")->status == RunStatus::Succeeded);
  const auto waiting = store.latest("review-1");
  REQUIRE(waiting);
  CHECK(waiting->status == RunStatus::WaitingApproval);
  REQUIRE(waiting->interrupt);
  CHECK(waiting->interrupt->reason == "refund over 500?");
  CHECK(store.effects("review-1").empty());
  // The refund, then the fan-out's three items: ordinary effect records of one step.
  const std::vector<EffectRecord> shipped = store.effects("shipped-1");
  REQUIRE(shipped.size() == 4);
  CHECK(shipped[0].name == "refund");
  CHECK(shipped[0].result == "rf_300");
  for (std::uint32_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(shipped[1 + i].name == "ship");
    CHECK(shipped[1 + i].ordinal == i);
    CHECK(shipped[1 + i].status == EffectStatus::succeeded);
    CHECK(shipped[1 + i].result == nlohmann::json{{"tracking", "tr_" + std::to_string(i)}});
  }
  CHECK(store.list_runs(RunFilter{.status = RunStatus::WaitingApproval}).size() == 1);
}

}  // namespace

TEST_CASE("file store: a read-only open of a version 3 store reads it without changing a byte") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_v3_fixture(dir);
  const Snapshot before = snapshot(root);
  {
    FileStore store(root, read_only());
    CHECK(store.version() == 3);
    check_v3_runs(store);
    const std::string key(64, 'a');
    CHECK_FALSE(store.cached(key).has_value());  // no cache entries before version 4
    trellis::agent::CacheEntry e;
    e.key = key;
    CHECK_THROWS_WITH_AS(store.put_cached(e), doctest::Contains("read-only"),
                         trellis::agent::store_error);
  }
  CHECK(snapshot(root) == before);
}

TEST_CASE(
    "file store: a writable open upgrades a version 3 store, which reads the same and caches") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_v3_fixture(dir);
  Contents old;
  {
    FileStore store(root, read_only());
    old = contents(store);
  }
  FileStore store(root);
  CHECK(store.version() == 4);
  CHECK(nlohmann::json::parse(persist_test::read_bytes(root / "@store.json"))["version"] == 4);
  CHECK(contents(store) == old);
  check_v3_runs(store);
  // The old runs go on, and the upgraded store keeps cache entries.
  CHECK(trellis::agent::cancel_run(store, "review-1", "ana", "duplicate").status ==
        RunStatus::Cancelled);
  trellis::agent::CacheEntry e;
  e.key = trellis::agent::cache_key("g", "pay", {{"amount", 300}}, "refund", "1");
  e.result = "rf_300";
  store.put_cached(e);
  CHECK(FileStore(root).cached(e.key) == e);
  CHECK(fs::is_directory(root / "@cache"));
}

TEST_CASE("file store: a marker of a newer version is refused, the root untouched") {
  persist_test::ScratchDir dir;
  const fs::path root = copy_fixture(dir);
  persist_test::write_bytes(root / "@store.json",
                            "{\"format\":\"trellis.file_store\",\"version\":5}\n");
  const Snapshot before = snapshot(root);
  for (const bool ro : {false, true}) {
    CAPTURE(ro);
    try {
      FileStore store(root, FileStoreOptions{.read_only = ro});
      FAIL("opened");
    } catch (const trellis::agent::not_a_store&) {
      FAIL("a newer store is a store");
    } catch (const trellis::agent::store_error& e) {
      const std::string what = e.what();
      CHECK(what.find("@store.json") != std::string::npos);
      CHECK(what.find("version 5") != std::string::npos);
      CHECK(what.find("version 4") != std::string::npos);
    }
  }
  CHECK(snapshot(root) == before);
}

TEST_CASE("file store: a missing path opened read-only is not_a_store and nothing is created") {
  persist_test::ScratchDir dir;
  const fs::path root = dir / "a" / "b";
  CHECK_THROWS_WITH_AS(
      FileStore(root, read_only()),
      doctest::Contains(("trellis: " + root.string() + " is not a trellis store").c_str()),
      trellis::agent::not_a_store);
  CHECK_FALSE(fs::exists(dir / "a"));
}

TEST_CASE("file store: an empty directory opened read-only is not_a_store and stays empty") {
  persist_test::ScratchDir dir;
  fs::create_directory(dir / "empty");
  CHECK_THROWS_AS(FileStore(dir / "empty", read_only()), trellis::agent::not_a_store);
  CHECK(fs::is_empty(dir / "empty"));
}

TEST_CASE("file store: a directory that holds something else is not_a_store, untouched") {
  persist_test::ScratchDir dir;
  const fs::path root = dir / "home";
  fs::create_directories(root / "Documents");
  persist_test::write_bytes(root / "Documents" / "letter.txt", "hello\n");
  persist_test::write_bytes(root / "notes.txt", "notes\n");
  const Snapshot before = snapshot(root);
  for (const bool ro : {false, true}) {
    CAPTURE(ro);
    CHECK_THROWS_WITH_AS(FileStore(root, FileStoreOptions{.read_only = ro}),
                         doctest::Contains(root.string().c_str()), trellis::agent::not_a_store);
  }
  CHECK(snapshot(root) == before);
}

TEST_CASE("file store: a marker of another format, or one that does not parse, is not_a_store") {
  persist_test::ScratchDir dir;
  for (const std::string text :
       {"{\"format\":\"other.tool\",\"version\":1}\n", "not json\n", "{\"version\":2}\n"}) {
    CAPTURE(text);
    const fs::path root = dir / "store";
    fs::remove_all(root);
    fs::create_directory(root);
    persist_test::write_bytes(root / "@store.json", text);
    const Snapshot before = snapshot(root);
    CHECK_THROWS_AS(FileStore(root, FileStoreOptions{}), trellis::agent::not_a_store);
    CHECK_THROWS_AS(FileStore(root, read_only()), trellis::agent::not_a_store);
    CHECK(snapshot(root) == before);
  }
}

TEST_CASE("file store: every write through a read-only store is refused and writes nothing") {
  persist_test::ScratchDir dir;
  const fs::path root = dir / "runs";
  {
    FileStore store(root);
    store.create(cp("run-1", 0));
    store.commit(cp("run-1", 1), 0);
    store.put_effect(started("run-1", "pay"));
    store.append_event("run-1", {{"type", "x"}});
    store.request_cancel(CancelRequest{.run_id = "run-1", .by = "ops", .reason = "r", .at = "t"});
    store.put_graph(GraphShape{.fingerprint = "draft,review@1", .entry = "draft", .nodes = {}});
  }
  // A stale index: a read-only listing reads the journal and repairs nothing.
  fs::remove(root / "@index.jsonl");
  const Snapshot before = snapshot(root);
  FileStore store(root, read_only());
  const auto refused = [](auto&& call) {
    CHECK_THROWS_WITH_AS(call(), doctest::Contains("read-only"), trellis::agent::store_error);
  };
  refused([&] { store.create(cp("run-2", 0)); });
  refused([&] { store.commit(cp("run-1", 2), 1); });
  refused([&] { (void)store.lease("run-1", "w"); });
  refused([&] { store.put_effect(started("run-1", "refund")); });
  refused([&] { store.append_event("run-1", {{"type", "y"}}); });
  refused([&] {
    store.request_cancel(CancelRequest{.run_id = "run-1", .by = "ops", .reason = "", .at = ""});
  });
  refused([&] { store.delete_run("run-1"); });
  refused([&] { store.put_graph(GraphShape{.fingerprint = "g", .entry = "", .nodes = {}}); });
  refused([&] { store.apply_retention(Retention{.keep_last = 1}); });
  // Reads of every kind, a missing run's included.
  CHECK(store.list_runs({}).size() == 1);
  CHECK(store.latest("run-1")->seq == 1);
  CHECK_FALSE(store.latest("run-9"));
  CHECK(store.checkpoint("run-1", 0));
  CHECK(store.history("run-1").size() == 2);
  CHECK(store.effects("run-1").size() == 1);
  CHECK_FALSE(store.effect("run-9", "k"));
  CHECK(store.events_after("run-1", 0).size() == 1);
  CHECK(store.cancel_requests("run-1", 0).size() == 1);
  CHECK(store.cancel_requests("run-9", 0).empty());
  CHECK(store.graph("draft,review@1"));
  CHECK(store.runs() == std::vector<std::string>{"run-1"});
  CHECK(snapshot(root) == before);
}

// ---- the run index ---------------------------------------------------------------------------

TEST_CASE("file store: list_runs keeps the runs each filter names, ordered by run id") {
  Harness<FileStore> h;
  Store& s = h.store();
  s.create(cp("c-run", 0, RunStatus::Queued, kT0));
  advance(s, "c-run", 3);  // next node "review", updated kT0 + 3 s
  s.create(cp("a-run", 0, RunStatus::Queued, kT0 + 10s));
  s.commit(waiting("a-run", 1, kT0 + 10s), 0);
  s.create(cp("b-run", 0, RunStatus::Queued, kT0 + 20s));  // "draft", updated kT0 + 20 s
  CHECK(ids(s.list_runs({})) == std::vector<std::string>{"a-run", "b-run", "c-run"});
  CHECK(ids(s.list_runs(RunFilter{.status = RunStatus::WaitingApproval})) ==
        std::vector<std::string>{"a-run"});
  CHECK(ids(s.list_runs(RunFilter{.status = RunStatus::Queued})) ==
        std::vector<std::string>{"b-run"});
  CHECK(ids(s.list_runs(RunFilter{.node = "review"})) == std::vector<std::string>{"c-run"});
  CHECK(ids(s.list_runs(RunFilter{.since = iso(kT0 + 11s)})) ==
        std::vector<std::string>{"a-run", "b-run"});
  CHECK(ids(s.list_runs(RunFilter{.status = RunStatus::Running, .since = iso(kT0 + 11s)})).empty());
  const RunSummary a = s.list_runs({})[0];
  CHECK(a.request == "1");
  CHECK(a.created_at == iso(kT0 + 10s));
  CHECK(a.updated_at == iso(kT0 + 11s));
  // From a new object over the same files, through the index.
  CHECK(h.reopen().list_runs({}) == s.list_runs({}));
}

TEST_CASE("file store: list_runs is right when a crash lost the run's newest index line") {
  Harness<FileStore> h;
  const fs::path index = h.root() / "@index.jsonl";
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 2);
  const std::string before = persist_test::read_bytes(index);
  h.store().commit(cp("run-1", 3, RunStatus::Succeeded), 2);
  // The journal is ahead of the index (the commit's index line never reached the disk).
  persist_test::write_bytes(index, before);
  FileStore fresh(h.root());
  const auto listed = fresh.list_runs({});
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].seq == 3);
  CHECK(listed[0].status == RunStatus::Succeeded);
  CHECK(listed[0].created_at == iso(kT0));
  // The listing repaired the index: its line for run-1 now says seq 3.
  CHECK(index_lines_of(index, "run-1").back()[8] == 3);
}

TEST_CASE("file store: list_runs is right with a missing, torn or damaged index") {
  Harness<FileStore> h;
  const fs::path index = h.root() / "@index.jsonl";
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  advance(h.store(), "run-2", 1);
  const std::vector<RunSummary> expected = h.store().list_runs({});
  SUBCASE("missing") { fs::remove(index); }
  SUBCASE("torn last line") {
    persist_test::write_bytes(index, persist_test::read_bytes(index) + "{\"ino\":1,\"si");
  }
  SUBCASE("a damaged line") {
    std::string text = persist_test::read_bytes(index);
    text.replace(text.find("run-2"), 5, "run-X");
    persist_test::write_bytes(index, text);
  }
  SUBCASE("a newer line whose journal stamp does not match") {
    // (A line of a deleted run of the same id, or one a copy of the store carried along.)
    nlohmann::json line = index_lines_of(index, "run-1").back();
    line[0] = 1;  // another inode
    line[4] = "Failed";
    persist_test::write_bytes(index, persist_test::read_bytes(index) + line.dump() + "\n");
  }
  FileStore fresh(h.root());
  CHECK(fresh.list_runs({}) == expected);
  FileStore ro(h.root(), read_only());
  CHECK(ro.list_runs({}) == expected);
}

TEST_CASE("file store: a run whose index line was never written is listed") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  (void)h.store().list_runs({});
  {
    // run-2 written elsewhere (as a release without the index would), then moved in.
    FileStore elsewhere(h.root().parent_path() / "elsewhere");
    elsewhere.create(cp("run-2", 0));
    elsewhere.commit(cp("run-2", 1, RunStatus::Failed), 0);
  }
  fs::rename(h.root().parent_path() / "elsewhere" / "run-2", h.root() / "run-2");
  const auto listed = h.reopen().list_runs({});
  REQUIRE(ids(listed) == std::vector<std::string>{"run-1", "run-2"});
  CHECK(listed[1].status == RunStatus::Failed);
  CHECK(listed[1].seq == 1);
}

TEST_CASE("file store: the index is compacted: many commits keep it bounded") {
  Harness<FileStore> h;
  FileStore store(h.root(), unsynced());
  const fs::path index = h.root() / "@index.jsonl";
  store.create(cp("run-1", 0));
  store.create(cp("run-2", 0));
  // About 300 bytes a line: 8,000 commits append about 2.4 MB of index lines.
  for (std::uint64_t seq = 1; seq <= 8000; ++seq) store.commit(cp("run-1", seq), seq - 1);
  CHECK(fs::file_size(index) < (1u << 20) + 64 * 1024);
  const auto listed = store.list_runs({});
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].seq == 8000);
  CHECK(listed[0].created_at == iso(kT0));
}

TEST_CASE("file store: a listing compacts an index that holds far more lines than runs") {
  Harness<FileStore> h;
  FileStore store(h.root(), unsynced());
  const fs::path index = h.root() / "@index.jsonl";
  store.create(cp("run-1", 0));
  for (std::uint64_t seq = 1; seq <= 1500; ++seq) store.commit(cp("run-1", seq), seq - 1);
  (void)store.list_runs({});
  std::string text = persist_test::read_bytes(index);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);  // the header and run-1's line
  CHECK(store.list_runs({})[0].seq == 1500);
}

TEST_CASE("file store: a run's created_at survives keep_last retention") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 5);
  h.store().apply_retention(Retention{.keep_last = 2});
  CHECK(h.store().history("run-1").front().seq == 4);
  CHECK(h.store().list_runs({})[0].created_at == iso(kT0));
  fs::remove(h.root() / "@index.jsonl");  // from the journal alone
  CHECK(h.reopen().list_runs({})[0].created_at == iso(kT0));
}

// ---- cancel requests, delete_run, events, graphs -------------------------------------------

TEST_CASE("file store: cancel request ids continue across two store objects") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  auto other = h.another();
  const auto ask = [](Store& s, const std::string& by) {
    return s.request_cancel(
        CancelRequest{.run_id = "run-1", .id = 99, .by = by, .reason = "stop", .at = iso(kT0)});
  };
  CHECK(ask(h.store(), "a") == 1);
  CHECK(ask(*other, "b") == 2);
  CHECK(ask(h.store(), "c") == 3);
  const auto after_one = other->cancel_requests("run-1", 1);
  REQUIRE(after_one.size() == 2);
  CHECK(after_one[0] == CancelRequest{"run-1", 2, "b", "stop", iso(kT0)});
  CHECK(after_one[1].id == 3);
  CHECK(after_one[1].by == "c");
  // One checksummed line each.
  const std::string text = persist_test::read_bytes(h.root() / "run-1" / "requests.jsonl");
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK(text.find("\"checksum\":\"sha256:") != std::string::npos);
  CHECK_THROWS_AS(h.store().request_cancel(
                      CancelRequest{.run_id = "run-9", .by = "ops", .reason = "", .at = ""}),
                  trellis::agent::unknown_run);
  CHECK_FALSE(fs::exists(h.root() / "run-9"));
}

TEST_CASE("file store: delete_run removes the run whole") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  h.store().put_effect(started("run-1", "pay"));
  h.store().append_event("run-1", {{"type", "x"}});
  h.store().request_cancel(CancelRequest{.run_id = "run-1", .by = "ops", .reason = "", .at = ""});
  h.store().delete_run("run-1");
  CHECK_FALSE(fs::exists(h.root() / "run-1"));
  CHECK_FALSE(h.store().latest("run-1"));
  CHECK(h.store().effects("run-1").empty());
  CHECK(h.store().cancel_requests("run-1", 0).empty());
  CHECK(h.store().runs() == std::vector<std::string>{"run-2"});
  CHECK(ids(h.reopen().list_runs({})) == std::vector<std::string>{"run-2"});
  CHECK_THROWS_AS(h.store().delete_run("run-1"), trellis::agent::unknown_run);
  // The id can be used again.
  h.store().create(cp("run-1", 0));
  CHECK(h.store().list_runs({}).size() == 2);
}

TEST_CASE("file store: delete_run is refused while this process holds the run's lease") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  {
    const Lease lease = h.store().lease("run-1", "worker");
    CHECK_THROWS_AS(h.store().delete_run("run-1"), trellis::agent::run_busy);
    CHECK_THROWS_AS(h.another()->delete_run("run-1"), trellis::agent::run_busy);
    CHECK(h.store().latest("run-1"));
    h.store().commit(cp("run-1", 1), 0, lease.token());
  }
  h.store().delete_run("run-1");
  CHECK_FALSE(h.store().latest("run-1"));
}

TEST_CASE("file store: delete_run is refused while another process holds the run's lease") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  persist_test::Child child =
      persist_test::spawn_program(TRELLIS_STORE_LEASE_CHILD, {"file", h.root().string(), "run-1"});
  REQUIRE(persist_test::read_line(child).starts_with("leased "));
  const std::string holder = "(pid " + std::to_string(child.pid) + ")";
  CHECK_THROWS_WITH_AS(h.store().delete_run("run-1"), doctest::Contains(holder.c_str()),
                       trellis::agent::run_busy);
  CHECK(h.store().latest("run-1"));
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  h.store().delete_run("run-1");
  CHECK_FALSE(fs::exists(h.root() / "run-1"));
}

TEST_CASE("file store: a run whose lease holder was SIGKILLed is claimed at once") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0, RunStatus::Queued));
  const trellis::agent::ClaimRequest request{"w", {"draft,review@1"}, 1};
  persist_test::Child child =
      persist_test::spawn_program(TRELLIS_STORE_LEASE_CHILD, {"file", h.root().string(), "run-1"});
  REQUIRE(persist_test::read_line(child).starts_with("leased "));
  CHECK(h.store().claim(request).empty());  // a live holder in another process
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  const std::vector<trellis::agent::Claim> claims = h.store().claim(request);
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].newest == cp("run-1", 0, RunStatus::Queued));
  CHECK(claims[0].lease.token().epoch == 2);
  h.store().commit(cp("run-1", 1), 0, claims[0].lease.token());
}

TEST_CASE(
    "file store: claims through the index drop a deleted run and read a stale line's "
    "journal") {
  Harness<FileStore> h;
  const fs::path index = h.root() / "@index.jsonl";
  h.store().create(cp("gone", 0, RunStatus::Queued));
  h.store().create(cp("moved-on", 0, RunStatus::Queued));
  h.store().create(cp("ready", 0, RunStatus::Queued, kT0 + 1h));
  CHECK(h.store().due_runs(10).size() == 3);  // the first call lists from the journals
  const std::string before = persist_test::read_bytes(index);
  h.store().delete_run("gone");
  h.store().commit(cp("moved-on", 1, RunStatus::Succeeded), 0);
  persist_test::write_bytes(index, before);  // lines that say both are still due
  CHECK(ids(h.store().due_runs(10)) == std::vector<std::string>{"ready"});
  const std::vector<trellis::agent::Claim> claims =
      h.store().claim(trellis::agent::ClaimRequest{"w", {"draft,review@1"}, 10});
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].newest.run_id == "ready");
}

TEST_CASE("file store: events_after gives each event its line number as its position") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  for (int i = 1; i <= 3; ++i) h.store().append_event("run-1", {{"n", i}});
  const auto all = h.store().events_after("run-1", 0);
  REQUIRE(all.size() == 3);
  CHECK(all[0].seq == 1);
  CHECK(all[2].seq == 3);
  CHECK(all[2].event == nlohmann::json{{"n", 3}});
  const auto rest = h.store().events_after("run-1", 2);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0] == all[2]);
  CHECK(h.store().events_after("run-1", 3).empty());
  // A torn last line is not an event yet, and the next append takes its place.
  const fs::path file = h.root() / "run-1" / "events.jsonl";
  persist_test::write_bytes(file, persist_test::read_bytes(file) + "{\"n\":");
  CHECK(h.store().events_after("run-1", 3).empty());
  h.store().append_event("run-1", {{"n", 4}});
  const auto fourth = h.store().events_after("run-1", 3);
  REQUIRE(fourth.size() == 1);
  CHECK(fourth[0].seq == 4);
  CHECK(fourth[0].event == nlohmann::json{{"n", 4}});
  CHECK(h.store().events_after("run-9", 0).empty());
}

TEST_CASE("file store: a graph shape is stored under its fingerprint, the newest put winning") {
  Harness<FileStore> h;
  GraphShape shape{.fingerprint = "draft,review@1",
                   .entry = "draft",
                   .nodes = {NodeShape{.name = "draft", .successors = {"review"}, .declared = true},
                             NodeShape{.name = "review", .approval = true}}};
  h.store().put_graph(shape);
  CHECK(h.reopen().graph("draft,review@1") == shape);
  CHECK_FALSE(h.store().graph("other@1"));
  const fs::path file =
      h.root() / "@graphs" / (persist_test::sha256_text("draft,review@1").substr(7) + ".json");
  REQUIRE(fs::exists(file));
  // The same shape again is not rewritten.
  struct stat before {
  }, after{};
  REQUIRE(::stat(file.c_str(), &before) == 0);
  h.store().put_graph(shape);
  REQUIRE(::stat(file.c_str(), &after) == 0);
  CHECK(before.st_ino == after.st_ino);
  CHECK(before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
  shape.entry = "review";
  h.store().put_graph(shape);
  CHECK(h.store().graph("draft,review@1")->entry == "review");
}

TEST_CASE("file store: text that JSON escapes reads back through the index unchanged") {
  Harness<FileStore> h;
  Checkpoint c = cp("run-1", 0);
  c.next_node = "say \"hi\"\\\n\tcaf\u00e9";
  c.fingerprint = "\u00fcber,\x01@2";
  h.store().create(c);
  const std::vector<RunSummary> listed = h.reopen().list_runs({});
  REQUIRE(listed.size() == 1);
  CHECK(listed[0] == trellis::agent::summarize(c, c.created_at));
  // The line was usable: the listing did not rewrite the index.
  const fs::path index = h.root() / "@index.jsonl";
  struct stat before {
  }, after{};
  REQUIRE(::stat(index.c_str(), &before) == 0);
  CHECK(h.reopen().list_runs({}) == listed);
  REQUIRE(::stat(index.c_str(), &after) == 0);
  CHECK(before.st_ino == after.st_ino);
}

TEST_CASE("file store: listings stay right while two store objects commit and compact" *
          doctest::test_suite("concurrency") * doctest::timeout(120)) {
  Harness<FileStore> h;
  const fs::path root = h.root();
  h.store().create(cp("run-a", 0));
  h.store().create(cp("run-b", 0));
  constexpr std::uint64_t kCommits = 3000;  // enough for writers to compact the index
  std::atomic<bool> done{false};
  auto writer = [&](const std::string& id) {
    FileStore store(root, unsynced());
    for (std::uint64_t seq = 1; seq <= kCommits; ++seq) store.commit(cp(id, seq), seq - 1);
  };
  std::vector<std::string> problems;
  std::thread lister([&] {
    FileStore store(root, unsynced());
    std::uint64_t last_a = 0, last_b = 0;
    while (!done.load()) {
      const std::vector<RunSummary> listed = store.list_runs({});
      if (listed.size() != 2 || listed[0].seq < last_a || listed[1].seq < last_b) {
        problems.push_back("a listing went back or lost a run");
        return;
      }
      last_a = listed[0].seq;
      last_b = listed[1].seq;
    }
  });
  std::thread a(writer, "run-a");
  std::thread b(writer, "run-b");
  a.join();
  b.join();
  done = true;
  lister.join();
  CHECK(problems.empty());
  const std::vector<RunSummary> listed = h.reopen().list_runs({});
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].seq == kCommits);
  CHECK(listed[1].seq == kCommits);
  CHECK(fs::file_size(root / "@index.jsonl") < (1u << 20) + 64 * 1024);
}
