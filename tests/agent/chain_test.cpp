// SPDX-License-Identifier: MIT
// A run's hash chain (chain.hpp), the same over every store: what the run loop, the effect
// protocol and the operations seal verifies intact; a record changed and re-hashed, or a
// receipt replaced, breaks the link named; retention's oldest kept checkpoint anchors the check.

#include <trellis/agent/chain.hpp>
#include <trellis/agent/operations.hpp>

#include "store_test_support.hpp"

// PostgresStore's cases need a server: ctest runs them (the names that end in
// "<PostgresStore>") inside tests/support/with_postgres.sh (store_tests.cmake).
#define TRELLIS_ALL_STORES MemoryStore, FileStore, SqliteStore, PostgresStore

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace chain_test {

namespace {

namespace ag = trellis::agent;

struct Ledger {
  int n = 0;
  double x = 0.5;  // a non-integer number rides through every store and the hash
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Ledger, n, x)

// work (twice: an effect and a fan-out of three each time) -> gate (asks) -> done.
struct Work final : ag::Node<Ledger> {
  std::string_view name() const override { return "work"; }
  ag::NextStep run(Ledger& s, ag::RunContext& ctx) override {
    ctx.effect("charge", {{"n", s.n}}, ag::EffectPolicy::idempotent, [](const ag::EffectCall& c) {
      return nlohmann::json{{"id", c.key.substr(0, 8)}};
    });
    std::vector<nlohmann::json> items{{{"to", "a"}}, {{"to", "b"}}, {{"to", "c"}}};
    ctx.effects(
        "notify", std::move(items), ag::EffectPolicy::idempotent,
        [](const ag::EffectCall& c) { return c.args.at("to"); },
        ag::FanoutOptions{.concurrency = 3});
    ++s.n;
    s.x += 0.25;
    return s.n < 2 ? ag::NextStep{ag::Goto{"work"}} : ag::NextStep{ag::Goto{"gate"}};
  }
};

struct Gate final : ag::Node<Ledger> {
  std::string_view name() const override { return "gate"; }
  ag::NextStep run(Ledger&, ag::RunContext&) override {
    return ag::Interrupt{"ship it?", ag::ApprovalRequest{"ship", {{"n", 2}}, "", std::nullopt},
                         "done"};
  }
};

struct Done final : ag::Node<Ledger> {
  std::string_view name() const override { return "done"; }
  ag::NextStep run(Ledger&, ag::RunContext&) override { return ag::Halt{}; }
};

struct LedgerGraph {
  ag::Graph<Ledger> g;
  LedgerGraph() { g.add<Work>().add<Gate>().add<Done>().entry("work").max_steps(20); }
};

/// Run `id` to its end through steps, effects, fan-outs, a pause, a cancellation of the pause,
/// a decision recorded by an operator, and the resume that finishes it.
void full_run(Store& store, const std::string& id) {
  LedgerGraph l;
  const auto paused = l.g.run(id, Ledger{}, store);
  REQUIRE(paused.interrupted());
  REQUIRE(ag::cancel_run(store, id, "ana", "not yet").cancelled_now);
  const auto again = l.g.resume(id, store);
  REQUIRE(again.interrupted());
  (void)ag::record_decision(store, id, again.request_id, ag::Approve{"ana"});
  REQUIRE(l.g.resume(id, store).succeeded());
}

/// A copy of run `id` from `from` into `to`, record by record as written (sealed: a store
/// writes a sealed record as it is), after `edit` changed the checkpoints it wants to.
void copy_run(Store& from, Store& to, const std::string& id,
              const std::function<void(Checkpoint&)>& edit) {
  for (Checkpoint c : from.history(id)) {
    edit(c);
    if (c.seq == 0)
      to.create(c);
    else
      to.commit(c, c.seq - 1);
  }
  for (const EffectRecord& e : from.effects(id)) to.put_effect(e);
}

}  // namespace

TEST_CASE_TEMPLATE("chain: steps, effects, a fan-out, a cancellation and a decision verify intact",
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  full_run(h.store(), "run-1");
  const std::vector<Checkpoint> history = h.store().history("run-1");
  const std::vector<EffectRecord> effects = h.store().effects("run-1");
  REQUIRE(effects.size() == 8);  // two charges, six notifications
  CHECK(history.front().prev_hash.empty());
  for (std::size_t i = 1; i < history.size(); ++i) {
    CHECK(history[i].prev_hash == history[i - 1].hash);
    CHECK(history[i].hash == ag::checkpoint_hash(history[i]));
    CHECK(history[i].receipts.size() == history[i].effects.size());
  }
  // A fan-out's records, written from several threads, link to the checkpoint their step
  // started from, and the checkpoint after it holds their hashes.
  CHECK(history[1].effects.size() == 4);
  for (std::size_t k = 0; k < history[1].effects.size(); ++k) {
    const auto e = h.store().effect("run-1", history[1].effects[k]);
    REQUIRE(e.has_value());
    CHECK(e->prev_hash == history[0].hash);
    CHECK(history[1].receipts[k] == e->hash);
  }

  const ag::ChainReport r = ag::verify_chain(h.reopen(), "run-1");
  CHECK_MESSAGE(r.intact(), r.text());
  CHECK(r.checkpoints == history.size());
  CHECK(r.effects == effects.size());
  CHECK(r.from_seq == 0);
  CHECK_FALSE(r.trimmed);
  CHECK(r.legacy_checkpoints == 0);
  CHECK(r.text().find("intact") != std::string::npos);
}

TEST_CASE_TEMPLATE("chain: a receipt changed and re-hashed breaks the checkpoint that holds it", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  full_run(h.store(), "run-1");
  const Checkpoint named = *h.store().checkpoint("run-1", 1);
  EffectRecord forged = *h.store().effect("run-1", named.effects.front());
  forged.result = {{"id", "forged"}};
  ag::seal(forged, forged.prev_hash);  // a careful forger recomputes the record's own hash
  h.store().put_effect(forged);

  const ag::ChainReport r = ag::verify_chain(h.store(), "run-1");
  REQUIRE_FALSE(r.intact());
  CHECK(r.broken->record == "effect");
  CHECK(r.broken->key == forged.key);
  CHECK(r.broken->named);
  CHECK(r.broken->seq == 1);
  CHECK(r.broken->expected == named.receipts.front());
  CHECK(r.broken->found == forged.hash);
  CHECK(r.text().find("broken at effect record " + forged.key + " (named by checkpoint 1)") !=
        std::string::npos);
}

TEST_CASE_TEMPLATE("chain: a record changed without re-hashing is named by its own hash", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  full_run(h.store(), "run-1");
  const Checkpoint named = *h.store().checkpoint("run-1", 2);  // the second work step
  REQUIRE(named.effects.size() == 4);
  EffectRecord forged = *h.store().effect("run-1", named.effects.back());
  forged.result = "changed";  // its hash kept as it was
  h.store().put_effect(forged);
  const ag::ChainReport r = ag::verify_chain(h.store(), "run-1");
  REQUIRE_FALSE(r.intact());
  CHECK(r.broken->key == forged.key);
  CHECK(r.broken->reason.find("does not match its hash") != std::string::npos);
}

TEST_CASE_TEMPLATE("chain: a checkpoint changed and re-hashed breaks the next link, named", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  full_run(h.store(), "run-1");
  // The same records as written verify intact in a second store (sealed ones are kept as they
  // are); with checkpoint 2's state changed and its own hash recomputed, checkpoint 3 is the
  // broken link.
  Harness<S> copy;
  copy_run(h.store(), copy.store(), "run-1", [](Checkpoint&) {});
  CHECK(ag::verify_chain(copy.store(), "run-1").intact());

  Harness<S> forged;
  std::string forged_hash;
  copy_run(h.store(), forged.store(), "run-1", [&](Checkpoint& c) {
    if (c.seq != 2) return;
    c.state["n"] = 99;
    ag::seal(c, c.prev_hash);
    forged_hash = c.hash;
  });
  const ag::ChainReport r = ag::verify_chain(forged.store(), "run-1");
  REQUIRE_FALSE(r.intact());
  CHECK(r.broken->record == "checkpoint");
  CHECK(r.broken->seq == 3);
  CHECK(r.broken->expected == forged_hash);
  CHECK(r.broken->found == h.store().checkpoint("run-1", 2)->hash);
  CHECK(r.text().find("broken at checkpoint 3: its prev_hash is not the hash of checkpoint 2") !=
        std::string::npos);
}

TEST_CASE_TEMPLATE("chain: after keep_last retention the check starts at the anchor it keeps", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  full_run(h.store(), "run-1");
  const std::vector<Checkpoint> before = h.store().history("run-1");
  h.store().apply_retention(Retention{.keep_last = 3});
  const std::vector<Checkpoint> kept = h.reopen().history("run-1");
  REQUIRE(kept.size() == 3);
  const Checkpoint& removed = before[before.size() - 4];
  CHECK(kept.front().prev_hash == removed.hash);  // the anchor survives the rewrite

  const ag::ChainReport r = ag::verify_chain(h.store(), "run-1");
  CHECK_MESSAGE(r.intact(), r.text());
  CHECK(r.trimmed);
  CHECK(r.from_seq == kept.front().seq);
  CHECK(r.anchor == removed.hash);
  CHECK(r.checkpoints == 3);
  CHECK(r.text().find("checked from seq " + std::to_string(kept.front().seq) + ", anchored at " +
                      removed.hash + " (older checkpoints removed by retention)") !=
        std::string::npos);
}

TEST_CASE_TEMPLATE("chain: a store seals the records a direct user gives it unsealed", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().put_effect(started("run-1", "refund"));
  const EffectRecord done = receipt(started("run-1", "refund"), {{"id", "rf-1"}});
  h.store().put_effect(done);
  Checkpoint next = cp("run-1", 1);
  next.effects = {done.key};
  h.store().commit(next, 0);
  h.store().commit(cp("run-1", 2), 1);

  const auto first = h.store().checkpoint("run-1", 0);
  const auto latest = h.store().latest("run-1");
  const auto record = h.store().effect("run-1", done.key);
  CHECK(*latest == cp("run-1", 2));  // equal in content: the seal is not compared
  CHECK(first->hash == ag::checkpoint_hash(*first));
  CHECK(record->prev_hash == first->hash);
  CHECK(h.store().checkpoint("run-1", 1)->receipts == std::vector<std::string>{record->hash});
  const ag::ChainReport r = ag::verify_chain(h.store(), "run-1");
  CHECK_MESSAGE(r.intact(), r.text());
  CHECK(r.checkpoints == 3);
  CHECK(r.effects == 1);
}

TEST_CASE_TEMPLATE("chain: a run the store does not have is unknown_run", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  CHECK_THROWS_AS((void)ag::verify_chain(h.store(), "nobody"), ag::unknown_run);
}

TEST_CASE("chain: a record's hash is SHA-256 of its JSON without \"hash\", compact and sorted") {
  Checkpoint c = cp("run-1", 1);
  ag::seal(c, std::string(64, 'a'));
  nlohmann::json j = c;
  CHECK(j.at("prev_hash") == std::string(64, 'a'));
  j.erase("hash");
  CHECK("sha256:" + c.hash == persist_test::sha256_text(j.dump()));
  // Members written only when set: an unsealed record has none of them.
  const nlohmann::json plain = cp("run-1", 1);
  CHECK_FALSE(plain.contains("hash"));
  CHECK_FALSE(plain.contains("prev_hash"));
  CHECK_FALSE(plain.contains("receipts"));
}

TEST_CASE(
    "chain: an effect record's hash is SHA-256 of its JSON without \"hash\", whatever it holds") {
  // The hash is written member by member (chain.cpp); these records reach every branch of it.
  const auto documented = [](const EffectRecord& r) {
    nlohmann::json j = r;
    j.erase("hash");
    return persist_test::sha256_text(
        j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  EffectRecord r;
  r.run_id = "run-1";
  r.key = std::string(64, 'b');
  r.name = "payments.refund";
  r.args = {{"amount", 12.5}, {"to", "ana"}, {"tags", {"a", "b"}}, {"z", nullptr}};
  r.policy = ag::EffectPolicy::at_most_once;
  r.node = "pay";
  r.step = 7;
  r.ordinal = 3;
  CHECK("sha256:" + ag::effect_hash(r) == documented(r));
  r.status = ag::EffectStatus::succeeded;
  r.result = {{"id", "re_1"}, {"ok", true}};
  r.issued = 2;
  r.compensable = true;
  r.started_at = "2026-11-24T10:00:00.000Z";
  r.finished_at = "2026-11-24T10:00:01.000Z";
  r.prev_hash = std::string(64, 'c');
  r.cached_from = std::string(64, 'd');
  CHECK("sha256:" + ag::effect_hash(r) == documented(r));
  // Text that must be escaped, text beyond ASCII, and bytes that are not UTF-8 (replaced).
  r.name = "quote \" backslash \\ tab \t newline \n bell \x07 del \x7f";
  r.node = "n\xc3\xa9ud \xe2\x9c\x93";
  r.error = std::string("bad \xff\xfe byte");
  r.compensates = "k\x01";
  r.reconciliation = ag::Reconciliation{};
  r.reconciliation->by = "ops";
  r.reconciliation->reason = "checked \"by hand\"";
  CHECK("sha256:" + ag::effect_hash(r) == documented(r));
  ag::seal(r, std::string(64, 'e'));
  CHECK(r.prev_hash == std::string(64, 'e'));
  CHECK("sha256:" + r.hash == documented(r));
}

namespace {

/// Removes the hash chain's members from every checkpoint and effect row of the SQLite store
/// at `db` (their checksums recomputed): the records as a release before hash chains wrote them.
void strip_chain(const fs::path& db) {
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  for (const std::string table : {"checkpoints", "effects"}) {
    const std::string id = table == "checkpoints" ? "seq" : "key";
    std::vector<std::pair<std::string, std::string>> rows;  // id (as text), new record
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(handle, ("SELECT " + id + ", record FROM " + table).c_str(), -1, &s,
                               nullptr) == SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
      nlohmann::json r =
          nlohmann::json::parse(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)));
      for (const char* part : {"full", "set"})
        if (r.contains(part))
          for (const char* m : {"hash", "prev_hash", "receipts"}) r[part].erase(m);
      for (const char* m : {"hash", "prev_hash"}) r.erase(m);
      rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), r.dump());
    }
    sqlite3_finalize(s);
    for (const auto& [key, record] : rows) {
      REQUIRE(sqlite3_prepare_v2(
                  handle,
                  ("UPDATE " + table + " SET record=?1, checksum=?2 WHERE " + id + "=?3").c_str(),
                  -1, &s, nullptr) == SQLITE_OK);
      const std::string checksum = persist_test::sha256_text(record);
      sqlite3_bind_text(s, 1, record.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(s, 2, checksum.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(s, 3, key.c_str(), -1, SQLITE_TRANSIENT);
      REQUIRE(sqlite3_step(s) == SQLITE_DONE);
      sqlite3_finalize(s);
    }
  }
  sqlite3_close(handle);
}

}  // namespace

