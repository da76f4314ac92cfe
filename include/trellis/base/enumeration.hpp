#pragma once
/// @file
/// Enumerations: every value of an enum-like type, in order, with its name, written once.
/// Diagrams, the exhaustive tester and JSON all read the same list, so adding a value to an
/// enum and to its `TRELLIS_ENUM` line is the only edit they need.
///
/// ```cpp
/// namespace app {
/// enum class Light { Red, Green, Yellow };
/// TRELLIS_ENUM(Light, Red, Green, Yellow);  // same namespace as the enum, at namespace scope
/// }
/// static_assert(trellis::enumeration<app::Light>::name(app::Light::Green) == "Green");
/// // with #include <trellis/json/enumeration.hpp> (the `json` adapter):
/// nlohmann::json j = app::Light::Red;      // "Red"
/// auto l = j.get<app::Light>();            // app::Light::Red; "Purple" throws trellis::error
/// ```
///
/// How it is found: `TRELLIS_ENUM` defines a `constexpr` hook `trellis_enumerate(enum_tag<T>)`
/// next to the type, and `trellis::enumeration<T>` finds it by argument-dependent lookup. That
/// is why the macro must sit in the enum's own namespace (the innermost one enclosing it, also
/// for an enum nested in a class; written elsewhere it fails to compile, saying so), and why a type
/// that is not an enum (a literal class type with `==`) can join by writing the hook by hand:
///
/// ```cpp
/// constexpr auto trellis_enumerate(trellis::enum_tag<Coin>) {
///   return trellis::enum_list<Coin, 2>{"Coin", {Coin{1}, Coin{2}}, {"One", "Two"}};
/// }
/// ```
///
/// JSON: the macro also declares `to_json`/`from_json` hooks, templates on the JSON type that
/// follow nlohmann's own `NLOHMANN_JSON_SERIALIZE_ENUM` pattern, so they win over nlohmann's
/// default (the underlying integer) for `nlohmann::json` and `nlohmann::ordered_json` alike.
/// Their bodies are the `json` adapter's, <trellis/json/enumeration.hpp>: this header includes
/// no JSON library, and converting an enumeration without that header fails to compile with a
/// message naming it (never silently as an integer).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "trellis/base/error.hpp"

namespace trellis {

/// The argument of the `trellis_enumerate` hook; its only job is to carry `T` into
/// argument-dependent lookup.
template <class T>
struct enum_tag {};

/// What a `trellis_enumerate` hook returns: the type's name (for messages), its values in
/// order and their names, index for index.
template <class T, std::size_t N>
struct enum_list {
  std::string_view type_name;
  std::array<T, N> values;
  std::array<std::string_view, N> names;
};

namespace detail {

constexpr std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// The macro stringifies its value list ("Red, Green, Yellow") instead of naming each value a
// second time; this splits it back into names.
template <std::size_t N>
constexpr std::array<std::string_view, N> split_enum_names(std::string_view list) noexcept {
  std::array<std::string_view, N> names{};
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t comma = list.find(',');
    names[i] = trim_blanks(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return names;
}

template <class T, std::size_t N>
constexpr enum_list<T, N> make_enum_list(std::string_view type_name, const std::array<T, N>& values,
                                         std::string_view joined_names) noexcept {
  return {type_name, values, split_enum_names<N>(joined_names)};
}

// A name that is empty or not an identifier means the list held something other than bare
// value names (`Red = 1`, a qualified `Light::Red`); a repeated value would make names
// ambiguous and the exhaustive tester count a pair twice.
constexpr bool is_identifier(std::string_view s) noexcept {
  if (s.empty() || (s.front() >= '0' && s.front() <= '9')) return false;
  for (const char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

template <class T, std::size_t N>
constexpr bool enum_list_valid(const enum_list<T, N>& list) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (!is_identifier(list.names[i])) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (list.values[i] == list.values[j] || list.names[i] == list.names[j]) return false;
    }
  }
  return true;
}

template <class T>
concept has_enumerate_hook = requires {
  trellis_enumerate(enum_tag<T>{});
};

}  // namespace detail

/// The values of `T` in declaration order and their names. Empty (and `Enumerated<T>` false)
/// until `TRELLIS_ENUM(T, ...)` or a hand-written `trellis_enumerate` hook declares them.
template <class T>
struct enumeration {};

template <class T>
requires detail::has_enumerate_hook<T>
struct enumeration<T> {
 private:
  static constexpr auto list_ = trellis_enumerate(enum_tag<T>{});

 public:
  /// The type's name as written in `TRELLIS_ENUM` (used in messages and diagram titles).
  static constexpr std::string_view type_name = list_.type_name;
  /// Every value, in the order listed.
  static constexpr std::array values = list_.values;
  /// The name of `values[i]` at index `i`.
  static constexpr std::array names = list_.names;
  static constexpr std::size_t size = values.size();

  /// The position of `v` in `values`, or nullopt for a value that is not listed (such as an
  /// out-of-range `static_cast`).
  static constexpr std::optional<std::size_t> index_of(const T& v) noexcept {
    for (std::size_t i = 0; i < size; ++i) {
      if (values[i] == v) return i;
    }
    return std::nullopt;
  }

