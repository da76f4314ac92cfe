// SPDX-License-Identifier: MIT
// The Store contract (store.hpp, detail/store_protocol.hpp) as one behavioural suite over every
// backend: MemoryStore, FileStore and SqliteStore. Each backend's own files, schema and bad
// input are in store_test.cpp.

#include "store_test_support.hpp"

// Every store; PostgresStore's cases need a server: ctest runs them (the names that end in
// "<PostgresStore>") inside tests/support/with_postgres.sh, and the others without one
// (store_tests.cmake).
#define TRELLIS_ALL_STORES MemoryStore, FileStore, SqliteStore, PostgresStore
#define TRELLIS_SHARED_STORES FileStore, SqliteStore, PostgresStore

// ---- the contract, over every store -----------------------------------------------------------

TEST_CASE_TEMPLATE("store: create writes the first checkpoint and latest reads it", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  CHECK_FALSE(h.store().latest("run-1").has_value());
  const Checkpoint first = cp("run-1", 0, RunStatus::Queued);
  h.store().create(first);
  CHECK(h.store().latest("run-1") == first);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0});
}

TEST_CASE_TEMPLATE("store: commits append; history and checkpoint(seq) read any of them", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 5);
  CHECK(h.store().latest("run-1") == cp("run-1", 5));
  const auto history = h.store().history("run-1");
  REQUIRE(history.size() == 6);
  for (std::uint64_t seq = 0; seq <= 5; ++seq) {
    const auto one = h.store().checkpoint("run-1", seq);
    REQUIRE(one.has_value());
    CHECK(*one == history[seq]);
    CHECK(one->seq == seq);
    CHECK(one->state["count"] == seq);
  }
  CHECK_FALSE(h.store().checkpoint("run-1", 6).has_value());
  CHECK_FALSE(h.store().checkpoint("other", 0).has_value());
  CHECK(h.store().history("other").empty());
}

TEST_CASE_TEMPLATE("store: a second create of the same run fails", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  CHECK_THROWS_AS(h.store().create(cp("run-1", 0)), trellis::agent::run_busy);
  CHECK(h.store().history("run-1").size() == 1);
}

TEST_CASE_TEMPLATE("store: a stale expected_seq is run_busy and writes nothing", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 2);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 2), 1), trellis::agent::run_busy);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 1), 0), trellis::agent::run_busy);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1, 2});
  h.store().commit(cp("run-1", 3), 2);
  CHECK(h.store().latest("run-1")->seq == 3);
}

TEST_CASE_TEMPLATE("store: commit to a run that does not exist is unknown_run", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  CHECK_THROWS_AS(h.store().commit(cp("nobody", 1), 0), trellis::agent::unknown_run);
}

TEST_CASE_TEMPLATE("store: racing committers of one seq: exactly one wins" *
                       doctest::test_suite("concurrency"),
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  constexpr int kThreads = 4;
  constexpr std::uint64_t kSteps = 20;
  std::atomic<int> wins{0};
  std::atomic<int> losses{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (std::uint64_t seq = 1; seq <= kSteps; ++seq) {
        // Everyone tries every seq; a loser retries the same seq only if nobody took it.
        for (;;) {
          const std::uint64_t newest = h.store().latest("run-1")->seq;
          if (newest >= seq) break;
          try {
            h.store().commit(cp("run-1", newest + 1), newest);
            wins.fetch_add(1);
          } catch (const trellis::agent::run_busy&) {
            losses.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wins.load() == static_cast<int>(kSteps));
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s = 0; s <= kSteps; ++s) expected.push_back(s);
  CHECK(seqs(h.store().history("run-1")) == expected);
}

TEST_CASE_TEMPLATE("store: a lease refuses a second worker thread until it is dropped" *
                       doctest::test_suite("concurrency"),
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  std::optional<Lease> first = h.store().lease("run-1", "worker-a");
  CHECK(first->held());
  std::string refusal;
  std::thread([&] {
    try {
      (void)h.store().lease("run-1", "worker-b");
    } catch (const trellis::agent::run_busy& e) {
      refusal = e.what();
    }
  }).join();
  CHECK(refusal.find("worker-a") != std::string::npos);
  CHECK_THROWS_AS((void)h.store().lease("run-1", "worker-c"), trellis::agent::run_busy);
  CHECK_NOTHROW((void)h.store().lease("run-2", "worker-c"));  // other runs are free
  first.reset();
  std::thread([&] { CHECK(h.store().lease("run-1", "worker-b").held()); }).join();
}

TEST_CASE_TEMPLATE("store: a lease's token fences commits and effect records once it is released",
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::run_busy;
  h.store().create(cp("run-1", 0));
  std::optional<Lease> first = h.store().lease("run-1", "worker-a");
  const LeaseToken a = first->token();
  CHECK(a.run_id == "run-1");
  CHECK_FALSE(a.holder.empty());
  h.store().commit(cp("run-1", 1), 0, a);
  h.store().put_effect(started("run-1", "charge_card"), a);
  h.store().renew(a);
  first.reset();
  CHECK_THROWS_AS(h.store().renew(a), run_busy);
  Lease second = h.store().lease("run-1", "worker-b");
  const LeaseToken& b = second.token();
  CHECK(b.holder != a.holder);
  CHECK(b.epoch > a.epoch);
  // The worker that let go writes nothing more, though it uses the same store object.
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 2), 1, a), run_busy);
  CHECK_THROWS_AS(h.store().put_effect(started("run-1", "notify"), a), run_busy);
  CHECK_THROWS_AS(h.store().renew(a), run_busy);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1});
  CHECK(names(h.store().effects("run-1")) == std::vector<std::string>{"charge_card"});
  // A token of another run holds nothing here.
  Lease other = h.store().lease("run-2", "worker-b");
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 2), 1, other.token()), run_busy);
  h.store().commit(cp("run-1", 2), 1, b);
  h.store().put_effect(started("run-1", "notify"), b);
  h.store().renew(b);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1, 2});
}

TEST_CASE_TEMPLATE("store: epochs keep growing across releases and new store objects", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  std::uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    const Lease lease = h.reopen().lease("run-1", "worker");
    CHECK(lease.token().epoch > last);
    last = lease.token().epoch;
  }
}

