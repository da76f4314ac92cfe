#pragma once
// Private to the trellis library (the durable-I/O toolkit): the JSON half of reading a
// checksummed line log or a sidecar (parsing with a depth limit, field checks, the checksum
// member), shared by persist/ and the agent's stores; each failure is a recovery_error reason
// and detail that the caller turns into its own error type.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/persist/errors.hpp"

namespace trellis::detail {

// trellis::max_json_depth (base/error.hpp): deeper JSON is refused before anything recurses over
// it (dump, destruction), by the readers here and by check_writable before a write.
using trellis::max_json_depth;

/// Throws unwritable_value (naming `object` and the member's JSON pointer) when `document`
/// holds a NaN or infinite number, or a container nested deeper than max_json_depth counted
/// as the readers count it (the document itself at depth 0). Call it on the whole document a
/// writer is about to dump, before anything is written or acknowledged.
void check_writable(const nlohmann::json& document, const std::string& object);

/// check_writable for the member `key` of a top-level object, without building that object:
/// `value` is walked at depth 1 and a refusal names "/<key>/...". For writers whose other
/// top-level members are scalars they wrote themselves (the sidecar, a journal line).
void check_writable_member(const nlohmann::json& value, std::string_view key,
                           const std::string& object);

/// True when `text` is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
/// U+10FFFF), the text nlohmann dumps without throwing.
bool valid_utf8(std::string_view text) noexcept;

/// True when every string and member name in `value` is valid UTF-8 (dump would not throw).
/// Recursive: call it on a value check_writable accepted (its depth is bounded).
bool valid_utf8_json(const nlohmann::json& value) noexcept;

/// A refusal: the reason code and the human detail, before the file name is attached.
struct Refusal {
  recovery_error::reason why;
  std::string detail;
};

/// Parses `text` as one JSON value, or returns why it is not one (empty, truncated, not
/// JSON, nested too deep).
std::optional<Refusal> parse_json(std::string_view text, nlohmann::json& out);

/// "\"epoch\" is missing" / "\"epoch\" is a string, expected an unsigned integer", or
/// nullopt when the member has the wanted type.
std::optional<Refusal> check_unsigned(const nlohmann::json& object, const char* key);
std::optional<Refusal> check_string(const nlohmann::json& object, const char* key);
std::optional<Refusal> check_present(const nlohmann::json& object, const char* key);

/// Verifies and removes the "checksum" member of `object`: it must be "sha256:<hex>" of the
/// canonical dump of the remaining members.
std::optional<Refusal> take_and_verify_checksum(nlohmann::json& object);

}  // namespace trellis::detail
