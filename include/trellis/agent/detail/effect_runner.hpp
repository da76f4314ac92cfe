#pragma once
/// @file
/// Internal: the effect protocol of effect.hpp for one run call (keys, records, replay,
/// policies, compensations). The graph's run loop owns one; RunContext::effect calls it.

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/cache_entry.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/event_kind.hpp"
#include "trellis/agent/fanout.hpp"
#include "trellis/agent/fanout_pool.hpp"
#include "trellis/agent/step.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent::detail {

/// effect_key in two parts: the part shared by every effect of a step (computed once per
/// attempt), and the rest.
std::string effect_key_prefix(std::string_view run_id, std::string_view node, std::uint64_t step);
std::string effect_key_after(std::string_view prefix, std::uint32_t ordinal, std::string_view name,
                             const nlohmann::json& args);

/// What EffectRunner::compensate did.
struct CompensationReport {
  std::size_t due = 0;              ///< compensations that were owed (run or not)
  std::vector<std::string> left;    ///< still owed, as "name (key)": no function, or transient
  std::vector<std::string> failed;  ///< failed for good, as "name (key): error"
};

/// The run an EffectRunner works for (the run loop implements it): where the runner's events
/// go, and the compensations the graph declares.
class EffectHost {
 public:
  /// Logs one event of the run the way the loop logs its own (at the step's next node).
  /// `durable`: also appended to the store's event log (false: for observers only).
  virtual void effect_event(EventKind kind, nlohmann::json detail, bool durable) = 0;
  /// True when someone observes the run's events (observer-only events are not even built
  /// otherwise).
  virtual bool observed() const noexcept = 0;
  /// The compensation declared on the graph for effects named `name` (nullptr: none).
  virtual const CompensateFn* declared_compensation(std::string_view name) const = 0;

 protected:
  ~EffectHost() = default;
};

class EffectRunner {
 public:
  /// Writes the run's effect records with `lease` (the run call's token: a worker that lost
  /// the run can start no effect).
  EffectRunner(Store& store, std::string run_id, LeaseToken lease, Clock& clock, EffectHost& host)
      : store_(store),
        run_id_(std::move(run_id)),
        lease_(std::move(lease)),
        clock_(clock),
        host_(host) {}

  /// Dry mode (Graph::step without commit, step.hpp): no effect is called and nothing is
  /// written; each effect is answered from its stored receipt, else from `stubs` by name, else
  /// refused (effect_refused, kept in refused()). `stubs` must outlive the runner.
  void dry(const std::map<std::string, nlohmann::json>* stubs) noexcept {
    dry_ = true;
    stubs_ = stubs;
  }
  /// The pool that runs fan-out items (fanout_pool.hpp; nullptr: a fan-out starts threads).
  void pool(FanoutPool* pool) noexcept { pool_ = pool; }
  /// Keeps a StepEffect per effect of the current attempt (log()); off by default.
  void keep_log() noexcept { keep_log_ = true; }
  const std::vector<StepEffect>& log() const noexcept { return log_; }
  /// Set once a dry attempt refused an effect: the step fails with it whatever the node does
  /// with the exception.
  const std::optional<effect_refused>& refused() const noexcept { return refused_; }

  /// A new attempt of `node` at `step`: ordinals count from 0 again, no keys used yet. (The
  /// rerun of a node that interrupted passes the step it interrupted at, so the effects it
  /// made before pausing replay instead of running again under new keys.)
  void begin(std::string node, std::uint64_t step);
  /// Says that no record of the current attempt can exist yet (its step was first reached by
  /// this run call's own commit, at its first attempt, not a rerun keyed by an older step):
  /// effects then start without looking for a receipt first. begin() resets it.
  void fresh() noexcept { fresh_ = true; }

  /// One effect (effect.hpp): replays its receipt, or commits started, calls, commits the
  /// receipt. Throws effect_failed, transient_error or reconciliation_required as described.
  nlohmann::json run(std::string_view name, nlohmann::json args, EffectPolicy policy,
                     const EffectFn& fn, CompensateFn compensate);

  /// One cached effect (cache_entry.hpp): as run(), but a cache entry under `cache.key` is its
  /// receipt (no call), and a successful call's result is put in the cache. graph_error
  /// unless `policy` is idempotent.
  nlohmann::json run_cached(std::string_view name, nlohmann::json args, EffectPolicy policy,
                            const EffectFn& fn, const EffectCache& cache);

  /// A fan-out (fanout.hpp): one effect per element of `args`, ordinals reserved in input
  /// order, run by up to options.concurrency threads (the caller's included). Items not
  /// started when `stop` is requested are skipped.
  std::vector<EffectOutcome> run_many(std::string_view name, std::vector<nlohmann::json> args,
                                      EffectPolicy policy, const EffectFn& fn,
                                      const FanoutOptions& options, std::stop_token stop);

  /// The keys of the effects of the current attempt, in call order (a fan-out's items in input
  /// order, where the fan-out was called), for its checkpoint.
  std::vector<std::string> take_keys() { return std::exchange(keys_, {}); }

