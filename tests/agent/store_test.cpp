// SPDX-License-Identifier: MIT
// Each store's own behaviour, beyond the contract that store_conformance_test.cpp checks over
// every store: a corrupt or torn FileStore journal or effects file, its layout and modes, a
// foreign, older or newer SQLite schema, leases held by another process or taken over.

#include "store_test_support.hpp"

// ---- FileStore ---------------------------------------------------------------------------------

namespace {

fs::path journal_of(const Harness<FileStore>& h, const std::string& id) {
  return h.root() / id / "journal.jsonl";
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::vector<std::string> lines;
  std::string text = persist_test::read_bytes(file);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    lines.push_back(text.substr(pos, end == std::string::npos ? end : end + 1 - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return lines;
}

}  // namespace

TEST_CASE("file store: a corrupt middle line is a store_error naming the file and the line") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 3);
  const fs::path journal = journal_of(h, "run-1");
  auto lines = lines_of(journal);
  REQUIRE(lines.size() == 4);
  const auto at = lines[1].find("review");
  REQUIRE(at != std::string::npos);
  lines[1][at] = 'R';  // one flipped byte: the checksum no longer matches
  std::string text;
  for (const auto& l : lines) text += l;
  persist_test::write_bytes(journal, text);
  const std::string bytes = persist_test::read_bytes(journal);
  // A new object: one that cached the journal trusts its size and mtime, and an edit in place
  // that keeps the size is not something any writer does.
  for (int round = 0; round < 2; ++round) {
    FileStore& store = h.reopen();
    try {
      (void)store.history("run-1");
      FAIL("a corrupt line was accepted");
    } catch (const trellis::agent::store_error& e) {
      const std::string what = e.what();
      CHECK(what.find(journal.string()) != std::string::npos);
      CHECK(what.find("line 2") != std::string::npos);
      CHECK(what.find("checksum") != std::string::npos);
    }
    CHECK_THROWS_AS(store.commit(cp("run-1", 4), 3), trellis::agent::store_error);
  }
  CHECK(persist_test::read_bytes(journal) == bytes);  // never rewritten
}

TEST_CASE("file store: a torn last line is ignored, then cut before the next append") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 2);
  const fs::path journal = journal_of(h, "run-1");
  const std::string intact = persist_test::read_bytes(journal);
  const std::string next = lines_of(journal)[2];
  persist_test::write_bytes(journal, intact + next.substr(0, next.size() / 2));
  FileStore& store = h.reopen();
  CHECK(store.latest("run-1")->seq == 2);
  CHECK(seqs(store.history("run-1")) == std::vector<std::uint64_t>{0, 1, 2});
  store.commit(cp("run-1", 3), 2);
  CHECK(seqs(h.reopen().history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
  CHECK(persist_test::read_bytes(journal).starts_with(intact));
  CHECK(lines_of(journal).size() == 4);
}

TEST_CASE("file store: a torn last event line is ignored and cut before the next event") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  h.store().append_event("run-1", {{"n", 1}});
  const fs::path events = h.root() / "run-1" / "events.jsonl";
  persist_test::write_bytes(events, persist_test::read_bytes(events) + "{\"n\":");
  CHECK(h.store().events("run-1").size() == 1);
  h.store().append_event("run-1", {{"n", 2}});
  const auto read = h.store().events("run-1");
  REQUIRE(read.size() == 2);
  CHECK(read[1]["n"] == 2);
  persist_test::write_bytes(events, "{\"n\":1}\nnot json\n{\"n\":3}\n");
  CHECK_THROWS_WITH_AS((void)h.store().events("run-1"), doctest::Contains("line 2"),
                       trellis::agent::store_error);
}

TEST_CASE("file store: every run lives in its own directory under the root") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  h.store().append_event("run-1", {{"n", 1}});
  CHECK(fs::exists(h.root() / "run-1" / "journal.jsonl"));
  CHECK(fs::exists(h.root() / "run-1" / "events.jsonl"));
  CHECK(h.store().run_directory("run-1") == h.root() / "run-1");
  CHECK_THROWS_AS((void)h.store().run_directory("../escape"), trellis::agent::invalid_run_id);
  CHECK(persist_test::mode_of(h.root() / "run-1" / "journal.jsonl") == 0600);
}

TEST_CASE("file store: touching many runs keeps a bounded number of descriptors open") {
  Harness<FileStore> h;
  const auto open_fds = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{});
  };
  const auto before = open_fds();
  for (int i = 0; i < 400; ++i) {
    const std::string id = "run-" + std::to_string(i);
    h.store().create(cp(id, 0));
    h.store().commit(cp(id, 1), 0);
    h.store().append_event(id, {{"n", i}});
  }
  CHECK(open_fds() - before <= 3 * 128 + 8);
  CHECK(h.store().runs().size() == 400);
  CHECK(h.store().latest("run-7")->seq == 1);
}

TEST_CASE("file store: an unchanged 4 KiB member costs under 400 bytes per step") {
  Harness<FileStore> h;
  const std::string big(4096, 'k');
  Checkpoint c = cp("run-1", 0);
  c.state["big"] = big;
  h.store().create(c);
  const auto size_after_create = fs::file_size(journal_of(h, "run-1"));
  constexpr std::uint64_t kSteps = 640;  // ten snapshots' worth
  for (std::uint64_t seq = 1; seq <= kSteps; ++seq) {
    Checkpoint n = cp("run-1", seq);
    n.state["big"] = big;
    h.store().commit(n, seq - 1);
  }
  const double per_step =
      static_cast<double>(fs::file_size(journal_of(h, "run-1")) - size_after_create) / kSteps;
  MESSAGE("FileStore: " << per_step << " bytes per step with an unchanged 4 KiB member");
  CHECK(per_step <= 400.0);
  const auto newest = h.reopen().latest("run-1");
  CHECK(newest->state["big"] == big);
  CHECK(h.store().checkpoint("run-1", 333)->state["count"] == 333);
}

