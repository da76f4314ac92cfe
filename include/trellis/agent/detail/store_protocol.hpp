#pragma once
/// @file
/// `detail::StoreProtocol`: the Store contract (store.hpp), written once over a small backend.
///
/// Every store (MemoryStore, FileStore, SqliteStore, and the ones later issues add) derives from
/// it and supplies primitives: one write transaction over one run (a mutex, a file lock, a
/// database transaction) with the run's primitive reads and writes inside it, the lease table,
/// and the plain reads. The checks every store must make are here, once, in this order: the
/// run id (invalid_run_id), the run's existence (unknown_run), the version check (run_busy when
/// the newest checkpoint is not `expected_seq`), the sequence continuity (store_error when
/// `next.seq` is not expected_seq + 1), the lease token's run and its hold on the run
/// (run_busy); only then does the backend write. A checkpoint or effect record given without a
/// hash is sealed here first (chain.hpp), reading its predecessor; one given sealed is written
/// as it is.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "trellis/agent/errors.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent::detail {

/// A non-owning reference to a callable `void(Arg&)` (no allocation: commit is a hot path).
template <class Arg>
class RunBody {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, RunBody>) RunBody(F& f)
  noexcept  // NOLINT: implicit, like std::function_ref
      : object_(static_cast<void*>(&f)), call_([](void* o, Arg& a) { (*static_cast<F*>(o))(a); }) {}
  void operator()(Arg& a) const { call_(object_, a); }

 private:
  void* object_;
  void (*call_)(void*, Arg&);
};

/// Why a lease token no longer holds its run's lease.
struct LeaseRefusal {
  std::uint64_t epoch = 0;  ///< the epoch of the token that was checked
  std::string why;          ///< "was released", "is now held by 'w'", ...
};

/// One run inside one write transaction of a backend (its lock held, or its database
/// transaction open): the primitive reads and writes the protocol is made of. What the
/// primitives write becomes durable when the transaction ends without an exception. The
/// protocol calls newest_seq() before any write, so a backend may look the run up there.
class RunWrite {
 public:
  /// The run's newest checkpoint seq; nullopt when the run does not exist.
  virtual std::optional<std::uint64_t> newest_seq() = 0;
  /// Checks that `token` holds the run's lease (renewing it where leases expire); an empty
  /// token stands for the overloads without one (the backend checks the lease this store
  /// object holds on the run, if it can have been lost). nullopt when it holds.
  virtual std::optional<LeaseRefusal> hold_lease(const LeaseToken& token) = 0;
  /// Writes the run's first checkpoint (the run does not exist).
  virtual void insert_first(const Checkpoint& first) = 0;
  /// Appends `next` after the newest checkpoint.
  virtual void append(const Checkpoint& next) = 0;
  /// Inserts the effect record, or replaces the record of its key.
  virtual void put_effect(const EffectRecord& record) = 0;
  /// put_effect with a record the backend may keep (moved from): StoreProtocol copies it before
  /// the transaction, so a store that keeps records as they are (MemoryStore) copies nothing
  /// under its lock. The default calls put_effect.
  virtual void take_effect(EffectRecord&& record) { put_effect(record); }
  /// Appends `request` to the run's request log with the next id (1 + the newest), returned.
  /// (The default refuses: store_error.)
  virtual std::uint64_t append_cancel_request(const CancelRequest& request);

 protected:
  ~RunWrite() = default;
};

/// What a write transaction is for (a backend may lock less for a renewal).
enum class WriteKind { create, commit, put_effect, renew, request };

/// The Store call a write transaction serves ("commit", "request_cancel"), for messages.
const char* write_name(WriteKind kind) noexcept;

/// What apply_retention keeps, decided once: `finished_before` is the UTC text (see
/// checkpoint.hpp's created_at) before which finished runs go, empty for none.
struct RetentionPlan {
  std::size_t keep_last = 0;
  std::string finished_before;
};

class StoreProtocol : public Store {
 public:
  using Store::commit;
  using Store::put_effect;

