// SPDX-License-Identifier: MIT
// PostgresStore's own behaviour (the Store contract runs over it in the conformance suites):
// its schema check, leases between store objects, claims, and connections the server ends.

#include "store_test_support.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace postgres_store_test {

namespace {

namespace ag = trellis::agent;
using ag::Claim;
using ag::ClaimRequest;

// Run `id` Queued, due at `at`, with priority `priority`.
Checkpoint queued(const std::string& id, std::chrono::system_clock::time_point at,
                  int priority = 0) {
  Checkpoint c = cp(id, 0, RunStatus::Queued, at);
  c.priority = priority;
  return c;
}

std::vector<std::string> ids(const std::vector<Claim>& claims) {
  std::vector<std::string> out;
  for (const Claim& c : claims) out.push_back(c.newest.run_id);
  return out;
}

ClaimRequest request(std::size_t limit, std::string owner = "w") {
  return ClaimRequest{std::move(owner), {"draft,review@1"}, limit};
}

}  // namespace

TEST_CASE("postgres store: a schema holding another program's tables is refused, left as it was") {
  Sql sql;
  const std::string schema = fresh_schema();
  sql("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema + ".users(id int); INSERT INTO " +
      schema + ".users VALUES (7)");
  PostgresStoreOptions o;
  o.schema = schema;
  CHECK_THROWS_AS(PostgresStore{o}, ag::not_a_store);
  o.read_only = true;
  CHECK_THROWS_AS(PostgresStore{o}, ag::not_a_store);
  CHECK(sql("SELECT count(*) FROM pg_tables WHERE schemaname='" + schema + "'") == "1");
  CHECK(sql("SELECT id FROM " + schema + ".users") == "7");
  sql("DROP SCHEMA " + schema + " CASCADE");
}

TEST_CASE("postgres store: a newer schema version is refused, left as it was") {
  Harness<PostgresStore> h;
  h.store().create(cp("run-1", 0));
  Sql sql;
  sql("UPDATE " + h.schema() + ".trellis_schema SET version = 99");
  CHECK_THROWS_AS(h.reopen(), ag::store_error);
  CHECK(sql("SELECT version FROM " + h.schema() + ".trellis_schema") == "99");
  CHECK(sql("SELECT count(*) FROM " + h.schema() + ".checkpoints") == "1");
  sql("UPDATE " + h.schema() +
      ".trellis_schema SET version = " + std::to_string(PostgresStore::schema_version));
}

TEST_CASE("postgres store: a schema 1 store (before cache entries) is read as it is, upgraded") {
  Harness<PostgresStore> h;
  h.store().create(cp("run-1", 0));
  Sql sql;
  // The schema as the release before left it: no cache_entries, version 1.
  sql("DROP TABLE " + h.schema() + ".cache_entries");
  sql("UPDATE " + h.schema() + ".trellis_schema SET version = 1");
  const std::string key(64, 'a');
  {
    PostgresStoreOptions o = h.options();
    o.read_only = true;
    PostgresStore ro(o);
    CHECK(ro.latest("run-1") == cp("run-1", 0));
    CHECK_FALSE(ro.cached(key).has_value());
  }
  CHECK(sql("SELECT version FROM " + h.schema() + ".trellis_schema") == "1");
  PostgresStore& upgraded = h.reopen();
  CHECK(sql("SELECT version FROM " + h.schema() + ".trellis_schema") ==
        std::to_string(PostgresStore::schema_version));
  CHECK(upgraded.latest("run-1") == cp("run-1", 0));
  ag::CacheEntry e;
  e.key = key;
  e.result = {{"ok", true}};
  upgraded.put_cached(e);
  CHECK(h.reopen().cached(key) == e);
}

TEST_CASE("postgres store: a read-only store reads, writes nothing, and needs a store") {
  Harness<PostgresStore> h;
  h.store().create(cp("run-1", 0));
  PostgresStoreOptions o = h.options();
  o.read_only = true;
  PostgresStore ro(o);
  CHECK(ro.latest("run-1") == cp("run-1", 0));
  CHECK_THROWS_AS(ro.commit(cp("run-1", 1), 0), ag::store_error);
  CHECK_THROWS_AS((void)ro.lease("run-1", "w"), ag::store_error);
  CHECK(h.store().history("run-1").size() == 1);
  PostgresStoreOptions none;
  none.schema = fresh_schema();
  none.read_only = true;
  CHECK_THROWS_AS(PostgresStore{none}, ag::not_a_store);
  Sql sql;
  CHECK(sql("SELECT count(*) FROM pg_namespace WHERE nspname='" + none.schema + "'") == "0");
}

