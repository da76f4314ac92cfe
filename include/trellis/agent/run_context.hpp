#pragma once
/// @file
/// `RunContext`: what a node (and a hook) knows about the run it is part of.

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/cache_entry.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/fanout.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/run_options.hpp"

namespace trellis::agent {

class Store;  // store.hpp

namespace detail {
class EffectRunner;
}  // namespace detail

class RunContext {
 public:
  /// What the run loop knows of the step when it runs a node (tests of a single node build
  /// one by hand: `RunContext ctx({.run_id = "r", .node = "n", .clock = &clock})`).
  struct Info {
    std::string run_id;
    std::string node;
    std::uint64_t step = 0;
    std::uint32_t attempt = 0;
    PermissionMode mode = PermissionMode::Default;
    std::stop_token stop = {};
    std::optional<Resume> resume = std::nullopt;
    Clock* clock = nullptr;  ///< nullptr: SystemClock::instance()
    /// Internal: the run call's effect runner (nullptr: effect() throws graph_error).
    detail::EffectRunner* effects = nullptr;
    /// The run call's store and options, for the child runs of subgraph.hpp (nullptr:
    /// subgraph() throws graph_error).
    Store* store = nullptr;
    const RunOptions* options = nullptr;
  };

  explicit RunContext(Info info)
      : run_id_(std::move(info.run_id)),
        node_(std::move(info.node)),
        step_(info.step),
        attempt_(info.attempt),
        mode_(info.mode),
        stop_(std::move(info.stop)),
        resume_(std::move(info.resume)),
        clock_(info.clock != nullptr ? info.clock : &SystemClock::instance()),
        effects_(info.effects),
        store_(info.store),
        options_(info.options) {}
  /// The same, argument by argument (the form before Info).
  RunContext(std::string run_id, std::string node, std::uint64_t step, std::uint32_t attempt,
             PermissionMode mode, std::stop_token stop, std::optional<Resume> resume, Clock& clock,
             detail::EffectRunner* effects = nullptr)
      : RunContext(Info{std::move(run_id), std::move(node), step, attempt, mode, std::move(stop),
                        std::move(resume), &clock, effects}) {}

  std::string_view run_id() const noexcept { return run_id_; }
  /// The node being run.
  std::string_view node() const noexcept { return node_; }
  /// Steps committed before this one (0 for the first step of a run).
  std::uint64_t step() const noexcept { return step_; }
  /// Failed tries of this node before this one (transient errors).
  std::uint32_t attempt() const noexcept { return attempt_; }
  /// The permission mode when the node started.
  PermissionMode mode() const noexcept { return mode_; }
  /// Cancellation, or the run's lease lost to another worker: a node doing long work should
  /// check it and return early.
  std::stop_token stop_token() const noexcept { return stop_; }
  bool stop_requested() const noexcept { return stop_.stop_requested(); }
  /// The decision this node resumes with (after an Interrupt), for this run of it only.
  const std::optional<Resume>& resume() const noexcept { return resume_; }
  bool approved() const noexcept {
    return resume_.has_value() && std::holds_alternative<Approve>(*resume_);
  }
  Clock& clock() const noexcept { return *clock_; }
  /// The run call's store and options (nullptr outside a run call): what a child run
  /// (subgraph.hpp) is advanced with.
  Store* store() const noexcept { return store_; }
  const RunOptions* options() const noexcept { return options_; }

  /// Runs the side effect `fn` once per run (see effect.hpp): with its idempotency key, a
  /// started record before and a receipt after, the stored result on replay. `fn` takes an
  /// EffectCall and returns a value convertible to JSON (or nothing: null is stored).
  template <class F>
  nlohmann::json effect(std::string_view name, nlohmann::json args, EffectPolicy policy, F&& fn) {
    return run_effect(name, std::move(args), policy, wrap(std::forward<F>(fn)), {});
  }
  /// One effect named `name` per element of `args`, up to `options.concurrency` at a time,
  /// each recorded as soon as it finishes; outcomes in input order (fanout.hpp). `fn` may be
  /// called from several threads at once.
  template <class F>
  std::vector<EffectOutcome> effects(std::string_view name, std::vector<nlohmann::json> args,
                                     EffectPolicy policy, F&& fn, FanoutOptions options = {}) {
    return run_effects(name, std::move(args), policy, wrap(std::forward<F>(fn)), options);
  }
  /// The same, cached (cache_entry.hpp): when the store holds a cache entry under
  /// `cache.key`, its result is the effect's receipt (the record says `cached_from`) and `fn`
  /// is not called; otherwise the effect runs as above and a successful result is put in the
  /// cache. Only an idempotent effect may be cached (graph_error otherwise).
  template <class F>
  nlohmann::json effect(std::string_view name, nlohmann::json args, EffectPolicy policy, F&& fn,
                        const EffectCache& cache) {
    return run_cached_effect(name, std::move(args), policy, wrap(std::forward<F>(fn)), cache);
  }
  /// The same, with a compensation: when the run fails after this effect succeeded,
  /// `compensate(call, result)` undoes it, once, as an effect of its own.
  template <class F>
  nlohmann::json effect(std::string_view name, nlohmann::json args, EffectPolicy policy, F&& fn,
                        CompensateFn compensate) {
    return run_effect(name, std::move(args), policy, wrap(std::forward<F>(fn)),
                      std::move(compensate));
  }

 private:
  std::string run_id_;
  std::string node_;
  std::uint64_t step_;
  std::uint32_t attempt_;
  PermissionMode mode_;
  std::stop_token stop_;
  std::optional<Resume> resume_;
  Clock* clock_;
  detail::EffectRunner* effects_;
  Store* store_;
  const RunOptions* options_;

  nlohmann::json run_effect(std::string_view name, nlohmann::json args, EffectPolicy policy,
                            EffectFn fn, CompensateFn compensate);
  nlohmann::json run_cached_effect(std::string_view name, nlohmann::json args, EffectPolicy policy,
                                   EffectFn fn, const EffectCache& cache);
  std::vector<EffectOutcome> run_effects(std::string_view name, std::vector<nlohmann::json> args,
                                         EffectPolicy policy, EffectFn fn,
                                         const FanoutOptions& options);
  template <class F>
  static EffectFn wrap(F&& fn) {
    using R = std::invoke_result_t<F&, const EffectCall&>;
    if constexpr (std::is_void_v<R>) {
      return [f = std::forward<F>(fn)](const EffectCall& call) mutable {
        f(call);
        return nlohmann::json();
      };
    } else {
      return [f = std::forward<F>(fn)](const EffectCall& call) mutable {
        return nlohmann::json(f(call));
      };
    }
  }
};

}  // namespace trellis::agent
