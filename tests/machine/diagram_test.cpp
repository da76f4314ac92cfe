// SPDX-License-Identifier: MIT
#include <trellis/machine/diagram.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <trellis/testing/golden.hpp>
#include <trellis/testing/transition_matrix.hpp>

#include "document_cycle.hpp"
#include "traffic_light.hpp"
#include "vending_machine.hpp"

#ifndef TRELLIS_MACHINE_GOLDEN_DIR
#error \
    "TRELLIS_MACHINE_GOLDEN_DIR must name tests/machine/golden (tests/machine/tests.cmake sets it)"
#endif

namespace tt = trellis::testing;
using light::Light;
using light::Tick;
using Table = trellis::TransitionTable<Light, Tick>;

// A hand-written enumeration hook may name a value with any text, not only an identifier.
namespace stage {
enum class Stage { Draft, InReview };
constexpr auto trellis_enumerate(trellis::enum_tag<Stage>) {
  return trellis::enum_list<Stage, 2>{
      "Stage", {Stage::Draft, Stage::InReview}, {"Draft", "in \"review\""}};
}
}  // namespace stage

namespace {
const std::filesystem::path golden_dir{TRELLIS_MACHINE_GOLDEN_DIR};
const auto always = [](const Light&) { return true; };
const auto never = [](const Light&) { return false; };
}  // namespace

TEST_CASE("to_mermaid: draws each transition of a table, labelled with its event") {
  CHECK(trellis::to_mermaid(light::table()) ==
        "stateDiagram-v2\n"
        "    Red --> Green : Advance\n"
        "    Green --> Yellow : Advance\n"
        "    Green --> Red : Skip\n"
        "    Yellow --> Red : Advance\n");
}

TEST_CASE("to_mermaid: marks the initial state") {
  const std::string text = trellis::to_mermaid(light::table(), Light::Red);
  CHECK(text.rfind("stateDiagram-v2\n    [*] --> Red\n", 0) == 0);
}

TEST_CASE("to_mermaid: shows a guard as [name] after the event") {
  Table t;
  t.from(Light::Red).on(Tick::Advance).when("cars waiting", always).to(Light::Green);
  t.from(Light::Green).on(Tick::Advance).when(always).to(Light::Yellow);
  CHECK(trellis::to_mermaid(t) ==
        "stateDiagram-v2\n"
        "    Red --> Green : Advance [cars waiting]\n"
        "    Green --> Yellow : Advance [guard]\n");
}

TEST_CASE("to_mermaid: events between the same two states share one edge") {
  Table t;
  t.from(Light::Red).on(Tick::Advance).to(Light::Green);
  t.from(Light::Red).on(Tick::Skip).to(Light::Green);
  CHECK(trellis::to_mermaid(t) ==
        "stateDiagram-v2\n"
        "    Yellow\n"
        "    Red --> Green : Advance, Skip\n");
}

TEST_CASE("to_mermaid: lists the states that no edge touches") {
  CHECK(trellis::to_mermaid(Table{}) == "stateDiagram-v2\n    Red\n    Green\n    Yellow\n");
}

TEST_CASE("to_mermaid: escapes the characters Mermaid reads as syntax in a guard name") {
  const auto t =
      Table{}.from(Light::Red).on(Tick::Advance).when("n < 3; #1", always).to(Light::Green);
  CHECK(trellis::to_mermaid(t).find("Red --> Green : Advance [n < 3#59; #35;1]\n") !=
        std::string::npos);
}

TEST_CASE("to_mermaid: a row hidden by an earlier row for the same pair is not drawn") {
  Table t;
  t.any().on(Tick::Skip).to(Light::Red);
  t.from(Light::Green).on(Tick::Skip).to(Light::Yellow);
  const std::string text = trellis::to_mermaid(t);
  CHECK(text.find("Green --> Red : Skip\n") != std::string::npos);
  CHECK(text.find("Green --> Yellow") == std::string::npos);
}

TEST_CASE("to_mermaid: a guarded row does not hide the rows after it") {
  Table t;
  t.from(Light::Green).on(Tick::Skip).when("late", never).to(Light::Yellow);
  t.from(Light::Green).on(Tick::Skip).to(Light::Red);
  CHECK(trellis::to_mermaid(t) ==
        "stateDiagram-v2\n"
        "    Green --> Yellow : Skip [late]\n"
        "    Green --> Red : Skip\n");
}

TEST_CASE("to_mermaid: a matrix draws what the function does") {
  CHECK(trellis::to_mermaid(tt::transition_matrix(light::step)) ==
        trellis::to_mermaid(light::table()));
}

TEST_CASE("to_dot: draws a digraph named after the state type, with an entry arrow") {
  CHECK(trellis::to_dot(light::table(), Light::Red) ==
        "digraph \"Light\" {\n"
        "  rankdir=LR;\n"
        "  node [shape=box, style=rounded];\n"
        "  __initial [shape=point, label=\"\"];\n"
        "  \"Red\";\n"
        "  \"Green\";\n"
        "  \"Yellow\";\n"
        "  __initial -> \"Red\";\n"
        "  \"Red\" -> \"Green\" [label=\"Advance\"];\n"
        "  \"Green\" -> \"Yellow\" [label=\"Advance\"];\n"
        "  \"Green\" -> \"Red\" [label=\"Skip\"];\n"
        "  \"Yellow\" -> \"Red\" [label=\"Advance\"];\n"
        "}\n");
}

