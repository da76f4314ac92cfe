#pragma once
/// @file
/// `FileStore`: the embedded default store. Plain files under one root directory, no database.
///
/// One directory per run under the root (journal.jsonl, effects.jsonl, events.jsonl, lease,
/// commit.lock) holding checksummed JSON lines, each appended with one write(2) and one
/// fdatasync; the layout and the record formats (version 1) are described in docs/formats.md,
/// section "FileStore layout". The run directory and the root are fsync'd when an entry
/// appears in them. A crash mid-append can only leave an unterminated last line: readers ignore
/// it and the next writer cuts it off before appending. A complete line that does not decode
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
/// Retention: keep_last rewrites a journal atomically (temporary file, fsync, rename,
/// directory fsync), its first kept line becoming a full record (effects.jsonl is never
/// trimmed: a run's effect records are kept as long as the run); a finished run older than
/// the limit (its effects with it) is renamed aside (to a name no run id can take) and then
/// deleted, unless someone holds its lease. Leftovers of an interrupted deletion are removed
/// at open.

#include <cstddef>
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
  /// Open to read only: write nothing, create nothing (a path that holds no store is
  /// not_a_store). Placeholder: the store honours it once the FileStore branch lands.
  bool read_only = false;
};

class FileStore final : public detail::StoreProtocol {
 public:
  /// Opens (creating it and its parents if needed, with the directory mode of
  /// `options.file_mode`) the store rooted at `root`, resolving links in `root` once. Throws
  /// store_error when the root cannot be created or is not a directory, invalid_option for a
  /// `file_mode` that lets others write.
  explicit FileStore(std::filesystem::path root, FileStoreOptions options = {});
  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  std::vector<std::string> runs() override;

  /// The root directory.
  const std::filesystem::path& root() const noexcept { return root_; }
  /// The directory of run `run_id` (validated; it may not exist).
  std::filesystem::path run_directory(std::string_view run_id) const;

 private:
  struct Root;      // the root directory, opened once, and the modes of what the store creates
  struct RunFiles;  // per run: the cached newest checkpoint, effect records and descriptors
  class Write;      // one run under its commit.lock: the primitives of the protocol
  std::shared_ptr<RunFiles> files(std::string_view run_id);
  void forget(const std::string& run_id);

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

  std::filesystem::path root_;
  FileStoreOptions options_;
  std::unique_ptr<Root> root_dir_;
  std::mutex m_;
  std::map<std::string, std::shared_ptr<RunFiles>, std::less<>> runs_;
};

}  // namespace trellis::agent
