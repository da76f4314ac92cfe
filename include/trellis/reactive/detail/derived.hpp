#pragma once
/// @file
/// What Computed and Signal share: a read-only handle on a value derived by a callable.

#include <utility>

#include "trellis/reactive/detail/handle.hpp"
#include "trellis/reactive/detail/nodes.hpp"

namespace trellis::detail {

template <class T>
class DerivedHandle {
 public:
  using value_type = T;

  DerivedHandle(adopt_t, ValueNode<T>* n) noexcept : h_(adopt, n) {}

  /// The up-to-date value (a copy), evaluated first if an input changed; tracked when called
  /// inside a computed, signal or effect.
  T get() const {
    ValueNode<T>* n = h_.node();
    Graph* g = n->graph;
    if (g->shared() ||
        (n->flags & (kDirty | kPending | kEvaluating | kDisposed | kFailed | kRecheck)) != 0)
        [[unlikely]]
      return get_slow(g, n);
    if (g->active_sub != nullptr) g->track(n);
    return *n->value;
  }

  /// Calls `f(const T&)` on the up-to-date value without copying it (tracked like get()).
  template <class F>
  decltype(auto) read(F&& f) const {
    ValueNode<T>* n = h_.node();
    Graph* g = n->graph;
    GraphLock lock(g);
    return std::forward<F>(f)(std::as_const(fresh(g, n)));
  }

  /// Detaches it from the graph and drops its callable; idempotent.
  void dispose() const { dispose_node(h_.node()); }
  bool disposed() const { return node_disposed(h_.node()); }

  friend bool operator==(const DerivedHandle& a, const DerivedHandle& b) noexcept {
    return a.h_ == b.h_;
  }

 private:
  friend struct access;
  ValueNode<T>* node() const noexcept { return h_.node(); }

  [[gnu::noinline]] static T get_slow(Graph* g, ValueNode<T>* n) {
    GraphLock lock(g);
    return fresh(g, n);
  }
  static const T& fresh(Graph* g, ValueNode<T>* n) {
    g->refresh(n);
    if (g->active_sub != nullptr) g->track(n);
    return *n->value;
  }

  NodeHandle<ValueNode<T>> h_;
};

}  // namespace trellis::detail