TEST_CASE_TEMPLATE("store: every call checks the run id first, whatever else is wrong with it", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::invalid_run_id;
  // Not UTF-8, a path, empty: refused as run ids before anything else is looked at (a record
  // that cannot be encoded, a run that does not exist, a seq that does not follow).
  for (const std::string id : {"caf\xe9", "\xff\xfe", "a/b", ""}) {
    CAPTURE(id);
    EffectRecord record = started("run-1", "charge_card");
    record.run_id = id;
    CHECK_THROWS_AS(h.store().put_effect(record), invalid_run_id);
    CHECK_THROWS_AS(h.store().commit(cp(id, 5), 0), invalid_run_id);
    CHECK_THROWS_AS(h.store().append_event(id, {{"kind", "x"}}), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().events(id), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().effect(id, "k"), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().effects(id), invalid_run_id);
    CHECK_THROWS_AS(h.store().renew(LeaseToken{id, "holder", 1}), invalid_run_id);
  }
  CHECK(h.store().runs().empty());
}

TEST_CASE_TEMPLATE("store: a checkpoint whose seq does not follow expected_seq is refused", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 5), 0), trellis::agent::store_error);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 0), 0), trellis::agent::store_error);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0});
  h.store().commit(cp("run-1", 1), 0);
  CHECK(h.store().latest("run-1")->seq == 1);
}

TEST_CASE_TEMPLATE(
    "store: a seq that does not follow is a store_error naming the run and both seqs", S,
    TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().commit(cp("run-1", 1), 0);
  try {
    h.store().commit(cp("run-1", 3), 1);
    FAIL("a checkpoint that skips a seq was acknowledged");
  } catch (const trellis::agent::run_busy&) {
    FAIL("a gap in the sequence is not another worker's progress (run_busy)");
  } catch (const trellis::agent::store_error& e) {
    const std::string text = e.what();
    CHECK(text.find("run-1") != std::string::npos);
    CHECK(text.find("checkpoint 3 cannot follow 1") != std::string::npos);
  }
  CHECK(h.reopen().latest("run-1")->seq == 1);
}

TEST_CASE_TEMPLATE("store: the version check comes before the sequence check", S,
                   TRELLIS_ALL_STORES) {
  // A worker that lost the race is told so (run_busy), whatever seq it built on the stale one.
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().commit(cp("run-1", 1), 0);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 7), 0), trellis::agent::run_busy);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1});
}

TEST_CASE_TEMPLATE("store: a lease token of another run is refused, naming both runs", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::run_busy;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  const Lease mine = h.store().lease("run-2", "worker-a");
  const auto refused = [](auto&& write) {
    try {
      write();
    } catch (const run_busy& e) {
      return std::string(e.what());
    }
    return std::string("nothing refused");
  };
  const std::string text = refused([&] { h.store().commit(cp("run-1", 1), 0, mine.token()); });
  CHECK(text.find("run 'run-1'") != std::string::npos);
  CHECK(text.find("for run 'run-2'") != std::string::npos);
  CHECK(refused([&] { h.store().put_effect(started("run-1", "charge_card"), mine.token()); }) !=
        "nothing refused");
  LeaseToken forged = mine.token();
  forged.run_id = "run-1";
  CHECK(refused([&] { h.store().renew(forged); }) != "nothing refused");
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0});
  CHECK(h.store().effects("run-1").empty());
}

TEST_CASE_TEMPLATE("store: an empty token renews nothing", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  const Lease held = h.store().lease("run-1", "worker-a");
  CHECK_THROWS_AS(h.store().renew(LeaseToken{"run-1", "", 0}), trellis::agent::run_busy);
}

TEST_CASE_TEMPLATE("store: a lease ends with its holder or its TTL; the next epoch fences the old",
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::run_busy;
  Store& store = h.reopen_with_lease_ttl(100ms);
  store.create(cp("run-1", 0));
  std::optional<Lease> first = store.lease("run-1", "worker-a");
  const LeaseToken a = first->token();
  if (store.lease_ttl()) {
    // Renewed, it is still held; left alone past its TTL, the next worker takes it over.
    store.renew(a);
    CHECK_THROWS_AS((void)store.lease("run-1", "worker-b"), run_busy);
    std::optional<Lease> second;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!second && std::chrono::steady_clock::now() < deadline) {
      try {
        second = store.lease("run-1", "worker-b");
      } catch (const run_busy&) {
        std::this_thread::sleep_for(20ms);
      }
    }
    REQUIRE(second);
    CHECK(second->token().epoch > a.epoch);
    CHECK_THROWS_AS(store.commit(cp("run-1", 1), 0, a), run_busy);
    CHECK_THROWS_AS(store.renew(a), run_busy);
    store.commit(cp("run-1", 1), 0, second->token());
  } else {
    // No TTL: held until released, however long; then the next epoch takes over.
    CHECK_FALSE(store.lease_ttl().has_value());
    CHECK_THROWS_AS((void)store.lease("run-1", "worker-b"), run_busy);
    first.reset();
    const Lease second = store.lease("run-1", "worker-b");
    CHECK(second.token().epoch > a.epoch);
    CHECK_THROWS_AS(store.commit(cp("run-1", 1), 0, a), run_busy);
    store.commit(cp("run-1", 1), 0, second.token());
  }
  CHECK(seqs(store.history("run-1")) == std::vector<std::uint64_t>{0, 1});
}

TEST_CASE_TEMPLATE("store: events are appended and read back in order", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  for (int i = 0; i < 5; ++i) {
    h.store().append_event("run-1", {{"kind", "step_completed"}, {"step", i}});
    h.store().append_event("run-2", {{"kind", "other"}, {"step", i}});
  }
  const auto events = h.store().events("run-1");
  REQUIRE(events.size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(events[static_cast<std::size_t>(i)]["step"] == i);
    CHECK(events[static_cast<std::size_t>(i)]["kind"] == "step_completed");
  }
  CHECK(h.store().events("nobody").empty());
}

TEST_CASE_TEMPLATE("store: runs() lists every created run", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  CHECK(h.store().runs().empty());
  h.store().create(cp("b-run", 0));
  h.store().create(cp("a-run", 0));
  (void)h.store().lease("c-leased-only", "w");  // a lease alone does not make a run
  CHECK(h.store().runs() == std::vector<std::string>{"a-run", "b-run"});
}

TEST_CASE_TEMPLATE("store: keep_last keeps the newest checkpoints of every run", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("long", 0));
  advance(h.store(), "long", 9);
  h.store().create(cp("short", 0));
  advance(h.store(), "short", 1);
  const auto before = h.store().history("long");
  h.store().apply_retention(Retention{.keep_last = 3});
  CHECK(seqs(h.store().history("long")) == std::vector<std::uint64_t>{7, 8, 9});
  CHECK(seqs(h.store().history("short")) == std::vector<std::uint64_t>{0, 1});
  CHECK(h.store().checkpoint("long", 7) == before[7]);
  CHECK(h.store().checkpoint("long", 9) == before[9]);
  CHECK_FALSE(h.store().checkpoint("long", 6).has_value());
  h.store().commit(cp("long", 10), 9);  // the chain goes on after the rewrite
  CHECK(h.reopen().latest("long") == cp("long", 10));
}

