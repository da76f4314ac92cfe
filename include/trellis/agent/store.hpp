#pragma once
/// @file
/// `Store`: where runs live. One interface for every backend (MemoryStore for tests,
/// FileStore as the embedded default, SqliteStore); one behavioural suite runs over all
/// (tests/agent/store_conformance_test.cpp). The contract below is implemented once, in
/// detail::StoreProtocol (detail/store_protocol.hpp), over each backend's primitive reads and
/// writes: a new backend derives from it and makes none of these checks itself.
///
/// The contract:
/// - `create` writes a run's first checkpoint (seq 0); a second create of the id fails.
/// - `commit` appends the next checkpoint atomically and only if the newest one is still
///   `expected_seq` (a version check): a worker that lost the race gets run_busy and nothing
///   is written. Every checkpoint is kept (history) until retention removes it.
/// - `lease` makes one worker the run's owner while it advances it; a second worker (thread
///   or process) gets run_busy. The lease belongs to the worker that took it, not to the store
///   object: it is a LeaseToken {run, holder, epoch}, where the holder id is unique to that
///   taking and the epoch grows with every taking of the run's lease. A lease ends with its
///   holder (RAII) or, for a crashed process, when the store can tell it is dead or its
///   time-to-live runs out (`lease_ttl`; see each store's header).
/// - Fencing: `commit` and `put_effect` given a token write only while that token still holds
///   the run's lease (its epoch is the run's newest); otherwise run_busy and nothing is
///   written. `renew(token)` extends a lease with a time-to-live (the graph's heartbeat calls
///   it every lease_ttl/3 while a run call holds the lease) and is run_busy once it is lost.
///   The overloads without a token are for one worker per store object: they use the lease
///   this store object took last on the run, if it still holds one, and apply only the
///   version check otherwise.
/// - Effects: each side effect's record (started, then its receipt) is committed durably on its
///   own by `put_effect`, before and right after the call (see effect.hpp); a later record of
///   the same key replaces the earlier one. They belong to the run: listed by `effects` in
///   the order they first started, kept by keep_last retention, deleted with the run.
/// - Events: an append-only JSONL log per run (observability: written after the commit, not
///   part of it). Each has a position (StoredEvent::seq) that grows with every append, so
///   `events_after(run, seq)` continues a reading with no gap and no duplicate (follow.hpp).
/// - Operators' records: cancel requests are appended to the run's request log
///   (`request_cancel`, ids 1, 2, ... per run) by any process, without the lease: they are
///   requests, answered by the process that advances the run (cancel_request.hpp). Decisions
///   and reconciliations are checkpoints (and, for a reconciliation, an effect record): they
///   change the run, so they are committed like a step, version-checked (operations.hpp).
/// - Listing: `list_runs` gives a RunSummary per run from an index the store keeps with every
///   create and commit, so it does not read every run's history.
/// - `delete_run` removes a run (checkpoints, effects, events, requests) unless a worker holds
///   its lease (run_busy).
/// - Cache entries (`put_cached`, `cached`; cache_entry.hpp): results of idempotent effects
///   kept under a cache key, store-wide (not per run): they survive the deletion and the
///   retention of the run that made them; the newest put of a key wins. Keys are validated
///   (check_cache_key: store_error) before anything is looked at.
/// - Graph shapes (`put_graph`, `graph`): what run() stores so that a program without the
///   graph can draw it; one per fingerprint, the newest put wins.
/// - Claiming (workers, worker.hpp): `claim` takes, in one call, the leases of up to `limit`
///   runs that are runnable and due (RunSummary::due at or before the store's clock: the
///   database's, never the caller's), whose lease is free (released, expired, or its holder
///   provably dead) and whose fingerprint is one the caller has, higher priority first, then
///   the earliest due. Each claim is a taking of the run's lease (a new epoch), so everything
///   `lease` promises holds for it: fenced commits and effect records, renewal, release by
///   RAII. Two callers never claim the same run; a run claimed is returned with its newest
///   checkpoint, read under the lease. `due_runs` lists what is due without taking anything
///   (the worker reports runs of graphs it does not have from it). `wait_for_work` is how an
///   idle worker waits between polls: a store that can be told of new work (PostgreSQL's
///   LISTEN) returns early when it is.
/// - Opening: a store opened to read (FileStoreOptions::read_only, SqliteStoreOptions) writes
///   nothing, not even an upgrade; a path that holds no store is not_a_store.
/// Run ids are validated by `check_run_id` in every call of every store, before anything else
/// is looked at (invalid_run_id, whatever else is wrong with the call).
/// - What JSON text cannot carry back as it is (a NaN or infinite number, nesting deeper than
///   trellis::max_json_depth counted from the root of the record written) is refused by every
///   store, MemoryStore included, before anything is written: unwritable_value, naming the
///   member of the checkpoint, effect record or cache entry ("/state/scores/2", "/result/total").

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/cache_entry.hpp"
#include "trellis/agent/cancel_request.hpp"
#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/run_summary.hpp"
#include "trellis/agent/stored_event.hpp"