  /// The hash of the run's newest checkpoint (chain.hpp): the link of every record written
  /// from now on. The run loop sets it whenever it commits.
  void chain_from(std::string checkpoint_hash) { chain_head_ = std::move(checkpoint_hash); }
  /// The hashes of the records of `keys` (from take_keys) as this attempt wrote or replayed
  /// them ("" for a record without one), for the checkpoint's receipts.
  std::vector<std::string> receipts(const std::vector<std::string>& keys);

  /// The keys of the effects of the current attempt that were replayed from their receipts
  /// (the step's step_completed event lists them: one log entry per step, not per replay).
  const std::vector<std::string>& replayed() const noexcept { return replayed_; }

  /// Set once an at_most_once effect of the current attempt needs reconciliation: the
  /// attempt fails whatever the node does with the exception.
  const std::optional<reconciliation_required>& reconciliation() const noexcept {
    return reconciliation_;
  }

  /// Rethrows the infrastructure failure (the store, or an injected failpoint error) that cut
  /// off an effect of the current attempt, if any: the attempt must not commit, whatever the
  /// node did with the exception (its effect may have happened and has no receipt).
  void rethrow_if_broken() const {
    if (broken_) std::rethrow_exception(broken_);
  }

  /// The run failed: runs every compensation that is due (a succeeded effect declared with
  /// one and not yet compensated), newest effect first. Returns the effects left
  /// uncompensated (no function for them in this process, or a transient failure).
  CompensationReport compensate();

 private:
  /// Checks that nothing ended the attempt and that `args` can be stored (graph_error).
  void admit(std::string_view name, nlohmann::json& args);
  /// The record of the effect of `ordinal` in the current attempt (its key: key_prefix_ set).
  EffectRecord record_for(std::string_view name, nlohmann::json args, EffectPolicy policy,
                          std::uint32_t ordinal, bool compensable) const;
  /// The record of the next effect (its ordinal and key); its key joins keys_.
  EffectRecord prepare(std::string_view name, nlohmann::json args, EffectPolicy policy,
                       CompensateFn compensate);
  /// The protocol for `rec` (replay, or started record, call, receipt). Safe to call from
  /// several threads at once (the shared bookkeeping is under mu_).
  /// `cache`: the cached effect's (run_cached), else nullptr.
  /// `hash_slot`: where a fan-out's item keeps its record's hash (see note()).
  nlohmann::json execute(EffectRecord rec, const EffectFn& fn, const EffectCache* cache = nullptr,
                         std::string* hash_slot = nullptr);
  void event(EventKind kind, nlohmann::json detail, bool durable);
  /// Logs the events queued by a fan-out's items, in order (the node's thread only).
  void log_queued();
  std::string now() const;
  void replayed(const EffectRecord& r);
  /// Keeps `r`'s hash for the receipts of the attempt's checkpoint: in `slot` (a fan-out's
  /// item's own, no lock) when given.
  void note(const EffectRecord& r, std::string* slot = nullptr);
  void logged(const EffectRecord& r, EffectSource source);
  nlohmann::json dry_run(EffectRecord rec);
  /// Calls `f` (a store write or a failpoint); an exception marks the attempt broken.
  template <class F>
  void infrastructure(F&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard lock(mu_);
      broken_ = std::current_exception();
      over_.store(true);
      throw;
    }
  }

  Store& store_;
  std::string run_id_;
  LeaseToken lease_;
  Clock& clock_;
  EffectHost& host_;
  std::string node_;
  std::uint64_t step_ = 0;
  std::string key_prefix_;
  std::uint32_t next_ordinal_ = 0;
  std::vector<std::string> keys_;
  std::string chain_head_;
  std::map<std::string, std::string, std::less<>> hashes_;  // key -> hash, this attempt's
  std::vector<std::string> replayed_;
  std::optional<reconciliation_required> reconciliation_;
  std::exception_ptr broken_;
  bool dry_ = false;
  bool fresh_ = false;
  FanoutPool* pool_ = nullptr;
  const std::map<std::string, nlohmann::json>* stubs_ = nullptr;
  bool keep_log_ = false;
  std::vector<StepEffect> log_;
  std::optional<effect_refused> refused_;
  std::map<std::string, CompensateFn, std::less<>> compensations_;  // key -> this call's
  /// Guards what the items of a fan-out share: replayed_, hashes_, log_, reconciliation_,
  /// broken_ and queued_ (keys_ and next_ordinal_ are the node's thread's: the items' ordinals are
  /// reserved before they start, their keys listed after; each item makes its own record with
  /// record_for, which only reads).
  mutable std::mutex mu_;
  /// While a fan-out's items run: effects cannot nest, and events wait in queued_ so that the
  /// host (its store log and observers) is called from the node's thread only.
  std::atomic<bool> fanning_out_{false};
  /// Set with broken_ or reconciliation_: the attempt cannot commit (read without mu_ by a
  /// fan-out's items before each starts).
  std::atomic<bool> over_{false};
  struct QueuedEvent {
    EventKind kind;
    nlohmann::json detail;
    bool durable;
  };
  std::vector<QueuedEvent> queued_;
};

}  // namespace trellis::agent::detail
