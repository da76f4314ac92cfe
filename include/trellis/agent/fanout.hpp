#pragma once
/// @file
/// Fan-out of effects: `RunContext::effects` (run_context.hpp) runs one effect per item, up to
/// `concurrency` at a time, each with its own started record and receipt committed as soon as
/// it finishes (effect.hpp's protocol, unchanged). After a crash, the items with a receipt
/// replay it and only the unfinished ones run again. Outcomes come back in input order,
/// whatever the completion order or the number of threads.
///
/// ```cpp
/// std::vector<json> args;  // one per source
/// auto outs = ctx.effects("fetch", std::move(args), EffectPolicy::idempotent,
///                         [&](const EffectCall& call) { return fetch(call.args, call.key); },
///                         {.concurrency = 8, .max_failures = 2});
/// for (const auto& o : outs) if (o.ok()) use(o.result);
/// ```
///
/// Keys: item i is the effect of ordinal `first + i` of the step (first: the ordinal the next
/// effect of the node would have had), so its idempotency key names the item's index, and a
/// rerun of the node gives each item the same key.
///
/// Threads: the calling (node's) thread runs items too, and `concurrency - 1` more threads may:
/// those of RunOptions::fanout_pool when the run has one (a Worker's runs have the worker's:
/// its idle threads; fanout_pool.hpp), else threads started for the fan-out and joined before
/// it returns. `fn` is called from several threads at
/// once when concurrency > 1: it must be safe to call so (each call gets its own EffectCall),
/// and so must the run's Clock (SystemClock and ManualClock are). An item is one effect: `fn`
/// cannot call ctx.effect or ctx.effects (graph_error). Events: an item logs its outcome
/// (effect_completed, effect_failed, effect_reconciliation_required; effect_replayed for
/// observers), not effect_started (its started record is written all the same). They are logged,
/// and given to observers, by the node's thread only, in the order they happened: between the
/// items that thread runs itself, and the rest once the items are done.
///
/// Failure policy: an item whose call throws (or whose stored receipt is a failure) is a failed
/// outcome; once the failures exceed `max_failures` (0: stop at the first failure; nullopt: no
/// limit) or the fraction `max_failure_ratio` of all items, items not started yet are skipped
/// (EffectOutcome::skipped; they get no record). Items in flight finish. The caller decides what
/// the failures mean (a FileGraph foreach fails its node once a policy is exceeded). Items not
/// started when the run's stop token fires (a cancellation, a lost lease) are skipped too. An item
/// whose protocol itself breaks (a store failure, an at_most_once effect to reconcile) makes
/// the whole step fail as for a single effect: no item starts after it, and the fan-out throws
/// it once the items in flight are done (the loop does not commit the attempt).

#include <cstddef>
#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

namespace trellis::agent {

struct FanoutOptions {
  unsigned concurrency = 4;  ///< items at a time (0 counts as 1)
  std::optional<std::size_t> max_failures = 0;
  std::optional<double> max_failure_ratio = std::nullopt;
};

/// What one item of a fan-out gave.
struct EffectOutcome {
  nlohmann::json result;     ///< its result, when ok()
  std::exception_ptr error;  ///< what its call threw (effect_failed, transient_error, ...)
  bool skipped = false;      ///< not started: the failure policy stopped the fan-out first

  bool ok() const noexcept { return !error && !skipped; }
};

}  // namespace trellis::agent
