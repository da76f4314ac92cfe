#pragma once
/// @file
/// `untracked(f)`: run `f` so that its reads create no dependency for the computation that is
/// running on this thread (if any).

#include <utility>

#include "trellis/reactive/detail/graph.hpp"

namespace trellis {

/// Calls `f()` with dependency tracking suspended and returns its result.
template <class F>
decltype(auto) untracked(F&& f) {
  detail::UntrackScope scope;
  return std::forward<F>(f)();
}

}  // namespace trellis
