#pragma once
/// @file
/// The one exception root of trellis, and the errors every layer shares. Every error trellis
/// raises derives from `trellis::error` (a `std::runtime_error`), so
/// `catch (const trellis::error&)` catches them all; the subclasses say what went wrong,
/// `what()` names the object and the reason (for people), and `id()` is a stable code (for
/// programs): "<layer>.<kind>", e.g. "reactive.cycle" or "persist.recovery.bad_checksum".
/// Codes never change meaning and are never reused; docs/errors.md lists every one. Each
/// layer declares its own errors in `trellis/<layer>/errors.hpp`.

#include <stdexcept>
#include <string>
#include <string_view>

namespace trellis {

/// Root of every exception trellis throws. Thrown as itself only where no subclass fits
/// (`id()` "base.error"); a user's subclass keeps the code of the class it derives from
/// unless it overrides `id()`.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  /// The stable code of this error ("base.error" here; each subclass names its own).
  virtual std::string_view id() const noexcept;
};

/// An option or argument given to a trellis constructor or function that it cannot honour: an
/// empty path, a file mode that lets others write. `what()` names the object and the reason.
/// Code "base.invalid_option".
class invalid_option : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A failpoint name that no linked layer registered (a misspelt failpoint must not silently
/// test nothing). `what()` reads "trellis: unknown failpoint '<name>' (known failpoints: ...)".
/// Code "base.unknown_failpoint".
class unknown_failpoint : public invalid_option {
 public:
  using invalid_option::invalid_option;
  std::string_view id() const noexcept override;
};

/// A value was about to be persisted that JSON text cannot carry back as it is: a NaN or
/// infinite number (JSON writes them as `null`), or nesting deeper than the readers accept
/// (`max_json_depth`). Raised before anything is written or acknowledged, so nothing is lost.
/// `what()` reads "trellis: cannot write <object>: <member> <reason>; nothing was written".
/// Code "base.unwritable_value".
class unwritable_value : public error {
 public:
  unwritable_value(std::string object, std::string member, std::string reason);

  std::string_view id() const noexcept override;

  /// What was being written ("the state of sidecar '/x/s.json'", "checkpoint 3 of run 'r'").
  const std::string& object() const noexcept { return object_; }
  /// The offending member as a JSON pointer into the written document ("/state/scores/2"; ""
  /// for the document itself).
  const std::string& member() const noexcept { return member_; }
  /// "is NaN", "is +Inf", "is -Inf" or "is nested deeper than 512 levels".
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string object_;
  std::string member_;
  std::string reason_;
};

/// The deepest nesting of arrays and objects trellis writes and reads back: a container inside
/// more than this many others is refused by every reader and, before writing, by every writer.
inline constexpr int max_json_depth = 512;

}  // namespace trellis
