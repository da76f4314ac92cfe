#pragma once
/// @file
/// `Subscription`: a light, move-only RAII handle on an observer. Destroying it (or `reset()`)
/// stops the observer; it is safe to outlive what it observes.

#include <functional>
#include <utility>

namespace trellis {

/// Owns one observer registration; empty when default-constructed or moved from.
class Subscription {
 public:
  Subscription() noexcept = default;
  explicit Subscription(std::function<void()> cancel) noexcept : cancel_(std::move(cancel)) {}
  Subscription(Subscription&& o) noexcept : cancel_(std::exchange(o.cancel_, nullptr)) {}
  Subscription& operator=(Subscription&& o) noexcept {
    if (this != &o) {
      reset();
      cancel_ = std::exchange(o.cancel_, nullptr);
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { reset(); }

  /// Stops the observer now; idempotent.
  void reset() noexcept {
    if (auto cancel = std::exchange(cancel_, nullptr)) cancel();
  }
  /// True while it owns a registration.
  explicit operator bool() const noexcept { return static_cast<bool>(cancel_); }

 private:
  std::function<void()> cancel_;
};

}  // namespace trellis
