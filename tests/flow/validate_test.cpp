// SPDX-License-Identifier: MIT
/// @file
/// Validating graph files (validate.hpp): each error and warning with its code, file, line and
/// column; check() throws graph_file_error with every error; subgraph files load and validate
/// recursively; the JSON Schema of the format and docs/errors.md agree with the loader.

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/flow/action.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/graph_file.hpp"
#include "trellis/flow/validate.hpp"

#include "source_pos_print.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace validate_test {

namespace fl = trellis::flow;
using nlohmann::json;

namespace {

const std::string graphs = TRELLIS_FLOW_GRAPHS_DIR;

std::string fixture(const std::string& name) { return graphs + "/" + name; }

const fl::ActionRegistry& builtins() {
  static const fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  return registry;
}

fl::Validation validate_file(const std::string& name,
                             const fl::ActionRegistry& actions = builtins()) {
  return fl::validate(fl::load_graph_file(fixture(name)), actions);
}

fl::Validation validate_text(const std::string& text,
                             const fl::ActionRegistry& actions = builtins()) {
  return fl::validate(fl::load_graph_text(text, "test.yaml"), actions);
}

/// The diagnostics of `v` with code `code`.
std::vector<fl::Diagnostic> with_code(const fl::Validation& v, const std::string& code) {
  std::vector<fl::Diagnostic> out;
  for (const fl::Diagnostic& d : v.diagnostics) {
    if (d.code == code) out.push_back(d);
  }
  return out;
}

/// The one error of fixture `name`: its code, position and message checked by the caller.
fl::Diagnostic the_error(const std::string& name) {
  const fl::Validation v = validate_file(name);
  CHECK_FALSE(v.ok());
  const std::vector<fl::Problem> errors = v.errors();
  REQUIRE(errors.size() == 1);
  for (const fl::Diagnostic& d : v.diagnostics) {
    if (d.severity == fl::Severity::error) return d;
  }
  FAIL("no error");
  throw;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string graph_with(const std::string& nodes, const std::string& top = "") {
  return "trellis_graph: 1\nname: t\nstart: a\npermissions: [\"*\"]\n" + top + "nodes:\n" + nodes;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("validate: the good graph, in YAML and JSON, has no diagnostic") {
  for (const std::string name : {"good.yaml", "good.json"}) {
    CAPTURE(name);
    const fl::Validation v = validate_file(name);
    for (const fl::Diagnostic& d : v.diagnostics) {
      CAPTURE(d.code);
      CAPTURE(d.message);
      CHECK(false);
    }
    CHECK(v.ok());
    CHECK_NOTHROW(fl::check(fl::load_graph_file(fixture(name)), builtins()));
  }
}

TEST_CASE("validate: an edge to an unknown node is an error at the edge") {
  const fl::Diagnostic d = the_error("unknown_node.yaml");
  CHECK(d.code == "unknown_node");
  CHECK(d.at == fl::SourcePos{fixture("unknown_node.yaml"), 7, 11});
  CHECK(contains(d.message, "'nowhere'"));
}

TEST_CASE("validate: an unknown on_error target and start are errors") {
  const fl::Validation v = validate_text(
      "trellis_graph: 1\nstart: b\npermissions: []\nnodes:\n"
      "  a: {return: null, on_error: c}\n");
  const auto unknown = with_code(v, "unknown_node");
  REQUIRE(unknown.size() == 2);
  CHECK(unknown[0].at == fl::SourcePos{"test.yaml", 2, 8});
  CHECK(unknown[1].at == fl::SourcePos{"test.yaml", 5, 31});
}

TEST_CASE("validate: a graph without start is an error") {
  const fl::Diagnostic d = the_error("missing_start.yaml");
  CHECK(d.code == "missing_start");
  CHECK(d.at.file == fixture("missing_start.yaml"));
  CHECK(d.at.line == 1);
  CHECK(d.at.column == 1);
}

TEST_CASE("validate: a graph without permissions is an error") {
  const fl::Diagnostic d = the_error("no_permissions.yaml");
  CHECK(d.code == "no_permissions");
  CHECK(d.at == fl::SourcePos{fixture("no_permissions.yaml"), 1, 1});
}

TEST_CASE("validate: an action the registry does not have is an error at its node") {
  const fl::Diagnostic d = the_error("unknown_action.yaml");
  CHECK(d.code == "unknown_action");
  CHECK(d.at == fl::SourcePos{fixture("unknown_action.yaml"), 5, 3});
  CHECK(contains(d.message, "'payments.refund'"));
  CHECK(contains(d.message, "exec, read_file, write_file"));
}

TEST_CASE("validate: a registered action is known") {
  fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  actions.add(
      "payments.refund", [](const fl::ActionCall&) { return json::object(); },
      trellis::agent::EffectPolicy::at_most_once);
  CHECK(validate_file("unknown_action.yaml", actions).ok());
}

TEST_CASE("validate: a literal call that permissions do not grant is an error") {
  const fl::Diagnostic d = the_error("denied_capability.yaml");
  CHECK(d.code == "capability_denied");
  CHECK(d.at == fl::SourcePos{fixture("denied_capability.yaml"), 5, 3});
  CHECK(contains(d.message, "'exec:rm'"));
}

TEST_CASE("validate: a call whose capability depends on a template is left to the run") {
  const fl::Validation v = validate_text(
      "trellis_graph: 1\nstart: a\npermissions: [\"exec:git\"]\n"
      "inputs: {cmd: {type: string, required: true}}\nnodes:\n"
      "  a: {action: exec, params: {command: \"${inputs.cmd}\"}, next: b}\n"
      "  b: {action: exec, params: {command: git, args: [\"${inputs.cmd}\"]}, next: c}\n"
      "  c: {return: null}\n");
  CHECK(v.ok());
}

TEST_CASE("validate: a type error in a condition is an error inside the condition") {
  const fl::Diagnostic d = the_error("condition_type.yaml");
  CHECK(d.code == "type_error");
  CHECK(d.at.file == fixture("condition_type.yaml"));
  CHECK(d.at.line == 10);
  CHECK(d.at.column == 37);  // the '>' of "inputs.count > 'three'"
}

TEST_CASE("validate: a condition that is not a boolean is a type error at the condition") {
  const fl::Validation v = validate_text(
      graph_with("  a:\n    gate: true\n    next:\n      - {to: b, when: \"inputs.n + 1\"}\n"
                 "      - {to: b}\n  b: {return: null}\n",
                 "inputs: {n: {type: number, required: true}}\n"));
  const auto errors = with_code(v, "type_error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].at == fl::SourcePos{"test.yaml", 10, 24});
  CHECK(contains(errors[0].message, "not a boolean"));
}

TEST_CASE("validate: a template reading an undeclared input is a type error") {
  const fl::Validation v = validate_text(graph_with("  a: {return: \"${inputs.missing}\"}\n"));
  const auto errors = with_code(v, "type_error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].at.line == 6);
}

TEST_CASE("validate: a foreach without over is an error at the foreach") {
  const fl::Diagnostic d = the_error("foreach_without_over.yaml");
  CHECK(d.code == "foreach_without_over");
  CHECK(d.at == fl::SourcePos{fixture("foreach_without_over.yaml"), 7, 7});
}

TEST_CASE("validate: a foreach over something that is not a list is a type error") {
  const fl::Validation v = validate_text(graph_with(
      "  a: {foreach: {over: \"${inputs.n}\", action: exec}, next: b}\n  b: {return: null}\n",
      "inputs: {n: {type: number, required: true}}\n"));
  const auto errors = with_code(v, "type_error");
  REQUIRE(errors.size() == 1);
  CHECK(contains(errors[0].message, "not a list"));
}

TEST_CASE("validate: a cycle without max_steps is an error naming the cycle") {
  const fl::Diagnostic d = the_error("cycle.yaml");
  CHECK(d.code == "unbounded_cycle");
  CHECK(d.at == fl::SourcePos{fixture("cycle.yaml"), 5, 3});
  CHECK(contains(d.message, "a -> b -> a"));
}

TEST_CASE("validate: a cycle with max_steps is allowed") {
  std::ifstream in(fixture("cycle.yaml"));
  std::stringstream text;
  text << in.rdbuf() << "max_steps: 50\n";
  CHECK(validate_text(text.str()).ok());
}

TEST_CASE("validate: a node whose last branch has a condition has no default edge") {
  const fl::Validation v = validate_text(graph_with(
      "  a:\n    gate: true\n    next:\n      - {to: b, when: \"true\"}\n  b: {return: null}\n"
      "  c: {gate: true}\n"));
  const auto errors = with_code(v, "no_default_edge");
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].at == fl::SourcePos{"test.yaml", 9, 14});
  CHECK(errors[1].at == fl::SourcePos{"test.yaml", 11, 3});  // c: no next at all
}

TEST_CASE(
    "validate: cache on an action that is not idempotent, or whose result depends on the "
    "run (the file actions), is an error") {
  const fl::Validation v = validate_text(graph_with(
      "  a: {action: exec, params: {command: git}, cache: true, next: b}\n"
      "  b: {action: read_file, params: {path: x}, cache: true, next: c}\n  c: {return: null}\n"));
  const auto errors = with_code(v, "cache_not_idempotent");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].at == fl::SourcePos{"test.yaml", 6, 3});
  // read_file is idempotent, but reads the run's own work directory: another run's result
  // would be wrong.
  const auto uncacheable = with_code(v, "cache_not_cacheable");
  REQUIRE(uncacheable.size() == 1);
  CHECK(uncacheable[0].at == fl::SourcePos{"test.yaml", 7, 3});
  CHECK(v.errors().size() == 2);
}

TEST_CASE("validate: warnings name unreachable nodes, unassigned and unread keys, no return") {
  const fl::Validation v = validate_file("warnings.yaml");
  CHECK(v.ok());  // warnings only
  const std::string file = fixture("warnings.yaml");
  const auto unreachable = with_code(v, "unreachable_node");
  REQUIRE(unreachable.size() == 1);
  CHECK(unreachable[0].at == fl::SourcePos{file, 13, 3});
  CHECK(unreachable[0].severity == fl::Severity::warning);
  const auto never_assigned = with_code(v, "read_never_assigned");
  REQUIRE(never_assigned.size() == 1);
  CHECK(never_assigned[0].at == fl::SourcePos{file, 8, 25});
  CHECK(contains(never_assigned[0].message, "state.missing"));
  const auto never_read = with_code(v, "assigned_never_read");
  REQUIRE(never_read.size() == 1);
  CHECK(never_read[0].at == fl::SourcePos{file, 8, 14});
  CHECK(contains(never_read[0].message, "state.unused"));
  const auto no_return = with_code(v, "no_return");
  REQUIRE(no_return.size() == 1);
  CHECK(no_return[0].at == fl::SourcePos{file, 1, 1});
  CHECK(v.diagnostics.size() == 4);
}

TEST_CASE("validate: diagnostics come in file order") {
  const fl::Validation v = validate_file("warnings.yaml");
  for (std::size_t i = 1; i < v.diagnostics.size(); ++i) {
    const auto& a = v.diagnostics[i - 1].at;
    const auto& b = v.diagnostics[i].at;
    CHECK(std::pair(a.line, a.column) <= std::pair(b.line, b.column));
  }
}

TEST_CASE("check: throws graph_file_error listing every error, none of the warnings") {
  const fl::GraphFile g = fl::load_graph_text(
      "trellis_graph: 1\nnodes:\n  a: {gate: true, next: x}\n  b: {action: nope, next: a}\n",
      "many.yaml");
  try {
    fl::check(g, builtins());
    FAIL("checked");
  } catch (const fl::graph_file_error& e) {
    // missing start, no permissions, unknown node x, unknown action nope
    CHECK(e.problems().size() == 4);
    CHECK(e.problems() == fl::validate(g, builtins()).errors());
  }
}

TEST_CASE("validate: a subgraph file is loaded relative to the file and validated") {
  const fl::Validation v = validate_file("subgraph_parent.yaml");
  CHECK(v.ok());
  CHECK(with_code(v, "subgraph").empty());
}

TEST_CASE("validate: a subgraph file that does not load is an error, with its own problems") {
  const fl::Validation v = validate_file("subgraph_missing.yaml");
  const auto errors = with_code(v, "subgraph");
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].at == fl::SourcePos{fixture("subgraph_missing.yaml"), 6, 3});
  CHECK(contains(errors[0].message, "does not load"));
  CHECK(contains(errors[1].at.file, "sub/missing.yaml"));
}