  void create(const Checkpoint& first) final;
  void commit(const Checkpoint& next, std::uint64_t expected_seq, const LeaseToken& lease) final;
  std::optional<Checkpoint> latest(std::string_view run_id) final;
  std::optional<Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) final;
  std::vector<Checkpoint> history(std::string_view run_id) final;
  Lease lease(std::string_view run_id, std::string_view owner) final;
  void renew(const LeaseToken& lease) final;
  void put_effect(const EffectRecord& record, const LeaseToken& lease) final;
  std::optional<EffectRecord> effect(std::string_view run_id, std::string_view key) final;
  std::vector<EffectRecord> effects(std::string_view run_id) final;
  void append_event(std::string_view run_id, const nlohmann::json& event) final;
  std::vector<nlohmann::json> events(std::string_view run_id) final;
  void apply_retention(const Retention& retention) final;
  std::vector<StoredEvent> events_after(std::string_view run_id, std::uint64_t after_seq) final;
  std::uint64_t request_cancel(const CancelRequest& request) final;
  std::vector<CancelRequest> cancel_requests(std::string_view run_id,
                                             std::uint64_t after = 0) final;
  std::vector<RunSummary> list_runs(const RunFilter& filter = {}) final;
  std::size_t count_runs(const RunFilter& filter = {}) final;
  void delete_run(std::string_view run_id) final;
  void put_graph(const GraphShape& shape) final;
  std::optional<GraphShape> graph(std::string_view fingerprint) final;
  std::optional<CacheEntry> cached(std::string_view key) final;
  void put_cached(const CacheEntry& entry) final;
  std::vector<Claim> claim(const ClaimRequest& request) override;
  std::vector<RunSummary> due_runs(std::size_t limit) override;

 protected:
  StoreProtocol() = default;

  // --- the backend's primitives (each called with a valid run id) ---------------------------

  /// Called by put_effect before its write transaction (outside any lock): a store that keeps
  /// records as they are (MemoryStore) refuses here what the persistent stores could not hold.
  /// Default: nothing (an encoding store checks as it encodes).
  virtual void check_effect(const EffectRecord& record);

  /// Runs `body` inside one write transaction over run `run_id`.
  virtual void write_run(std::string_view run_id, WriteKind kind, RunBody<RunWrite> body) = 0;
  /// Takes the run's lease for `owner`; nullopt when another holds it, described in `holder`
  /// ("'w' (pid 12)").
  virtual std::optional<Lease> take_lease(std::string_view run_id, std::string_view owner,
                                          std::string& holder) = 0;
  virtual std::optional<Checkpoint> read_latest(std::string_view run_id) = 0;
  virtual std::optional<Checkpoint> read_checkpoint(std::string_view run_id, std::uint64_t seq) = 0;
  virtual std::vector<Checkpoint> read_history(std::string_view run_id) = 0;
  virtual std::optional<EffectRecord> read_effect(std::string_view run_id,
                                                  std::string_view key) = 0;
  virtual std::vector<EffectRecord> read_effects(std::string_view run_id) = 0;
  /// Appends an event to an existing run; drops it when the run does not exist.
  virtual void write_event(std::string_view run_id, const nlohmann::json& event) = 0;
  virtual std::vector<nlohmann::json> read_events(std::string_view run_id) = 0;
  virtual void retain(const RetentionPlan& plan) = 0;
  // The primitives below have defaults (correct over the ones above, but slow, or refusing
  // with store_error) so a backend can be brought up one part at a time; every store of
  // trellis overrides them all.

  /// The run's events after position `after_seq`, with their positions (default: the 1-based
  /// index in read_events).
  virtual std::vector<StoredEvent> read_events_after(std::string_view run_id,
                                                     std::uint64_t after_seq);
  /// The run's cancel requests with an id larger than `after` (none for an unknown run).
  virtual std::vector<CancelRequest> read_cancel_requests(std::string_view run_id,
                                                          std::uint64_t after);
  /// Every run's summary that passes `filter` (from the store's index), ordered by run id
  /// (default: read_latest and read_history of every run).
  /// At most filter.limit of them (0: all).
  virtual std::vector<RunSummary> read_summaries(const RunFilter& filter);
  /// How many runs pass `filter`, its limit ignored (default: read_summaries' size).
  virtual std::size_t read_count(const RunFilter& filter);
  /// Deletes the run whole; false when it does not exist. Throws run_busy, deleting nothing,
  /// while a worker holds its lease.
  virtual bool erase_run(std::string_view run_id);
  virtual void write_graph(const GraphShape& shape);
  virtual std::optional<GraphShape> read_graph(std::string_view fingerprint);
  /// Stores the cache entry under its key (replacing one), durably; no run is involved.
  /// (Default: store_error.) The protocol has checked the key and the entry's values.
  virtual void write_cache(const CacheEntry& entry);
  /// The cache entry under `key` (a checked key), if any (default: none).
  virtual std::optional<CacheEntry> read_cache(std::string_view key);

  /// Up to `limit` summaries of runs due at or before `now` (UTC text of the store's clock:
  /// RunSummary::due <= now), of the graphs `fingerprints` (nullptr: any), in claim order
  /// (priority descending, then due ascending, then run id). They are candidates: claim()
  /// takes each one's lease (take_lease; a held one is skipped) and keeps it only when the
  /// newest checkpoint, read under the lease, is still due. (Default: read_summaries over
  /// every run; a store with an index of due runs overrides it.)
  virtual std::vector<RunSummary> read_due(const std::string& now,
                                           const std::vector<std::string>* fingerprints,
                                           std::size_t limit);
  /// The store's clock, as UTC text (the machine's: file and SQLite stores live on it).
  virtual std::string store_now();

 private:
  /// `c` sealed after the checkpoint hashed `prev_hash`, with the receipts of the effect
  /// records it names as the store holds them (chain.hpp): for a checkpoint given unsealed.
  Checkpoint sealed(const Checkpoint& c, std::string_view prev_hash);
};

}  // namespace trellis::agent::detail
