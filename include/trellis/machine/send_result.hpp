#pragma once
/// @file
/// `SendResult`: what a state machine did with an event.

#include <cstdint>
#include <string_view>

namespace trellis {

/// Rejected (the transition function returned nullopt: nothing changed), Unchanged (accepted,
/// same state: nothing observed) or Transitioned. Converts explicitly to bool: accepted.
class SendResult {
 public:
  enum Value : std::uint8_t { Rejected, Unchanged, Transitioned };

  constexpr SendResult(Value v) noexcept : v_(v) {}  // NOLINT: implicit from its enumerators

  /// True unless the event was rejected.
  constexpr explicit operator bool() const noexcept { return v_ != Rejected; }
  constexpr Value value() const noexcept { return v_; }
  friend constexpr bool operator==(SendResult, SendResult) noexcept = default;

  constexpr std::string_view name() const noexcept {
    switch (v_) {
      case Rejected:
        return "Rejected";
      case Unchanged:
        return "Unchanged";
      case Transitioned:
        return "Transitioned";
    }
    return "?";
  }

 private:
  Value v_;
};

}  // namespace trellis