TEST_CASE("validate: a subgraph file that includes itself, through another, is an error") {
  const fl::Validation v = validate_file("subgraph_loop_a.yaml");
  CHECK_FALSE(v.ok());
  bool named = false;
  for (const fl::Diagnostic& d : with_code(v, "subgraph")) {
    named = named || contains(d.message, "includes itself");
  }
  CHECK(named);
}

TEST_CASE("validate: a subgraph's inputs must be those its file declares") {
  const fl::Validation v = validate_file("subgraph_inputs.yaml");
  const auto errors = with_code(v, "subgraph");
  REQUIRE(errors.size() == 2);
  CHECK(contains(errors[0].message, "'topc', which it does not declare"));
  CHECK(contains(errors[1].message, "its required input 'topic'"));
}

TEST_CASE("scope_type: an action's result has the type of its declared schema") {
  fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  actions.add(
      "test.count",
      [](const fl::ActionCall&) {
        return json{{"n", 1}};
      },
      trellis::agent::EffectPolicy::idempotent,
      {.result_schema = {{"type", "object"}, {"properties", {{"n", {{"type", "number"}}}}}}});
  const fl::GraphFile g = fl::load_graph_text(
      graph_with("  a: {action: test.count, next: b}\n  b: {approval: {request: ok}, next: c}\n"
                 "  c: {return: null}\n",
                 "inputs: {x: {type: string}}\nstate: {k: [1, 2]}\n"),
      "scope.yaml");
  const fl::Type a = fl::scope_type(g, g.nodes[0], actions);
  CHECK(a.kind == fl::TypeKind::object);
  CHECK(a.closed);
  REQUIRE(a.member("result"));
  REQUIRE(a.member("result")->member("n"));
  CHECK(a.member("result")->member("n")->kind == fl::TypeKind::number);
  CHECK(a.member("inputs")->member("x")->kind == fl::TypeKind::string);
  CHECK(a.member("inputs")->member("y") == nullptr);  // closed: undeclared inputs
  CHECK(a.member("state")->member("k")->kind == fl::TypeKind::list);
  CHECK(a.member("decision") == nullptr);
  const fl::Type b = fl::scope_type(g, g.nodes[1], actions);
  REQUIRE(b.member("decision"));
  CHECK(b.member("decision")->member("kind")->kind == fl::TypeKind::string);
  CHECK(b.member("result") == nullptr);
  CHECK(fl::scope_type(g, g.nodes[2], actions).member("result") == nullptr);
}

