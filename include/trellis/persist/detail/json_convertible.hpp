#pragma once
/// @file
/// `json_convertible<T>`: whether nlohmann::json can write a T and read it back, which is what
/// a persisted state needs. The classes that persist a state check it at their top, so that a
/// missing conversion is one line that says what to add instead of pages of template errors.

#include <type_traits>

#include <nlohmann/json.hpp>

#include "trellis/json/enumeration.hpp"  // a TRELLIS_ENUM state persists by name

namespace trellis::detail {

template <class T>
concept json_convertible = std::is_constructible_v<nlohmann::json, const T&> &&
    requires(const nlohmann::json& j) {
  j.template get<T>();
};

}  // namespace trellis::detail
