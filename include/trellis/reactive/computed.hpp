#pragma once
/// @file
/// `Computed<T>`: a lazy, memoized value derived from whatever its callable reads. It is not
/// evaluated until read, evaluated at most once per change of its inputs, and an evaluation
/// that yields an equal (`==`) value stops propagation downstream. Reading it while it is being
/// evaluated (from its own callable, through computeds that depend on it, or from a signal or
/// effect that a write in its callable runs) raises `cycle_error`; nothing is cached, and the
/// next read after the cycle is gone sees consistent values.

#include "trellis/reactive/detail/derived.hpp"

namespace trellis {

/// A lazy derived value; a cheap copyable, read-only handle. Made by `ctx.computed(f)`.
template <class T>
class Computed : public detail::DerivedHandle<T> {
 public:
  using detail::DerivedHandle<T>::DerivedHandle;

  /// Not available: a computed derives its value; write the cells it reads instead.
  template <class U = void>
  void set(auto&&) const {
    static_assert(detail::always_false<U>,
                  "trellis::Computed is read-only: it derives its value from its callable; "
                  "write the Cell(s) it reads instead");
  }
};

}  // namespace trellis
