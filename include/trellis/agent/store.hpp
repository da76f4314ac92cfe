#pragma once
/// @file
/// `Store`: where runs live. One interface for every backend (MemoryStore for tests,
/// FileStore as the embedded default, SqliteStore); one behavioural suite runs over all.
///
/// The contract:
/// - `create` writes a run's first checkpoint (seq 0); a second create of the id fails.
/// - `commit` appends the next checkpoint atomically and only if the newest one is still
///   `expected_seq` (a version check): a worker that lost the race gets run_busy and nothing
///   is written. Every checkpoint is kept (history) until retention removes it.
/// - `lease` makes one worker the run's owner while it advances it; a second worker (thread
///   or process) gets run_busy. A lease ends with its holder (RAII) or, for a crashed
///   process, when its time-to-live runs out (FileStore: when the process dies).
/// - Effects: each side effect's record (started, then its receipt) is committed durably on its
///   own by `put_effect`, before and right after the call (see effect.hpp); a later record of
///   the same key replaces the earlier one. They belong to the run: listed by `effects` in
///   the order they first started, kept by keep_last retention, deleted with the run.
/// - Events: an append-only JSONL log per run (observability: written after the commit, not
///   part of it).
/// Run ids are validated by `check_run_id` in every store.
/// - What JSON text cannot carry back as it is (a NaN or infinite number, nesting deeper than
///   trellis::max_json_depth counted from the root of the record written) is refused by every
///   store, MemoryStore included, before anything is written: unwritable_value, naming the
///   member of the checkpoint or effect record ("/state/scores/2", "/result/total").

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/effect.hpp"

namespace trellis::agent {

/// Throws invalid_run_id unless `id` is 1-128 characters of [A-Za-z0-9._-], not "." or "..".
void check_run_id(std::string_view id);

/// What retention keeps.
struct Retention {
  std::size_t keep_last = 0;  ///< checkpoints kept per run (0: all); the newest is always kept
  std::optional<std::chrono::system_clock::duration> finished_older_than = std::nullopt;
  ///< delete whole runs that ended (succeeded or failed) longer ago than this
};

/// A run's ownership while a worker advances it (RAII).
class Lease {
 public:
  Lease() = default;
  explicit Lease(std::unique_ptr<void, void (*)(void*)> token) : token_(std::move(token)) {}
  bool held() const noexcept { return token_ != nullptr; }

 private:
  std::unique_ptr<void, void (*)(void*)> token_{nullptr, [](void*) {}};
};

class Store {
 public:
  virtual ~Store() = default;

  virtual void create(const Checkpoint& first) = 0;
  virtual void commit(const Checkpoint& next, std::uint64_t expected_seq) = 0;
  virtual std::optional<Checkpoint> latest(std::string_view run_id) = 0;
  virtual std::optional<Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) = 0;
  virtual std::vector<Checkpoint> history(std::string_view run_id) = 0;
  virtual std::vector<std::string> runs() = 0;
  /// Takes the run's lease for `owner` (a free text for messages); run_busy if held.
  virtual Lease lease(std::string_view run_id, std::string_view owner) = 0;
  /// Commits effect record `record` of run `record.run_id` (inserting it, or replacing the
  /// record of the same key) durably before returning; unknown_run if the run does not exist.
  virtual void put_effect(const EffectRecord& record) = 0;
  /// The record of effect `key` of the run, if any.
  virtual std::optional<EffectRecord> effect(std::string_view run_id, std::string_view key) = 0;
  /// Every effect record of the run, in the order their effects first started.
  virtual std::vector<EffectRecord> effects(std::string_view run_id) = 0;
  virtual void append_event(std::string_view run_id, const nlohmann::json& event) = 0;
  virtual std::vector<nlohmann::json> events(std::string_view run_id) = 0;
  virtual void apply_retention(const Retention& retention) = 0;
};

}  // namespace trellis::agent
