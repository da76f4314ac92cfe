#pragma once
/// @file
/// `Signal<T>`: an eager computed. It is evaluated at creation and kept fresh: by the time a
/// write (or the outermost batch) returns, it has been re-evaluated once if an input changed,
/// without anybody reading it. Use it for values that are always wanted (a machine's
/// `state_is`), and Computed for values read on demand.

#include "trellis/reactive/detail/derived.hpp"

namespace trellis {

/// An eager derived value; a cheap copyable, read-only handle. Made by `ctx.signal(f)`.
template <class T>
class Signal : public detail::DerivedHandle<T> {
 public:
  using detail::DerivedHandle<T>::DerivedHandle;

  /// Not available: a signal derives its value; write the cells it reads instead.
  template <class U = void>
  void set(auto&&) const {
    static_assert(detail::always_false<U>,
                  "trellis::Signal is read-only: it derives its value from its callable; "
                  "write the Cell(s) it reads instead");
  }
};

}  // namespace trellis
