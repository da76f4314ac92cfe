#pragma once
// Private to PostgresStore: a small RAII layer over libpq.
//
// - Result: one PGresult (PQclear).
// - Connection: one PGconn (PQfinish) with the statements it prepared. Statements run in
//   pipeline mode: a batch of statements is sent with one Sync and its results read back, one
//   network round trip; a statement named here is prepared on first use, in the same round trip.
// - Pool: idle connections a thread borrows one of per call; a connection that broke is
//   dropped, never returned.
//
// Every failure is a store_error naming the database (host, port, database: never the
// password) and carrying PostgreSQL's message; a failure that left the connection unusable is
// a connection_lost, which the store may retry on a fresh connection when that is safe.

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trellis/agent/errors.hpp"

namespace trellis::agent::detail::pg {

/// The connection broke during a call (the server ended it, the network failed).
/// `maybe_committed`: a statement that commits by itself (or a COMMIT) had been sent, so its
/// outcome is unknown.
class connection_lost : public store_error {
 public:
  connection_lost(const std::string& what, bool maybe_committed)
      : store_error(what), maybe_committed_(maybe_committed) {}
  bool maybe_committed() const noexcept { return maybe_committed_; }

 private:
  bool maybe_committed_;
};

/// One result (PQclear at scope exit).
class Result {
 public:
  Result() = default;
  explicit Result(PGresult* r) : r_(r, &PQclear) {}
  PGresult* get() const noexcept { return r_.get(); }
  int rows() const { return r_ ? PQntuples(r_.get()) : 0; }
  bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_.get(), row, col),
                       static_cast<std::size_t>(PQgetlength(r_.get(), row, col)));
  }
  std::int64_t integer(int row, int col) const;
  /// Rows an INSERT, UPDATE or DELETE touched.
  std::uint64_t affected() const;

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> r_{nullptr, &PQclear};
};

/// A parameter: text, or SQL NULL.
using Param = std::optional<std::string>;

/// One statement of a batch: a named one (prepared once per connection) or plain SQL text.
struct Statement {
  const char* name = nullptr;  ///< prepared statement name; nullptr: `sql` is sent as it is
  std::string sql;
  std::vector<Param> params;
  bool commits = false;  ///< it commits by itself (autocommit write) or is a COMMIT
};

class Connection {
 public:
  /// Connects (PQconnectdbParams: `url` is a conninfo string or URI, "" for the PG*
  /// environment); `setup` (simple-protocol SQL) runs once connected. Throws store_error.
  Connection(const std::string& url, std::chrono::milliseconds connect_timeout,
             const std::string& application_name, const std::string& setup);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  PGconn* raw() const noexcept { return c_; }
  /// "PostgreSQL host:port/dbname".
  const std::string& where() const noexcept { return where_; }

  /// False when the connection is known to be unusable (the server closed it while idle).
  bool usable();

  /// Runs `batch` in one pipeline (one Sync): one result per statement. When one fails, the
  /// rest are skipped by the server and a store_error carrying its message is thrown (the
  /// explicit transaction it was in, if any, is then rolled back).
  std::vector<Result> run(const std::vector<Statement>& batch);
  /// run() of one statement.
  Result one(Statement s);
  /// Simple-protocol SQL (several statements allowed; no parameters).
  void exec(const std::string& sql, const std::string& what);
  /// Rolls back an open transaction, if any (errors ignored: the connection is then dropped).
  void rollback_if_open() noexcept;

  [[noreturn]] void fail(const std::string& what, const std::string& message) const;
  /// Marks the call as having sent a statement that commits.
  bool sent_commit() const noexcept { return sent_commit_; }
  void reset_call() noexcept { sent_commit_ = false; }
  bool broken() const noexcept { return broken_ || PQstatus(c_) != CONNECTION_OK; }

 private:
  [[noreturn]] void lost(const std::string& what);
  static void on_notice(void* self, const PGresult* notice);
  PGconn* c_ = nullptr;
  std::string where_;
  std::set<std::string> prepared_;
  bool sent_commit_ = false;
  bool broken_ = false;
};

/// Connections a thread borrows one of per call.
class Pool {
 public:
  Pool(std::string url, std::chrono::milliseconds connect_timeout, std::string application_name,
       std::string setup, std::size_t size);

  /// A borrowed connection, returned to the pool at scope exit unless it broke.
  class Borrowed {
   public:
    Borrowed(Pool& pool, std::unique_ptr<Connection> c) : pool_(&pool), c_(std::move(c)) {}
    Borrowed(Borrowed&& o) noexcept : pool_(o.pool_), c_(std::move(o.c_)) { o.pool_ = nullptr; }
    Borrowed& operator=(Borrowed&&) = delete;
    ~Borrowed();
    Connection& operator*() const noexcept { return *c_; }
    Connection* operator->() const noexcept { return c_.get(); }
    /// Drops the connection (it broke).
    void discard() noexcept { c_.reset(); }

   private:
    Pool* pool_;
    std::unique_ptr<Connection> c_;
  };

  /// An idle, usable connection (a new one when none is idle and the pool is not full; waits
  /// for one otherwise).
  Borrowed borrow();
  /// A new connection outside the pool (LISTEN).
  std::unique_ptr<Connection> connect() const;

 private:
  void give_back(std::unique_ptr<Connection> c) noexcept;
  std::string url_;
  std::chrono::milliseconds timeout_;
  std::string application_name_;
  std::string setup_;
  std::size_t size_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;  // connections borrowed or idle
};

/// `name` quoted as an SQL identifier.
std::string quote_identifier(const std::string& name);

}  // namespace trellis::agent::detail::pg
