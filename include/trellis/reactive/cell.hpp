#pragma once
/// @file
/// `Cell<T>`: a writable value in the graph. Reading it inside a computed, signal or effect
/// makes that reader depend on it; writing a different value invalidates the readers.

#include <utility>

#include "trellis/reactive/detail/handle.hpp"
#include "trellis/reactive/detail/nodes.hpp"

namespace trellis {

/// A writable value; a cheap copyable handle (copies refer to the same cell). Made by
/// `ctx.cell(v)`; the context owns the cell until `dispose()` or the context's end.
template <class T>
class Cell {
 public:
  using value_type = T;

  Cell(detail::adopt_t, detail::CellNode<T>* n) noexcept : h_(detail::adopt, n) {}

  /// The current value (a copy); tracked when called inside a computed, signal or effect.
  T get() const {
    detail::CellNode<T>* n = h_.node();
    detail::Graph* g = n->graph;
    if (g->shared() || (n->flags & detail::kDisposed) != 0) [[unlikely]]
      return get_slow(g, n);
    if (g->active_sub != nullptr) g->track(n);
    return n->value;
  }

  /// Calls `f(const T&)` on the current value without copying it (tracked like get()); in a
  /// thread-safe context `f` runs under the context's lock.
  template <class F>
  decltype(auto) read(F&& f) const {
    detail::CellNode<T>* n = h_.node();
    detail::Graph* g = n->graph;
    detail::GraphLock lock(g);
    return std::forward<F>(f)(std::as_const(read_ref(g, n)));
  }

  /// Stores `v`; a value equal (`==`) to the current one changes nothing and runs nothing.
  void set(T v) const {
    detail::CellNode<T>* n = h_.node();
    detail::Graph* g = n->graph;
    detail::GraphLock lock(g);
    if ((n->flags & detail::kDisposed) != 0) [[unlikely]]
      detail::throw_disposed(n);
    if (detail::same_value(n->value, v)) return;
    n->value = std::move(v);
    g->written(n);
  }

  /// Stores `f(current)`, atomically in a thread-safe context; the read is not tracked.
  template <class F>
  void update(F&& f) const {
    detail::CellNode<T>* n = h_.node();
    detail::Graph* g = n->graph;
    detail::GraphLock lock(g);
    if ((n->flags & detail::kDisposed) != 0) [[unlikely]]
      detail::throw_disposed(n);
    T next = std::forward<F>(f)(std::as_const(n->value));
    if (detail::same_value(n->value, next)) return;
    n->value = std::move(next);
    g->written(n);
  }

  /// Detaches the cell from the graph; readers that depended on it fail when next evaluated.
  void dispose() const { detail::dispose_node(h_.node()); }
  bool disposed() const { return detail::node_disposed(h_.node()); }

  friend bool operator==(const Cell& a, const Cell& b) noexcept { return a.h_ == b.h_; }

 private:
  friend struct detail::access;
  detail::CellNode<T>* node() const noexcept { return h_.node(); }

  static const T& read_ref(detail::Graph* g, detail::CellNode<T>* n) {
    if ((n->flags & detail::kDisposed) != 0) [[unlikely]]
      detail::throw_disposed(n);
    if (g->active_sub != nullptr) g->track(n);
    return n->value;
  }
  [[gnu::noinline]] static T get_slow(detail::Graph* g, detail::CellNode<T>* n) {
    detail::GraphLock lock(g);
    return read_ref(g, n);
  }

  detail::NodeHandle<detail::CellNode<T>> h_;
};

}  // namespace trellis
