#pragma once
/// @file
/// The one door from the layers built on the graph (machines, persistence, adapters) into it.
/// `access` reaches the node behind a public handle (handles do not expose it themselves), and
/// a few named operations act on nodes, so that no layer above reads or writes the graph's
/// fields. Together with the graph's own entry points (GraphLock, written(), in_batch(),
/// has_executor(), current_batch(), locked_by_this_thread(), attach()) that is all they use.
/// Every operation here expects the graph's lock to be held (GraphLock).

#include <type_traits>
#include <utility>

#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/detail/handle.hpp"
#include "trellis/reactive/detail/nodes.hpp"
#include "trellis/reactive/effect.hpp"

namespace trellis::detail {

struct access {
  /// The node behind a Cell, CellView, Computed, Signal or Effect (null for an empty Effect).
  template <class Handle>
  static auto* node(const Handle& h) noexcept {
    return h.node();
  }
};

/// The node of `cell`, or disposed_error if it is disposed.
template <class T>
[[gnu::always_inline]] inline CellNode<T>* live_node(const Cell<T>& cell) {
  CellNode<T>* n = access::node(cell);
  if ((n->flags & kDisposed) != 0) [[unlikely]]
    throw_disposed(n);
  return n;
}

/// The current value of a cell.
template <class T>
const T& cell_value(const CellNode<T>* n) noexcept {
  return n->value;
}

/// Writes this cell: stores `v` (a value different from the current one) and tells the graph,
/// which flushes unless a batch is open (in_batch()).
template <class T>
[[gnu::always_inline]] inline void write_cell(CellNode<T>* n, std::type_identity_t<T>&& v) {
  n->value = std::move(v);
  n->graph->written(n);
}

/// Stores `v` (a value different from the current one) without telling the graph, and returns
/// whether the graph must be told (`n->graph->written(n)`): only when something reads the cell.
/// write_cell() split in two, for a caller whose path without readers must stay a leaf.
template <class T>
[[gnu::always_inline]] inline bool store_cell(CellNode<T>* n, std::type_identity_t<T>&& v) {
  n->value = std::move(v);
  return n->subs != nullptr;
}

/// Stores `v` and returns the previous value without telling the graph: for a caller that must
/// tell it (`n->graph->written(n)`) separately, e.g. to keep a propagation error apart.
template <class T>
T exchange_cell_value(CellNode<T>* n, std::type_identity_t<T>&& v) {
  T old = std::move(n->value);
  n->value = std::move(v);
  return old;
}

/// Runs effect `e` at the end of the flush even though nothing it read changed: when the
/// outermost batch ends, or now outside any (on the executor if the context has one).
inline void run_at_flush(const Effect& e) {
  Node* n = access::node(e);
  n->graph->run_at_flush(n);
}

}  // namespace trellis::detail
