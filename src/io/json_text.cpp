#include <trellis/io/json_text.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include <trellis/io/checksum.hpp>

namespace trellis::detail {

namespace {

using reason = recovery_error::reason;

struct TooDeep {};

bool all_whitespace(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

std::string quoted_key(const char* key) { return std::string("\"") + key + "\""; }

// RFC 6901: '~' is written "~0" and '/' "~1".
std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Returns the reason a value cannot be written, or an empty string. The walk builds no path on
// the way down (a write of a valid state pays only the visit); on a refusal each frame puts
// its member's token in front of `pointer` as the recursion unwinds. The depth bound keeps the
// recursion itself at most max_json_depth + 1 frames deep.
std::string unwritable(const nlohmann::json& v, int depth, std::string& pointer) {
  switch (v.type()) {
    case nlohmann::json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) return "is NaN";
      if (std::isinf(d)) return d > 0 ? "is +Inf" : "is -Inf";
      return {};
    }
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::array: {
      if (depth > max_json_depth) {
        return "is nested deeper than " + std::to_string(max_json_depth) + " levels";
      }
      if (v.is_object()) {
        for (const auto& [key, child] : v.items()) {
          std::string why = unwritable(child, depth + 1, pointer);
          if (!why.empty()) {
            pointer = "/" + pointer_token(key) + pointer;
            return why;
          }
        }
      } else {
        std::size_t i = 0;
        for (const auto& child : v) {
          std::string why = unwritable(child, depth + 1, pointer);
          if (!why.empty()) {
            pointer = "/" + std::to_string(i) + pointer;
            return why;
          }
          ++i;
        }
      }
      return {};
    }
    default:
      return {};
  }
}

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

bool valid_utf8(std::string_view text) noexcept {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80;  // the range of the second byte
    unsigned char hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3;
      lo = 0xA0;  // no overlong form
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3;
      hi = 0x9F;  // no surrogate
    } else if (c == 0xF0) {
      len = 4;
      lo = 0x90;  // no overlong form
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4;
      hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (n - i < len) return false;
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < lo || second > hi) return false;
    for (std::size_t k = 2; k < len; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < 0x80 || next > 0xBF) return false;
    }
    i += len;
  }
  return true;
}

bool valid_utf8_json(const nlohmann::json& value) noexcept {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      return valid_utf8(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::object:
      for (auto it = value.begin(); it != value.end(); ++it)
        if (!valid_utf8(it.key()) || !valid_utf8_json(it.value())) return false;
      return true;
    case nlohmann::json::value_t::array:
      for (const nlohmann::json& element : value)
        if (!valid_utf8_json(element)) return false;
      return true;
    default:
      return true;
  }
}

void check_writable(const nlohmann::json& document, const std::string& object) {
  std::string pointer;
  std::string why = unwritable(document, 0, pointer);
  if (!why.empty()) throw unwritable_value(object, std::move(pointer), std::move(why));
}

void check_writable_member(const nlohmann::json& value, std::string_view key,
                           const std::string& object) {
  std::string pointer;
  std::string why = unwritable(value, 1, pointer);
  if (!why.empty()) {
    throw unwritable_value(object, "/" + pointer_token(key) + pointer, std::move(why));
  }
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
