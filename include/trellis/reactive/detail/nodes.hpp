#pragma once
/// @file
/// The node kinds that plug values and callables into the graph: a cell holds a value, a
/// computed (and an eager signal) derives one from a callable, an effect runs a callable for its
/// side effects and keeps the cleanup it returns.

#include <concepts>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "trellis/reactive/detail/lifetime.hpp"

namespace trellis::detail {

template <class>
inline constexpr bool always_false = false;

/// The memo guard: values that compare equal stop propagation; a type without `==` always
/// counts as changed.
template <class T>
bool same_value(const T& a, const T& b) {
  if constexpr (std::equality_comparable<T>)
    return static_cast<bool>(a == b);
  else
    return false;
}

template <class T>
struct CellNode final : Node {
  T value;
  template <class U>
  CellNode(Graph* g, U&& v) : Node(g, 0), value(std::forward<U>(v)) {}
};

template <class T>
struct ValueNode : Node {
  std::optional<T> value;
  using Node::Node;
};

template <class T, class F>
struct ComputedNode final : ValueNode<T> {
  std::optional<F> fn;
  ComputedNode(Graph* g, F f, std::uint32_t flags) : ValueNode<T>(g, flags), fn(std::move(f)) {}

  bool update() override {
    T next = (*fn)();
    if (this->value.has_value()) {
      if (same_value(*this->value, next)) return false;
      *this->value = std::move(next);
    } else {
      this->value.emplace(std::move(next));
    }
    return true;
  }
  void on_dispose() noexcept override {
    fn.reset();
    this->value.reset();
  }
};

template <class F>
struct EffectNode final : Node {
  std::optional<F> fn;
  std::function<void()> cleanup_fn;
  EffectNode(Graph* g, F f) : Node(g, kEffect | kWatching | kDirty), fn(std::move(f)) {}

  bool update() override {
    cleanup();
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>)
      (*fn)();
    else
      cleanup_fn = (*fn)();
    return true;
  }
  void cleanup() override {
    if (!cleanup_fn) return;
    std::function<void()> c = std::move(cleanup_fn);
    cleanup_fn = nullptr;
    graph->call_untracked(c);
  }
  void on_dispose() noexcept override {
    fn.reset();
    cleanup_fn = nullptr;
  }
};

}  // namespace trellis::detail