namespace trellis::agent {

/// Throws invalid_run_id unless `id` is 1-128 characters of [A-Za-z0-9._-], not "." or "..".
void check_run_id(std::string_view id);

/// What retention keeps.
struct Retention {
  std::size_t keep_last = 0;  ///< checkpoints kept per run (0: all); the newest is always kept
  std::optional<std::chrono::system_clock::duration> finished_older_than = std::nullopt;
  ///< delete whole runs that ended (succeeded or failed) longer ago than this
};

/// Who holds a run's lease: the worker's proof, passed to every write it makes to the run.
struct LeaseToken {
  std::string run_id;
  std::string holder;       ///< unique to one taking of the lease (not to a store or a process)
  std::uint64_t epoch = 0;  ///< counts the takings of the run's lease; a newer holder has more
  /// True for the default token, which stands for "no token" in Store's calls.
  bool empty() const noexcept { return holder.empty(); }
  friend bool operator==(const LeaseToken&, const LeaseToken&) = default;
};

/// A run's ownership while a worker advances it (RAII): releasing it (destruction) frees the
/// run for the next worker.
class Lease {
 public:
  using Handle = std::unique_ptr<void, void (*)(void*)>;
  Lease() = default;
  /// A lease whose `handle`'s deleter releases it.
  Lease(LeaseToken token, Handle handle) : token_(std::move(token)), handle_(std::move(handle)) {}
  /// A lease without a token (stores written before LeaseToken): writes are not fenced by it.
  explicit Lease(Handle handle) : handle_(std::move(handle)) {}
  bool held() const noexcept { return handle_ != nullptr; }
  /// The token to pass to commit, put_effect and renew (empty for a default Lease).
  const LeaseToken& token() const noexcept { return token_; }

 private:
  LeaseToken token_;
  Handle handle_{nullptr, [](void*) {}};
};

/// What a worker asks Store::claim for.
struct ClaimRequest {
  std::string owner = "worker";           ///< the lease owner's name (messages, `runs ls`)
  std::vector<std::string> fingerprints;  ///< the graphs the worker has (empty: none is claimed)
  std::size_t limit = 1;                  ///< at most this many runs
};

/// A run a worker claimed: its lease, and its newest checkpoint read under the lease.
struct Claim {
  Lease lease;
  Checkpoint newest;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual void create(const Checkpoint& first) = 0;
  /// Appends `next` if the run's newest checkpoint is `expected_seq` (else run_busy) and
  /// `lease` still holds the run's lease (else run_busy); `next.seq` must be expected_seq + 1
  /// (else store_error). An empty `lease`: see the contract above.
  virtual void commit(const Checkpoint& next, std::uint64_t expected_seq,
                      const LeaseToken& lease) = 0;
  /// commit(next, expected_seq, LeaseToken{}).
  void commit(const Checkpoint& next, std::uint64_t expected_seq) {
    commit(next, expected_seq, LeaseToken{});
  }
  virtual std::optional<Checkpoint> latest(std::string_view run_id) = 0;
  virtual std::optional<Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) = 0;
  virtual std::vector<Checkpoint> history(std::string_view run_id) = 0;
  virtual std::vector<std::string> runs() = 0;
  /// Takes the run's lease for `owner` (a free text for messages); run_busy if held.
  virtual Lease lease(std::string_view run_id, std::string_view owner) = 0;
  /// Extends `lease` by the store's lease_ttl from now; run_busy when it no longer holds the
  /// run's lease (released, or taken over after it expired), store_error when the store
  /// cannot tell.
  virtual void renew(const LeaseToken& lease) = 0;
  /// How long a lease lives without a renewal; nullopt when leases do not expire (they end
  /// with their holder), so nothing needs to renew them.
  virtual std::optional<std::chrono::milliseconds> lease_ttl() const { return std::nullopt; }
  /// Commits effect record `record` of run `record.run_id` (inserting it, or replacing the
  /// record of the same key) durably before returning, if `lease` still holds the run's lease
  /// (else run_busy); unknown_run if the run does not exist. An empty `lease`: see above.
  virtual void put_effect(const EffectRecord& record, const LeaseToken& lease) = 0;
  /// put_effect(record, LeaseToken{}).
  void put_effect(const EffectRecord& record) { put_effect(record, LeaseToken{}); }
  virtual std::optional<EffectRecord> effect(std::string_view run_id, std::string_view key) = 0;
  /// Every effect record of the run, in the order their effects first started.
  virtual std::vector<EffectRecord> effects(std::string_view run_id) = 0;
  virtual void append_event(std::string_view run_id, const nlohmann::json& event) = 0;
  virtual std::vector<nlohmann::json> events(std::string_view run_id) = 0;
  virtual void apply_retention(const Retention& retention) = 0;