TEST_CASE("validate: a condition on a result is checked against the action's result schema") {
  fl::ActionRegistry actions = fl::ActionRegistry::with_builtins();
  actions.add(
      "test.count",
      [](const fl::ActionCall&) {
        return json{{"n", 1}};
      },
      trellis::agent::EffectPolicy::idempotent,
      {.result_schema = {{"type", "object"}, {"properties", {{"n", {{"type", "number"}}}}}}});
  const fl::Validation v =
      validate_text(graph_with("  a:\n    action: test.count\n    next:\n"
                               "      - {to: b, when: \"result.n and true\"}\n      - {to: b}\n"
                               "  b: {return: null}\n"),
                    actions);
  CHECK(with_code(v, "type_error").size() == 1);
}

TEST_CASE("graph-file.schema.json: parses as JSON and names exactly the loader's members") {
  const json schema = read_json(TRELLIS_DOCS_DIR "/graph-file.schema.json");
  CHECK(schema.at("$schema") == "https://json-schema.org/draft/2020-12/schema");
  CHECK(schema.at("additionalProperties") == false);

  // Top level: good.json holds every member the loader accepts; the schema names the same.
  const json good = read_json(fixture("good.json"));
  std::set<std::string> in_file;
  for (const auto& [key, value] : good.items()) in_file.insert(key);
  std::set<std::string> in_schema;
  for (const auto& [key, value] : schema.at("properties").items()) in_schema.insert(key);
  CHECK(in_file == in_schema);
  for (const std::string& member : in_schema) {
    CAPTURE(member);
    // The loader knows the member: a file with it does not fail as "unknown member".
    try {
      (void)fl::load_graph_text("trellis_graph: 1\n" + member + ": null\n", "member.yaml");
    } catch (const fl::graph_file_error& e) {
      CHECK_FALSE(contains(e.what(), "unknown member"));
    }
  }
  // A member the schema does not name is unknown to the loader.
  CHECK_THROWS_WITH_AS((void)fl::load_graph_text("trellis_graph: 1\ntitle: x\n", "m.yaml"),
                       doctest::Contains("unknown member 'title'"), fl::graph_file_error);

  // Node members: the schema's node definition names each member the loader takes on a node.
  const json& node = schema.at("$defs").at("node");
  std::set<std::string> node_members;
  for (const auto& [key, value] : node.at("properties").items()) node_members.insert(key);
  CHECK(node_members == std::set<std::string>{"action", "gate", "approval", "return", "foreach",
                                              "subgraph", "params", "cache", "assign", "next",
                                              "on_error"});
  for (const std::string& member : node_members) {
    CAPTURE(member);
    try {
      (void)fl::load_graph_text("trellis_graph: 1\nnodes: {a: {" + member + ": null}}\n",
                                "member.yaml");
    } catch (const fl::graph_file_error& e) {
      CHECK_FALSE(contains(e.what(), "unknown member"));
    }
  }
}

TEST_CASE("flow errors: docs/errors.md lists each flow code, and each class reports its own") {
  std::ifstream doc(TRELLIS_DOCS_DIR "/errors.md");
  REQUIRE(doc.good());
  const std::regex row(R"(^\| `(flow\.[a-z_]+)` \|)");
  std::set<std::string> listed;
  std::string line;
  std::smatch match;
  while (std::getline(doc, line)) {
    if (std::regex_search(line, match, row)) listed.insert(match[1]);
  }
  const std::set<std::string> coded{std::string(fl::graph_file_error({{{"f", 1, 1}, "e"}}).id()),
                                    std::string(fl::expression_error({"f", 1, 1}, "e").id()),
                                    std::string(fl::capability_denied("e").id()),
                                    std::string(fl::action_error("e").id())};
  CHECK(coded == std::set<std::string>{"flow.graph_file", "flow.expression",
                                       "flow.capability_denied", "flow.action"});
  CHECK(listed == coded);
}

}  // namespace validate_test