TEST_CASE("postgres store: a bad schema name is invalid_option") {
  PostgresStoreOptions o;
  o.schema = "Robert'); DROP TABLE students;--";
  CHECK_THROWS_AS(PostgresStore{o}, trellis::invalid_option);
}

TEST_CASE("postgres store: another store object gets run_busy while a lease lives, then takes it") {
  Harness<PostgresStore> h;
  h.reopen_with_lease_ttl(300ms).create(cp("run-1", 0));
  PostgresStoreOptions o = h.options();
  o.lease_ttl = 300ms;
  auto other = h.another(o);
  std::optional<Lease> first = h.store().lease("run-1", "worker-a");
  std::string refusal;
  try {
    (void)other->lease("run-1", "worker-b");
  } catch (const ag::run_busy& e) {
    refusal = e.what();
  }
  CHECK(refusal.find("worker-a") != std::string::npos);
  // Never renewed, it expires by the database's clock; the other object takes it over.
  std::optional<Lease> second;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!second && std::chrono::steady_clock::now() < deadline) {
    try {
      second = other->lease("run-1", "worker-b");
    } catch (const ag::run_busy&) {
      std::this_thread::sleep_for(50ms);
    }
  }
  REQUIRE(second);
  CHECK(second->token().epoch > first->token().epoch);
  CHECK_THROWS_AS(h.store().commit(cp("run-1", 1), 0, first->token()), ag::run_busy);
  CHECK_THROWS_AS(h.store().put_effect(started("run-1", "pay"), first->token()), ag::run_busy);
  other->commit(cp("run-1", 1), 0, second->token());
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1});
  CHECK(h.store().effects("run-1").empty());
}

TEST_CASE("postgres store: claims take higher priority first, then the earliest due") {
  Harness<PostgresStore> h;
  const auto past = std::chrono::system_clock::now() - 1h;
  h.store().create(queued("late-low", past + 30min, 0));
  h.store().create(queued("early-low", past, 0));
  h.store().create(queued("late-high", past + 20min, 5));
  Checkpoint future = queued("future", past, 9);
  future.wake_at = iso(std::chrono::system_clock::now() + 1h);
  h.store().create(future);
  Checkpoint other_graph = queued("other-graph", past, 9);
  other_graph.fingerprint = "another@1";
  h.store().create(other_graph);

  const auto due = h.store().due_runs(10);
  REQUIRE(due.size() == 4);  // not the future one
  CHECK(due[0].run_id == "other-graph");

  const auto claims = h.store().claim(request(10));
  CHECK(ids(claims) == std::vector<std::string>{"late-high", "early-low", "late-low"});
  for (const Claim& c : claims) {
    CHECK(c.lease.held());
    CHECK(c.newest == h.store().latest(c.newest.run_id));
  }
  // Held now: nobody else claims them; a claimed run commits under its claim's token.
  auto other = h.another();
  CHECK(other->claim(request(10)).empty());
  Checkpoint next = cp("late-high", 1, RunStatus::Running);
  h.store().commit(next, 0, claims[0].lease.token());
  CHECK(h.store().latest("late-high")->seq == 1);
}

TEST_CASE("postgres store: a released claim is claimable again, with a new epoch") {
  Harness<PostgresStore> h;
  h.store().create(queued("run-1", std::chrono::system_clock::now() - 1min));
  std::uint64_t epoch = 0;
  {
    auto claims = h.store().claim(request(1));
    REQUIRE(claims.size() == 1);
    epoch = claims[0].lease.token().epoch;
  }
  auto other = h.another();
  auto again = other->claim(request(1));
  REQUIRE(again.size() == 1);
  CHECK(again[0].lease.token().epoch > epoch);
}

