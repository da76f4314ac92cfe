#pragma once
/// @file
/// The factory and batch API shared by every context kind. A context kind differs from another
/// only in the execution policy it gives its graph (a lock, an effect scheduler): the algorithm
/// is the same one.

#include <cstddef>
#include <type_traits>
#include <utility>

#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/computed.hpp"
#include "trellis/reactive/effect.hpp"
#include "trellis/reactive/signal.hpp"

namespace trellis::detail {

/// Creates an effect on `g` and runs (or schedules) its first run.
template <class F>
[[nodiscard("trellis: destroying the returned Effect stops the effect")]] Effect make_effect(
    Graph* g, F f) {
  if constexpr (!std::is_invocable_v<F&>) {
    static_assert(always_false<F>,
                  "trellis: ctx.effect(f) needs a callable taking no arguments, e.g. "
                  "ctx.effect([&] { log(a.get()); })");
    return Effect{};
  } else {
    using R = std::invoke_result_t<F&>;
    static_assert(std::is_void_v<R> || std::is_invocable_v<std::add_lvalue_reference_t<R>>,
                  "trellis: an effect returns nothing, or a cleanup callable taking no arguments");
    auto* n = new EffectNode<F>(g, std::move(f));
    Effect e(adopt, n);
    GraphLock lock(g);
    g->adopt(n);
    try {
      g->start_watcher(n);
    } catch (...) {
      e.dispose();  // the first run failed: the effect does not exist
      throw;
    }
    return e;
  }
}

class BasicContext {
 public:
  BasicContext(const BasicContext&) = delete;
  BasicContext& operator=(const BasicContext&) = delete;

  /// A writable cell holding `initial`.
  template <class T>
  Cell<std::decay_t<T>> cell(T&& initial) {
    using V = std::decay_t<T>;
    static_assert(std::is_copy_constructible_v<V>, "trellis: a cell's value must be copyable");
    auto* n = new CellNode<V>(graph_, std::forward<T>(initial));
    GraphLock lock(graph_);
    graph_->adopt(n);
    return Cell<V>(adopt, n);
  }

  /// A lazy, memoized value computed by `f()`; reads inside `f` are tracked.
  template <class F>
  auto computed(F f) {
    if constexpr (!std::is_invocable_v<F&>) {
      static_assert(always_false<F>,
                    "trellis: ctx.computed(f) needs a callable taking no arguments, e.g. "
                    "ctx.computed([&] { return a.get() * 2; })");
    } else {
      using R = std::remove_cvref_t<std::invoke_result_t<F&>>;
      static_assert(!std::is_void_v<R>,
                    "trellis: a computed must return a value; use ctx.effect(f) for side effects");
      auto* n = new ComputedNode<R, F>(graph_, std::move(f), kComputed | kDirty);
      GraphLock lock(graph_);
      graph_->adopt(n);
      return Computed<R>(adopt, n);
    }
  }

  /// An eager computed: evaluated now and kept fresh after every write or outermost batch.
  template <class F>
  auto signal(F f) {
    if constexpr (!std::is_invocable_v<F&>) {
      static_assert(always_false<F>,
                    "trellis: ctx.signal(f) needs a callable taking no arguments, e.g. "
                    "ctx.signal([&] { return a.get() > 0; })");
    } else {
      using R = std::remove_cvref_t<std::invoke_result_t<F&>>;
      static_assert(!std::is_void_v<R>,
                    "trellis: a signal must return a value; use ctx.effect(f) for side effects");
      auto* n = new ComputedNode<R, F>(graph_, std::move(f), kComputed | kWatching | kDirty);
      Signal<R> s(adopt, n);
      GraphLock lock(graph_);
      graph_->adopt(n);
      try {
        graph_->start_watcher(n);
      } catch (...) {
        s.dispose();
        throw;
      }
      return s;
    }
  }

  /// An effect running `f()` now and again after every change of what it read, for as long as
  /// the returned Effect lives.
  template <class F>
  [[nodiscard(
      "trellis: keep the returned Effect (auto e = ctx.effect(...)): destroying it stops the "
      "effect, so a discarded one runs once and never again")]] Effect
  effect(F f) {
    return make_effect(graph_, std::move(f));
  }

  /// Runs `f()` as one batch: every read inside sees the writes at once, effects run once at
  /// the outermost exit. Returns what `f` returns. In a thread-safe context the whole batch
  /// holds the context's lock, so other threads see all of its writes or none.
  template <class F>
  decltype(auto) batch(F&& f) {
    static_assert(std::is_invocable_v<F&&>,
                  "trellis: ctx.batch(f) needs a callable taking no arguments");
    Graph* g = graph_;
    GraphLock lock(g);
    g->begin_batch();
    using R = std::invoke_result_t<F&&>;
    if constexpr (std::is_void_v<R>) {
      try {
        std::forward<F>(f)();
      } catch (...) {
        g->end_batch_after_throw();
        throw;
      }
      g->end_batch();
    } else {
      R result = [&]() -> R {
        try {
          return std::forward<F>(f)();
        } catch (...) {
          g->end_batch_after_throw();
          throw;
        }
      }();
      g->end_batch();
      return result;
    }
  }

  /// Effect runs allowed in one flush before it stops with budget_error (default 1,000,000).
  void set_effect_budget(std::size_t runs) {
    GraphLock lock(graph_);
    graph_->set_effect_budget(runs);
  }
  std::size_t effect_budget() const {
    GraphLock lock(graph_);
    return graph_->effect_budget();
  }
  /// Live (created and not disposed) nodes of this context.
  std::size_t node_count() const {
    GraphLock lock(graph_);
    return graph_->live_nodes();
  }

  /// The graph behind this context (for the layers built on it).
  friend Graph* graph_of(const BasicContext& c) noexcept { return c.graph_; }

 protected:
  explicit BasicContext(bool thread_safe) : graph_(new Graph(thread_safe)) {}
  ~BasicContext() {
    graph_->shutdown();
    graph_->release();
  }

  Graph* graph_;
};

}  // namespace trellis::detail
