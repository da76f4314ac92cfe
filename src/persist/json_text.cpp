#include "json_text.hpp"

#include <algorithm>

#include "checksum.hpp"

namespace trellis::detail {

namespace {

using reason = recovery_error::reason;

struct TooDeep {};

bool all_whitespace(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

std::string quoted_key(const char* key) { return std::string("\"") + key + "\""; }

}  // namespace

std::optional<Refusal> parse_json(std::string_view text, nlohmann::json& out) {
  if (all_whitespace(text)) {
    return Refusal{reason::empty, text.empty() ? "empty file" : "only whitespace"};
  }
  // The callback sees every value as it opens; refusing depth here keeps a hostile file from
  // overflowing the stack later in recursive code (dump, comparison).
  const nlohmann::json::parser_callback_t depth_guard =
      [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if (depth > max_json_depth && (event == nlohmann::json::parse_event_t::object_start ||
                                       event == nlohmann::json::parse_event_t::array_start)) {
          throw TooDeep{};
        }
        return true;
      };
  try {
    out = nlohmann::json::parse(text.begin(), text.end(), depth_guard);
  } catch (const TooDeep&) {
    return Refusal{reason::not_json,
                   "JSON nested deeper than " + std::to_string(max_json_depth) + " levels"};
  } catch (const nlohmann::json::parse_error& e) {
    if (e.byte > text.size()) {
      return Refusal{reason::truncated,
                     "truncated: the JSON ends early (" + std::to_string(text.size()) + " bytes)"};
    }
    return Refusal{reason::not_json, "not JSON: syntax error at byte " + std::to_string(e.byte)};
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double's range (1e400): the parser says out_of_range, not parse_error.
    return Refusal{reason::not_json, std::string("not JSON: ") + e.what()};
  }
  return std::nullopt;
}

std::optional<Refusal> check_present(const nlohmann::json& object, const char* key) {
  if (!object.contains(key)) {
    return Refusal{reason::bad_field, quoted_key(key) + " is missing"};
  }
  return std::nullopt;
}

std::optional<Refusal> check_unsigned(const nlohmann::json& object, const char* key) {
  if (auto missing = check_present(object, key)) {
    return missing;
  }
  const nlohmann::json& value = object[key];
  if (!value.is_number_unsigned()) {
    return Refusal{reason::bad_field,
                   quoted_key(key) + " is " +
                       (value.is_number_integer() ? std::string("negative")
                                                  : std::string("a ") + value.type_name()) +
                       ", expected an unsigned integer"};
  }
  return std::nullopt;
}

std::optional<Refusal> check_string(const nlohmann::json& object, const char* key) {
  if (auto missing = check_present(object, key)) {
    return missing;
  }
  const nlohmann::json& value = object[key];
  if (!value.is_string()) {
    return Refusal{reason::bad_field,
                   quoted_key(key) + " is a " + value.type_name() + ", expected a string"};
  }
  return std::nullopt;
}

std::optional<Refusal> take_and_verify_checksum(nlohmann::json& object) {
  if (auto bad = check_string(object, "checksum")) {
    return bad;
  }
  const std::string stated = object["checksum"].get<std::string>();
  if (!is_checksum_text(stated)) {
    return Refusal{reason::bad_checksum,
                   "malformed checksum (expected \"sha256:\" and 64 lower-case hex digits)"};
  }
  object.erase("checksum");
  if (checksum_of(object.dump()) != stated) {
    return Refusal{reason::bad_checksum, "bad checksum: the content does not match " + stated};
  }
  return std::nullopt;
}

}  // namespace trellis::detail
