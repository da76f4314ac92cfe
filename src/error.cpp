// Anchors the exception classes' vtables in the library and formats the persist/ messages.

#include "trellis/error.hpp"

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

std::string_view recovery_error::name(reason why) noexcept {
  switch (why) {
    case reason::unreadable:
      return "unreadable";
    case reason::not_a_file:
      return "not_a_file";
    case reason::empty:
      return "empty";
    case reason::truncated:
      return "truncated";
    case reason::not_json:
      return "not_json";
    case reason::not_an_object:
      return "not_an_object";
    case reason::bad_field:
      return "bad_field";
    case reason::bad_checksum:
      return "bad_checksum";
    case reason::foreign_format:
      return "foreign_format";
    case reason::future_version:
      return "future_version";
    case reason::foreign_machine:
      return "foreign_machine";
    case reason::bad_state:
      return "bad_state";
    case reason::future_schema:
      return "future_schema";
    case reason::bad_sequence:
      return "bad_sequence";
  }
  return "?";
}

sidecar_locked::sidecar_locked(std::filesystem::path sidecar, std::optional<pid_t> holder)
    : error(locked_message(sidecar, holder)), path_(std::move(sidecar)), holder_(holder) {}

persist_error::persist_error(std::filesystem::path file, std::string operation,
                             std::error_code code)
    : error(persist_message(file, operation, code)),
      path_(std::move(file)),
      operation_(std::move(operation)),
      code_(code) {}

unwritable_value::unwritable_value(std::string object, std::string member, std::string reason)
    : error("trellis: cannot write " + object + ": " +
            (member.empty() ? std::string("the value") : "member " + member) + " " + reason +
            "; nothing was written"),
      object_(std::move(object)),
      member_(std::move(member)),
      reason_(std::move(reason)) {}

}  // namespace trellis