TEST_CASE_TEMPLATE("store: finished runs older than the limit are deleted, others kept", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  const auto old = std::chrono::system_clock::now() - 48h;
  h.store().create(cp("old-done", 0, RunStatus::Succeeded, old));
  h.store().append_event("old-done", {{"kind", "graph_completed"}});
  h.store().create(cp("old-failed", 0, RunStatus::Failed, old));
  h.store().create(cp("old-waiting", 0, RunStatus::WaitingApproval, old));
  h.store().create(cp("new-done", 0, RunStatus::Succeeded, std::chrono::system_clock::now()));
  h.store().create(cp("old-done-leased", 0, RunStatus::Succeeded, old));
  Lease lease = h.store().lease("old-done-leased", "auditor");
  h.store().apply_retention(Retention{.finished_older_than = 24h});
  CHECK(h.store().runs() == std::vector<std::string>{"new-done", "old-done-leased", "old-waiting"});
  CHECK_FALSE(h.store().latest("old-done").has_value());
  CHECK(h.store().events("old-done").empty());
  // The id is free again.
  h.store().create(cp("old-done", 0));
  CHECK(h.store().history("old-done").size() == 1);
}

TEST_CASE_TEMPLATE("store: run ids that could escape the store are refused", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::invalid_run_id;
  const std::vector<std::string> bad = {
      "", "..", ".", "a/b", "../x", std::string(200, 'a'), std::string("a\0b", 3), "a\\b", "a b"};
  for (const std::string& id : bad) {
    CAPTURE(id);
    CHECK_THROWS_AS(h.store().create(cp(id, 0)), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().latest(id), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().history(id), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().checkpoint(id, 0), invalid_run_id);
    CHECK_THROWS_AS((void)h.store().lease(id, "w"), invalid_run_id);
  }
  CHECK(h.store().runs().empty());
  CHECK_NOTHROW(h.store().create(cp(std::string(128, 'a'), 0)));
  CHECK_NOTHROW(h.store().create(cp("Run_1.v2-final", 0)));
}

TEST_CASE_TEMPLATE("store: a new object over the same storage sees everything", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  if constexpr (Harness<S>::persistent) {
    h.store().create(cp("run-1", 0));
    advance(h.store(), "run-1", 70);  // past a full snapshot
    h.store().append_event("run-1", {{"kind", "step_completed"}});
    const auto history = h.store().history("run-1");
    S& again = h.reopen();
    CHECK(again.history("run-1") == history);
    CHECK(again.latest("run-1") == history.back());
    CHECK(again.checkpoint("run-1", 65) == history[65]);
    CHECK(again.events("run-1").size() == 1);
    CHECK(again.runs() == std::vector<std::string>{"run-1"});
    CHECK_THROWS_AS(again.commit(cp("run-1", 70), 69), trellis::agent::run_busy);
    again.commit(cp("run-1", 71), 70);
    CHECK(again.latest("run-1")->seq == 71);
  }
}

