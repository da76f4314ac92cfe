#pragma once
// Private to src/persist: parsing and field checks shared by the sidecar and journal readers,
// each failure reported as a recovery_error reason and detail.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/error.hpp"

namespace trellis::detail {

/// Deeper JSON is refused before anything recurses over it (dump, destruction).
inline constexpr int max_json_depth = 512;

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
