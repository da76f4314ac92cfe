#pragma once
/// @file
/// Enumerations <-> JSON (target `trellis::json`, which brings nlohmann_json): with this
/// header, a type declared with `TRELLIS_ENUM` converts to and from nlohmann_json by name:
///
/// ```cpp
/// #include <trellis/json/enumeration.hpp>
/// nlohmann::json j = app::Light::Red;  // "Red"
/// auto l = j.get<app::Light>();        // app::Light::Red
/// ```
///
/// Works for `nlohmann::json`, `nlohmann::ordered_json` and any other `basic_json`. Writing a
/// value that is not listed, reading a name that is not listed, or reading anything but a
/// string throws `trellis::error` naming the type, the value and the names expected.

#include <nlohmann/json.hpp>

#include <concepts>
#include <string>
#include <string_view>

#include "trellis/base/enumeration.hpp"
#include "trellis/base/error.hpp"

namespace trellis::detail {

/// What the conversions below use of a JSON value (every nlohmann::basic_json has it).
template <class Json>
concept json_value = requires(Json& j, const Json& cj) {
  typename Json::string_t;
  { cj.is_string() } -> std::convertible_to<bool>;
  cj.dump();
  j = typename Json::string_t();
};

template <json_value Json>
struct EnumJson<Json> {
  static constexpr bool available = true;

  template <class T>
  static void to(Json& j, const T& v) {
    const std::string_view name = enumeration<T>::name(v);
    if (name.empty()) throw_unlisted(v);
    j = typename Json::string_t(name);
  }

  template <class T>
  static void from(const Json& j, T& v) {
    const std::string type(enumeration<T>::type_name);
    if (!j.is_string()) {
      // A whole object in a message helps nobody; the start of it says what went wrong.
      std::string shown = j.dump();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
      throw error("trellis: " + shown + " is not a " + type + " (expected a string, one of " +
                  enum_names_joined<T>() + ")");
    }
    const auto& text = j.template get_ref<const typename Json::string_t&>();
    if (const auto parsed = enumeration<T>::from_name(text)) {
      v = *parsed;
      return;
    }
    throw error("trellis: '" + std::string(text) + "' is not a " + type + " (expected one of " +
                enum_names_joined<T>() + ")");
  }
};

}  // namespace trellis::detail
