#pragma once
/// @file
/// The one exception root of trellis. Every error trellis raises derives from
/// `trellis::error` (a `std::runtime_error`), so `catch (const trellis::error&)` catches them
/// all; the subclasses say what went wrong, and `what()` names the object and the reason.

#include <stdexcept>
#include <string>

namespace trellis {

/// Root of every exception trellis throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A computed or signal read itself, directly or through others, while it was being evaluated.
class cycle_error : public error {
 public:
  using error::error;
};

/// A disposed node (or one whose context is gone) was read, written or depended upon.
class disposed_error : public error {
 public:
  using error::error;
};

/// A flush ran more effects than the context's effect budget allows (a feedback loop).
class budget_error : public error {
 public:
  using error::error;
};

}  // namespace trellis
