#pragma once
// Private to src/agent: the record encoding FileStore and SqliteStore share.
//
// A run's checkpoints are stored as a chain of records: a *full* record holds the whole
// checkpoint, a *delta* record only what changed since the record before it (the format:
// docs/formats.md, section "FileStore layout"). The state is diffed one level deep, so a big
// member that did not change costs nothing. A full record starts a run and then every
// `snapshot_every`-th record, which bounds both the cost of reading one checkpoint (at most
// that many records back) and the damage a bad record can do. Why not a byte-level diff or
// compression: the members that change per step are small (seq, step, next node, a few
// state members), so a member diff already lands far below the 400 bytes per step that the
// issue asks for, and it stays readable with a text editor.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/agent/cache_entry.hpp"
#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/effect.hpp"

namespace trellis::agent::detail {

// What a store writes must read back as it was: no NaN or infinite number (JSON has no text
// for them; nlohmann writes null) and no nesting deeper than the readers accept
// (trellis::max_json_depth), counted from the root of the record as written. A checkpoint is
// checked in its full record {"seq":N,"full":{...}}, the deepest form any record or rewrite of
// it takes (a delta is never deeper), so a checkpoint a store acknowledges can always be
// snapshotted again. Every store refuses alike, MemoryStore included, before anything is
// written: unwritable_value, naming the member as a JSON pointer into the checkpoint
// ("/state/scores/2") or the effect record ("/result/total").

/// Throws unwritable_value unless `member`, placed at `path` in a record (e.g. {"args"}), can
/// be written. The member is moved into a record of that shape and back (it is unchanged on
/// return, whether or not it throws); `object` names what is being written.
void check_member(nlohmann::json& member, std::initializer_list<const char*> path,
                  const std::string& object);

/// The check above for every member of `c` that holds the user's JSON (its state, its
/// interrupt's proposed input, its decision's input and request), as they sit in its full
/// record: for MemoryStore, which keeps checkpoints unencoded. The encoder checks the whole
/// record itself.
void check_writable(Checkpoint& c);

/// The same for an effect record's arguments and result (MemoryStore).
void check_writable(const EffectRecord& r);

/// Decodes the cache entry record a store read under `key` into `out`: nullopt, or why it is
/// refused (not a cache entry, or the entry of another key) for the store to report as corrupt.
std::optional<std::string> decode_cache_entry(const nlohmann::json& record, std::string_view key,
                                              CacheEntry& out);

/// Effect record `r` as JSON, checked: what FileStore and SqliteStore write.
nlohmann::json effect_json(const EffectRecord& r);

/// Default distance between full records.
inline constexpr std::size_t default_snapshot_every = 64;

/// Turns the checkpoints of one run, in order, into chain records.
class CheckpointEncoder {
 public:
  explicit CheckpointEncoder(std::size_t snapshot_every = default_snapshot_every)
      : every_(snapshot_every == 0 ? 1 : snapshot_every) {}

  /// The record for `c`: full for the first record and every `snapshot_every`-th, otherwise a
  /// delta against the checkpoint encoded before it. Throws unwritable_value (and stays where
  /// it was) when `c` cannot be written.
  nlohmann::json encode(const Checkpoint& c);

  /// Continues a chain whose newest checkpoint is `previous` (as JSON), `since_full` records
  /// after its last full record (0: `previous` is full).
  void continue_after(nlohmann::json previous, std::size_t since_full);

  /// Forgets the chain: the next record is full.
  void restart() noexcept { previous_.reset(); }

  /// Records since the last full one, counting the newest (0 when the newest is full).
  std::size_t since_full() const noexcept { return since_full_; }
  /// The newest encoded checkpoint as JSON (without "seq"), if any.
  const std::optional<nlohmann::json>& previous() const noexcept { return previous_; }

 private:
  std::size_t every_;
  std::optional<nlohmann::json> previous_;
  std::size_t since_full_ = 0;
};

/// Replays chain records, in order, back into checkpoints. Errors are store_error without a
/// location: the caller knows the file or table and adds it.
class CheckpointDecoder {
 public:
  /// Applies one record (a delta needs a record before it). Returns its seq.
  std::uint64_t apply(const nlohmann::json& record);

  /// The checkpoint after the records applied so far.
  Checkpoint current() const;
  /// The seq of the newest record applied.
  std::uint64_t seq() const noexcept { return seq_; }
  /// The same, as JSON without "seq".
  const nlohmann::json& current_json() const noexcept { return current_; }
  /// Records applied since the last full one (0 when the newest was full).
  std::size_t since_full() const noexcept { return since_full_; }
  bool empty() const noexcept { return !started_; }

  /// True when `record` is a full record.
  static bool is_full(const nlohmann::json& record);

 private:
  nlohmann::json current_;
  std::uint64_t seq_ = 0;
  std::size_t since_full_ = 0;
  bool started_ = false;
};

}  // namespace trellis::agent::detail