TEST_CASE(
    "file store: a lease held by another process is run_busy naming its pid, free once "
    "it is killed") {
  Harness<FileStore> h;
  persist_test::Child child =
      persist_test::spawn_program(TRELLIS_STORE_LEASE_CHILD, {"file", h.root().string(), "run-1"});
  const std::string line = persist_test::read_line(child);
  REQUIRE(line.starts_with("leased "));
  const std::string pid = line.substr(7, line.size() - 8);
  CHECK(pid == std::to_string(child.pid));
  const std::string holder = "(pid " + pid + ")";
  CHECK_THROWS_WITH_AS((void)h.store().lease("run-1", "parent"), doctest::Contains(holder.c_str()),
                       trellis::agent::run_busy);
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  CHECK(h.store().lease("run-1", "parent").held());
}

TEST_CASE("file store: effects.jsonl holds one checksummed record a line, the newest winning") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  const fs::path file = h.root() / "run-1" / "effects.jsonl";
  CHECK_FALSE(fs::exists(file));  // created by the first put
  const EffectRecord a = started("run-1", "a");
  h.store().put_effect(a);
  h.store().put_effect(receipt(a, "done"));
  CHECK(persist_test::mode_of(file) == 0600);
  const auto lines = lines_of(file);
  REQUIRE(lines.size() == 2);
  for (const std::string& line : lines) {
    REQUIRE(line.ends_with("\n"));
    CHECK(line.find("\"checksum\":\"sha256:") != std::string::npos);
    nlohmann::json j = nlohmann::json::parse(line);
    const std::string checksum = j["checksum"];
    j.erase("checksum");
    CHECK(persist_test::sha256_text(j.dump()) == checksum);
    CHECK(j.get<EffectRecord>().key == a.key);
  }
  CHECK(nlohmann::json::parse(lines[1])["status"] == "succeeded");
}

TEST_CASE("file store: a torn last effects line is ignored, then cut before the next put") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  const EffectRecord a = started("run-1", "a", 0);
  const EffectRecord b = started("run-1", "b", 1);
  h.store().put_effect(a);
  h.store().put_effect(b);
  const fs::path file = h.root() / "run-1" / "effects.jsonl";
  const std::string intact = persist_test::read_bytes(file);
  h.store().put_effect(receipt(b, "lost"));  // the line a crash will tear
  const std::string torn = lines_of(file)[2];
  persist_test::write_bytes(file, intact + torn.substr(0, torn.size() / 2));
  FileStore& store = h.reopen();
  CHECK(store.effects("run-1") == std::vector<EffectRecord>{a, b});
  CHECK(store.effect("run-1", b.key) == b);
  CHECK(persist_test::read_bytes(file).size() > intact.size());  // a reader does not cut it
  const EffectRecord c = started("run-1", "c", 2);
  store.put_effect(c);
  CHECK(persist_test::read_bytes(file).starts_with(intact));
  CHECK(lines_of(file).size() == 3);
  CHECK(store.effects("run-1") == std::vector<EffectRecord>{a, b, c});
  CHECK(h.reopen().effects("run-1") == std::vector<EffectRecord>{a, b, c});
}

TEST_CASE("file store: a corrupt middle effects line is a store_error naming the file and line") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  for (std::uint32_t i = 0; i < 3; ++i) h.store().put_effect(started("run-1", "e", i));
  const fs::path file = h.root() / "run-1" / "effects.jsonl";
  auto lines = lines_of(file);
  REQUIRE(lines.size() == 3);
  SUBCASE("a flipped byte") {
    const auto at = lines[1].find("pay");
    REQUIRE(at != std::string::npos);
    lines[1][at] = 'P';
  }
  SUBCASE("a checksummed line that is not an effect record") {
    lines[1] = persist_test::with_valid_checksum({{"key", "k"}});
  }
  std::string text;
  for (const auto& l : lines) text += l;
  persist_test::write_bytes(file, text);
  for (int round = 0; round < 2; ++round) {
    FileStore& store = h.reopen();
    const std::string where = file.string() + "' line 2";
    CHECK_THROWS_WITH_AS((void)store.effects("run-1"), doctest::Contains(where.c_str()),
                         trellis::agent::store_error);
    CHECK_THROWS_AS((void)store.effect("run-1", "k"), trellis::agent::store_error);
    CHECK_THROWS_AS(store.put_effect(started("run-1", "e", 9)), trellis::agent::store_error);
  }
  CHECK(persist_test::read_bytes(file) == text);  // never rewritten
  CHECK(h.store().latest("run-1").has_value());   // the checkpoints are unaffected
}

// A file `name` written as `bytes`, with its checksum byte flipped on the last line.
std::string with_bad_last_checksum(std::string bytes) {
  REQUIRE(bytes.size() > 6);
  bytes[bytes.size() - 5] ^= 1;  // inside the checksum of the last line, before its newline
  return bytes;
}

TEST_CASE(
    "file store: a complete last journal line with a bad checksum is corruption, not a torn "
    "write: a store_error naming the file and the line, the bytes unchanged") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 2);
  const fs::path journal = journal_of(h, "run-1");
  const std::string damaged = with_bad_last_checksum(persist_test::read_bytes(journal));
  persist_test::write_bytes(journal, damaged);
  for (int round = 0; round < 2; ++round) {
    FileStore& store = h.reopen();
    const std::string where = journal.string() + "' line 3";
    CHECK_THROWS_WITH_AS((void)store.latest("run-1"), doctest::Contains(where.c_str()),
                         trellis::agent::store_error);
    CHECK_THROWS_WITH_AS((void)store.history("run-1"), doctest::Contains("checksum"),
                         trellis::agent::store_error);
    CHECK_THROWS_AS(store.commit(cp("run-1", 3), 2), trellis::agent::store_error);
    CHECK_THROWS_AS(store.commit(cp("run-1", 2), 1), trellis::agent::store_error);
  }
  CHECK(persist_test::read_bytes(journal) == damaged);  // never cut, never rewritten
}

TEST_CASE(
    "file store: a complete last effects line with a bad checksum is corruption, not a torn "
    "write: a store_error naming the file and the line, the bytes unchanged") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  const EffectRecord a = started("run-1", "a", 0);
  h.store().put_effect(a);
  h.store().put_effect(receipt(a, "done"));
  const fs::path file = h.root() / "run-1" / "effects.jsonl";
  const std::string damaged = with_bad_last_checksum(persist_test::read_bytes(file));
  persist_test::write_bytes(file, damaged);
  for (int round = 0; round < 2; ++round) {
    FileStore& store = h.reopen();
    const std::string where = file.string() + "' line 2";
    CHECK_THROWS_WITH_AS((void)store.effects("run-1"), doctest::Contains(where.c_str()),
                         trellis::agent::store_error);
    CHECK_THROWS_AS((void)store.effect("run-1", a.key), trellis::agent::store_error);
    CHECK_THROWS_AS(store.put_effect(started("run-1", "b", 1)), trellis::agent::store_error);
  }
  CHECK(persist_test::read_bytes(file) == damaged);
}

