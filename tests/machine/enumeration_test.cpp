// SPDX-License-Identifier: MIT
#include <trellis/base/enumeration.hpp>
#include <trellis/json/enumeration.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "traffic_light.hpp"

using light::Light;
using light::Tick;
using Lights = trellis::enumeration<Light>;

namespace enum_test {

struct Panel {
  enum class Mode { Off, On };
};
TRELLIS_ENUM(Panel::Mode, Off, On);

enum Unscoped { North, South };
TRELLIS_ENUM(Unscoped, North, South);

enum class Unlisted { A, B };

// A literal class type joins by writing the hook by hand instead of using the macro.
struct Coin {
  int cents;
  friend constexpr bool operator==(Coin, Coin) = default;
};
constexpr auto trellis_enumerate(trellis::enum_tag<Coin>) {
  return trellis::enum_list<Coin, 2>{"Coin", {Coin{1}, Coin{5}}, {"Penny", "Nickel"}};
}

}  // namespace enum_test

TEST_CASE("enumeration: lists every value in declaration order") {
  CHECK(Lights::size == 3);
  CHECK(Lights::values == std::array{Light::Red, Light::Green, Light::Yellow});
}

TEST_CASE("enumeration: names each value as written in the macro") {
  CHECK(Lights::name(Light::Red) == "Red");
  CHECK(Lights::name(Light::Yellow) == "Yellow");
  CHECK(Lights::type_name == "Light");
  CHECK(trellis::enumeration<Tick>::names == std::array<std::string_view, 2>{"Advance", "Skip"});
}

TEST_CASE("enumeration: from_name finds a value by its exact name") {
  CHECK(Lights::from_name("Green") == Light::Green);
  CHECK_FALSE(Lights::from_name("green").has_value());
  CHECK_FALSE(Lights::from_name("Purple").has_value());
  CHECK_FALSE(Lights::from_name("").has_value());
}

TEST_CASE("enumeration: an unlisted value has no index and an empty name") {
  const auto stray = static_cast<Light>(7);
  CHECK_FALSE(Lights::index_of(stray).has_value());
  CHECK(Lights::name(stray).empty());
  CHECK(Lights::index_of(Light::Yellow) == std::size_t{2});
}

TEST_CASE("enumeration: answers at compile time") {
  static_assert(Lights::name(Light::Green) == "Green");
  static_assert(Lights::from_name("Yellow") == Light::Yellow);
  static_assert(Lights::values[0] == Light::Red);
  CHECK(true);
}

TEST_CASE("enumeration: a type without a declaration is not Enumerated") {
  static_assert(trellis::Enumerated<Light>);
  static_assert(!trellis::Enumerated<enum_test::Unlisted>);
  static_assert(!trellis::Enumerated<int>);
  CHECK(true);
}

TEST_CASE("enumeration: covers an enum nested in a class and an unscoped enum") {
  using Mode = enum_test::Panel::Mode;
  CHECK(trellis::enumeration<Mode>::name(Mode::On) == "On");
  CHECK(trellis::enumeration<Mode>::type_name == "Panel::Mode");
  CHECK(trellis::enumeration<enum_test::Unscoped>::from_name("South") == enum_test::South);
}

TEST_CASE("enumeration: a hand-written hook enumerates a class type") {
  using enum_test::Coin;
  static_assert(trellis::Enumerated<Coin>);
  CHECK(trellis::enumeration<Coin>::name(Coin{5}) == "Nickel");
  CHECK(trellis::enumeration<Coin>::from_name("Penny") == Coin{1});
}

TEST_CASE("enumeration: to_json writes the name") {
  CHECK(nlohmann::json(Light::Yellow) == nlohmann::json("Yellow"));
  CHECK(nlohmann::ordered_json(Tick::Skip).dump() == "\"Skip\"");
}

TEST_CASE("enumeration: from_json reads every name back to its value") {
  for (const Light l : Lights::values) {
    CHECK(nlohmann::json(l).get<Light>() == l);
  }
}

TEST_CASE("enumeration: converts inside containers and objects") {
  const std::map<std::string, Light> lamps{{"north", Light::Red}, {"south", Light::Green}};
  const nlohmann::json j = lamps;
  CHECK(j.dump() == R"({"north":"Red","south":"Green"})");
  CHECK(j.get<std::map<std::string, Light>>() == lamps);
}

TEST_CASE("enumeration: from_json of an unknown name names the type and the value") {
  CHECK_THROWS_WITH_AS(nlohmann::json("Purple").get<Light>(),
                       "trellis: 'Purple' is not a Light (expected one of Red, Green, Yellow)",
                       trellis::error);
}

TEST_CASE("enumeration: from_json of a non-string names the type and the value") {
  CHECK_THROWS_WITH_AS(nlohmann::json(1).get<Light>(),
                       "trellis: 1 is not a Light (expected a string, one of Red, Green, Yellow)",
                       trellis::error);
  CHECK_THROWS_WITH_AS(nlohmann::json(nullptr).get<Light>(),
                       "trellis: null is not a Light (expected a string, one of Red, Green, "
                       "Yellow)",
                       trellis::error);
}

TEST_CASE("enumeration: from_json shortens a large non-string in its message") {
  const nlohmann::json big = nlohmann::json::array({std::string(100, 'x')});
  try {
    (void)big.get<Light>();
    FAIL("expected trellis::error");
  } catch (const trellis::error& e) {
    const std::string what = e.what();
    CHECK(what.find("...") != std::string::npos);
    CHECK(what.size() < 160);
    CHECK(what.find("is not a Light") != std::string::npos);
  }
}

TEST_CASE("enumeration: to_json of an unlisted value names the value") {
  CHECK_THROWS_WITH_AS(nlohmann::json(static_cast<Light>(7)),
                       "trellis: Light value 7 is not listed in the enumeration of Light "
                       "(expected one of Red, Green, Yellow)",
                       trellis::error);
}

// The README's example (section "Enumerations: TRELLIS_ENUM"): keep the two in step.
namespace shop {
enum class Size { Small, Medium, Large };
TRELLIS_ENUM(Size, Small, Medium, Large);  // in the namespace that declares Size
}  // namespace shop

TEST_CASE("enumeration: the README example lists, names, parses and converts to JSON") {
  using Sizes = trellis::enumeration<shop::Size>;
  static_assert(Sizes::size == 3 && Sizes::names[2] == "Large");
  CHECK(Sizes::name(shop::Size::Medium) == "Medium");
  CHECK(Sizes::from_name("Small") == shop::Size::Small);
  CHECK(nlohmann::json(shop::Size::Large) == "Large");  // needs <trellis/json/enumeration.hpp>
  CHECK_THROWS_AS(nlohmann::json("Huge").get<shop::Size>(), trellis::error);  // names the value
}
