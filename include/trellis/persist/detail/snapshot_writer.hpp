#pragma once
/// @file
/// The writer interface of a durable machine: the machine's core decides transitions and
/// encodes its states as JSON; a writer puts them on disk as sidecar snapshots, in one of three
/// ways (one class each, compiled in src/persist/):
///
/// - SyncWriter (sync_writer.hpp): writes each transition before it returns (a sidecar
///   replace, or a journal line with compaction every N);
/// - GroupWriter (group_writer.hpp): concurrent senders share one sidecar write; it runs the
///   whole group commit protocol and calls the core back to decide and to publish;
/// - AsyncWriter (async_writer.hpp): a background thread writes the newest snapshot handed to
///   it, retrying failures.
///
/// What they share is here: where and how a snapshot is written (a SidecarRecord of the
/// machine's name and schema, with the machine's file mode), the events they emit (persisted,
/// persist_failed), how an epoch is counted (refused at 2^64-1 rather than wrapped), and the
/// refusal after an unknown outcome: once a write may or may not have reached the disk
/// (persist_outcome_unknown), a sync or group writer refuses every later send with
/// persist_error until the machine is reopened.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/persist/detail/persist_event_hub.hpp"
#include "trellis/persist/sidecar.hpp"

namespace trellis::detail {

/// What a writer writes and to whom it reports.
struct WriterConfig {
  std::filesystem::path path;               ///< the sidecar (resolved: see SidecarLock)
  std::string name;                         ///< the machine's name in the sidecar
  int schema_version = 1;                   ///< the state's schema written beside it
  mode_t file_mode = 0600;                  ///< of every file the writer creates
  PersistEventHub* events = nullptr;        ///< persisted / persist_failed (null: not reported)
  SidecarKind kind = SidecarKind::machine;  ///< what the snapshots are (durable charts: statechart)
};

/// The base of the three writers (see the file comment).
class SnapshotWriter {
 public:
  explicit SnapshotWriter(WriterConfig config);
  virtual ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  const std::filesystem::path& path() const noexcept { return config_.path; }

  /// The newest epoch known to be on disk.
  virtual std::uint64_t durable_epoch() const = 0;

  /// Returns once every snapshot handed over so far is on disk. Sync and group writers write
  /// before they return, so this returns at once; the async writer overrides it.
  virtual void flush();

  /// Throws persist_error once an earlier write's outcome was unknown (see the file comment).
  void refuse_if_unusable() const;

  /// True once an earlier write's outcome was unknown.
  bool unusable() const noexcept { return unusable_.load(std::memory_order_acquire); }

 protected:
  /// Replaces the sidecar with `state` at `epoch` (store_sidecar; throws what it throws).
  void write_sidecar(const nlohmann::json& state, std::uint64_t epoch) const;

  /// Reports an event (no lock of the writer may be held: listeners may call back).
  void emit(PersistEvent::Kind kind, std::uint64_t epoch, std::string detail = {}) const noexcept;

  /// The epoch after `current`; persist_error when the epoch cannot count one more.
  std::uint64_t next_epoch(std::uint64_t current) const {
    if (current == std::numeric_limits<std::uint64_t>::max()) [[unlikely]]
      throw_epoch_at_maximum();
    return current + 1;
  }

  /// The epoch a refused transition after `current` is reported with (no wrap).
  static std::uint64_t refused_epoch(std::uint64_t current) noexcept {
    return current == std::numeric_limits<std::uint64_t>::max() ? current : current + 1;
  }

  /// Records an unknown outcome: every later refuse_if_unusable() throws.
  void make_unusable(const std::string& why);

  const WriterConfig& config() const noexcept { return config_; }

 private:
  [[noreturn]] void throw_epoch_at_maximum() const;

  WriterConfig config_;
  std::atomic<bool> unusable_{false};
  std::mutex unusable_mutex_;  // the first make_unusable() wins
  std::string unusable_why_;   // written once, before unusable_ is set
};

}  // namespace trellis::detail
