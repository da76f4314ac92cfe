#pragma once
/// @file
/// Event types: how a table tells events apart. An event that is a `std::variant` of payload
/// structs has one kind per alternative (rows say `on<Coin>()` and match every `Coin`, whatever
/// its payload); an enumerated event (`TRELLIS_ENUM`) has one kind per value (rows say
/// `on(Tick::Advance)`). Any other event type has no kinds: rows match it by `==`.
///
/// Diagrams and matrices name an alternative by its unqualified type name (`Coin` for
/// `vending::Coin`); a type that wants another name says so with a member
/// `static constexpr std::string_view trellis_name = "coin inserted";`.

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "trellis/base/enumeration.hpp"

namespace trellis {

namespace detail {

template <class T>
constexpr std::string_view pretty_type_name() noexcept {
  // "... [with T = ns::Coin]" (GCC) or "... [T = ns::Coin]" (clang).
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  constexpr std::size_t eq = f.find("T = ") + 4;
  constexpr std::size_t end = f.find_first_of(";]", eq);
  return f.substr(eq, end - eq);
}

/// The unqualified name of `T`: its last `::` component outside template arguments.
constexpr std::string_view unqualified(std::string_view name) noexcept {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

template <class T>
concept has_trellis_name = requires {
  { T::trellis_name } -> std::convertible_to<std::string_view>;
};

template <class T>
struct is_variant : std::false_type {};
template <class... Ts>
struct is_variant<std::variant<Ts...>> : std::true_type {};

template <class V, class T>
struct alternative_index;
template <class T, class... Ts>
struct alternative_index<std::variant<Ts...>, T> {
  static constexpr std::size_t value = [] {
    constexpr bool same[] = {std::is_same_v<T, Ts>...};
    std::size_t found = sizeof...(Ts);
    for (std::size_t i = 0; i < sizeof...(Ts); ++i) {
      if (same[i]) found = found == sizeof...(Ts) ? i : sizeof...(Ts) + 1;
    }
    return found;
  }();
};

/// The position of `v` in an enumeration: a cast for enums listed densely from 0 in order (the
/// usual `enum class`), the listed search otherwise; `size` when `v` is not listed.
template <class T>
constexpr std::size_t fast_index(const T& v) noexcept {
  using EN = enumeration<T>;
  if constexpr (std::is_enum_v<T>) {
    constexpr bool dense = [] {
      for (std::size_t i = 0; i < EN::size; ++i) {
        if (static_cast<std::size_t>(static_cast<std::underlying_type_t<T>>(EN::values[i])) != i)
          return false;
      }
      return true;
    }();
    if constexpr (dense) {
      const auto i = static_cast<std::size_t>(static_cast<std::underlying_type_t<T>>(v));
      return i < EN::size ? i : EN::size;
    }
  }
  const auto i = EN::index_of(v);
  return i ? *i : EN::size;
}

}  // namespace detail

/// The name of type `T` in diagrams and messages: `T::trellis_name`, or its unqualified name.
template <class T>
constexpr std::string_view type_name() noexcept {
  if constexpr (detail::has_trellis_name<T>) {
    return std::string_view(T::trellis_name);
  } else {
    return detail::unqualified(detail::pretty_type_name<T>());
  }
}

/// The kinds of events `E`: `count` of them (0: rows match by `==`), `index(e)` of an event
/// (`count` for an enumerated value that is not listed), `name(k)`.
template <class E>
struct event_types {
  static constexpr std::size_t count = 0;
  static constexpr bool by_type = false;
};

template <class... Ts>
struct event_types<std::variant<Ts...>> {
  static constexpr std::size_t count = sizeof...(Ts);
  static constexpr bool by_type = true;
  static constexpr std::size_t index(const std::variant<Ts...>& e) noexcept { return e.index(); }
  static constexpr std::string_view name(std::size_t k) noexcept {
    constexpr std::string_view names[] = {type_name<Ts>()...};
    return names[k];
  }
  /// The kind of alternative `T`; fails to compile for a type that is not exactly one of them.
  template <class T>
  static constexpr std::size_t of() noexcept {
    constexpr std::size_t k = detail::alternative_index<std::variant<Ts...>, T>::value;
    static_assert(k < sizeof...(Ts),
                  "trellis: on<T>(): T is not one of the event variant's alternatives (or it is "
                  "listed more than once)");
    return k;
  }
};

template <class E>
requires(std::is_enum_v<E>&& Enumerated<E>) struct event_types<E> {
  static constexpr std::size_t count = enumeration<E>::size;
  static constexpr bool by_type = false;
  static constexpr std::size_t index(const E& e) noexcept { return detail::fast_index(e); }
  static constexpr std::string_view name(std::size_t k) noexcept {
    return enumeration<E>::names[k];
  }
};

}  // namespace trellis
