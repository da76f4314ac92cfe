// The persist layer's error codes and messages; anchors the classes' vtables in the library.

#include "trellis/persist/errors.hpp"

#include <utility>

namespace trellis {

namespace {

// Appends rather than `"'" + s + "'"`: GCC 12 at -O2 raises a false -Wrestrict on the latter.
std::string quoted(const std::filesystem::path& file) {
  std::string text;
  text.reserve(file.native().size() + 2);
  text += '\'';
  text += file.native();
  text += '\'';
  return text;
}

std::string recovery_message(const std::filesystem::path& file, const std::string& detail) {
  return "trellis: cannot recover from " + quoted(file) + ": " + detail;
}

std::string locked_message(const std::filesystem::path& file, std::optional<pid_t> holder) {
  std::string text = "trellis: sidecar " + quoted(file) + " is locked by another owner ";
  text += holder ? "(pid " + std::to_string(*holder) + ")" : std::string("(holder unknown)");
  return text;
}

std::string persist_message(const std::filesystem::path& file, const std::string& operation,
                            std::error_code code) {
  std::string text = "trellis: cannot persist " + quoted(file) + ": " + operation;
  if (code) {
    text += ": " + code.message();
  }
  return text;
}

}  // namespace

recovery_error::recovery_error(std::filesystem::path file, reason why, std::string detail)
    : error(recovery_message(file, detail)),
      path_(std::move(file)),
      why_(why),
      detail_(std::move(detail)) {}

// One literal per reason, so id() and name() share the spelling and return static storage.
#define TRELLIS_RECOVERY_REASONS(X) \
  X(unreadable)                     \
  X(not_a_file)                     \
  X(empty)                          \
  X(truncated)                      \
  X(not_json)                       \
  X(not_an_object)                  \
  X(bad_field)                      \
  X(bad_checksum)                   \
  X(foreign_format)                 \
  X(future_version)                 \
  X(foreign_machine)                \
  X(bad_state)                      \
  X(future_schema)                  \
  X(bad_sequence)                   \
  X(wrong_kind)                     \
  X(unknown_state)

std::string_view recovery_error::name(reason why) noexcept {
  switch (why) {
#define TRELLIS_RECOVERY_NAME(r) \
  case reason::r:                \
    return #r;
    TRELLIS_RECOVERY_REASONS(TRELLIS_RECOVERY_NAME)
#undef TRELLIS_RECOVERY_NAME
  }
  return "?";
}

std::string_view recovery_error::id() const noexcept {
  switch (why_) {
#define TRELLIS_RECOVERY_ID(r) \
  case reason::r:              \
    return "persist.recovery." #r;
    TRELLIS_RECOVERY_REASONS(TRELLIS_RECOVERY_ID)
#undef TRELLIS_RECOVERY_ID
  }
  return "persist.recovery";
}

#undef TRELLIS_RECOVERY_REASONS

sidecar_locked::sidecar_locked(std::filesystem::path sidecar, std::optional<pid_t> holder)
    : error(locked_message(sidecar, holder)), path_(std::move(sidecar)), holder_(holder) {}

std::string_view sidecar_locked::id() const noexcept { return "persist.sidecar_locked"; }

persist_error::persist_error(std::filesystem::path file, std::string operation,
                             std::error_code code)
    : error(persist_message(file, operation, code)),
      path_(std::move(file)),
      operation_(std::move(operation)),
      code_(code) {}

std::string_view persist_error::id() const noexcept { return "persist.write_failed"; }

std::string_view persist_outcome_unknown::id() const noexcept { return "persist.outcome_unknown"; }

}  // namespace trellis