TEST_CASE(
    "file store: a run whose only checkpoint line is damaged is reported, never taken for a "
    "missing run: Graph::run throws and the bytes are unchanged") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  const fs::path journal = journal_of(h, "run-1");
  REQUIRE(lines_of(journal).size() == 1);
  const std::string damaged = with_bad_last_checksum(persist_test::read_bytes(journal));
  persist_test::write_bytes(journal, damaged);
  FileStore& store = h.reopen();
  CHECK_THROWS_WITH_AS((void)store.latest("run-1"), doctest::Contains("line 1"),
                       trellis::agent::store_error);
  CHECK_THROWS_AS(store.create(cp("run-1", 0)), trellis::agent::store_error);
  trellis::agent::Graph<Note> g;
  g.add<Draft>().add<Publish>().entry("draft").max_steps(10);
  CHECK_THROWS_AS((void)g.run("run-1", Note{}, store), trellis::agent::store_error);
  CHECK(persist_test::read_bytes(journal) == damaged);
}

TEST_CASE(
    "file store: a symbolic link planted at a file of a run is refused with store_error, its "
    "target unchanged") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  h.store().append_event("run-1", {{"n", 1}});
  const fs::path run = h.root() / "run-1";
  const fs::path target = h.root().parent_path() / "target";
  // What the target holds before (nullopt: it does not exist).
  std::optional<std::string> before;
  std::function<void(FileStore&)> write;
  std::string name;
  SUBCASE("journal.jsonl") {
    name = "journal.jsonl";
    before = persist_test::read_bytes(run / name);  // a valid journal the old code appended to
    write = [](FileStore& s) { s.commit(cp("run-1", 1), 0); };
  }
  SUBCASE("effects.jsonl") {
    name = "effects.jsonl";
    before = "";
    write = [](FileStore& s) { s.put_effect(started("run-1", "a")); };
  }
  SUBCASE("events.jsonl") {
    name = "events.jsonl";
    before = "{\"n\":0}\n";
    write = [](FileStore& s) { s.append_event("run-1", {{"n", 2}}); };
  }
  SUBCASE("lease") {
    name = "lease";
    before = "precious\n";
    write = [](FileStore& s) { (void)s.lease("run-1", "me"); };
  }
  SUBCASE("commit.lock (dangling: the old code created its target)") {
    name = "commit.lock";
    write = [](FileStore& s) { s.commit(cp("run-1", 1), 0); };
  }
  REQUIRE(!name.empty());
  if (before) persist_test::write_bytes(target, *before);
  fs::remove(run / name);
  fs::create_symlink(target, run / name);
  FileStore& store = h.reopen();
  CHECK_THROWS_WITH_AS(write(store), doctest::Contains("a symbolic link is at"),
                       trellis::agent::store_error);
  if (before) {
    CHECK(persist_test::read_bytes(target) == *before);
  } else {
    CHECK_FALSE(fs::exists(target));
  }
  CHECK(fs::is_symlink(run / name));
}

TEST_CASE(
    "file store: a symbolic link planted at the journal's old temporary name is never written "
    "through") {
  Harness<FileStore> h;
  const fs::path target = h.root().parent_path() / "target";
  persist_test::write_bytes(target, "precious\n");
  fs::create_directory(h.root() / "run-2");
  fs::create_symlink(target, h.root() / "run-2" / "journal.jsonl.tmp");
  h.store().create(cp("run-2", 0));
  CHECK(persist_test::read_bytes(target) == "precious\n");
  CHECK(h.reopen().latest("run-2")->seq == 0);
  CHECK(persist_test::read_bytes(target) == "precious\n");
}

TEST_CASE("file store: a run directory that is a symbolic link is refused with store_error") {
  Harness<FileStore> h;
  persist_test::ScratchDir elsewhere;
  {
    FileStore other(elsewhere / "runs");
    other.create(cp("run-1", 0));
  }
  fs::create_symlink(elsewhere / "runs" / "run-1", h.root() / "run-1");
  const std::string journal =
      persist_test::read_bytes(elsewhere / "runs" / "run-1" / "journal.jsonl");
  FileStore& store = h.reopen();
  CHECK_THROWS_WITH_AS((void)store.latest("run-1"), doctest::Contains("a symbolic link is at"),
                       trellis::agent::store_error);
  CHECK_THROWS_AS((void)store.history("run-1"), trellis::agent::store_error);
  CHECK_THROWS_AS(store.create(cp("run-1", 0)), trellis::agent::store_error);
  CHECK_THROWS_AS((void)store.lease("run-1", "me"), trellis::agent::store_error);
  CHECK_THROWS_AS((void)store.events("run-1"), trellis::agent::store_error);
  CHECK(store.runs().empty());
  CHECK(persist_test::read_bytes(elsewhere / "runs" / "run-1" / "journal.jsonl") == journal);
}

