// SPDX-License-Identifier: MIT
#include <trellis/machine/transition_table.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <trellis/machine/transition_function.hpp>

#include "traffic_light.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace transition_table_test {

using light::Light;
using light::Tick;
using Table = trellis::TransitionTable<Light, Tick>;

TEST_CASE("transition table: a row moves its from-state on its event") {
  const auto t = Table{}.from(Light::Red).on(Tick::Advance).to(Light::Green);
  CHECK(t(Light::Red, Tick::Advance) == Light::Green);
}

TEST_CASE("transition table: no matching row rejects the event") {
  const auto t = Table{}.from(Light::Red).on(Tick::Advance).to(Light::Green);
  CHECK_FALSE(t(Light::Red, Tick::Skip).has_value());
  CHECK_FALSE(t(Light::Green, Tick::Advance).has_value());
  CHECK_FALSE(Table{}(Light::Red, Tick::Advance).has_value());
}

TEST_CASE("transition table: the first matching row wins") {
  Table t;
  t.from(Light::Red).on(Tick::Advance).to(Light::Yellow);
  t.from(Light::Red).on(Tick::Advance).to(Light::Green);
  CHECK(t(Light::Red, Tick::Advance) == Light::Yellow);
}

TEST_CASE("transition table: a row from several states covers each of them") {
  const auto t = Table{}.from(Light::Green, Light::Yellow).on(Tick::Skip).to(Light::Red);
  CHECK(t(Light::Green, Tick::Skip) == Light::Red);
  CHECK(t(Light::Yellow, Tick::Skip) == Light::Red);
  CHECK_FALSE(t(Light::Red, Tick::Skip).has_value());
}

TEST_CASE("transition table: from() takes a range of states named elsewhere") {
  const std::vector<Light> lit{Light::Green, Light::Yellow};
  const auto t = Table{}.from(lit).on(Tick::Skip).to(Light::Red);
  CHECK(t(Light::Yellow, Tick::Skip) == Light::Red);
  CHECK(t.rows().front().from == lit);
}

TEST_CASE("transition table: any() covers every state") {
  const auto t = Table{}.any().on(Tick::Skip).to(Light::Red);
  for (const Light s : {Light::Red, Light::Green, Light::Yellow}) {
    CHECK(t(s, Tick::Skip) == Light::Red);
  }
}

TEST_CASE("transition table: stay() accepts the event and keeps the state") {
  const auto t = Table{}.any().on(Tick::Skip).stay();
  CHECK(t(Light::Green, Tick::Skip) == Light::Green);
  CHECK(t(Light::Yellow, Tick::Skip) == Light::Yellow);
  CHECK_FALSE(t.rows().front().to.has_value());
}

TEST_CASE("transition table: a false guard skips its row and the next row is tried") {
  bool open = false;
  const auto is_open = [&open](const Light&, const Tick&) { return open; };
  Table t;
  t.from(Light::Red).on(Tick::Advance).when(is_open).to(Light::Green);
  t.from(Light::Red).on(Tick::Advance).to(Light::Yellow);
  CHECK(t(Light::Red, Tick::Advance) == Light::Yellow);
  open = true;
  CHECK(t(Light::Red, Tick::Advance) == Light::Green);
}

TEST_CASE("transition table: a guard may look at the state alone") {
  const auto not_red = [](const Light& s) { return s != Light::Red; };
  const auto t = Table{}.any().on(Tick::Skip).when("not red", not_red).to(Light::Red);
  CHECK(t(Light::Green, Tick::Skip) == Light::Red);
  CHECK_FALSE(t(Light::Red, Tick::Skip).has_value());
}

TEST_CASE("transition table: a second guard must hold as well") {
  const auto not_red = [](const Light& s) { return s != Light::Red; };
  const auto not_green = [](const Light& s) { return s != Light::Green; };
  Table t;
  t.any().on(Tick::Skip).when("not red", not_red).when("not green", not_green).to(Light::Red);
  CHECK_FALSE(t(Light::Red, Tick::Skip).has_value());
  CHECK_FALSE(t(Light::Green, Tick::Skip).has_value());
  CHECK(t(Light::Yellow, Tick::Skip) == Light::Red);
  CHECK(t.rows().front().guard_name == "not red && not green");
}

TEST_CASE("transition table: rows() lists what was declared, in order") {
  const auto always = [](const Light&) { return true; };
  Table t;
  t.from(Light::Red, Light::Green).on(Tick::Advance).to(Light::Yellow);
  t.any().on(Tick::Skip).when(always).stay();
  REQUIRE(t.rows().size() == 2);
  const auto& first = t.rows()[0];
  CHECK(first.from == std::vector{Light::Red, Light::Green});
  CHECK_FALSE(first.any_state);
  CHECK(first.event == Tick::Advance);
  CHECK(first.to == Light::Yellow);
  CHECK_FALSE(first.has_guard());
  const auto& second = t.rows()[1];
  CHECK(second.from.empty());
  CHECK(second.any_state);
  CHECK(second.has_guard());
  CHECK(second.guard_name == "guard");
  CHECK_FALSE(second.to.has_value());
}

TEST_CASE("transition table: chaining on a named table appends rows to it") {
  Table t;
  t.from(Light::Red).on(Tick::Advance).to(Light::Green);
  t.from(Light::Green).on(Tick::Advance).to(Light::Yellow).any().on(Tick::Skip).to(Light::Red);
  CHECK(t.rows().size() == 3);
  CHECK(t(Light::Green, Tick::Advance) == Light::Yellow);
}

TEST_CASE("transition table: chaining rows on a temporary yields the finished table") {
  const auto t = Table{}
                     .from(Light::Red)
                     .on(Tick::Advance)
                     .to(Light::Green)
                     .from(Light::Green)
                     .on(Tick::Advance)
                     .to(Light::Yellow);
  static_assert(std::is_same_v<decltype(Table{}.any().on(Tick::Skip).stay()), Table>);
  CHECK(t.rows().size() == 2);
  CHECK(t(Light::Green, Tick::Advance) == Light::Yellow);
}

TEST_CASE("transition table: is a transition function equal to the hand-written one") {
  static_assert(trellis::TransitionFunction<Table, Light, Tick>);
  const auto t = light::table();
  for (const Light s : {Light::Red, Light::Green, Light::Yellow}) {
    for (const Tick e : {Tick::Advance, Tick::Skip}) {
      CHECK(t(s, e) == light::step(s, e));
    }
  }
}

TEST_CASE("transition table: a copy behaves like the original") {
  const auto original = light::table();
  const auto copy = original;  // NOLINT(performance-unnecessary-copy-initialization): the point
  CHECK(copy(Light::Green, Tick::Skip) == Light::Red);
  CHECK(copy.rows().size() == original.rows().size());
}

TEST_CASE("transition table: events may be any type with ==") {
  trellis::TransitionTable<Light, std::string> t;
  t.from(Light::Red).on("go").to(Light::Green);
  t.any().on("stop").to(Light::Red);
  CHECK(t(Light::Red, "go") == Light::Green);
  CHECK(t(Light::Yellow, "stop") == Light::Red);
  CHECK_FALSE(t(Light::Red, "wait").has_value());
}

}  // namespace transition_table_test
