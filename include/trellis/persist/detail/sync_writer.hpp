#pragma once
/// @file
/// `SyncWriter`: the write path of Durability::sync. The core decides a transition with the
/// graph's lock held and hands it to write(), which counts it (the next epoch), asks the core
/// to encode it, and puts it on disk before it returns: a sidecar replace, or with a journal
/// one fdatasync'd journal line, compacted into the sidecar every `compact_every` lines.
///
/// Acknowledgement: when write() returns, the transition is on disk, the core's epoch
/// counts it and `persisted` was emitted; the core then commits it. When it throws, nothing was
/// acknowledged: the error is reported as persist_failed first. A persist_outcome_unknown (the
/// sidecar renamed into place but its directory not synced, or a journal line that could not be cut
/// back) makes the writer refuse every later send (refuse_if_unusable). A failed compaction loses
/// nothing (the journal holds the transition): it is reported as persist_failed and write()
/// returns.
///
/// Not thread-safe: the core calls it with the graph's lock held.

#include <cstddef>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "trellis/persist/detail/function_ref.hpp"
#include "trellis/persist/detail/snapshot_writer.hpp"
#include "trellis/persist/journal.hpp"

namespace trellis::detail {

/// One transition as the sync writer writes it.
struct EncodedTransition {
  nlohmann::json to;               ///< the new state
  nlohmann::json from = nullptr;   ///< the state before (journal lines only)
  nlohmann::json event = nullptr;  ///< the event (journal lines only; null if E has no to_json)
};

class SyncWriter final : public SnapshotWriter {
 public:
  /// Writes sidecar snapshots, or journal lines into `journal` when it is set; `epoch` is the
  /// epoch on disk at the start.
  SyncWriter(WriterConfig config, std::uint64_t epoch, std::optional<Journal> journal = {},
             std::size_t compact_every = 1024);

  /// Whether transitions go to the journal (the encoder must then fill `from` and `event`).
  bool journaled() const noexcept { return journal_.has_value(); }

  /// Puts the transition after `epoch` (the core's counter) on disk and advances `epoch` to it,
  /// before `persisted` is reported. `encode` is called once, after the epoch is counted, with
  /// journaled(). On failure `epoch` is left as it was (see the file comment).
  void write(std::uint64_t& epoch, FunctionRef<EncodedTransition(bool journaled)> encode);

  std::uint64_t durable_epoch() const override { return written_epoch_; }

 private:
  void write_one(EncodedTransition&& t, std::uint64_t epoch);

  std::optional<Journal> journal_;
  std::size_t compact_every_;
  std::size_t since_compact_ = 0;
  std::uint64_t written_epoch_;
};

}  // namespace trellis::detail