TEST_CASE(
    "file store: the root given may go through a symbolic link, resolved once by the "
    "constructor") {
  persist_test::ScratchDir dir;
  fs::create_directory(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  FileStore store(dir / "link" / "runs");
  store.create(cp("run-1", 0));
  CHECK(fs::exists(dir / "real" / "runs" / "run-1" / "journal.jsonl"));
  CHECK(store.latest("run-1")->seq == 0);
}

TEST_CASE("file store: a FIFO at journal.jsonl makes latest() a store_error at once, never a wait" *
          doctest::test_suite("concurrency")) {
  Harness<FileStore> h;
  const fs::path run = h.root() / "run-1";
  fs::create_directory(run);
  REQUIRE(::mkfifo((run / "journal.jsonl").c_str(), 0600) == 0);
  auto reading = std::async(std::launch::async, [&] {
    try {
      (void)h.store().latest("run-1");
      return std::string("no error");
    } catch (const trellis::agent::store_error& e) {
      return std::string(e.what());
    }
  });
  if (reading.wait_for(10s) != std::future_status::ready) {
    // Unblock the reader stuck in open(2), so the test ends.
    const int fd = ::open((run / "journal.jsonl").c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL("latest() waited on a FIFO");
  }
  CHECK(reading.get().find("not a regular file") != std::string::npos);
}

using persist_test::UmaskScope;

// Makes a run with every kind of file in it: journal, effects, events, lease, commit.lock.
void fill_run(FileStore& store) {
  store.create(cp("run-1", 0));
  store.commit(cp("run-1", 1), 0);
  store.put_effect(started("run-1", "a"));
  store.append_event("run-1", {{"n", 1}});
  (void)store.lease("run-1", "me");
}

TEST_CASE("file store: files are 0600 and directories 0700 by default, whatever the umask") {
  persist_test::ScratchDir dir;
  const fs::path root = dir / "a" / "b" / "runs";
  {
    const UmaskScope mask(0);
    FileStore store(root);
    fill_run(store);
  }
  for (const fs::path& d : {dir / "a", dir / "a" / "b", root, root / "run-1"})
    CHECK_MESSAGE(persist_test::mode_of(d) == 0700, d);
  for (const char* f : {"journal.jsonl", "effects.jsonl", "events.jsonl", "lease", "commit.lock"})
    CHECK_MESSAGE(persist_test::mode_of(root / "run-1" / f) == 0600, f);
}

TEST_CASE("file store: file_mode 0640 gives files 0640 and directories 0750 under umask 077") {
  persist_test::ScratchDir dir;
  const fs::path root = dir / "shared" / "runs";
  {
    const UmaskScope mask(077);
    FileStore store(root, {.file_mode = 0640});
    fill_run(store);
    store.apply_retention({.keep_last = 1});  // a rewritten journal keeps the mode
  }
  for (const fs::path& d : {dir / "shared", root, root / "run-1"})
    CHECK_MESSAGE(persist_test::mode_of(d) == 0750, d);
  for (const char* f : {"journal.jsonl", "effects.jsonl", "events.jsonl", "lease", "commit.lock"})
    CHECK_MESSAGE(persist_test::mode_of(root / "run-1" / f) == 0640, f);
}

TEST_CASE("store: a file_mode that lets others write is refused with invalid_option") {
  persist_test::ScratchDir dir;
  CHECK_THROWS_WITH_AS(FileStore(dir / "runs", {.file_mode = 0666}),
                       doctest::Contains("lets others write"), trellis::invalid_option);
  CHECK_FALSE(fs::exists(dir / "runs"));
  CHECK_THROWS_WITH_AS(SqliteStore(dir / "runs.db", {.file_mode = 0666}),
                       doctest::Contains("lets others write"), trellis::invalid_option);
  CHECK_FALSE(fs::exists(dir / "runs.db"));
}

TEST_CASE("sqlite store: the database, -wal and -shm get exactly file_mode, whatever the umask") {
  persist_test::ScratchDir dir;
  unsigned mode = 0;
  unsigned mask = 0;
  SUBCASE("the default, under umask 0") {
    mode = 0600;
    mask = 0;
  }
  SUBCASE("0640 under umask 077") {
    mode = 0640;
    mask = 077;
  }
  const fs::path db = dir / "runs.db";
  {
    const UmaskScope scope(static_cast<mode_t>(mask));
    SqliteStore s(db, {.file_mode = mode});
    s.create(cp("run-1", 0));
    s.commit(cp("run-1", 1), 0);
    REQUIRE(fs::exists(dir / "runs.db-wal"));
    REQUIRE(fs::exists(dir / "runs.db-shm"));
    for (const char* f : {"runs.db", "runs.db-wal", "runs.db-shm"})
      CHECK_MESSAGE(persist_test::mode_of(dir / f) == mode, f);
  }
}

TEST_CASE(
    "file store: a checkpoint without effects after one with them is a delta unsetting them") {
  Harness<FileStore> h;
  h.store().create(cp("run-1", 0));
  Checkpoint with = cp("run-1", 1);
  with.effects = {std::string(64, 'a')};
  h.store().commit(with, 0);
  h.store().commit(cp("run-1", 2), 1);
  const auto lines = lines_of(journal_of(h, "run-1"));
  REQUIRE(lines.size() == 3);
  const nlohmann::json added = nlohmann::json::parse(lines[1]);
  const nlohmann::json removed = nlohmann::json::parse(lines[2]);
  CHECK_FALSE(added.contains("full"));
  CHECK(added["set"]["effects"] == with.effects);
  CHECK_FALSE(removed.contains("full"));
  CHECK(removed["unset"] == nlohmann::json::array({"effects", "receipts"}));  // and their hashes
  CHECK(h.reopen().history("run-1")[2] == cp("run-1", 2));
  // The hash chain's link is implied in a delta (the hash of the record before it).
  CHECK_FALSE(removed["set"].contains("prev_hash"));
  const auto history = h.store().history("run-1");
  CHECK(history[2].prev_hash == history[1].hash);
  CHECK(history[1].prev_hash == history[0].hash);
}

TEST_CASE("file store: a paused run written before decisions were stored loads and resumes") {
  // The journal of a run paused before publish, as trellis wrote it before Checkpoint::decision
  // existed (no "decision" member; the codec is FileStore's and SqliteStore's alike).
  Harness<FileStore> h;
  const nlohmann::json full = nlohmann::json::parse(R"({
    "run_id": "run-1", "status": "WaitingApproval", "next_node": "publish", "step": 3,
    "attempt": 0, "state": {"drafts": 3, "big": ""}, "schema": 1,
    "fingerprint": "v=1;nodes=draft,publish", "resume_node": "draft", "reason": "none",
    "detail": "", "created_at": "2023-11-14T22:13:20.000Z",
    "interrupt": {"reason": "publish?", "then": "publish", "approval": null},
    "rerun_step": 2})");
  fs::create_directories(h.root() / "run-1");
  persist_test::write_bytes(journal_of(h, "run-1"),
                            persist_test::with_valid_checksum({{"seq", 3}, {"full", full}}));
  const Checkpoint paused = *h.reopen().latest("run-1");
  CHECK(paused.status == RunStatus::WaitingApproval);
  CHECK_FALSE(paused.decision.has_value());

  trellis::agent::Graph<Note> g;
  g.add<Draft>().add<Publish>().entry("draft").max_steps(10);
  CHECK(g.resume("run-1", h.store(), trellis::agent::Approve{"ana"}).succeeded());
  const auto history = h.reopen().history("run-1");
  REQUIRE(history.size() == 3);
  CHECK(history[0] == paused);
  REQUIRE(history[1].decision.has_value());
  CHECK(history[1].decision->given == trellis::agent::Resume{trellis::agent::Approve{"ana"}});
  CHECK(history[1].decision->answers == 3);
}

// ---- SqliteStore -------------------------------------------------------------------------------

namespace {

void sql(const fs::path& db, const std::string& statement) {
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(handle, statement.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(handle);
  REQUIRE_MESSAGE(rc == SQLITE_OK, text);
}

// What a database made by this build holds that version 4 did not (the run index, cancel
// requests, graph shapes; the due time and priority of version 6; the cache entries of version
// 7): dropped to make an older database out of a new one.
const std::string kWithoutVersion5 =
    "DROP TABLE cache_entries; DROP INDEX runs_by_due; ALTER TABLE runs DROP COLUMN due; "
    "ALTER TABLE runs DROP COLUMN priority; "
    "DROP INDEX runs_by_status; DROP TABLE cancel_requests; DROP TABLE graphs; "
    "ALTER TABLE runs DROP COLUMN next_node; ALTER TABLE runs DROP COLUMN step; "
    "ALTER TABLE runs DROP COLUMN reason; ALTER TABLE runs DROP COLUMN created_at; "
    "ALTER TABLE runs DROP COLUMN fingerprint; ALTER TABLE runs DROP COLUMN request; ";

}  // namespace

TEST_CASE("sqlite store: a newer schema version is refused with store_error") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  { SqliteStore store(db); }
  const std::string newer = std::to_string(SqliteStore::schema_version + 1);
  sql(db, "UPDATE trellis_schema SET version = " + newer);
  const std::string refusal = "schema version " + newer + " is newer";
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains(refusal.c_str()),
                       trellis::agent::store_error);
  const std::string name = db.string();
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: a version 1 database (before effects) is upgraded in place") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
    advance(store, "run-1", 3);
  }
  // What version 1 left: no effects table.
  sql(db, kWithoutVersion5 +
              "DROP TABLE effects; ALTER TABLE checkpoints DROP COLUMN checksum; "
              "UPDATE trellis_schema SET version = 1");
  REQUIRE(sql_integer(db, "SELECT count(*) FROM sqlite_master WHERE name='effects'") == 0);
  {
    SqliteStore store(db);
    CHECK(seqs(store.history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(store.effects("run-1").empty());
    store.put_effect(started("run-1", "charge_card"));
    store.commit(cp("run-1", 4), 3);
  }
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == SqliteStore::schema_version);
  CHECK(sql_integer(db, "SELECT count(*) FROM trellis_schema") == 1);
  SqliteStore again(db);  // opening an upgraded database changes nothing
  CHECK(again.effects("run-1") == std::vector<EffectRecord>{started("run-1", "charge_card")});
  CHECK(again.latest("run-1")->seq == 4);
  // A schema version no trellis wrote is still refused.
  sql(db, "UPDATE trellis_schema SET version = 0");
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains("is not one trellis wrote"),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: an undecodable effect row is a store_error naming the database") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  const EffectRecord a = started("run-1", "a");
  store.put_effect(a);
  sql(db, "UPDATE effects SET record = '{\"key\":1'");
  const std::string name = db.string();
  CHECK_THROWS_WITH_AS((void)store.effects("run-1"), doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
  sql(db, "UPDATE effects SET record = '{\"key\":1}'");
  CHECK_THROWS_WITH_AS((void)store.effect("run-1", a.key), doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: tables of another program with trellis's names are refused") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "app.db";
  sql(db, "CREATE TABLE runs(name TEXT)");
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains("belongs to something else"),
                       trellis::agent::store_error);
  // The same for a table named like the effect records; the other program's rows stay.
  const fs::path effects_db = dir / "effects.db";
  sql(effects_db, "CREATE TABLE effects(what TEXT); INSERT INTO effects VALUES ('mine')");
  CHECK_THROWS_WITH_AS(SqliteStore{effects_db}, doctest::Contains(effects_db.string().c_str()),
                       trellis::agent::store_error);
  CHECK(sql_integer(effects_db, "SELECT count(*) FROM effects WHERE what = 'mine'") == 1);
  CHECK(sql_integer(effects_db, "SELECT count(*) FROM sqlite_master") == 1);
}

TEST_CASE("sqlite store: another program's database is refused and left byte for byte") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "app.db";
  sql(db,
      "CREATE TABLE app_users(name TEXT); CREATE INDEX users_by_name ON app_users(name); "
      "INSERT INTO app_users VALUES ('ana')");
  const std::string before = persist_test::read_bytes(db);
  const std::string name = db.string();
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains("app_users"),
                       trellis::agent::store_error);
  CHECK(persist_test::read_bytes(db) == before);  // not switched to WAL, no tables added
  CHECK_FALSE(fs::exists(dir / "app.db-wal"));
  CHECK(sql_integer(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'trellis%'") == 0);
  // A newer trellis schema is refused untouched too.
  const fs::path newer = dir / "newer.db";
  { SqliteStore store(newer); }
  sql(newer, "PRAGMA journal_mode=DELETE; UPDATE trellis_schema SET version = 99");
  const std::string newer_bytes = persist_test::read_bytes(newer);
  CHECK_THROWS_AS(SqliteStore{newer}, trellis::agent::store_error);
  CHECK(persist_test::read_bytes(newer) == newer_bytes);
  // An empty file is trellis's to use.
  const fs::path empty = dir / "empty.db";
  persist_test::write_bytes(empty, "");
  SqliteStore store(empty);
  store.create(cp("run-1", 0));
  CHECK(store.runs() == std::vector<std::string>{"run-1"});
}

TEST_CASE("sqlite store: an edited checkpoint or effect row is refused by its checksum") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  advance(store, "run-1", 2);
  const EffectRecord a = started("run-1", "a");
  store.put_effect(a);
  // Valid JSON, plausible content: only the checksum tells.
  sql(db, "UPDATE checkpoints SET record = replace(record, 'node', 'nodf') WHERE seq = 0");
  REQUIRE(sql_integer(db, "SELECT count(*) FROM checkpoints WHERE record LIKE '%nodf%'") == 1);
  SqliteStore reopened(db);
  const std::string name = db.string();
  CHECK_THROWS_WITH_AS((void)reopened.history("run-1"), doctest::Contains("bad checksum"),
                       trellis::agent::store_error);
  CHECK_THROWS_WITH_AS((void)reopened.checkpoint("run-1", 0), doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
  sql(db, "UPDATE effects SET record = replace(record, 'started', 'succeeded')");
  CHECK_THROWS_WITH_AS((void)reopened.effect("run-1", a.key), doctest::Contains("bad checksum"),
                       trellis::agent::store_error);
  CHECK_THROWS_WITH_AS((void)reopened.effects("run-1"), doctest::Contains("bad checksum"),
                       trellis::agent::store_error);
  sql(db, "UPDATE effects SET checksum = NULL");
  CHECK_THROWS_WITH_AS((void)reopened.effects("run-1"), doctest::Contains("no checksum"),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: a version 3 database (rows without checksums) loads and is upgraded") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  const EffectRecord a = started("run-1", "a");
  {
    SqliteStore store(db);
    store.create(cp("run-1", 0));
    advance(store, "run-1", 3);
    store.put_effect(a);
  }
  // What version 3 left: the same tables without the checksum columns.
  sql(db,
      kWithoutVersion5 +
          "ALTER TABLE checkpoints DROP COLUMN checksum; ALTER TABLE effects DROP COLUMN checksum; "
          "UPDATE trellis_schema SET version = 3");
  {
    SqliteStore store(db);
    CHECK(seqs(store.history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(store.effects("run-1") == std::vector<EffectRecord>{a});
  }
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == SqliteStore::schema_version);
  CHECK(sql_integer(db, "SELECT count(*) FROM checkpoints WHERE checksum LIKE 'sha256:%'") == 4);
  CHECK(sql_integer(db, "SELECT count(*) FROM effects WHERE checksum LIKE 'sha256:%'") == 1);
  // From now on an edit is detected.
  sql(db, "UPDATE checkpoints SET record = replace(record, 'node', 'nodf') WHERE seq = 0");
  SqliteStore again(db);
  CHECK_THROWS_WITH_AS((void)again.history("run-1"), doctest::Contains("bad checksum"),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: a crafted deeply nested record is refused, not a stack overflow") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  store.create(cp("run-1", 0));
  const EffectRecord a = started("run-1", "a");
  store.put_effect(a);
  // A million open brackets, with a checksum that matches, as a forger would write it.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  for (const char* update : {"UPDATE checkpoints SET record = ?1, checksum = ?2",
                             "UPDATE effects SET record = ?1, checksum = ?2"}) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(handle, update, -1, &s, nullptr) == SQLITE_OK);
    const std::string sum = persist_test::sha256_text(deep);
    sqlite3_bind_text(s, 1, deep.data(), static_cast<int>(deep.size()), SQLITE_STATIC);
    sqlite3_bind_text(s, 2, sum.data(), static_cast<int>(sum.size()), SQLITE_STATIC);
    CHECK(sqlite3_step(s) == SQLITE_DONE);
    sqlite3_finalize(s);
  }
  sqlite3_close(handle);
  SqliteStore reopened(db);
  CHECK_THROWS_WITH_AS((void)reopened.latest("run-1"), doctest::Contains("nested deeper"),
                       trellis::agent::store_error);
  CHECK_THROWS_WITH_AS((void)reopened.effects("run-1"), doctest::Contains("nested deeper"),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: a file that is not a database is refused naming it") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "garbage.db";
  persist_test::write_bytes(db, std::string(8192, 'g'));
  const std::string name = db.string();
  CHECK_THROWS_WITH_AS(SqliteStore{db}, doctest::Contains(name.c_str()),
                       trellis::agent::store_error);
  CHECK_THROWS_WITH_AS(SqliteStore(dir / "missing" / "x.db"), doctest::Contains("open"),
                       trellis::agent::store_error);
}

TEST_CASE("sqlite store: WAL mode and the synchronous setting are in force") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db, {.synchronous = trellis::agent::SqliteSynchronous::normal});
  store.create(cp("run-1", 0));
  CHECK(fs::exists(dir / "runs.db-wal"));
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(handle, "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
  sqlite3_finalize(s);
  sqlite3_close(handle);
}