TEST_CASE("to_dot: escapes quotes and backslashes in labels") {
  const auto t =
      Table{}.from(Light::Red).on(Tick::Advance).when(R"(say "go" \ now)", always).to(Light::Green);
  CHECK(trellis::to_dot(t).find(R"("Red" -> "Green" [label="Advance [say \"go\" \\ now]"];)") !=
        std::string::npos);
}

TEST_CASE("to_mermaid: a terminal phase gets an arrow to [*], after the edges") {
  auto t = light::table();
  t.terminal(Light::Yellow);
  CHECK(trellis::to_mermaid(t) ==
        "stateDiagram-v2\n"
        "    Red --> Green : Advance\n"
        "    Green --> Yellow : Advance\n"
        "    Green --> Red : Skip\n"
        "    Yellow --> Red : Advance\n"
        "    Yellow --> [*]\n");
}

TEST_CASE("to_mermaid: a terminal phase without edges is drawn by its arrow alone") {
  CHECK(trellis::to_mermaid(Table{}.terminal(Light::Green)) ==
        "stateDiagram-v2\n    Red\n    Yellow\n    Green --> [*]\n");
}

TEST_CASE("to_dot: a terminal phase gets a double border") {
  auto t = light::table();
  t.terminal(Light::Yellow);
  const std::string text = trellis::to_dot(t);
  CHECK(text.find("  \"Yellow\" [peripheries=2];\n") != std::string::npos);
  CHECK(text.find("  \"Red\";\n") != std::string::npos);
}

TEST_CASE("diagram: a matrix marks the terminals it is given") {
  const auto m = tt::transition_matrix(light::step);
  CHECK(trellis::to_mermaid(m, Light::Red, {Light::Yellow}).find("    Yellow --> [*]\n") !=
        std::string::npos);
  CHECK(trellis::to_dot(m, std::nullopt, {Light::Yellow}).find("\"Yellow\" [peripheries=2]") !=
        std::string::npos);
}

TEST_CASE("to_mermaid: a typed table's edge shows the event type, the guard and the update") {
  const std::string text = trellis::to_mermaid(vending::table());
  CHECK(text.find("    Vending --> Paying : Dispensed [change due] / count sale\n") !=
        std::string::npos);
  CHECK(text.find("    Vending --> Idle : Dispensed / count sale\n") != std::string::npos);
}

TEST_CASE("to_mermaid: a line break in a name becomes a space, a quote an entity code") {
  const auto t =
      Table{}.from(Light::Red).on(Tick::Advance).when("say \"go\"\nnow", always).to(Light::Green);
  CHECK(trellis::to_mermaid(t).find("Red --> Green : Advance [say #quot;go#quot; now]\n") !=
        std::string::npos);
}

TEST_CASE("to_dot: a line break in a label becomes DOT's \\n") {
  const auto t =
      Table{}.from(Light::Red).on(Tick::Advance).when("two\nlines", always).to(Light::Green);
  CHECK(trellis::to_dot(t).find(R"([label="Advance [two\nlines]"])") != std::string::npos);
}

TEST_CASE("to_mermaid: a phase named by more than an identifier gets an id and its name as label") {
  using stage::Stage;
  const auto t = trellis::TransitionTable<Stage, Tick>{}
                     .from(Stage::Draft)
                     .on(Tick::Advance)
                     .to(Stage::InReview);
  CHECK(trellis::to_mermaid(t, Stage::Draft) ==
        "stateDiagram-v2\n"
        "    state \"in #quot;review#quot;\" as trellis_state_1\n"
        "    [*] --> Draft\n"
        "    Draft --> trellis_state_1 : Advance\n");
  CHECK(trellis::to_dot(t).find(R"("Draft" -> "in \"review\"" [label="Advance"];)") !=
        std::string::npos);
}

TEST_CASE("diagram: a table naming a value its enumeration does not list is an error") {
  const auto t = Table{}.from(static_cast<Light>(7)).on(Tick::Advance).to(Light::Green);
  CHECK_THROWS_WITH_AS(trellis::to_dot(t),
                       "trellis: Light value 7 is not listed in the enumeration of Light "
                       "(expected one of Red, Green, Yellow)",
                       trellis::error);
}

TEST_CASE("doc cycle: the Mermaid diagram matches the hand-written golden file") {
  CHECK(tt::check_golden(
      golden_dir / "doc_cycle.mmd",
      trellis::to_mermaid(doc_cycle::table(), doc_cycle::Phase::PreflightStarted)));
}

TEST_CASE("doc cycle: the DOT diagram matches the hand-written golden file") {
  CHECK(tt::check_golden(golden_dir / "doc_cycle.dot",
                         trellis::to_dot(doc_cycle::table(), doc_cycle::Phase::PreflightStarted)));
}

TEST_CASE("vending: the Mermaid diagram matches the hand-written golden file") {
  CHECK(tt::check_golden(golden_dir / "vending.mmd",
                         trellis::to_mermaid(vending::table(), vending::Phase::Idle)));
}

TEST_CASE("vending: the DOT diagram matches the hand-written golden file") {
  CHECK(tt::check_golden(golden_dir / "vending.dot",
                         trellis::to_dot(vending::table(), vending::Phase::Idle)));
}
