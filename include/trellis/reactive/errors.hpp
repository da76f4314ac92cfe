#pragma once
/// @file
/// The reactive layer's errors (codes "reactive.*", listed in docs/errors.md). Each derives
/// from trellis::error (trellis/base/error.hpp); `what()` names the node and the reason.

#include <string_view>

#include "trellis/base/error.hpp"

namespace trellis {

/// A computed or signal read itself, directly or through others, while it was being evaluated.
/// Code "reactive.cycle".
class cycle_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A disposed node (or one whose context is gone) was read, written or depended upon.
/// Code "reactive.disposed".
class disposed_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A flush ran more effects than the context's effect budget allows (a feedback loop).
/// Code "reactive.budget".
class budget_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

}  // namespace trellis
