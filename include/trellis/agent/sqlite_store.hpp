#pragma once
/// @file
/// `SqliteStore`: runs in one SQLite database (target `trellis::sqlite`, so programs that do
/// not use it never link SQLite).
///
/// The database is in WAL mode with `synchronous` as configured (FULL by default: a commit
/// that returned survives a power cut) and a busy timeout, so several processes can share it.
/// Only an empty database or one trellis created is used: a database that holds anything else
/// and no `trellis_schema` (another program's) is refused with not_a_store, a newer schema
/// with store_error, before anything is written to it (it stays byte for byte as it was, not
/// even switched to WAL). Give trellis a database file of its own. Opened read-only
/// (SqliteStoreOptions::read_only), a store writes nothing, upgrades nothing and creates no
/// database file.
///
/// Tables `trellis_schema`, `runs` (with the run index list_runs reads), `checkpoints`,
/// `effects`, `events`, `leases`, `cancel_requests`, `graphs` and `cache_entries`, schema version
/// `schema_version` (an older one is upgraded in place when opened for writing), are
/// described in docs/formats.md, section "SQLite schema". Every checkpoint, effect, cancel
/// request, graph and cache entry row carries a checksum of its record text: a record edited or
/// damaged outside trellis is a store_error naming the database, never returned. Records are parsed
/// with the file readers' nesting limit (max_json_depth).
///
/// The run index (status, reason, next node, step, creation and update times, fingerprint,
/// pending request, due time and priority) is a part of the `runs` row, updated by create and
/// commit in their own transaction: `list_runs` reads those rows (its filter in SQL, the status
/// over an index), never a checkpoint. `claim` and `due_runs` read the due runs with one query
/// in claim order (priority, due time, run id) over an index of the due times, skipping those
/// whose lease a live holder has (as `lease` decides: not expired, holder not provably dead);
/// the protocol then takes each candidate's lease as `lease` does (a new epoch, the TTL, the
/// fencing), so a claimed lease is in every way a lease. Cancel requests get their ids inside a
/// BEGIN IMMEDIATE transaction, so two processes never give the same one. Event positions
/// (`events_after`) are the rows' ids, shared by all runs: they grow, with gaps. `delete_run` is
/// one transaction (checkpoints, effects, events, requests, the run and its lease row), run_busy
/// while a live holder has the lease. `put_graph` of a shape already stored as it is costs one
/// read, no write.
///
/// `commit` is one transaction: BEGIN IMMEDIATE, check the run's newest seq (run_busy when it
/// is not `expected_seq`, and nothing is written), check and renew the worker's lease (below),
/// insert the checkpoint, update the run, COMMIT.
///
/// Leases: a row {holder id, epoch, owner, host, pid, process start time, expiry} per run. A
/// second worker gets run_busy until the holder releases it (RAII: the row stays, without a
/// holder, so the next epoch is larger), it expires (`lease_ttl` after it was taken or last
/// renewed by `renew`, a commit or an effect record), or its holder is provably dead: taken
/// on this machine (the same running kernel, by boot id, and pid namespace) by a process that
/// no longer exists, or whose pid now belongs to a process started at another time. So after
/// `kill -9` on the same machine a resume takes the run at once; a holder on another machine
/// (or one this process cannot see) is waited for until its TTL runs out. A write given a
/// token checks that the row still has the token's holder and epoch: a worker whose expired
/// lease was taken over gets run_busy at its next commit, effect record or renewal, even when
/// it shares this store object with the new holder. An expired lease nobody took is still its
/// holder's, and the write renews it.
///
/// `put_effect` is one transaction too (BEGIN IMMEDIATE, find the run, check and renew the
/// worker's lease on it as a commit does, insert or replace the key's row, COMMIT) at the
/// configured `synchronous` level: with FULL it is durable when it returns, as a commit is. The
/// lease check makes the started record a fence: a worker that lost the run cannot start an
/// effect (call the external system) that the new holder may also start.
///
/// Events are inserted with synchronous=OFF: they become durable with the next checkpoint
/// commit, never costing an fsync of their own (they are observability, not state).
///
/// One connection per object, guarded by a mutex; statements are prepared once. Every
/// failure is a store_error naming the database file and carrying SQLite's message.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trellis/agent/detail/store_protocol.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// SQLite's `PRAGMA synchronous` levels (https://sqlite.org/pragma.html#pragma_synchronous).
enum class SqliteSynchronous {
  off,     ///< no fsync: fast, a power cut may lose or corrupt recent commits
  normal,  ///< in WAL mode: durable up to the last checkpoint of the WAL; never corrupt
  full,    ///< every commit fsync'd: a commit that returned survives a power cut
  extra,   ///< full, plus the directory sync after the journal is deleted
};