TEST_CASE_TEMPLATE("store: two objects over the same storage share the version check", S,
                   TRELLIS_SHARED_STORES) {
  Harness<S> h;
  auto other = h.another();
  h.store().create(cp("run-1", 0));
  CHECK_THROWS_AS(other->create(cp("run-1", 0)), trellis::agent::run_busy);
  h.store().commit(cp("run-1", 1), 0);
  CHECK_THROWS_AS(other->commit(cp("run-1", 1), 0), trellis::agent::run_busy);
  other->commit(cp("run-1", 2), 1);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 2), 1), trellis::agent::run_busy);
  h.store().commit(cp("run-1", 3), 2);  // its cached newest was stale: it re-reads
  CHECK(seqs(other->history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
  CHECK(other->latest("run-1") == h.store().latest("run-1"));
  Lease lease = h.store().lease("run-1", "first");
  CHECK_THROWS_AS((void)other->lease("run-1", "second"), trellis::agent::run_busy);
}

TEST_CASE_TEMPLATE("store: a state that is not an object, and members that come and go", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  Checkpoint c = cp("run-1", 0);
  c.state = 7;
  h.store().create(c);
  std::vector<Checkpoint> written{c};
  std::vector<nlohmann::json> states;
  for (const char* text : {R"("text")", "{}", R"({"a":1})", R"({"a":1,"b":[1,2]})",
                           R"({"b":[1,2]})", "[]", "null", R"({"b":{"c":1}})"})
    states.push_back(nlohmann::json::parse(text));
  for (std::size_t i = 0; i < states.size(); ++i) {
    Checkpoint n = cp("run-1", i + 1);
    n.state = states[i];
    if (i == 2) n.interrupt = trellis::agent::Interrupt{.reason = "approve?", .then = "revise"};
    h.store().commit(n, i);
    written.push_back(n);
  }
  CHECK(h.store().history("run-1") == written);
  CHECK(h.reopen().history("run-1") == written);
}

TEST_CASE_TEMPLATE("store: an effect record is put, read back, and replaced by its receipt", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  const EffectRecord charge = started("run-1", "charge_card");
  CHECK_FALSE(h.store().effect("run-1", charge.key).has_value());
  CHECK(h.store().effects("run-1").empty());
  h.store().put_effect(charge);
  CHECK(h.store().effect("run-1", charge.key) == charge);
  CHECK(h.store().effects("run-1") == std::vector<EffectRecord>{charge});
  const EffectRecord done = receipt(charge, {{"charge_id", "ch_1"}, {"amounts", {1, 2.5}}});
  h.store().put_effect(done);
  CHECK(h.store().effect("run-1", charge.key) == done);
  CHECK(h.store().effects("run-1") == std::vector<EffectRecord>{done});
  CHECK_FALSE(h.store().effect("run-1", std::string(64, '0')).has_value());
  // Effects belong to their run.
  h.store().create(cp("run-2", 0));
  CHECK(h.store().effects("run-2").empty());
  CHECK_FALSE(h.store().effect("run-2", charge.key).has_value());
  // And survive a new object over the same storage.
  S& again = h.reopen();
  CHECK(again.effect("run-1", charge.key) == done);
  CHECK(again.effects("run-1") == std::vector<EffectRecord>{done});
}

TEST_CASE_TEMPLATE("store: effects are listed in the order their keys were first put", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  // Names in reverse alphabetical order and keys in no particular one: only the order of the
  // first puts counts.
  const EffectRecord c = started("run-1", "c-mail", 0);
  const EffectRecord b = started("run-1", "b-charge", 1);
  const EffectRecord a = started("run-1", "a-ship", 2);
  h.store().put_effect(c);
  h.store().put_effect(b);
  h.store().put_effect(a);
  // Receipts keep their keys' places, the first key's last.
  h.store().put_effect(receipt(b, "charged"));
  EffectRecord retried = receipt(a, nullptr);
  retried.status = EffectStatus::transient;
  retried.error = "timeout";
  retried.issued = 2;
  h.store().put_effect(retried);
  h.store().put_effect(receipt(c, "sent"));
  const std::vector<EffectRecord> expected = {receipt(c, "sent"), receipt(b, "charged"), retried};
  CHECK(h.store().effects("run-1") == expected);
  CHECK(h.reopen().effects("run-1") == expected);
  h.store().put_effect(started("run-1", "d-refund", 3));
  CHECK(names(h.store().effects("run-1")) ==
        std::vector<std::string>{"c-mail", "b-charge", "a-ship", "d-refund"});
}

TEST_CASE_TEMPLATE("store: put_effect to a run that does not exist is unknown_run", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  CHECK_THROWS_AS(h.store().put_effect(started("nobody", "charge_card")),
                  trellis::agent::unknown_run);
  CHECK(h.store().effects("nobody").empty());
  CHECK_FALSE(h.store().effect("nobody", started("nobody", "charge_card").key).has_value());
  (void)h.store().lease("leased-only", "w");  // a lease alone does not make a run
  CHECK_THROWS_AS(h.store().put_effect(started("leased-only", "charge_card")),
                  trellis::agent::unknown_run);
  CHECK(h.store().effects("leased-only").empty());
  CHECK(h.store().runs().empty());
}

TEST_CASE_TEMPLATE("store: effect calls refuse run ids that could escape the store", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  for (const std::string id : {"", "..", "a/b", "../x", "a b"}) {
    CAPTURE(id);
    CHECK_THROWS_AS(h.store().put_effect(started(id, "charge_card")),
                    trellis::agent::invalid_run_id);
    CHECK_THROWS_AS((void)h.store().effect(id, "k"), trellis::agent::invalid_run_id);
    CHECK_THROWS_AS((void)h.store().effects(id), trellis::agent::invalid_run_id);
  }
}

TEST_CASE_TEMPLATE("store: a checkpoint's effect keys are stored, and removed when it has none", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  std::vector<Checkpoint> written{cp("run-1", 0)};
  h.store().create(written[0]);
  for (std::uint64_t seq = 1; seq <= 4; ++seq) {
    Checkpoint c = cp("run-1", seq);
    if (seq == 2) c.effects = {std::string(64, 'a'), std::string(64, 'b')};
    if (seq == 3) c.effects = {std::string(64, 'c')};
    h.store().commit(c, seq - 1);
    written.push_back(c);
  }
  CHECK(h.store().history("run-1") == written);
  CHECK(h.store().checkpoint("run-1", 2)->effects.size() == 2);
  CHECK(h.store().latest("run-1")->effects.empty());
  S& again = h.reopen();
  CHECK(again.history("run-1") == written);
  CHECK(again.latest("run-1") == written.back());
  CHECK(again.checkpoint("run-1", 3) == written[3]);
}

TEST_CASE_TEMPLATE("store: keep_last keeps every effect record; deleting a run deletes them", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("long", 0));
  h.store().put_effect(started("long", "first", 0));
  advance(h.store(), "long", 9);
  h.store().put_effect(started("long", "second", 1));
  const auto kept = h.store().effects("long");
  REQUIRE(kept.size() == 2);
  h.store().apply_retention(Retention{.keep_last = 2});
  CHECK(seqs(h.store().history("long")) == std::vector<std::uint64_t>{8, 9});
  CHECK(h.store().effects("long") == kept);
  CHECK(h.reopen().effects("long") == kept);

  const auto old = std::chrono::system_clock::now() - 48h;
  h.store().create(cp("old-done", 0, RunStatus::Succeeded, old));
  h.store().put_effect(receipt(started("old-done", "charge_card"), "ok"));
  h.store().apply_retention(Retention{.finished_older_than = 24h});
  CHECK(h.store().runs() == std::vector<std::string>{"long"});
  CHECK(h.store().effects("old-done").empty());
  CHECK(h.store().effects("long") == kept);
  if constexpr (std::is_same_v<S, FileStore>) {
    CHECK_FALSE(fs::exists(h.root() / "old-done"));
  } else if constexpr (std::is_same_v<S, SqliteStore>) {
    CHECK(sql_integer(h.db(), "SELECT count(*) FROM effects") == 2);  // only long's
  }
  // A new run of the same id starts without effects.
  h.store().create(cp("old-done", 0));
  CHECK(h.store().effects("old-done").empty());
  CHECK(h.reopen().effects("old-done").empty());
}

TEST_CASE_TEMPLATE("store: two objects over the same storage see each other's effect records", S,
                   TRELLIS_SHARED_STORES) {
  Harness<S> h;
  auto other = h.another();
  h.store().create(cp("run-1", 0));
  const EffectRecord a = started("run-1", "a", 0);
  const EffectRecord b = started("run-1", "b", 1);
  h.store().put_effect(a);
  CHECK(h.store().effects("run-1") == std::vector<EffectRecord>{a});  // cached by h
  CHECK(other->effect("run-1", a.key) == a);
  other->put_effect(receipt(a, 1));
  other->put_effect(b);
  CHECK(h.store().effect("run-1", a.key) == receipt(a, 1));
  CHECK(h.store().effects("run-1") == std::vector<EffectRecord>{receipt(a, 1), b});
  h.store().put_effect(receipt(b, 2));  // appends after other's lines, not over them
  CHECK(other->effects("run-1") == std::vector<EffectRecord>{receipt(a, 1), receipt(b, 2)});
  CHECK(h.reopen().effects("run-1") == other->effects("run-1"));
}

