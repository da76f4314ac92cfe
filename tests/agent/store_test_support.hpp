// SPDX-License-Identifier: MIT
// What the store tests share: a Harness per store (its storage and `reopen()`), checkpoints and
// effect records to write, and small readers of what came back.
#pragma once

#include <trellis/agent/errors.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <latch>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../persist/persist_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using trellis::agent::Checkpoint;
using trellis::agent::EffectRecord;
using trellis::agent::EffectStatus;
using trellis::agent::FileStore;
using trellis::agent::Lease;
using trellis::agent::LeaseToken;
using trellis::agent::MemoryStore;
using trellis::agent::Retention;
using trellis::agent::RunStatus;
using trellis::agent::SqliteStore;
using trellis::agent::Store;

// A store under test and, for the persistent ones, its files: `reopen()` makes a new object
// over the same storage (MemoryStore keeps its one object).
template <class S>
class Harness;

template <>
class Harness<MemoryStore> {
 public:
  static constexpr bool persistent = false;
  MemoryStore& store() { return store_; }
  MemoryStore& reopen() { return store_; }
  /// A store whose leases expire `ttl` after they were taken or renewed, where the store has
  /// a TTL at all (MemoryStore's and FileStore's leases end with their holder only).
  MemoryStore& reopen_with_lease_ttl(std::chrono::milliseconds) { return store_; }

 private:
  MemoryStore store_;
};

template <>
class Harness<FileStore> {
 public:
  static constexpr bool persistent = true;
  Harness() { reopen(); }
  FileStore& store() { return *store_; }
  FileStore& reopen() {
    store_.reset();
    store_ = std::make_unique<FileStore>(root());
    return *store_;
  }
  FileStore& reopen_with_lease_ttl(std::chrono::milliseconds) { return reopen(); }
  std::unique_ptr<FileStore> another() { return std::make_unique<FileStore>(root()); }
  fs::path root() const { return dir_ / "runs"; }

 private:
  persist_test::ScratchDir dir_;
  std::unique_ptr<FileStore> store_;
};

template <>
class Harness<SqliteStore> {
 public:
  static constexpr bool persistent = true;
  Harness() { reopen(); }
  SqliteStore& store() { return *store_; }
  SqliteStore& reopen() {
    store_.reset();
    store_ = std::make_unique<SqliteStore>(db());
    return *store_;
  }
  SqliteStore& reopen_with_lease_ttl(std::chrono::milliseconds ttl) {
    store_.reset();
    store_ =
        std::make_unique<SqliteStore>(db(), trellis::agent::SqliteStoreOptions{.lease_ttl = ttl});
    return *store_;
  }
  std::unique_ptr<SqliteStore> another() { return std::make_unique<SqliteStore>(db()); }
  fs::path db() const { return dir_ / "runs.db"; }

 private:
  persist_test::ScratchDir dir_;
  std::unique_ptr<SqliteStore> store_;
};

inline std::string iso(std::chrono::system_clock::time_point t) {
  return trellis::agent::detail::format_time(t);
}

// A fixed time (2023-11-14), so that two calls of cp() build equal checkpoints.
const std::chrono::system_clock::time_point kT0{std::chrono::seconds(1'700'000'000)};

// Checkpoint `seq` of run `id`: a small state that changes every step and a member that never
// does.
inline Checkpoint cp(const std::string& id, std::uint64_t seq,
                     RunStatus status = RunStatus::Running,
                     std::chrono::system_clock::time_point at = kT0) {
  Checkpoint c;
  c.run_id = id;
  c.seq = seq;
  c.status = status;
  c.next_node = seq % 2 == 0 ? "draft" : "review";
  c.step = seq;
  c.attempt = static_cast<std::uint32_t>(seq % 3);
  c.state = {{"count", seq}, {"text", std::string(64, 'x')}, {"tags", {"a", "b"}}};
  c.schema = 2;
  c.fingerprint = "draft,review@1";
  c.created_at = iso(at + std::chrono::seconds(seq));
  return c;
}

// Commits checkpoints 1..last after the one `create` wrote.
template <class S>
void advance(S& store, const std::string& id, std::uint64_t last) {
  for (std::uint64_t seq = 1; seq <= last; ++seq) store.commit(cp(id, seq), seq - 1);
}

inline std::vector<std::uint64_t> seqs(const std::vector<Checkpoint>& history) {
  std::vector<std::uint64_t> out;
  for (const Checkpoint& c : history) out.push_back(c.seq);
  return out;
}

// The started record of effect `name` (the `ordinal`-th of step 3 of run `id`).
inline EffectRecord started(const std::string& id, const std::string& name,
                            std::uint32_t ordinal = 0) {
  EffectRecord r;
  r.run_id = id;
  r.name = name;
  r.args = {{"amount", 120}, {"card", "...4242"}, {"note", "caf\u00e9 \"quoted\"\n"}};
  r.policy = trellis::agent::EffectPolicy::at_most_once;
  r.node = "pay";
  r.step = 3;
  r.ordinal = ordinal;
  r.key = trellis::agent::effect_key(id, r.node, r.step, ordinal, name, r.args);
  r.compensable = true;
  r.started_at = iso(kT0);
  return r;
}

// `r` with its receipt: succeeded with `result`.
inline EffectRecord receipt(EffectRecord r, nlohmann::json result) {
  r.status = EffectStatus::succeeded;
  r.result = std::move(result);
  r.finished_at = iso(kT0 + 1s);
  return r;
}

inline std::vector<std::string> names(const std::vector<EffectRecord>& records) {
  std::vector<std::string> out;
  for (const EffectRecord& r : records) out.push_back(r.name);
  return out;
}

// The single integer `query` answers in the SQLite database `db`.
inline std::int64_t sql_integer(const fs::path& db, const std::string& query) {
  sqlite3* handle = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &handle) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(handle, query.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const std::int64_t value = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(handle);
  return value;
}

// The state of the graph cases.
struct Note {
  int drafts = 0;
  std::string big;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Note, drafts, big)

// Drafts three times, then asks to publish (an interrupt), then halts.
struct Draft final : trellis::agent::Node<Note> {
  std::string_view name() const override { return "draft"; }
  trellis::agent::NextStep run(Note& s, trellis::agent::RunContext&) override {
    ++s.drafts;
    if (s.drafts < 3) return trellis::agent::Goto{"draft"};
    return trellis::agent::Interrupt{.reason = "publish?", .then = "publish"};
  }
};
struct Publish final : trellis::agent::Node<Note> {
  std::string_view name() const override { return "publish"; }
  trellis::agent::NextStep run(Note&, trellis::agent::RunContext&) override {
    return trellis::agent::Halt{};
  }
};

}  // namespace

// The stores' names in doctest's messages (TEST_CASE_TEMPLATE over them).
TYPE_TO_STRING(MemoryStore);
TYPE_TO_STRING(FileStore);
TYPE_TO_STRING(SqliteStore);

#ifdef TRELLIS_TEST_POSTGRES  // the executables whose suites run over PostgresStore too
#include "postgres_test_support.hpp"
#endif
