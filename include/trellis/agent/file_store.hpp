#pragma once
/// @file
/// `FileStore`: the embedded default store. Plain files under one root directory, no database.
///
/// One directory per run under the root (journal.jsonl, effects.jsonl, requests.jsonl,
/// events.jsonl, lease, commit.lock) holding checksummed JSON lines, each appended with one
/// write(2) and one fdatasync; the layout and the record formats (version 3) are described in
/// docs/formats.md, section "FileStore layout". The run directory and the root are fsync'd when an
/// entry appears in them. A crash mid-append can only leave an unterminated last line: readers
/// ignore it and the next writer cuts it off before appending. A complete line that does not decode
/// (a bad checksum, the last line included) was acknowledged once and is corruption: a
/// store_error naming the file and the line, and the file is never cut or rewritten. So a run
/// whose only checkpoint line is damaged is reported (latest, create and Graph::run throw),
/// never taken for a missing run. The same holds for events.jsonl (without checksums: a
/// complete line that is not JSON).
///
/// Files and links: the root given (and the path to it) may go through symbolic links; it is
/// resolved once, by the constructor, and opened as a directory. Run directories and every
/// file in them are opened relative to it without following links (O_NOFOLLOW; a journal is
/// written to a new "journal.jsonl.tmp-trellis-<16 hex>" temporary, O_EXCL, renamed over it), so
/// a link planted at a run directory, journal.jsonl, effects.jsonl, events.jsonl, lease or
/// commit.lock is a store_error ("a symbolic link is at ..."), its target untouched; what is
/// there must be a regular file (a FIFO is a store_error, never waited on). `runs()` lists only
/// real directories.
///
/// Permissions: what the store creates gets exactly FileStoreOptions::file_mode (0600 by
/// default) and each directory it creates (the root, its missing parents, run directories) the
/// matching directory mode (0700; 0640 gives 0750), whatever the umask.
///
/// Concurrency: `commit` checks the newest seq and appends while holding commit.lock, so the
/// version check holds across threads, FileStore objects and processes; `put_effect` appends
/// under the same lock. The lease is a flock(LOCK_EX | LOCK_NB) on the lease file through its
/// own open file description, so a second thread or process is refused (run_busy naming the
/// holder's pid), and the kernel frees the lease of a process that dies, even by SIGKILL: a
/// FileStore lease never expires (no lease_ttl, nothing to renew) and is free at once when its
/// holder dies. Its token is checked by `commit`, `put_effect` and `renew` against the leases
/// held in this process (a flock cannot be lost while its descriptor is open): a token whose
/// Lease was released is run_busy. The overloads without a token check no lease.
///
/// Format versions: the root holds a marker, "@store.json" ({"format":"trellis.file_store",
/// "version":4}; '@' is not allowed in run ids). Version 4 adds cache entries ("@cache/<key>.json",
/// cache_entry.hpp) and the members of the hash chain in checkpoint and effect records (an
/// older build must not rewrite a run it cannot verify); its run files and index are otherwise
/// those of version 3. Version 3 adds durable timers and priorities:
/// checkpoints may carry wake_at and priority, and each index line ends with the run's due
/// time and priority; version 2 (the release before) has neither; a root with run directories
/// and no marker is version 1 (before the index). Opened for writing, a new or empty root gets
/// the marker and an older root is upgraded (the run index is rebuilt from the journals, then
/// the marker is written: a crash in between leaves the older version, upgraded again at the
/// next open); a marker of a newer version is refused (store_error naming the marker and both
/// versions, nothing touched); a root that holds something else (files or directories that
/// are not runs, a marker of another format or one that does not parse) is not_a_store,
/// untouched.
///
/// Read-only (FileStoreOptions::read_only): the store must exist (a missing root, or one
/// that is not a store, is not_a_store, and nothing is created); a version 1 or 2 store is
/// read as it is (its listing, and due_runs, read every journal), and so is a version 3 store
/// (it has no cache entries). Reads never create or change
/// anything (no directory, lock file, index or marker: the tree is left byte for byte as it was),
/// and every write (create, commit, lease, put_effect, append_event, request_cancel, delete_run,
/// put_graph, put_cached, apply_retention) is a store_error ("opened read-only") that writes
/// nothing.
///
/// The run index (list_runs): "@index.jsonl" in the root holds one line per create, commit and
/// journal rewrite: the run's summary and the journal's inode, size and mtime just after the
/// write. It is a cache derived from the journals, appended without an fsync: list_runs takes
/// the runs from the root directory, uses a run's newest index line only while its journal
/// still has that inode, size and mtime (one fstatat each), and reads the journal of any run
/// whose line is missing or stale (a crash between a commit and its index line, another
/// release's writes); a damaged journal read that way makes list_runs a store_error naming it,
/// as latest() would. A writable store rewrites the index whole (compaction, under the flock
/// of "@index.lock") when a listing had to read a journal or found more than twice as many
/// lines as runs, and a writer does when the index outgrew twice its compacted size plus
/// 1 MiB; appends take that flock shared. 100,000 runs list in about 0.55 s (warm cache;
/// bench/agent_list.cpp). A run's created_at is its first checkpoint's time; a keep_last
/// rewrite keeps it on the journal's first line ("run_created_at").
///
/// Claims (`claim`, `due_runs`): the due runs come from one read of the index (no directory
/// listing, no journal read): its lines due at or before now, of the wanted graphs, in claim
/// order, skipping runs whose lease a FileStore of this process holds; each candidate's
/// journal is then checked with one fstatat (a deleted run is dropped, a run whose line is
/// stale is read from its journal) until enough are found, and claim takes their leases (a
/// lease held by another process is skipped there; a holder that died has released it). The
/// index is a cache a crash may leave behind its journals, so the first call of a store object,
/// and one every kDueFullPass (30 s) after, lists the runs as list_runs does (and repairs the
/// index): a run whose index line a crash lost is claimed within that time.
///
/// Cancel requests: "requests.jsonl" in the run's directory, checksummed lines appended under
/// commit.lock like effect records (ids 1, 2, ... in line order); reading the requests of a
/// run that has none costs one failed fstatat. Graph shapes: "@graphs/<sha256 hex of the
/// fingerprint>.json", replaced atomically, not rewritten when the same shape is there.
/// delete_run takes the run's lease (run_busy while any thread or process holds it) and its
/// commit.lock, renames the directory aside and deletes it, as retention does.
///
/// Retention: keep_last rewrites a journal atomically (temporary file, fsync, rename,
/// directory fsync), its first kept line becoming a full record (effects.jsonl is never
/// trimmed: a run's effect records are kept as long as the run); a finished run older than
/// the limit (its effects with it) is renamed aside (to a name no run id can take) and then
/// deleted, unless someone holds its lease. Leftovers of an interrupted deletion are removed
/// at open.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trellis/agent/detail/store_protocol.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// Settings of a FileStore.
struct FileStoreOptions {
  /// fdatasync every journal and effects append (and fsync directories). Turn off only for
  /// throwaway runs: a power cut may then lose committed checkpoints and effect records.
  bool sync = true;
  /// A full checkpoint every this many journal lines; the lines between hold only what
  /// changed (an unchanged 4 KiB member of the state costs nothing on those lines).
  std::size_t snapshot_every = 64;
  /// The permissions of every file the store creates, applied exactly (the umask does not
  /// narrow them); directories it creates get the same plus search wherever it grants read.
  /// The default keeps the store to its owner (0600, directories 0700); 0640 (or 0660) shares
  /// it with the group (directories 0750 or 0770). A mode that lets others write, or that does
  /// not let the owner read and write, is refused by the constructor with invalid_option.
  unsigned file_mode = 0600;
  /// Open an existing store to read it only: nothing is created, upgraded or written (every
  /// write is a store_error), and a path that holds no store is not_a_store.
  bool read_only = false;
};