TEST_CASE_TEMPLATE("store: racing put_effect calls from two objects lose no record", S,
                   TRELLIS_SHARED_STORES) {
  Harness<S> h;
  auto other = h.another();
  h.store().create(cp("run-1", 0));
  constexpr int kPerThread = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? static_cast<Store&>(h.store()) : static_cast<Store&>(*other);
      for (int i = 0; i < kPerThread; ++i) {
        const EffectRecord r = started("run-1", "t" + std::to_string(t) + "-" + std::to_string(i));
        store.put_effect(r);
        store.put_effect(receipt(r, i));
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto all = h.store().effects("run-1");
  CHECK(all.size() == 4 * kPerThread);
  for (const EffectRecord& r : all) CHECK(r.status == EffectStatus::succeeded);
  CHECK(other->effects("run-1") == all);
  CHECK(h.reopen().effects("run-1") == all);
}

TEST_CASE_TEMPLATE("store: a graph runs, pauses and resumes on it from a new store object", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  trellis::agent::Graph<Note> g;
  g.add<Draft>().add<Publish>().entry("draft").max_steps(10);
  auto paused = g.run("run-1", Note{.drafts = 0, .big = std::string(4096, 'b')}, h.store());
  CHECK(paused.status == RunStatus::WaitingApproval);
  auto done = g.resume("run-1", h.reopen(), trellis::agent::Approve{.reviewer = "ana"});
  CHECK(done.status == RunStatus::Succeeded);
  CHECK(done.state->drafts == 3);
  CHECK(done.state->big.size() == 4096);
  const auto history = h.store().history("run-1");
  REQUIRE(history.size() >= 5);
  CHECK(history.back().status == RunStatus::Succeeded);
  CHECK_FALSE(h.store().events("run-1").empty());
  CHECK_THROWS_AS(g.resume("run-1", h.store()), trellis::agent::run_finished);
}

// ---- what cannot be written is refused before anything is, alike in every store -------------

namespace {

using trellis::unwritable_value;

/// An array inside `levels` others: [[...[]...]].
nlohmann::json nested(int levels) {
  nlohmann::json v = nlohmann::json::array();
  for (int i = 0; i < levels; ++i) {
    nlohmann::json outer = nlohmann::json::array();
    outer.push_back(std::move(v));
    v = std::move(outer);
  }
  return v;
}

std::string repeated(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

/// The refusal `write()` throws (FAILs when it throws nothing).
template <class Write>
unwritable_value refusal(Write&& write) {
  try {
    write();
  } catch (const unwritable_value& e) {
    return e;
  }
  FAIL("the store acknowledged what it cannot write");
  return unwritable_value("", "", "");
}

}  // namespace

TEST_CASE_TEMPLATE(
    "store: a state holding NaN or an infinity is refused, naming it; nothing is written", S,
    TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().commit(cp("run-1", 1), 0);
  const std::pair<double, const char*> cases[] = {
      {std::nan(""), "is NaN"},
      {std::numeric_limits<double>::infinity(), "is +Inf"},
      {-std::numeric_limits<double>::infinity(), "is -Inf"}};
  for (const auto& [bad, why] : cases) {
    CAPTURE(why);
    Checkpoint c = cp("run-1", 2);
    c.state["scores"] = {1.5, bad};
    const unwritable_value e = refusal([&] { h.store().commit(c, 1); });
    CHECK(e.member() == "/state/scores/1");
    CHECK(e.reason() == why);
    CHECK(e.object() == "checkpoint 2 of run 'run-1'");
  }
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1});
  CHECK(seqs(h.reopen().history("run-1")) == std::vector<std::uint64_t>{0, 1});
  h.store().commit(cp("run-1", 2), 1);  // the run goes on from its last checkpoint
  CHECK(h.reopen().latest("run-1") == cp("run-1", 2));

  // A run's first checkpoint alike: no run is created.
  Checkpoint first = cp("run-2", 0);
  first.state = {{"x", std::nan("")}};
  CHECK(refusal([&] { h.store().create(first); }).member() == "/state/x");
  CHECK_FALSE(h.store().latest("run-2").has_value());
  CHECK(h.reopen().runs() == std::vector<std::string>{"run-1"});
  h.store().create(cp("run-2", 0));
  CHECK(h.store().latest("run-2") == cp("run-2", 0));
}

TEST_CASE_TEMPLATE("store: a state nested to the readers' limit is kept, one level more refused", S,
                   TRELLIS_ALL_STORES) {
  // A record holds the state two levels below its root ({"full":{"state":...}}), and readers
  // refuse a container inside more than max_json_depth others.
  const int deepest = trellis::max_json_depth - 2;
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  Checkpoint kept = cp("run-1", 1);
  kept.state = nested(deepest);
  h.store().commit(kept, 0);  // a delta record
  Checkpoint too_deep = cp("run-1", 2);
  too_deep.state = nested(deepest + 1);
  const unwritable_value e = refusal([&] { h.store().commit(too_deep, 1); });
  CHECK(e.member() == "/state" + repeated("/0", deepest + 1));
  CHECK(e.reason() == "is nested deeper than 512 levels");
  CHECK(h.reopen().latest("run-1") == kept);
  // Rewritten as a full record (retention keeps the newest), it still reads back.
  h.store().apply_retention({.keep_last = 1});
  CHECK(h.reopen().history("run-1") == std::vector<Checkpoint>{kept});
  h.store().commit(cp("run-1", 2), 1);
  CHECK(h.reopen().latest("run-1") == cp("run-1", 2));
}

TEST_CASE_TEMPLATE("store: an interrupt's proposed input and a decision's input are checked too", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  Checkpoint paused = cp("run-1", 1);
  paused.interrupt = trellis::agent::Interrupt{
      "approve?",
      trellis::agent::ApprovalRequest{
          "pay", {{"amount", std::numeric_limits<double>::infinity()}}, "money", std::nullopt},
      "pay"};
  CHECK(refusal([&] { h.store().commit(paused, 0); }).member() ==
        "/interrupt/approval/proposed_input/amount");
  Checkpoint decided = cp("run-1", 1);
  decided.decision = trellis::agent::Decision{
      trellis::agent::Input{{{"deep", nested(trellis::max_json_depth)}}, "cy"}, iso(kT0), 0, {}};
  const unwritable_value e = refusal([&] { h.store().commit(decided, 0); });
  CHECK(std::string(e.member()).starts_with("/decision/value/deep/0/0"));
  CHECK(seqs(h.reopen().history("run-1")) == std::vector<std::uint64_t>{0});
}

TEST_CASE_TEMPLATE("store: an effect record that cannot be written is refused; the last one stays",
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  const EffectRecord charge = started("run-1", "charge_card");
  h.store().put_effect(charge);
  const unwritable_value e = refusal([&] {
    h.store().put_effect(receipt(charge, {{"total", std::nan("")}}));
  });
  CHECK(e.member() == "/result/total");
  CHECK(e.reason() == "is NaN");
  CHECK(e.object() == "effect 'charge_card' (key " + charge.key + ") of run 'run-1'");
  EffectRecord deep = started("run-1", "store_tree", 1);
  deep.args = {{"tree", nested(trellis::max_json_depth)}};
  CHECK(std::string(refusal([&] { h.store().put_effect(deep); }).member())
            .starts_with("/args/tree/0/0"));
  CHECK(h.reopen().effects("run-1") == std::vector<EffectRecord>{charge});
}