TEST_CASE("postgres store: threads claiming at once never get the same run" *
          doctest::test_suite("concurrency")) {
  Harness<PostgresStore> h;
  const auto past = std::chrono::system_clock::now() - 1h;
  constexpr int kRuns = 40;
  for (int i = 0; i < kRuns; ++i) h.store().create(queued("run-" + std::to_string(i), past));
  // Two threads share a store object (its pool), two have one each.
  std::vector<std::unique_ptr<PostgresStore>> stores;
  for (int i = 0; i < 3; ++i) stores.push_back(h.another());
  std::mutex m;
  std::vector<std::string> claimed;
  std::vector<Lease> kept;  // held until the end: each run can be claimed once
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Store& store = *stores[static_cast<std::size_t>(t == 3 ? 0 : t)];
      for (;;) {
        auto claims = store.claim(request(3, "w" + std::to_string(t)));
        if (claims.empty()) break;
        std::lock_guard lock(m);
        for (Claim& c : claims) {
          claimed.push_back(c.newest.run_id);
          kept.push_back(std::move(c.lease));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  kept.clear();
  std::sort(claimed.begin(), claimed.end());
  CHECK(claimed.size() == static_cast<std::size_t>(kRuns));
  CHECK(std::adjacent_find(claimed.begin(), claimed.end()) == claimed.end());
}

TEST_CASE("postgres store: a connection the server terminated is replaced; calls go on") {
  Harness<PostgresStore> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 2);
  Sql sql;
  const std::string kill =
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
      "'trellis' AND pid <> pg_backend_pid()";
  const std::string alive =
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'trellis'";
  CHECK(std::stoi(sql(kill)) >= 1);
  for (int i = 0; i < 200 && sql(alive) != "0"; ++i) std::this_thread::sleep_for(10ms);
  // Idle connections the server ended are dropped when borrowed: reads and writes go on.
  CHECK(h.store().latest("run-1")->seq == 2);
  h.store().commit(cp("run-1", 3), 2);
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
  // Killed again and again while a thread works: every call succeeds or is a store_error,
  // and what was acknowledged is there.
  std::atomic<bool> done{false};
  std::thread killer([&] {
    Sql own;
    while (!done.load()) {
      own(kill);
      std::this_thread::sleep_for(5ms);
    }
  });
  std::uint64_t newest = 3;
  int failures = 0;
  for (int i = 0; i < 100; ++i) {
    try {
      h.store().commit(cp("run-1", newest + 1), newest);
      ++newest;
    } catch (const ag::run_busy&) {
      // A commit whose outcome was unknown (store_error) may have landed: read where it is.
      newest = h.store().latest("run-1")->seq;
    } catch (const ag::store_error&) {
      ++failures;
      try {
        newest = h.store().latest("run-1")->seq;
      } catch (const ag::store_error&) {
      }
    }
  }
  done = true;
  killer.join();
  const auto history = h.store().history("run-1");
  REQUIRE(history.size() == newest + 1);
  for (std::uint64_t s = 0; s <= newest; ++s) CHECK(history[s] == cp("run-1", s));
  MESSAGE(failures << " of 100 commits failed with store_error while connections were killed");
}

TEST_CASE("postgres store: a write on a connection the server ended while idle is made anew") {
  Harness<PostgresStore> h;
  h.store().create(cp("run-1", 0));
  Sql sql;
  const std::string alive =
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'trellis'";
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    // The pool's idle connection ended by the server (its end seen before the write is sent):
    // the write goes to a new connection, never reported as perhaps committed.
    CHECK(std::stoi(sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                        "application_name = 'trellis'")) >= 1);
    for (int i = 0; i < 200 && sql(alive) != "0"; ++i) std::this_thread::sleep_for(10ms);
    REQUIRE(sql(alive) == "0");
    CHECK_NOTHROW(h.store().commit(cp("run-1", seq), seq - 1));
  }
  CHECK(seqs(h.store().history("run-1")) == std::vector<std::uint64_t>{0, 1, 2, 3});
}

TEST_CASE("postgres store: a queued run created by another object wakes a waiting worker" *
          doctest::test_suite("concurrency")) {
  Harness<PostgresStore> h;
  auto other = h.another();
  std::atomic<bool> told{false};
  std::thread waiter([&] { told = h.store().wait_for_work(20s, {}); });
  std::this_thread::sleep_for(200ms);  // not a timing assertion: the create notifies later too
  other->create(queued("run-1", std::chrono::system_clock::now()));
  waiter.join();
  CHECK(told.load());
}

TEST_CASE(
    "postgres store: a queued run's lease given back wakes a waiting worker, which claims it") {
  // An operator's decision is committed under the run's lease: the run can be claimed only once
  // that lease is released, so the release is what must wake the workers.
  Harness<PostgresStore> h;
  auto other = h.another();
  other->create(queued("run-1", std::chrono::system_clock::now() - 1min));
  ag::Lease lease = other->lease("run-1", "operator");
  h.store().wait_for_work(1ms, {});  // listening from now on
  CHECK(h.store().claim(request(1)).empty());
  lease = ag::Lease{};
  CHECK(h.store().wait_for_work(20s, {}));
  CHECK(ids(h.store().claim(request(1))) == std::vector<std::string>{"run-1"});
}

TEST_CASE("postgres store: wait_for_work returns when its stop token is stopped" *
          doctest::test_suite("concurrency")) {
  Harness<PostgresStore> h;
  std::stop_source stop;
  std::atomic<bool> told{true};
  const auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] { told = h.store().wait_for_work(60s, stop.get_token()); });
  std::this_thread::sleep_for(100ms);
  stop.request_stop();
  waiter.join();
  CHECK_FALSE(told.load());
  CHECK(std::chrono::steady_clock::now() - start < 50s);
}

}  // namespace postgres_store_test
