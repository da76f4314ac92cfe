#pragma once
/// @file
/// The machine layer's errors (codes "machine.*", listed in docs/errors.md). Each derives from
/// trellis::error (trellis/base/error.hpp); `what()` names the table row or the phases and the
/// reason.

#include <string_view>

#include "trellis/base/error.hpp"

namespace trellis {

/// A transition table that cannot be used as declared: a row started but never ended with
/// `.to()` or `.stay()` (thrown when the table is first used), or, from `check()`, every
/// problem `validate()` found, one per line. Code "machine.table".
class table_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override { return "machine.table"; }
};

/// A row's update returned a state whose phase is not the row's target phase (or, for a
/// `stay()` row, not the phase it left). Thrown by the send; the state is unchanged. Code
/// "machine.phase".
class phase_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override { return "machine.phase"; }
};

}  // namespace trellis