TEST_CASE_TEMPLATE("store: a checkpoint's decision is stored and read back as it was given", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  std::vector<Checkpoint> written{cp("run-1", 0)};
  const trellis::agent::Interrupt request{
      "approve the revision",
      trellis::agent::ApprovalRequest{
          "revise", {{"critique", "say more"}}, "it replaces the draft", kT0 + 1h},
      "revise"};
  const trellis::agent::Resume decisions[] = {
      trellis::agent::Approve{"ana", "fine by me"}, trellis::agent::Reject{"too vague", "bo"},
      trellis::agent::Input{{{"title", "Hello"}, {"n", 2.5}}, "cy"}, trellis::agent::Approve{}};
  std::uint64_t seq = 1;
  for (const auto& given : decisions) {
    Checkpoint c = cp("run-1", seq);
    c.decision = trellis::agent::Decision{given, iso(kT0 + 1min), seq - 1, request};
    h.store().commit(c, seq - 1);
    written.push_back(c);
    ++seq;
  }
  h.store().commit(cp("run-1", seq), seq - 1);  // and none again
  written.push_back(cp("run-1", seq));
  CHECK(h.store().history("run-1") == written);
  CHECK(h.reopen().history("run-1") == written);
}

namespace {

/// A node over a JSON state, made of a function.
class JsonStep final : public trellis::agent::Node<nlohmann::json> {
 public:
  using Fn = std::function<trellis::agent::NextStep(nlohmann::json&)>;
  JsonStep(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  trellis::agent::NextStep run(nlohmann::json& s, trellis::agent::RunContext&) override {
    return fn_(s);
  }

 private:
  std::string name_;
  Fn fn_;
};

}  // namespace

TEST_CASE_TEMPLATE(
    "store: a graph step whose state cannot be written is not acknowledged; the run resumes", S,
    TRELLIS_ALL_STORES) {
  Harness<S> h;
  std::string produce = "NaN";
  trellis::agent::Graph<nlohmann::json> g;
  g.add(std::make_unique<JsonStep>("measure", [&](nlohmann::json& s) {
    if (produce == "NaN") s["score"] = std::nan("");
    if (produce == "deep") s["score"] = nested(trellis::max_json_depth);
    if (produce == "ok") s["score"] = 0.5;
    return trellis::agent::NextStep{trellis::agent::Interrupt{
        "publish?", trellis::agent::ApprovalRequest{"publish", {}, "public", std::nullopt},
        "publish"}};
  }));
  g.add(std::make_unique<JsonStep>(
      "publish", [](nlohmann::json&) { return trellis::agent::NextStep{trellis::agent::Halt{}}; }));
  g.entry("measure");
  CHECK(refusal([&] { (void)g.run("run-1", nlohmann::json::object(), h.store()); }).member() ==
        "/state/score");
  produce = "deep";
  CHECK(std::string(refusal([&] { (void)g.resume("run-1", h.reopen()); }).member())
            .starts_with("/state/score/0"));
  CHECK(seqs(h.reopen().history("run-1")) == std::vector<std::uint64_t>{0});
  produce = "ok";
  CHECK(g.resume("run-1", h.reopen()).interrupted());
  const auto done = g.resume("run-1", h.reopen(), trellis::agent::Approve{"ana"});
  CHECK(done.succeeded());
  CHECK(done.state->at("score") == 0.5);
}

TEST_CASE_TEMPLATE("store: a delta keeps -0.0 and a float that equals an integer, as written", S,
                   TRELLIS_ALL_STORES) {
  // JSON's == holds 0.0 == -0.0 and 1 == 1.0; the restored state must still be the one the
  // program had (a replayed effect's arguments come from it).
  Harness<S> h;
  Checkpoint c = cp("run-1", 0);
  c.state = {{"x", 0.0}, {"y", 1}, {"z", {{"deep", 2.5}}}};
  h.store().create(c);
  c.seq = 1;
  c.state = {{"x", -0.0}, {"y", 1.0}, {"z", {{"deep", -0.0}}}};
  h.store().commit(c, 0);
  const Checkpoint back = *h.reopen().latest("run-1");
  CHECK(back.state.dump() == c.state.dump());
  CHECK(std::signbit(back.state.at("x").get<double>()));
  CHECK(back.state.at("y").is_number_float());
}

// ---- claims: due runs, priorities, leases (issue 15) ------------------------------------------

namespace {

using trellis::agent::Claim;
using trellis::agent::ClaimRequest;
using trellis::agent::RunSummary;

const std::string kGraph = "draft,review@1";  // cp()'s fingerprint
// Far ahead (2123): a timer that will not fire while the tests run.
const std::chrono::system_clock::time_point kFar = kT0 + std::chrono::hours(24 * 365 * 100);

// Run `id`'s first checkpoint: Queued, created at `at`, with `priority`, of graph `graph`.
Checkpoint queued(const std::string& id, std::chrono::system_clock::time_point at, int priority = 0,
                  const std::string& graph = kGraph) {
  Checkpoint c = cp(id, 0, RunStatus::Queued, at);
  c.priority = priority;
  c.fingerprint = graph;
  return c;
}

ClaimRequest wanting(std::size_t limit, std::vector<std::string> graphs = {kGraph}) {
  return ClaimRequest{"claimer", std::move(graphs), limit};
}

std::vector<std::string> claimed(const std::vector<Claim>& claims) {
  std::vector<std::string> out;
  for (const Claim& c : claims) out.push_back(c.newest.run_id);
  return out;
}

std::vector<std::string> listed(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const RunSummary& s : runs) out.push_back(s.run_id);
  return out;
}

// A WaitingApproval checkpoint `seq` of run `id` whose request expires at `expires` (none:
// nullopt).
Checkpoint awaiting(const std::string& id, std::uint64_t seq,
                    std::optional<std::chrono::system_clock::time_point> expires) {
  Checkpoint c = cp(id, seq, RunStatus::WaitingApproval);
  c.next_node = "review";
  c.interrupt = trellis::agent::Interrupt{
      .reason = "publish?",
      .approval = trellis::agent::ApprovalRequest{.action = "publish",
                                                  .proposed_input = {{"title", "t"}},
                                                  .risk_reason = "public",
                                                  .expires_at = expires},
      .then = "publish"};
  return c;
}

}  // namespace

