#pragma once
/// @file
/// `PostgresStore`: runs in a PostgreSQL database (target `trellis::postgres`, over libpq, so
/// programs that do not use it never link libpq), shared by any number of worker processes on
/// any number of machines.
///
/// Tables live in one SQL schema (PostgresStoreOptions::schema, "trellis" by default):
/// `trellis_schema` (its version, `schema_version`), `runs` (one row per run: its index, what
/// list_runs and claims read, and its lease), `checkpoints`, `effects`, `events`,
/// `cancel_requests` and `graphs`; docs/formats.md, section "PostgreSQL schema". Only a schema
/// that is missing, empty or trellis's is used: one that holds other tables and no
/// `trellis_schema` (another program's) is refused with not_a_store, a newer version with
/// store_error, before anything is written (it stays as it was). Every checkpoint, effect,
/// cancel request and graph row carries a checksum of its record text: a record edited or
/// damaged outside trellis is a store_error, never returned.
///
/// Transactions: every call is its own short READ COMMITTED transaction; none is open while a
/// node runs. A step commit is one statement (one network round trip): a conditional update of
/// the run's row (its newest seq, and the worker's lease holder and epoch) that inserts the
/// checkpoint only when it matched; when it did not, the row is read under a lock to say why
/// (run_busy: moved on, or the lease was lost; unknown_run). put_effect is the same fence: a
/// worker that lost its lease cannot record an effect as started, so it cannot start it.
///
/// Leases: the run's row holds {holder id, epoch, owner, lease_until}; lease_until is computed
/// by the database (now() + lease_ttl), never from the client's clock. A lease ends when its
/// holder releases it (RAII) or lease_ttl after it was taken or last renewed (renew, a commit,
/// an effect record): there is no "provably dead" shortcut across machines. A write given a
/// token checks that the row still has the token's holder and epoch; an expired lease nobody
/// took is still its holder's, and the write renews it. A lease on an id that is not (yet) a
/// run keeps a row of its own, so that epochs grow across releases.
///
/// Claiming (`claim`): one statement takes up to `limit` free, due runs of the caller's graphs
/// (`FOR UPDATE SKIP LOCKED`, priority descending, then due time, then run id, due compared with
/// the database's clock), increments each one's epoch and returns them with their newest
/// checkpoints. `wait_for_work` listens (LISTEN) on a connection of its own; a create of a
/// Queued run, a commit whose new status is Queued (a decision, a reconciliation), the release
/// of a lease that leaves its run Queued and due (the decision's writer gives the run back:
/// only now can a worker claim it) and a cancel request notify it; ordinary steps never do.
///
/// Connections: a pool of up to `connections`, one borrowed per call (a worker thread uses one
/// at a time). A connection the server closed (pg_terminate_backend, a restart) is dropped; a
/// read that failed with it is retried once on a new connection, and a write too when it
/// surely did not commit; otherwise store_error. Every failure is a store_error naming the
/// database (host, port, database: never the password) and carrying PostgreSQL's message.
///
/// Events are observability: inserted on their own, not part of a commit, in a transaction that
/// does not wait for the WAL flush (synchronous_commit off, as SqliteStore writes them with
/// synchronous off): any later commit makes them durable with it; a server crash can lose the
/// events written just before it (those no commit flushed since: at most wal_writer_delay's
/// worth, 200 ms by default), never a commit. Event positions
/// (`events_after`) are the rows' ids, shared by all runs: they grow, with gaps.

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "trellis/agent/detail/store_protocol.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// Settings of a PostgresStore.
struct PostgresStoreOptions {
  /// A libpq connection string or URI ("postgresql://user@host:5432/db"); empty: libpq's
  /// environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, ~/.pgpass).
  std::string url;
  /// The SQL schema holding trellis's tables: 1-63 characters of [a-z0-9_], not starting with
  /// a digit (else invalid_option). Created when missing (unless read_only).
  std::string schema = "trellis";
  /// How long a lease lives without a renewal (the graph renews it every lease_ttl/3 while a
  /// run call holds it; a commit or effect record renews it too). Measured by the database.
  std::chrono::milliseconds lease_ttl{15000};
  /// The pool's size: at most this many connections for calls (plus one for wait_for_work).
  std::size_t connections = 4;
  /// Open to read only: no schema is created or upgraded, and every write (create, commit,
  /// lease, claim, put_effect, append_event, request_cancel, delete_run, put_graph,
  /// put_cached, apply_retention) throws store_error, writing nothing (the connections are also set
  /// to default_transaction_read_only).
  bool read_only = false;
  /// How long connecting may take (libpq counts whole seconds, at least 2).
  std::chrono::milliseconds connect_timeout{5000};
};