TEST_CASE("sqlite store: an unchanged 4 KiB member is not stored again every step") {
  persist_test::ScratchDir dir;
  SqliteStore store(dir / "runs.db");
  const std::string big(4096, 'k');
  Checkpoint c = cp("run-1", 0);
  c.state["big"] = big;
  store.create(c);
  for (std::uint64_t seq = 1; seq <= 128; ++seq) {
    Checkpoint n = cp("run-1", seq);
    n.state["big"] = big;
    store.commit(n, seq - 1);
  }
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open((dir / "runs.db").c_str(), &handle) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(handle, "SELECT sum(length(record)) FROM checkpoints", -1, &s,
                             nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const double per_step = static_cast<double>(sqlite3_column_int64(s, 0)) / 129.0;
  sqlite3_finalize(s);
  sqlite3_close(handle);
  MESSAGE("SqliteStore: " << per_step << " record bytes per step with an unchanged 4 KiB member");
  CHECK(per_step <= 400.0);
  CHECK(store.checkpoint("run-1", 100)->state["big"] == big);
}

TEST_CASE(
    "sqlite store: a lease held by another process is run_busy naming it, and free at once "
    "after a kill on this machine") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  // A TTL far longer than the test: only the holder's death can free the lease.
  persist_test::Child child = persist_test::spawn_program(
      TRELLIS_STORE_LEASE_CHILD, {"sqlite", db.string(), "run-1", "600000"});
  const std::string line = persist_test::read_line(child);
  REQUIRE(line.starts_with("leased "));
  const std::string pid = line.substr(7, line.size() - 8);
  const std::string holder = "'child' (pid " + pid;
  CHECK_THROWS_WITH_AS((void)store.lease("run-1", "parent"), doctest::Contains(holder.c_str()),
                       trellis::agent::run_busy);
  ::kill(child.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  const Lease taken = store.lease("run-1", "parent");
  CHECK(taken.held());
  CHECK(taken.token().epoch == 2);
}

TEST_CASE(
    "sqlite store: a holder's death is proven on its own machine only: a free or reused pid "
    "there, the TTL elsewhere") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore store(db);
  // What this process looks like to the store (its machine and pid namespace, its start time).
  { const Lease probe = store.lease("probe", "me"); }
  const std::string me_started =
      std::to_string(sql_integer(db, "SELECT started FROM leases WHERE run_id='probe'"));
  const std::string me_pid = std::to_string(::getpid());
  const std::string me_space = "(SELECT pid_space FROM leases WHERE run_id='probe')";
  const std::string free_pid = "2147483000";  // above any pid_max: no such process
  const auto holder = [&](const std::string& pid_space, const std::string& pid,
                          const std::string& started) {
    sql(db,
        "INSERT OR REPLACE INTO leases(run_id, owner, pid, token, expires_at_ms, epoch, host, "
        "pid_space, started) VALUES('run-1', 'other', " +
            pid + ", 'holder-x', 9000000000000, 7, 'elsewhere', " + pid_space + ", " + started +
            ")");
  };
  using trellis::agent::run_busy;
  holder("'another-boot pid:[1]'", free_pid, "1");  // another machine: its pid means nothing here
  CHECK_THROWS_AS((void)store.lease("run-1", "me"), run_busy);
  holder("''", free_pid, "1");  // a holder whose machine is unknown
  CHECK_THROWS_AS((void)store.lease("run-1", "me"), run_busy);
  holder(me_space, me_pid, me_started);  // alive: this very process
  CHECK_THROWS_AS((void)store.lease("run-1", "me"), run_busy);
  holder(me_space, free_pid, "1");  // on this machine, gone
  CHECK(store.lease("run-1", "me").token().epoch == 8);
  holder(me_space, me_pid, me_started + "1");  // its pid now belongs to another process
  CHECK(store.lease("run-1", "me").held());
}