TEST_CASE_TEMPLATE("store: claim takes due runs by priority, then earliest due, then run id", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("low-early", kT0));
  h.store().create(queued("high-late", kT0 + 2h, 5));
  h.store().create(queued("high-early", kT0 + 1h, 5));
  h.store().create(queued("negative", kT0 - 1h, -1));
  h.store().create(queued("tie-b", kT0 + 3h, 1));
  h.store().create(queued("tie-a", kT0 + 3h, 1));
  const std::vector<Claim> claims = h.store().claim(wanting(10));
  CHECK(claimed(claims) == std::vector<std::string>{"high-early", "high-late", "tie-a", "tie-b",
                                                    "low-early", "negative"});
  CHECK(h.store().list_runs({})[0].priority == 5);  // "high-early"
}

TEST_CASE_TEMPLATE("store: a run whose timer is in the future is not claimed until it is due", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("sleeper", kT0));
  Checkpoint sleeping = cp("sleeper", 1, RunStatus::Waiting);
  sleeping.wake_at = iso(kFar);
  h.store().commit(sleeping, 0);
  Checkpoint later = queued("later", kT0);
  later.wake_at = iso(kFar);  // enqueued to start in the future
  h.store().create(later);
  h.store().create(queued("now", kT0 + 1h));
  Checkpoint woken = cp("woken", 0, RunStatus::Waiting);
  woken.wake_at = iso(kT0);  // a timer that fired
  h.store().create(woken);
  CHECK(listed(h.store().due_runs(10)) == std::vector<std::string>{"woken", "now"});
  std::vector<Claim> claims = h.store().claim(wanting(10));
  CHECK(claimed(claims) == std::vector<std::string>{"woken", "now"});
  // The timer, moved to the past (as a decision or an operator would), makes it due.
  sleeping = cp("sleeper", 2, RunStatus::Waiting);
  sleeping.wake_at = iso(kT0);
  h.store().commit(sleeping, 1);
  CHECK(claimed(h.store().claim(wanting(10))) == std::vector<std::string>{"sleeper"});
}

TEST_CASE_TEMPLATE("store: a run enqueued for later is not due before its time", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  trellis::agent::Graph<Note> g;
  g.add<Draft>().add<Publish>().entry("draft").max_steps(10);
  g.enqueue("tomorrow", Note{}, h.store(),
            trellis::agent::EnqueueOptions{.at = std::chrono::system_clock::now() + 24h});
  g.enqueue("today", Note{}, h.store(), trellis::agent::EnqueueOptions{.priority = 3});
  CHECK(listed(h.store().due_runs(10)) == std::vector<std::string>{"today"});
  const std::vector<Claim> claims = h.store().claim(wanting(10, {g.fingerprint()}));
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].newest.run_id == "today");
  CHECK(claims[0].newest.priority == 3);
  CHECK_FALSE(h.store().latest("tomorrow")->wake_at.empty());
}

TEST_CASE_TEMPLATE("store: claim skips a run whose lease is held, and takes it once released", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("held", kT0));
  h.store().create(queued("free", kT0 + 1h));
  std::optional<Lease> lease = h.store().lease("held", "someone");
  std::vector<Claim> first = h.store().claim(wanting(10));
  CHECK(claimed(first) == std::vector<std::string>{"free"});
  CHECK(h.store().due_runs(10).empty());  // "free" is claimed, "held" held
  lease.reset();
  CHECK(claimed(h.store().claim(wanting(10))) == std::vector<std::string>{"held"});
}

TEST_CASE_TEMPLATE("store: claim takes at most its limit; the rest stay for the next claim", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  for (int i = 0; i < 5; ++i)
    h.store().create(queued("run-" + std::to_string(i), kT0 + std::chrono::minutes(i)));
  CHECK(h.store().claim(wanting(0)).empty());
  const std::vector<Claim> two = h.store().claim(wanting(2));
  CHECK(claimed(two) == std::vector<std::string>{"run-0", "run-1"});
  const std::vector<Claim> rest = h.store().claim(wanting(10));
  CHECK(claimed(rest) == std::vector<std::string>{"run-2", "run-3", "run-4"});
  CHECK(h.store().claim(wanting(10)).empty());
}

TEST_CASE_TEMPLATE("store: claim takes only runs of the graphs it is given", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("a-1", kT0, 0, "a@1"));
  h.store().create(queued("b-1", kT0 + 1h, 0, "b@1"));
  h.store().create(queued("a-2", kT0 + 2h, 0, "a@2"));  // another version of graph a
  CHECK(h.store().claim(wanting(10, {})).empty());
  const std::vector<Claim> b = h.store().claim(wanting(10, {"b@1"}));
  CHECK(claimed(b) == std::vector<std::string>{"b-1"});
  const std::vector<Claim> a = h.store().claim(wanting(10, {"a@1", "c@1"}));
  CHECK(claimed(a) == std::vector<std::string>{"a-1"});
  CHECK(listed(h.store().due_runs(10)) == std::vector<std::string>{"a-2"});
}

TEST_CASE_TEMPLATE("store: due_runs lists what claim would take, of any graph, taking nothing", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("mine", kT0 + 1h, 0, "a@1"));
  h.store().create(queued("theirs", kT0 + 2h, 2, "b@1"));
  Checkpoint future = queued("future", kT0);
  future.wake_at = iso(kFar);
  h.store().create(future);
  h.store().create(cp("ended", 0, RunStatus::Succeeded));
  h.store().create(queued("held", kT0));
  const Lease lease = h.store().lease("held", "someone");
  const std::vector<RunSummary> due = h.store().due_runs(10);
  CHECK(listed(due) == std::vector<std::string>{"theirs", "mine"});
  CHECK(due[0].priority == 2);
  CHECK(due[0].due == iso(kT0 + 2h));
  CHECK(listed(h.store().due_runs(1)) == std::vector<std::string>{"theirs"});
  CHECK(listed(h.store().due_runs(10)) == listed(due));  // nothing was taken
  CHECK(claimed(h.store().claim(wanting(10, {"a@1", "b@1"}))) ==
        std::vector<std::string>{"theirs", "mine"});
}

TEST_CASE_TEMPLATE(
    "store: a request whose approval expired is due; one that does not expire, or "
    "expires later, is not",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  const std::pair<std::string, std::optional<std::chrono::system_clock::time_point>> runs[] = {
      {"expired", kT0 + 1h}, {"later", kFar}, {"open", std::nullopt}};
  for (const auto& [id, expires] : runs) {
    h.store().create(queued(id, kT0));
    h.store().commit(awaiting(id, 1, expires), 0);
  }
  const std::vector<RunSummary> all = h.store().list_runs({});
  REQUIRE(all.size() == 3);
  CHECK(all[0].due == iso(kT0 + 1h));
  CHECK(all[1].due == iso(kFar));
  CHECK(all[2].due.empty());
  const std::vector<Claim> claims = h.store().claim(wanting(10));
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].newest == awaiting("expired", 1, kT0 + 1h));
}