TEST_CASE("chain: records of a release before hash chains are reported as such, not as broken") {
  Harness<SqliteStore> h;
  full_run(h.store(), "run-1");
  const std::size_t checkpoints = h.store().history("run-1").size();
  h.reopen();
  strip_chain(h.db());
  SqliteStore& store = h.reopen();
  REQUIRE(store.latest("run-1")->hash.empty());
  ag::ChainReport r = ag::verify_chain(store, "run-1");
  CHECK_MESSAGE(r.intact(), r.text());
  CHECK(r.legacy_checkpoints == checkpoints);
  CHECK(r.legacy_effects == 8);
  CHECK(r.checkpoints == 0);
  CHECK(r.text().find("predate hash chains") != std::string::npos);

  // A newer release continues the run: its chain starts at the first checkpoint it seals.
  const std::uint64_t last = store.latest("run-1")->seq;
  Checkpoint next = *store.latest("run-1");
  next.seq = last + 1;
  store.commit(next, last);
  r = ag::verify_chain(store, "run-1");
  CHECK_MESSAGE(r.intact(), r.text());
  CHECK(r.from_seq == last + 1);
  CHECK(r.checkpoints == 1);
}

TEST_CASE("chain: a checkpoint deleted from the middle of a run is named as missing") {
  Harness<SqliteStore> h;
  full_run(h.store(), "run-1");
  const std::uint64_t newest = h.store().latest("run-1")->seq;
  h.reopen();
  REQUIRE(sql_integer(h.db(), "SELECT count(*) FROM checkpoints WHERE seq=2") == 1);
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(h.db().c_str(), &handle) == SQLITE_OK);
  REQUIRE(sqlite3_exec(handle, "DELETE FROM checkpoints WHERE seq=2", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(handle);
  const ag::ChainReport r = ag::verify_chain(h.reopen(), "run-1");
  REQUIRE_FALSE(r.intact());
  CHECK(r.broken->record == "checkpoint");
  CHECK(r.broken->seq == 3);
  CHECK(r.text().find("broken at checkpoint 3: checkpoint 2 missing: the history jumps from seq "
                      "1 to 3") != std::string::npos);
  CHECK(newest > 3);
}

}  // namespace chain_test