  // --- operators' records and views (each store overrides these; the defaults, for a Store
  // written before them, are correct but slow, or refuse with store_error) -------------------

  /// The run's events after position `after_seq` (0: all), oldest first.
  virtual std::vector<StoredEvent> events_after(std::string_view run_id, std::uint64_t after_seq);
  /// Appends `request` (its run_id, by, reason and at; `id` is ignored) to the run's request
  /// log and returns the id it got (1, 2, ... per run); unknown_run if the run does not exist.
  /// Needs no lease: the process advancing the run reads it (cancel_requests).
  virtual std::uint64_t request_cancel(const CancelRequest& request);
  /// The run's cancel requests with an id larger than `after`, oldest first.
  virtual std::vector<CancelRequest> cancel_requests(std::string_view run_id,
                                                     std::uint64_t after = 0);
  /// Summaries of the runs that pass `filter`, ordered by run id (at most `filter.limit`).
  virtual std::vector<RunSummary> list_runs(const RunFilter& filter = {});
  /// How many runs pass `filter` (its limit ignored): list_runs(filter).size(), counted in the
  /// store's index without building the summaries where the store has one.
  virtual std::size_t count_runs(const RunFilter& filter = {});
  /// Deletes run `run_id` whole; unknown_run if it does not exist, run_busy while a worker
  /// holds its lease.
  virtual void delete_run(std::string_view run_id);
  /// Stores `shape` under its fingerprint (replacing an older one).
  virtual void put_graph(const GraphShape& shape);
  /// The shape stored under `fingerprint`, if any.
  virtual std::optional<GraphShape> graph(std::string_view fingerprint);
  /// The cache entry stored under `key`, if any (cache_entry.hpp). A Store written before
  /// cache entries keeps none: nullopt.
  virtual std::optional<CacheEntry> cached(std::string_view key);
  /// Stores `entry` under `entry.key` (replacing an older one) durably before returning;
  /// needs no lease. A Store written before cache entries drops it (so nothing is cached).
  virtual void put_cached(const CacheEntry& entry);

  // --- workers (see "Claiming" above) --------------------------------------------------------

  /// Claims up to `request.limit` runnable, due runs of the request's graphs (their leases
  /// taken for `request.owner`), higher priority first, then earliest due.
  virtual std::vector<Claim> claim(const ClaimRequest& request);
  /// Up to `limit` runs that are due now and whose lease is free, of any graph, in claim
  /// order (higher priority, then earliest due). Takes nothing.
  virtual std::vector<RunSummary> due_runs(std::size_t limit);
  /// Waits up to `timeout` (or until `stop`) for work; true when the store was told of some
  /// (a store without notifications sleeps and returns false).
  virtual bool wait_for_work(std::chrono::milliseconds timeout, std::stop_token stop);
};

}  // namespace trellis::agent