TEST_CASE_TEMPLATE("store: a claimed run comes with its newest checkpoint", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(queued("run-1", kT0));
  advance(h.store(), "run-1", 3);  // Running at seq 3: its worker went away
  const std::vector<Claim> claims = h.store().claim(wanting(1));
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].newest == cp("run-1", 3));
  CHECK(claims[0].newest == *h.store().latest("run-1"));
  CHECK(claims[0].lease.token().run_id == "run-1");
}

TEST_CASE_TEMPLATE("store: Succeeded, Failed and Cancelled runs are never claimed", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  for (const RunStatus status : {RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled}) {
    const std::string id = "run-" + std::to_string(static_cast<int>(status));
    h.store().create(queued(id, kT0));
    h.store().commit(cp(id, 1, status), 0);
  }
  for (const RunSummary& s : h.store().list_runs({})) CHECK(s.due.empty());
  CHECK(h.store().due_runs(10).empty());
  CHECK(h.store().claim(wanting(10)).empty());
}

TEST_CASE_TEMPLATE("store: a claim is a taking of the lease: a new epoch, fenced once released", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  using trellis::agent::run_busy;
  h.store().create(queued("run-1", kT0));
  std::uint64_t before = 0;
  {
    const Lease first = h.store().lease("run-1", "worker-a");
    before = first.token().epoch;
  }
  std::vector<Claim> claims = h.store().claim(wanting(1));
  REQUIRE(claims.size() == 1);
  const LeaseToken token = claims[0].lease.token();
  CHECK(token.epoch > before);
  CHECK_THROWS_AS((void)h.store().lease("run-1", "worker-b"), run_busy);
  h.store().commit(cp("run-1", 1), 0, token);
  h.store().put_effect(started("run-1", "charge_card"), token);
  h.store().renew(token);
  claims.clear();  // releases the lease
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 2), 1, token), run_busy);
  CHECK_THROWS_AS(h.store().renew(token), run_busy);
  const Lease next = h.store().lease("run-1", "worker-b");
  CHECK(next.token().epoch > token.epoch);
}

TEST_CASE_TEMPLATE("store: threads claiming at once never take the same run" *
                       doctest::test_suite("concurrency") * doctest::timeout(120),
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  constexpr int kRuns = 24;
  for (int i = 0; i < kRuns; ++i)
    h.store().create(queued("run-" + std::to_string(i), kT0 + std::chrono::seconds(i)));
  constexpr int kThreads = 4;
  std::vector<std::vector<Claim>> taken(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each keeps what it claimed (the leases stay held) until nothing is left.
      for (;;) {
        std::vector<Claim> one = h.store().claim(wanting(1));
        if (one.empty()) break;
        taken[static_cast<std::size_t>(t)].push_back(std::move(one[0]));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> all;
  for (const auto& mine : taken)
    for (const Claim& c : mine) all.push_back(c.newest.run_id);
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.size() == static_cast<std::size_t>(kRuns));
}

// ---- cache entries (cache_entry.hpp): store-wide, outliving their run --------------------------

namespace {

trellis::agent::CacheEntry entry(const std::string& inputs, nlohmann::json result) {
  trellis::agent::CacheEntry e;
  e.key =
      trellis::agent::cache_key("graph-sha", "summarize", {{"text", inputs}}, "llm.summarize", "2");
  e.result = std::move(result);
  e.graph = "graph-sha";
  e.node = "summarize";
  e.action = "llm.summarize";
  e.version = "2";
  e.run_id = "run-1";
  e.step = 3;
  e.created_at = iso(kT0);
  return e;
}

}  // namespace

TEST_CASE_TEMPLATE("store: a cache entry is read back by its key, in a new store object too", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  const trellis::agent::CacheEntry e = entry("a long text", {{"summary", "short"}, {"n", 2}});
  CHECK_FALSE(h.store().cached(e.key).has_value());
  h.store().put_cached(e);
  CHECK(h.store().cached(e.key) == e);
  CHECK(h.reopen().cached(e.key) == e);
  CHECK_FALSE(h.store().cached(entry("another text", nullptr).key).has_value());
}

TEST_CASE_TEMPLATE("store: the newest put of a cache key wins", S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  trellis::agent::CacheEntry e = entry("t", "first");
  h.store().put_cached(e);
  e.result = "second";
  e.run_id = "run-2";
  h.store().put_cached(e);
  CHECK(h.reopen().cached(e.key) == e);
}

TEST_CASE_TEMPLATE("store: cache entries survive the deletion and retention of their run", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().commit(cp("run-1", 1, RunStatus::Succeeded), 0);
  const trellis::agent::CacheEntry e = entry("t", {{"ok", true}});
  h.store().put_cached(e);
  h.store().apply_retention(Retention{.keep_last = 1, .finished_older_than = 1s});
  CHECK(h.store().runs().empty());
  h.store().create(cp("run-2", 0));
  h.store().delete_run("run-2");
  CHECK(h.store().cached(e.key) == e);
  CHECK(h.reopen().cached(e.key) == e);
}

TEST_CASE_TEMPLATE("store: a cache key that is not 64 lower-case hex digits is refused", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  for (const std::string& bad : {std::string(), std::string(63, 'a'), std::string(64, 'A'),
                                 std::string(64, 'g'), std::string("../") + std::string(61, 'a')}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS((void)h.store().cached(bad), doctest::Contains("invalid cache key"),
                         trellis::agent::store_error);
    trellis::agent::CacheEntry e = entry("t", 1);
    e.key = bad;
    CHECK_THROWS_WITH_AS(h.store().put_cached(e), doctest::Contains("invalid cache key"),
                         trellis::agent::store_error);
  }
}

TEST_CASE_TEMPLATE("store: a cache entry holding NaN is refused, naming it; nothing is written", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  trellis::agent::CacheEntry e = entry("t", {{"scores", {1, std::nan("")}}});
  const unwritable_value refused = refusal([&] { h.store().put_cached(e); });
  CHECK(refused.member() == "/result/scores/1");
  CHECK(refused.reason() == "is NaN");
  CHECK(refused.object() == "cache entry " + e.key);
  CHECK_FALSE(h.store().cached(e.key).has_value());
  CHECK_FALSE(h.reopen().cached(e.key).has_value());
}
