// SPDX-License-Identifier: MIT
// The PostgreSQL store in the store tests: a Harness<PostgresStore> whose storage is a schema of
// its own in the server the tests run against (tests/support/with_postgres.sh starts a
// throw-away one and sets PGHOST, PGPORT, PGUSER, PGPASSWORD), and plain SQL on the side.
// Included by store_test_support.hpp when TRELLIS_TEST_POSTGRES is defined.
#pragma once

#include <trellis/agent/postgres_store.hpp>

#include <libpq-fe.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>

namespace {

using trellis::agent::PostgresStore;
using trellis::agent::PostgresStoreOptions;

// One connection of the test's own (libpq's environment), for SQL the store does not do.
class Sql {
 public:
  Sql() : c_(PQconnectdb("")) {
    REQUIRE_MESSAGE(
        PQstatus(c_) == CONNECTION_OK,
        "no PostgreSQL server (run the test through with_postgres.sh): ", PQerrorMessage(c_));
    PQsetNoticeProcessor(
        c_, [](void*, const char*) {}, nullptr);
  }
  ~Sql() { PQfinish(c_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;
  /// Runs `sql` (simple protocol); the first column of the first row, "" if none.
  std::string operator()(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    const std::string error = PQresultErrorMessage(r);
    std::string value;
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) value = PQgetvalue(r, 0, 0);
    PQclear(r);
    REQUIRE_MESSAGE((st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK), sql, ": ", error);
    return value;
  }

 private:
  PGconn* c_;
};

// A schema name no other harness of this process uses.
inline std::string fresh_schema() {
  static std::atomic<int> next{0};
  return "t" + std::to_string(::getpid()) + "_" + std::to_string(next.fetch_add(1));
}

template <class S>
class Harness;

template <>
class Harness<PostgresStore> {
 public:
  static constexpr bool persistent = true;
  Harness() : schema_(fresh_schema()) { reopen(); }
  ~Harness() {
    store_.reset();
    Sql()("DROP SCHEMA IF EXISTS \"" + schema_ + "\" CASCADE");
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  PostgresStore& store() { return *store_; }
  PostgresStore& reopen() { return reopen_with(options()); }
  PostgresStore& reopen_with_lease_ttl(std::chrono::milliseconds ttl) {
    PostgresStoreOptions o = options();
    o.lease_ttl = ttl;
    return reopen_with(o);
  }
  PostgresStore& reopen_with(const PostgresStoreOptions& o) {
    store_.reset();
    store_ = std::make_unique<PostgresStore>(o);
    return *store_;
  }
  std::unique_ptr<PostgresStore> another() { return std::make_unique<PostgresStore>(options()); }
  std::unique_ptr<PostgresStore> another(const PostgresStoreOptions& o) {
    return std::make_unique<PostgresStore>(o);
  }
  PostgresStoreOptions options() const {
    PostgresStoreOptions o;
    o.schema = schema_;
    return o;
  }
  const std::string& schema() const { return schema_; }

 private:
  std::string schema_;
  std::unique_ptr<PostgresStore> store_;
};

}  // namespace

TYPE_TO_STRING(PostgresStore);
