// SPDX-License-Identifier: MIT
#include <trellis/machine/diagram.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <trellis/testing/golden.hpp>
#include <trellis/testing/transition_matrix.hpp>

#include "document_cycle.hpp"
#include "traffic_light.hpp"

#ifndef TRELLIS_MACHINE_GOLDEN_DIR
#error \
    "TRELLIS_MACHINE_GOLDEN_DIR must name tests/machine/golden (tests/machine/tests.cmake sets it)"
#endif

namespace tt = trellis::testing;
using light::Light;
using light::Tick;
using Table = trellis::TransitionTable<Light, Tick>;

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
