#pragma once
/// @file
/// `CellView<T>`: a read-only handle on a cell, for APIs that expose state they alone may write
/// (a state machine's `state_cell()`). Reads are tracked exactly like the cell's own.

#include <utility>

#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/detail/access.hpp"

namespace trellis {

/// Read-only view of a Cell<T>; a cheap copyable handle.
template <class T>
class CellView {
 public:
  using value_type = T;

  explicit CellView(Cell<T> cell) noexcept : cell_(std::move(cell)) {}

  /// The current value (a copy); tracked inside a computed, signal or effect.
  T get() const { return cell_.get(); }
  /// Calls `f(const T&)` on the current value without copying it (tracked like get()).
  template <class F>
  decltype(auto) read(F&& f) const {
    return cell_.read(std::forward<F>(f));
  }
  bool disposed() const { return cell_.disposed(); }

  /// Not available: this view is read-only; change the value through its owner.
  template <class U = void>
  void set(auto&&) const {
    static_assert(detail::always_false<U>,
                  "trellis::CellView is read-only: change the value through its owner (for a "
                  "state machine, send() an event)");
  }

  friend bool operator==(const CellView& a, const CellView& b) noexcept {
    return a.cell_ == b.cell_;
  }

 private:
  friend struct detail::access;
  detail::CellNode<T>* node() const noexcept { return detail::access::node(cell_); }

  Cell<T> cell_;
};

}  // namespace trellis