  /// The name of `v`; empty for a value that is not listed.
  static constexpr std::string_view name(const T& v) noexcept {
    const auto i = index_of(v);
    return i ? names[*i] : std::string_view{};
  }

  /// The value named `name` (exact, case-sensitive), or nullopt.
  static constexpr std::optional<T> from_name(std::string_view name) noexcept {
    for (std::size_t i = 0; i < size; ++i) {
      if (names[i] == name) return values[i];
    }
    return std::nullopt;
  }
};

/// A type whose values trellis can list and name: declared with `TRELLIS_ENUM` or a
/// `trellis_enumerate` hook.
template <class T>
concept Enumerated = requires {
  enumeration<T>::values;
};

namespace detail {

// Messages read "expected one of Red, Green, Yellow", so a reader sees the fix at once.
template <class T>
std::string enum_names_joined() {
  std::string out;
  for (const std::string_view n : enumeration<T>::names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// Names `v` when it is listed; otherwise shows the underlying integer of an enum, which is
// the only thing known about an unlisted value.
template <class T>
std::string describe_value(const T& v) {
  const std::string_view name = enumeration<T>::name(v);
  if (!name.empty()) return std::string(name);
  if constexpr (std::is_enum_v<T>) {
    return std::string(enumeration<T>::type_name) + " value " +
           std::to_string(static_cast<long long>(v));
  } else {
    return "a " + std::string(enumeration<T>::type_name) + " value";
  }
}

template <class T>
[[noreturn]] void throw_unlisted(const T& v) {
  throw error("trellis: " + describe_value(v) + " is not listed in the enumeration of " +
              std::string(enumeration<T>::type_name) + " (expected one of " +
              enum_names_joined<T>() + ")");
}

// The position of `v` in its enumeration, for code that must not go on with an unlisted value.
template <class T>
std::size_t listed_index(const T& v) {
  const auto i = enumeration<T>::index_of(v);
  if (!i) throw_unlisted(v);
  return *i;
}

/// Enumerations <-> JSON, for the hooks TRELLIS_ENUM defines: specialized by the `json`
/// adapter (<trellis/json/enumeration.hpp>); the primary only says that it is missing.
template <class Json>
struct EnumJson {
  static constexpr bool available = false;
};

template <class Json, class T>
void enum_to_json(Json& j, const T& v) {
  static_assert(EnumJson<Json>::available,
                "trellis: converting a TRELLIS_ENUM type to JSON needs #include "
                "<trellis/json/enumeration.hpp> (the trellis::json adapter)");
  EnumJson<Json>::to(j, v);
}

template <class Json, class T>
void enum_from_json(const Json& j, T& v) {
  static_assert(EnumJson<Json>::available,
                "trellis: converting a TRELLIS_ENUM type from JSON needs #include "
                "<trellis/json/enumeration.hpp> (the trellis::json adapter)");
  EnumJson<Json>::from(j, v);
}

}  // namespace detail
}  // namespace trellis

/// Declares the values of enum `Type` and their names, once: `TRELLIS_ENUM(Light, Red, Green,
/// Yellow);` at namespace scope, in `Type`'s namespace. Lists bare value names; a value listed
/// twice or a name that is not a bare identifier fails to compile, and so does the macro written
/// in another namespace (where `trellis::enumeration<Type>` could not find it: the error says
/// "must be written in the namespace that declares Type"). Also declares nlohmann_json
/// `to_json`/`from_json` for `Type` by name, which work once <trellis/json/enumeration.hpp> is
/// included (`from_json` of an unknown name or a non-string throws `trellis::error` naming the
/// type and the value).
#define TRELLIS_ENUM(Type, ...)                                                               \
  constexpr auto trellis_enumerate(::trellis::enum_tag<Type>) {                               \
    using enum Type;                                                                          \
    return ::trellis::detail::make_enum_list(#Type, ::std::array{__VA_ARGS__}, #__VA_ARGS__); \
  }                                                                                           \
  template <class TrellisBasicJson>                                                           \
  void to_json(TrellisBasicJson& j, const Type& v) {                                          \
    ::trellis::detail::enum_to_json(j, v);                                                    \
  }                                                                                           \
  template <class TrellisBasicJson>                                                           \
  void from_json(const TrellisBasicJson& j, Type& v) {                                        \
    ::trellis::detail::enum_from_json(j, v);                                                  \
  }                                                                                           \
  static_assert(                                                                              \
      ::trellis::detail::enum_list_valid(trellis_enumerate(::trellis::enum_tag<Type>{})),     \
      "TRELLIS_ENUM(" #Type                                                                   \
      ", ...): list each value once, by its bare name (Red, not Light::Red or Red = 1)");     \
  static_assert(::trellis::detail::has_enumerate_hook<Type>,                                  \
                "TRELLIS_ENUM(" #Type                                                         \
                ", ...) must be written in the namespace that declares " #Type                \
                " (found by argument-dependent lookup)")