class FileStore final : public detail::StoreProtocol {
 public:
  /// The version of the layout this build writes (and the newest it reads).
  static constexpr int format_version = 4;

  /// Opens (creating it and its parents if needed, with the directory mode of
  /// `options.file_mode`) the store rooted at `root`, resolving links in `root` once, and
  /// upgrades a version 1 store (see above). With `options.read_only`, opens an existing store
  /// and writes nothing. Throws not_a_store when the root holds something that is not a store
  /// (or, read-only, nothing at all), store_error when the root cannot be created or is not a
  /// directory or its marker names a newer version, invalid_option for a `file_mode` that lets
  /// others write.
  explicit FileStore(std::filesystem::path root, FileStoreOptions options = {});
  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  std::vector<std::string> runs() override;

  /// The root directory.
  const std::filesystem::path& root() const noexcept { return root_; }
  /// The directory of run `run_id` (validated; it may not exist).
  std::filesystem::path run_directory(std::string_view run_id) const;
  /// The layout version of the store as opened: format_version, or the older version of a
  /// store opened read-only (a writable open upgrades it).
  int version() const noexcept { return version_; }
  bool read_only() const noexcept { return options_.read_only; }

 private:
  struct Root;      // the root directory, opened once, and the modes of what the store creates
  struct RunFiles;  // per run: the cached newest checkpoint, effect records and descriptors
  class Write;      // one run under its commit.lock: the primitives of the protocol
  struct Index;     // the run index: its descriptors and when to compact it
  struct Listing;   // every run's summary, as list_runs and compaction compute it
  std::shared_ptr<RunFiles> files(std::string_view run_id);
  void forget(const std::string& run_id);
  void open_root();
  void refuse_write(std::string_view what) const;
  Listing collect(bool use_index);
  Listing compact();

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
  bool erase_run(std::string_view run_id) override;
  void write_graph(const GraphShape& shape) override;
  std::optional<GraphShape> read_graph(std::string_view fingerprint) override;
  void write_cache(const CacheEntry& entry) override;
  std::optional<CacheEntry> read_cache(std::string_view key) override;
  std::vector<RunSummary> read_due(const std::string& now,
                                   const std::vector<std::string>* fingerprints,
                                   std::size_t limit) override;

  /// How often read_due lists from the journals' stamps rather than the index alone.
  static constexpr std::chrono::seconds kDueFullPass{30};

  std::filesystem::path root_;
  FileStoreOptions options_;
  std::unique_ptr<Root> root_dir_;
  int version_ = format_version;
  std::unique_ptr<Index> index_;
  /// When read_due next lists from the journals (steady_clock ticks; 0: at its first call).
  std::atomic<std::int64_t> next_full_due_pass_{0};
  std::mutex m_;
  std::map<std::string, std::shared_ptr<RunFiles>, std::less<>> runs_;
};

}  // namespace trellis::agent