class PostgresStore final : public detail::StoreProtocol {
 public:
  /// The schema version this build writes and reads (1: before cache entries and the hash
  /// chain's record members; upgraded in place when opened for writing, read as it is
  /// read-only).
  static constexpr int schema_version = 2;

  /// Connects, checks the schema (creating it in an empty or missing schema; with
  /// `options.read_only`, creating nothing). Throws, leaving the database as it was:
  /// not_a_store when the schema holds tables of another program and no trellis_schema (or,
  /// read-only, holds no store); store_error when the database cannot be reached or holds a
  /// newer schema version; invalid_option for a bad schema name or a lease_ttl under 1 ms.
  explicit PostgresStore(PostgresStoreOptions options = {});
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  std::vector<std::string> runs() override;
  std::optional<std::chrono::milliseconds> lease_ttl() const override { return options_.lease_ttl; }

  std::vector<Claim> claim(const ClaimRequest& request) override;
  bool wait_for_work(std::chrono::milliseconds timeout, std::stop_token stop) override;

  /// "PostgreSQL host:port/dbname, schema 'trellis'" (for messages; never the password).
  const std::string& where() const noexcept;
  const PostgresStoreOptions& options() const noexcept { return options_; }

 private:
  struct Db;  // the connection pool, the statements, the listener, this object's leases
  class Write;
  void release(const LeaseToken& token) noexcept;

  // The backend (detail/store_protocol.hpp).
  void write_run(std::string_view run_id, detail::WriteKind kind,
                 detail::RunBody<detail::RunWrite> body) override;
  std::optional<Lease> take_lease(std::string_view run_id, std::string_view owner,
                                  std::string& holder) override;
  std::optional<Checkpoint> read_latest(std::string_view run_id) override;
  std::optional<Checkpoint> read_checkpoint(std::string_view run_id, std::uint64_t seq) override;
  std::vector<Checkpoint> read_history(std::string_view run_id) override;
  std::optional<EffectRecord> read_effect(std::string_view run_id, std::string_view key) override;
  std::vector<EffectRecord> read_effects(std::string_view run_id) override;
  void write_event(std::string_view run_id, const nlohmann::json& event) override;
  std::vector<nlohmann::json> read_events(std::string_view run_id) override;
  void retain(const detail::RetentionPlan& plan) override;
  std::vector<StoredEvent> read_events_after(std::string_view run_id,
                                             std::uint64_t after_seq) override;
  std::vector<CancelRequest> read_cancel_requests(std::string_view run_id,
                                                  std::uint64_t after) override;
  std::vector<RunSummary> read_summaries(const RunFilter& filter) override;
  std::size_t read_count(const RunFilter& filter) override;
  bool erase_run(std::string_view run_id) override;
  void write_graph(const GraphShape& shape) override;
  std::optional<GraphShape> read_graph(std::string_view fingerprint) override;
  void write_cache(const CacheEntry& entry) override;
  std::optional<CacheEntry> read_cache(std::string_view key) override;
  std::vector<RunSummary> read_due(const std::string& now,
                                   const std::vector<std::string>* fingerprints,
                                   std::size_t limit) override;
  std::string store_now() override;

  PostgresStoreOptions options_;
  std::unique_ptr<Db> db_;
};

}  // namespace trellis::agent