/// Settings of a SqliteStore.
struct SqliteStoreOptions {
  SqliteSynchronous synchronous = SqliteSynchronous::full;
  /// How long a statement waits for another connection's lock before failing.
  std::chrono::milliseconds busy_timeout{5000};
  /// How long a lease lives without a renewal (the graph renews it every lease_ttl/3 while a
  /// run call holds it; a commit or effect record renews it too).
  std::chrono::milliseconds lease_ttl{30000};
  /// A full checkpoint every this many rows of a run; the rows between hold only what changed.
  std::size_t snapshot_every = 64;
  /// The permissions of a database file the store creates, applied exactly (the umask does not
  /// narrow them); SQLite gives its -wal and -shm files the same. 0600 by default; 0640 or
  /// 0660 shares the database with the group. An existing file keeps its mode. A mode that
  /// lets others write is refused by the constructor with invalid_option.
  unsigned file_mode = 0600;
  /// Open to read only (SQLITE_OPEN_READONLY): a missing file is not_a_store and nothing is
  /// created; an older schema is read as it is (no upgrade); every write (create, commit,
  /// lease, put_effect, append_event, request_cancel, delete_run, put_graph, put_cached,
  /// apply_retention) throws store_error and writes nothing. The database file is never written.
  /// SQLite needs the -wal and -shm files to read a WAL database while others may write it: when
  /// they are missing (the last writer closed it), SQLite creates them beside it (the -wal empty,
  /// both with the database file's mode), and they stay after the store closes, until a writer's
  /// connection closes last and removes them. Where they cannot be created (a directory this
  /// process may not write), SQLite cannot read the database: store_error.
  bool read_only = false;
};

class SqliteStore final : public detail::StoreProtocol {
 public:
  /// The schema version this build writes and reads (1: before effect records, 2: before
  /// lease epochs, 3: before row checksums, 4: before the run index, cancel requests and graph
  /// shapes, 5: before durable timers and priorities, 6: before cache entries and the hash
  /// chain's record members; such a database is upgraded in place
  /// when opened for writing).
  static constexpr int schema_version = 7;

  /// Opens (creating it with exactly `options.file_mode` if needed, upgrading an older schema)
  /// the database at `path`; with `options.read_only`, opens it to read, creating and
  /// upgrading nothing. Throws, leaving the file as it was: not_a_store when it is not a
  /// SQLite database, holds tables of another program and no trellis schema, or (read-only)
  /// is missing or empty; store_error when it cannot be opened or holds a newer schema (or,
  /// read-only, a schema older than 4, which needs the upgrade); invalid_option for a
  /// `file_mode` that lets others write.
  explicit SqliteStore(std::filesystem::path path, SqliteStoreOptions options = {});
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  std::vector<std::string> runs() override;
  std::optional<std::chrono::milliseconds> lease_ttl() const override { return options_.lease_ttl; }

  /// The database file.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct Db;  // the connection, its prepared statements and the per-run encoder cache
  void release(const LeaseToken& token) noexcept;
  std::optional<detail::LeaseRefusal> keep_lease(Db& db, std::string_view run_id,
                                                 const LeaseToken& lease);
  class Write;  // one run inside one database transaction: the primitives of the protocol

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

  std::filesystem::path path_;
  SqliteStoreOptions options_;
  std::mutex m_;
  std::unique_ptr<Db> db_;
};

}  // namespace trellis::agent
