#pragma once
/// @file
/// `Effect`: the owner of a side effect that re-runs when what it read changes. Move-only
/// RAII: destroying it (or `dispose()`) stops the effect and runs its last cleanup.

#include <utility>

#include "trellis/reactive/detail/handle.hpp"

namespace trellis {

/// A running effect. Made by `ctx.effect(f)`; `f` may return a callable cleanup, run before
/// the next run and at dispose. A default-constructed Effect owns nothing.
class Effect {
 public:
  Effect() noexcept = default;
  Effect(detail::adopt_t, detail::Node* n) noexcept : n_(n) {}
  Effect(Effect&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  Effect& operator=(Effect&& o) noexcept {
    if (this != &o) {
      reset();
      n_ = std::exchange(o.n_, nullptr);
    }
    return *this;
  }
  Effect(const Effect&) = delete;
  Effect& operator=(const Effect&) = delete;
  ~Effect() { reset(); }

  /// Stops the effect and runs its cleanup (whose exception, if any, is rethrown); idempotent.
  void dispose() {
    if (n_ != nullptr) detail::dispose_node(n_);
  }
  /// True until disposed (or until the context is destroyed).
  bool active() const { return n_ != nullptr && !detail::node_disposed(n_); }

 private:
  friend struct detail::access;
  detail::Node* node() const noexcept { return n_; }  // null when empty

  void reset() noexcept {
    if (n_ == nullptr) return;
    try {
      dispose();
    } catch (...) {  // a destructor cannot report a throwing cleanup; call dispose() to see it
    }
    n_->release();
    n_ = nullptr;
  }

  detail::Node* n_ = nullptr;
};

}  // namespace trellis