TEST_CASE("sqlite store: a holder whose expired lease was taken over cannot commit") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore slow(db, {.lease_ttl = 50ms});
  SqliteStore fast(db);
  slow.create(cp("run-1", 0));
  Lease old = slow.lease("run-1", "slow");
  slow.commit(cp("run-1", 1), 0);  // renews: still ours
  std::this_thread::sleep_for(120ms);
  Lease taken = fast.lease("run-1", "fast");
  CHECK_THROWS_WITH_AS(slow.commit(cp("run-1", 2), 1), doctest::Contains("taken by 'fast'"),
                       trellis::agent::run_busy);
  fast.commit(cp("run-1", 2), 1);
  CHECK(seqs(fast.history("run-1")) == std::vector<std::uint64_t>{0, 1, 2});
}

TEST_CASE("sqlite store: a holder whose expired lease was taken over cannot start an effect") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  SqliteStore slow(db, {.lease_ttl = 50ms});
  SqliteStore fast(db);
  slow.create(cp("run-1", 0));
  Lease old = slow.lease("run-1", "slow");
  slow.put_effect(started("run-1", "charge_card"));  // renews: still ours
  std::this_thread::sleep_for(120ms);
  Lease taken = fast.lease("run-1", "fast");
  trellis::agent::EffectRecord next = started("run-1", "notify");
  CHECK_THROWS_WITH_AS(slow.put_effect(next), doctest::Contains("taken by 'fast'"),
                       trellis::agent::run_busy);
  CHECK_FALSE(fast.effect("run-1", next.key).has_value());  // nothing written
  fast.put_effect(next);
  CHECK(fast.effects("run-1").size() == 2);
}

TEST_CASE("sqlite store: a version 2 database (before lease epochs) is upgraded, its leases kept") {
  persist_test::ScratchDir dir;
  const fs::path db = dir / "runs.db";
  { SqliteStore store(db); }
  // What version 2 left: leases without epochs or the holder's process, one held for long.
  sql(db,
      kWithoutVersion5 +
          "DROP TABLE leases; CREATE TABLE leases(run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
          "pid INTEGER NOT NULL, token TEXT NOT NULL, expires_at_ms INTEGER NOT NULL); "
          "INSERT INTO leases VALUES('run-1', 'old-worker', 1, 'tok', 9000000000000); "
          "ALTER TABLE checkpoints DROP COLUMN checksum; ALTER TABLE effects DROP COLUMN checksum; "
          "UPDATE trellis_schema SET version = 2");
  SqliteStore store(db);
  CHECK(sql_integer(db, "SELECT version FROM trellis_schema") == SqliteStore::schema_version);
  CHECK_THROWS_WITH_AS((void)store.lease("run-1", "new-worker"), doctest::Contains("old-worker"),
                       trellis::agent::run_busy);
  CHECK(store.lease("run-2", "new-worker").token().epoch == 1);
}

TEST_CASE(
    "sqlite store: two workers sharing one store object: the one whose lease was taken over "
    "can neither start an effect nor commit" *
    doctest::test_suite("concurrency")) {
  persist_test::ScratchDir dir;
  SqliteStore store(dir / "runs.db", {.lease_ttl = 100ms});
  store.create(cp("run-1", 0));
  std::latch a_leased{1};
  std::latch b_leased{1};
  std::latch a_done{1};
  std::string a_effect;
  std::string a_commit;
  bool b_took = false;
  std::thread a([&] {
    const Lease lease = store.lease("run-1", "worker-a");
    a_leased.count_down();
    b_leased.wait();  // meanwhile its lease expired (nobody renewed it) and B took the run
    try {
      store.put_effect(started("run-1", "charge_card"), lease.token());
    } catch (const trellis::agent::run_busy& e) {
      a_effect = e.what();
    }
    try {
      store.commit(cp("run-1", 1), 0, lease.token());
    } catch (const trellis::agent::run_busy& e) {
      a_commit = e.what();
    }
    a_done.count_down();
  });
  std::thread b([&] {
    a_leased.wait();
    std::optional<Lease> lease;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!lease && std::chrono::steady_clock::now() < deadline) {
      try {
        lease = store.lease("run-1", "worker-b");
      } catch (const trellis::agent::run_busy&) {
        std::this_thread::sleep_for(20ms);
      }
    }
    b_took = lease.has_value();
    b_leased.count_down();
    a_done.wait();
    if (lease) store.commit(cp("run-1", 1), 0, lease->token());
  });
  a.join();
  b.join();
  REQUIRE(b_took);
  CHECK(a_effect.find("taken by 'worker-b'") != std::string::npos);
  CHECK(a_commit.find("taken by 'worker-b'") != std::string::npos);
  CHECK(store.effects("run-1").empty());  // A never started its effect
  CHECK(seqs(store.history("run-1")) == std::vector<std::uint64_t>{0, 1});
}

namespace {

// A worker's store whose lease renewals fail while `failing` is set (a store that cannot be
// reached), passing every other call to `inner`.
class RenewalSwitch final : public Store {
 public:
  explicit RenewalSwitch(Store& inner) : inner_(inner) {}
  using Store::commit;
  using Store::put_effect;
  std::atomic<bool> failing{false};

  void create(const Checkpoint& first) override { inner_.create(first); }
  void commit(const Checkpoint& next, std::uint64_t expected_seq,
              const LeaseToken& lease) override {
    inner_.commit(next, expected_seq, lease);
  }
  std::optional<Checkpoint> latest(std::string_view id) override { return inner_.latest(id); }
  std::optional<Checkpoint> checkpoint(std::string_view id, std::uint64_t seq) override {
    return inner_.checkpoint(id, seq);
  }
  std::vector<Checkpoint> history(std::string_view id) override { return inner_.history(id); }
  std::vector<std::string> runs() override { return inner_.runs(); }
  Lease lease(std::string_view id, std::string_view owner) override {
    return inner_.lease(id, owner);
  }
  void renew(const LeaseToken& lease) override {
    if (failing) throw trellis::agent::store_error("trellis: the store cannot be reached");
    inner_.renew(lease);
  }
  std::optional<std::chrono::milliseconds> lease_ttl() const override { return inner_.lease_ttl(); }
  void put_effect(const EffectRecord& r, const LeaseToken& lease) override {
    inner_.put_effect(r, lease);
  }
  std::optional<EffectRecord> effect(std::string_view id, std::string_view key) override {
    return inner_.effect(id, key);
  }
  std::vector<EffectRecord> effects(std::string_view id) override { return inner_.effects(id); }
  void append_event(std::string_view id, const nlohmann::json& e) override {
    inner_.append_event(id, e);
  }
  std::vector<nlohmann::json> events(std::string_view id) override { return inner_.events(id); }
  void apply_retention(const Retention& r) override { inner_.apply_retention(r); }

 private:
  Store& inner_;
};

// A node made of a function, over Note.
struct FnNote final : trellis::agent::Node<Note> {
  std::function<trellis::agent::NextStep(Note&, trellis::agent::RunContext&)> body;
  std::string_view name() const override { return "work"; }
  trellis::agent::NextStep run(Note& s, trellis::agent::RunContext& ctx) override {
    return body(s, ctx);
  }
};

// Tries `attempt` every 20 ms until it returns true or `limit` passes; true if it did.
template <class F>
bool within(std::chrono::milliseconds limit, F&& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (attempt()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE(
    "sqlite store: a node and an effect call that run longer than the lease TTL keep the run: "
    "another worker gets run_busy" *
    doctest::test_suite("concurrency")) {
  persist_test::ScratchDir dir;
  SqliteStore store(dir / "runs.db", {.lease_ttl = 300ms});
  SqliteStore other(dir / "runs.db", {.lease_ttl = 300ms});
  int refused = 0;
  int taken = 0;
  trellis::agent::Graph<Note> g;
  auto node = std::make_unique<FnNote>();
  node->body = [&](Note&, trellis::agent::RunContext& ctx) -> trellis::agent::NextStep {
    // An at_most_once call that takes over three TTLs, while another worker keeps trying to
    // take the run.
    ctx.effect("slow_call", {{"n", 1}}, trellis::agent::EffectPolicy::at_most_once,
               [&](const trellis::agent::EffectCall&) {
                 const auto end = std::chrono::steady_clock::now() + 1s;
                 while (std::chrono::steady_clock::now() < end) {
                   try {
                     (void)other.lease("run-1", "other");
                     ++taken;
                   } catch (const trellis::agent::run_busy&) {
                     ++refused;
                   }
                   std::this_thread::sleep_for(50ms);
                 }
                 return "done";
               });
    return trellis::agent::Halt{};
  };
  g.add(std::move(node)).entry("work");
  const auto out = g.run("run-1", Note{}, store);
  CHECK(out.status == RunStatus::Succeeded);
  CHECK(taken == 0);
  CHECK(refused > 0);
  REQUIRE(store.effects("run-1").size() == 1);
  CHECK(store.effects("run-1")[0].status == EffectStatus::succeeded);
  CHECK(other.lease("run-1", "other").held());  // released when the run call returned
}

TEST_CASE(
    "sqlite store: a worker whose lease is lost while its node runs is stopped, and nothing "
    "of the step is committed" *
    doctest::test_suite("concurrency")) {
  persist_test::ScratchDir dir;
  SqliteStore inner(dir / "runs.db", {.lease_ttl = 300ms});
  RenewalSwitch store(inner);
  SqliteStore other(dir / "runs.db", {.lease_ttl = 300ms});
  std::optional<Lease> takeover;
  bool stopped = false;
  int charged = 0;
  trellis::agent::Graph<Note> g;
  auto node = std::make_unique<FnNote>();
  node->body = [&](Note& s, trellis::agent::RunContext& ctx) -> trellis::agent::NextStep {
    s.drafts = 99;
    store.failing = true;  // renewals fail: the lease runs out, and another worker takes it
    REQUIRE(within(10s, [&] {
      try {
        takeover = other.lease("run-1", "other");
        return true;
      } catch (const trellis::agent::run_busy&) {
        return false;
      }
    }));
    store.failing = false;  // the next renewal finds the lease lost
    stopped = within(10s, [&] { return ctx.stop_requested(); });
    ctx.effect("charge_card", {{"amount", 120}}, trellis::agent::EffectPolicy::at_most_once,
               [&](const trellis::agent::EffectCall&) { return ++charged; });
    return trellis::agent::Halt{};
  };
  g.add(std::move(node)).entry("work");
  CHECK_THROWS_WITH_AS(g.run("run-1", Note{}, store), doctest::Contains("taken by 'other'"),
                       trellis::agent::run_busy);
  CHECK(stopped);
  CHECK(charged == 0);
  CHECK(inner.effects("run-1").empty());
  CHECK(seqs(inner.history("run-1")) == std::vector<std::uint64_t>{0});  // the step is not
  CHECK(inner.latest("run-1")->state["drafts"] == 0);
}
