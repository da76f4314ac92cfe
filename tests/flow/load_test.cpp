// SPDX-License-Identifier: MIT
/// @file
/// Loading graph files (graph_file.hpp): YAML and JSON give the same GraphFile, values keep
/// their YAML 1.2 types, every member has its line and column, and each shape problem is a
/// graph_file_error naming the file, the line and the column.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/flow/errors.hpp"
#include "trellis/flow/graph_file.hpp"

#include "source_pos_print.hpp"

namespace fl = trellis::flow;
using nlohmann::json;

namespace {

const std::string graphs = TRELLIS_FLOW_GRAPHS_DIR;

std::string fixture(const std::string& name) { return graphs + "/" + name; }

/// What a GraphFile holds, positions and hash aside: equal for the same graph in YAML and JSON.
json summary(const fl::GraphFile& g) {
  json nodes = json::array();
  for (const fl::NodeSpec& n : g.nodes) {
    json next = json::array();
    for (const fl::Branch& b : n.next) next.push_back({b.to, b.when ? b.when->text() : "-"});
    json assign = json::object();
    for (const fl::Assignment& a : n.assign) assign[a.key] = a.value.value();
    json node = {{"name", n.name},        {"kind", fl::to_string(n.kind)},
                 {"action", n.action},    {"params", n.params.value()},
                 {"cache", n.cache},      {"output", n.output.value()},
                 {"assign", assign},      {"next", next},
                 {"on_error", n.on_error}};
    if (n.approval) {
      node["approval"] = {{"request", n.approval->request.text()},
                          {"proposed_input", n.approval->proposed_input.value()},
                          {"risk_reason", n.approval->risk_reason->text()},
                          {"expires_in", n.approval->expires_in->count()}};
    }
    if (n.foreach) {
      node["foreach"] = {{"over", n.foreach->over.text()},
                         {"as", n.foreach->as},
                         {"action", n.foreach->action},
                         {"params", n.foreach->params.value()},
                         {"max_failures", n.foreach->max_failures.value_or(999)}};
    }
    nodes.push_back(node);
  }
  json inputs = json::array();
  for (const fl::InputSpec& i : g.inputs) {
    inputs.push_back({i.name, i.schema, i.required, i.default_value.value_or(json("-"))});
  }
  return {{"format", g.format},
          {"name", g.name},
          {"version", g.version},
          {"start", g.start},
          {"inputs", inputs},
          {"state", g.state},
          {"max_steps", g.max_steps.value_or(0)},
          {"max_concurrency", g.max_concurrency},
          {"on_error", fl::to_string(g.on_error)},
          {"permissions", *g.permissions},
          {"env_requires", g.env_requires},
          {"nodes", nodes}};
}

/// The graph_file_error loading `text` throws (fails the test when it loads).
fl::graph_file_error load_error(const std::string& text, const std::string& name = "test.yaml") {
  try {
    (void)fl::load_graph_text(text, name);
  } catch (const fl::graph_file_error& e) {
    return e;
  }
  FAIL("the text loaded");
  throw;
}

fl::graph_file_error file_error(const std::string& name) {
  try {
    (void)fl::load_graph_file(fixture(name));
  } catch (const fl::graph_file_error& e) {
    return e;
  }
  FAIL("the file loaded");
  throw;
}

/// A minimal graph around `nodes` (indented by two spaces under `nodes:`).
std::string graph_with(const std::string& nodes, const std::string& top = "") {
  return "trellis_graph: 1\nname: t\nstart: a\npermissions: []\n" + top + "nodes:\n" + nodes;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("load: a YAML file and the same graph in JSON give the same GraphFile") {
  const fl::GraphFile yaml = fl::load_graph_file(fixture("good.yaml"));
  const fl::GraphFile json_file = fl::load_graph_file(fixture("good.json"));
  CHECK(summary(yaml) == summary(json_file));
  CHECK(yaml.hash != json_file.hash);  // other bytes
}

TEST_CASE("load: the members of a graph file are read as written") {
  const fl::GraphFile g = fl::load_graph_file(fixture("good.yaml"));
  CHECK(g.path == fixture("good.yaml"));
  CHECK(g.format == 1);
  CHECK(g.name == "triage");
  CHECK(g.version == "3");
  CHECK(g.start == "classify");
  REQUIRE(g.inputs.size() == 2);
  CHECK(g.inputs[0].name == "ticket");
  CHECK(g.inputs[0].required);
  CHECK_FALSE(g.inputs[0].default_value);
  CHECK(g.inputs[0].type.kind == fl::TypeKind::string);
  CHECK(g.inputs[1].default_value == json("fast"));
  CHECK(g.state == json{{"labels", json::array()}, {"notes", ""}});
  CHECK(g.max_steps == 20u);
  CHECK(g.max_concurrency == 2u);
  CHECK(g.on_error == fl::OnError::fail);
  CHECK(*g.permissions == std::vector<std::string>{"exec:git", "read_file", "write_file"});
  CHECK(g.env_requires == std::vector<std::string>{"HOME"});
  REQUIRE(g.nodes.size() == 4);

  const fl::NodeSpec& classify = g.nodes[0];
  CHECK(classify.kind == fl::NodeKind::action);
  CHECK(classify.action == "exec");
  CHECK(classify.params.value() ==
        json{{"command", "git"}, {"args", {"log", "-1", "--format=%s"}}, {"timeout", "30s"}});
  REQUIRE(classify.next.size() == 2);
  CHECK(classify.next[0].to == "escalate");
  REQUIRE(classify.next[0].when);
  CHECK(classify.next[0].when->text() == "'urgent' in state.labels and inputs.mode == 'fast'");
  CHECK_FALSE(classify.next[1].when);
  CHECK(classify.on_error == "done");

  const fl::NodeSpec& escalate = *g.node("escalate");
  CHECK(escalate.kind == fl::NodeKind::approval);
  REQUIRE(escalate.approval);
  CHECK(escalate.approval->expires_in == std::chrono::hours(1));
  CHECK(escalate.approval->proposed_input.value() ==
        json{{"ticket", "${inputs.ticket}"}, {"level", 2}});

  const fl::NodeSpec& record = *g.node("record");
  REQUIRE(record.foreach);
  CHECK(record.foreach->as == "label");
  CHECK(record.foreach->max_failures == 1u);
  CHECK(g.node("done")->kind == fl::NodeKind::return_);
  CHECK(g.node("nowhere") == nullptr);
}

TEST_CASE("load: a value's position is its 1-based line and column") {
  const fl::GraphFile g = fl::load_graph_file(fixture("good.yaml"));
  CHECK(g.start_at == fl::SourcePos{fixture("good.yaml"), 5, 8});
  CHECK(g.nodes[0].at == fl::SourcePos{fixture("good.yaml"), 18, 3});
  CHECK(g.nodes[0].next[0].at.line == 23);
  CHECK(g.nodes[0].next[0].at.column == 14);
  CHECK(g.nodes[0].on_error_at == fl::SourcePos{fixture("good.yaml"), 25, 15});
  CHECK(g.nodes[0].assign[0].at == fl::SourcePos{fixture("good.yaml"), 21, 14});
  CHECK(g.inputs[1].at == fl::SourcePos{fixture("good.yaml"), 8, 3});
  // A condition starts inside its quotes.
  CHECK(g.nodes[0].next[0].when->where() == fl::SourcePos{fixture("good.yaml"), 23, 31});
}

TEST_CASE("load: a column counts characters, not bytes") {
  // "é" is two bytes: the unknown member is the 20th character of its line, its 21st byte.
  const fl::graph_file_error e = load_error(graph_with("  a: {return: \"\xC3\xA9\", nxt: b}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 6, 20});
}

TEST_CASE("load: malformed YAML is a graph_file_error at the parser's position") {
  const fl::graph_file_error e = file_error("malformed.yaml");
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at.file == fixture("malformed.yaml"));
  CHECK(e.problems()[0].at.line == 4);
  CHECK(e.problems()[0].at.column == 20);  // the '}' where a ']' was expected
  CHECK(contains(e.problems()[0].message, "malformed YAML"));
  CHECK(contains(e.what(), fixture("malformed.yaml") + ":4:20: malformed YAML"));
}

TEST_CASE("load: a member of the wrong type names the member, its line and column") {
  const fl::graph_file_error e = file_error("wrong_type.yaml");
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{fixture("wrong_type.yaml"), 4, 12});
  CHECK(e.problems()[0].message == "max_steps must be a whole number of at least 1, not a string");
}

TEST_CASE("load: an unknown member is an error naming the closest known one") {
  const fl::graph_file_error e = file_error("unknown_member.yaml");
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{fixture("unknown_member.yaml"), 7, 5});
  CHECK(e.problems()[0].message == "nodes.a: unknown member 'parms' (did you mean 'params'?)");
}

TEST_CASE("load: an unknown top-level member is an error") {
  const fl::graph_file_error e = load_error(graph_with("  a: {return: null}\n", "max_step: 3\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 5, 1});
  CHECK(contains(e.problems()[0].message, "unknown member 'max_step' (did you mean 'max_steps'?)"));
}

TEST_CASE("load: a file without trellis_graph is not a graph file") {
  const fl::graph_file_error e = file_error("foreign.yaml");
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{fixture("foreign.yaml"), 2, 1});
  CHECK(contains(e.problems()[0].message, "not a trellis graph file"));
}

TEST_CASE("load: a text that is not a mapping is not a graph file") {
  for (const std::string text : {"", "- 1\n- 2\n", "just text\n"}) {
    CAPTURE(text);
    const fl::graph_file_error e = load_error(text);
    REQUIRE(e.problems().size() == 1);
    CHECK(contains(e.problems()[0].message, "not a trellis graph file"));
  }
}

TEST_CASE("load: a newer format is refused, naming both versions, before anything else") {
  const fl::graph_file_error e = file_error("newer.yaml");
  REQUIRE(e.problems().size() == 1);  // its unknown node kind is not reported
  CHECK(e.problems()[0].at == fl::SourcePos{fixture("newer.yaml"), 1, 16});
  CHECK(e.problems()[0].message == "written by a newer trellis (format 2; this release reads 1)");
}

TEST_CASE("load: a format that is not a positive whole number is not a graph file") {
  for (const std::string format : {"0", "\"1\"", "1.5", "[1]"}) {
    CAPTURE(format);
    const fl::graph_file_error e = load_error("trellis_graph: " + format + "\nnodes: {}\n");
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 1, 16});
    CHECK(contains(e.problems()[0].message, "not a trellis graph file"));
  }
}

TEST_CASE("load: every shape problem is listed, in file order") {
  const fl::graph_file_error e = load_error(graph_with(
      "  a:\n    gate: yes\n    next: 3\n  b: {return: null, next: a}\n", "on_error: stop\n"));
  REQUIRE(e.problems().size() == 4);
  CHECK(e.problems()[0].at.line == 5);  // on_error: stop
  CHECK(e.problems()[1].at.line == 8);  // gate: yes (a string in YAML 1.2)
  CHECK(e.problems()[2].at.line == 9);  // next: 3
  CHECK(e.problems()[3].at.line == 10);
  CHECK(contains(e.problems()[3].message, "a return node ends the run"));
  CHECK(contains(e.what(), "(and 3 more)"));
}

TEST_CASE("load: a node without a kind is refused") {
  const fl::graph_file_error e = load_error(graph_with("  a: {next: a}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 6, 3});
  CHECK(contains(e.problems()[0].message, "a node needs one kind"));
}

TEST_CASE("load: a node with two kinds is refused, naming them") {
  const fl::graph_file_error e = load_error(graph_with("  a: {action: exec, return: null}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 6, 3});
  CHECK(contains(e.problems()[0].message, "(action, return)"));
}

TEST_CASE("load: a key written twice is refused") {
  const fl::graph_file_error e = load_error(graph_with("  a: {return: null}\n  a: {return: 1}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 7, 3});
  CHECK(contains(e.problems()[0].message, "the key 'a' appears twice"));
}

TEST_CASE("load: a key written twice is refused in a mapping of many members too") {
  // The loader looks repeated keys up differently in mappings of more than 16 members.
  std::string nodes;
  for (int i = 0; i < 30; ++i) nodes += "  n" + std::to_string(i) + ": {return: null}\n";
  nodes += "  n7: {return: 1}\n";
  const fl::graph_file_error e = load_error(graph_with(nodes));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 36, 3});
  CHECK(contains(e.problems()[0].message, "the key 'n7' appears twice"));
}

TEST_CASE("load: scalars follow the YAML 1.2 core schema; quoted ones stay strings") {
  const fl::GraphFile g = fl::load_graph_text(
      graph_with("  a: {return: null}\n",
                 "state:\n  {a: \"1\", b: 1, c: true, d: 'true', e: ~, f: 0x10, g: 1e3, h: yes,\n"
                 "  i: -7, j: .5, k: \"\", l: null, n: 0o17, o: 2.50, p: !!str 12}\n"),
      "scalars.yaml");
  CHECK(g.state["a"] == json("1"));
  CHECK(g.state["b"] == json(1));
  CHECK(g.state["c"] == json(true));
  CHECK(g.state["d"] == json("true"));
  CHECK(g.state["e"].is_null());
  CHECK(g.state["f"] == json(16));
  CHECK(g.state["g"] == json(1000.0));
  CHECK(g.state["g"].is_number_float());
  CHECK(g.state["h"] == json("yes"));  // YAML 1.1's booleans are strings in 1.2
  CHECK(g.state["i"] == json(-7));
  CHECK(g.state["j"] == json(0.5));
  CHECK(g.state["k"] == json(""));
  CHECK(g.state["l"].is_null());
  CHECK(g.state["p"] == json("12"));
  CHECK(g.state["n"] == json(15));
  CHECK(g.state["o"] == json(2.5));
}

TEST_CASE("load: a number JSON cannot hold is refused") {
  const fl::graph_file_error e = load_error(graph_with("  a: {return: .inf}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 6, 15});
  CHECK(contains(e.problems()[0].message, "no JSON form"));
}

TEST_CASE("load: a YAML tag other than the core schema's is refused") {
  const fl::graph_file_error e = load_error(graph_with("  a: {return: !!binary aGk=}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(contains(e.problems()[0].message, "tag:yaml.org,2002:binary is not supported"));
}

TEST_CASE("load: a recursive alias is refused, not followed") {
  const fl::graph_file_error e = load_error(graph_with("  a: {return: &r [1, *r]}\n"));
  REQUIRE_FALSE(e.problems().empty());
  CHECK(e.problems()[0].at.line == 6);
  CHECK(contains(e.problems()[0].message, "nested deeper than"));
}

TEST_CASE("load: an alias is the value of its anchor") {
  const fl::GraphFile g =
      fl::load_graph_text(graph_with("  a: {return: {x: *shared, y: *shared}}\n",
                                     "state: {base: &shared {retries: 3}}\n"),
                          "alias.yaml");
  CHECK(g.nodes[0].output.value() == json{{"x", {{"retries", 3}}}, {"y", {{"retries", 3}}}});
}

TEST_CASE("load: a second YAML document is refused") {
  const fl::graph_file_error e =
      load_error(graph_with("  a: {return: null}\n") + "---\nname: other\n");
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at.line == 7);  // its "---"
  CHECK(contains(e.problems()[0].message, "one YAML document"));
}

TEST_CASE("load: broken JSON that yaml-cpp reads as endless documents is refused, not looped on") {
  // Found by trellis_fuzz_flow_loader: YAML::LoadAll never returns on it.
  const fl::graph_file_error e = file_error("endless_documents.json");
  REQUIRE_FALSE(e.problems().empty());
  CHECK(e.problems()[0].at.file == fixture("endless_documents.json"));
}

TEST_CASE("load: next is a node's name or a list of {to, when}") {
  const fl::GraphFile g = fl::load_graph_text(
      graph_with("  a:\n    gate: true\n    next:\n      - {to: b, when: \"true\"}\n"
                 "      - to: b\n  b: {gate: true, next: c}\n  c: {return: null}\n"),
      "next.yaml");
  REQUIRE(g.nodes[0].next.size() == 2);
  CHECK(g.nodes[0].next[0].when->text() == "true");
  CHECK(g.nodes[0].next[1].to == "b");
  REQUIRE(g.nodes[1].next.size() == 1);
  CHECK(g.nodes[1].next[0].to == "c");
  CHECK_FALSE(g.nodes[1].next[0].when);

  const fl::graph_file_error e =
      load_error(graph_with("  a: {gate: true, next: [{when: \"true\"}]}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(contains(e.problems()[0].message, "a branch needs `to`"));
}

TEST_CASE("load: expires_in is a positive whole number and a unit") {
  const auto expiry = [](const std::string& text) {
    return fl::load_graph_text(graph_with("  a: {approval: {request: go, expires_in: " + text +
                                          "}, next: b}\n  b: {return: null}\n"),
                               "expiry.yaml")
        .nodes[0]
        .approval->expires_in;
  };
  CHECK(expiry("90s") == std::chrono::seconds(90));
  CHECK(expiry("30m") == std::chrono::minutes(30));
  CHECK(expiry("2h") == std::chrono::hours(2));
  CHECK(expiry("1d") == std::chrono::hours(24));
  for (const std::string bad : {"90", "0s", "1.5h", "h", "2w", "-1s", "1 h"}) {
    CAPTURE(bad);
    const fl::graph_file_error e =
        load_error(graph_with("  a: {approval: {request: go, expires_in: \"" + bad +
                              "\"}, next: b}\n"
                              "  b: {return: null}\n"));
    REQUIRE(e.problems().size() == 1);
    CHECK(contains(e.problems()[0].message, "expires_in must be a positive whole number"));
  }
}

TEST_CASE("load: a foreach takes its failure policy as written") {
  const auto spec = [](const std::string& members) {
    return *fl::load_graph_text(
                graph_with("  a:\n    foreach: {over: \"${inputs.xs}\", action: exec" + members +
                           "}\n    next: b\n  b: {return: null}\n"),
                "policy.yaml")
                .nodes[0]
                .foreach;
  };
  CHECK(spec("").max_failures == 0u);  // stop at the first failure
  CHECK(spec("").as == "item");
  CHECK(spec(", max_failures: null").max_failures == std::nullopt);
  CHECK(spec(", max_failures: 3").max_failures == 3u);
  const fl::ForeachSpec ratio = spec(", max_failure_ratio: 0.25, max_concurrency: 3");
  CHECK(ratio.max_failures == std::nullopt);  // the ratio alone limits
  CHECK(ratio.max_failure_ratio == 0.25);
  CHECK(ratio.max_concurrency == 3u);

  const fl::graph_file_error e =
      load_error(graph_with("  a: {foreach: {over: x, action: exec, max_failure_ratio: 2}, next: "
                            "b}\n  b: {return: 1}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(contains(e.problems()[0].message, "max_failure_ratio must be a number from 0 to 1"));
}

TEST_CASE("load: params and cache belong to action nodes") {
  const fl::graph_file_error e = load_error(
      graph_with("  a: {gate: true, params: {x: 1}, cache: true, next: b}\n  b: {return: 1}\n"));
  REQUIRE(e.problems().size() == 2);
  CHECK(contains(e.problems()[0].message, "params are for action nodes"));
  CHECK(contains(e.problems()[1].message, "caching is for action nodes"));
}

TEST_CASE("load: an assign key is a dotted path of names") {
  const fl::GraphFile g = fl::load_graph_text(
      graph_with("  a: {gate: true, assign: {report.title: x, n: 1}, next: b}\n  b: {return: 1}\n"),
      "assign.yaml");
  REQUIRE(g.nodes[0].assign.size() == 2);
  CHECK(g.nodes[0].assign[0].key == "report.title");
  CHECK(g.nodes[0].assign[1].value.value() == json(1));
  for (const std::string key : {"\"a..b\"", "\"1x\"", "_last_error"}) {
    CAPTURE(key);
    const fl::graph_file_error e = load_error(
        graph_with("  a: {gate: true, assign: {" + key + ": 1}, next: b}\n  b: {return: 1}\n"));
    CHECK(e.problems().size() == 1);
  }
}

TEST_CASE("load: an input's default must have the input's type") {
  const fl::graph_file_error e = load_error(
      graph_with("  a: {return: null}\n", "inputs:\n  n: {type: number, default: many}\n"));
  REQUIRE(e.problems().size() == 1);
  CHECK(e.problems()[0].at == fl::SourcePos{"test.yaml", 6, 30});
  CHECK(contains(e.problems()[0].message, "inputs.n.default: a string is not of the input's type"));
}

TEST_CASE("load: version may be written as a number and is kept as written") {
  const fl::GraphFile g =
      fl::load_graph_text("trellis_graph: 1\nversion: 3.10\nnodes: {}\n", "version.yaml");
  CHECK(g.version == "3.10");
}

TEST_CASE("load: a file that cannot be read is a graph_file_error naming it") {
  const std::string missing = fixture("no-such-file.yaml");
  try {
    (void)fl::load_graph_file(missing);
    FAIL("loaded");
  } catch (const fl::graph_file_error& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].at.file == missing);
    CHECK(contains(e.what(), missing));
    CHECK(contains(e.what(), "No such file or directory"));
  }
  CHECK_THROWS_AS((void)fl::load_graph_file(graphs), fl::graph_file_error);  // a directory
}

TEST_CASE("load: a file's hash is the SHA-256 of its bytes") {
  // sha256("trellis_graph: 1\nnodes: {}\n"), as sha256sum(1) prints it.
  const fl::GraphFile g = fl::load_graph_text("trellis_graph: 1\nnodes: {}\n", "hash.yaml");
  CHECK(g.hash == "560dff10c62ea6378f5d2b6eebc9c779fa32f37adba236b6100629587cb49a93");
}

TEST_CASE("load: a text is named in its positions as given") {
  const fl::GraphFile g = fl::load_graph_text(graph_with("  a: {return: null}\n"), "inline");
  CHECK(g.path == "inline");
  CHECK(g.nodes[0].at.file == "inline");
}

TEST_CASE("load: OnError and NodeKind have their file names") {
  CHECK(fl::to_string(fl::OnError::fail) == "fail");
  CHECK(fl::to_string(fl::OnError::continue_) == "continue");
  CHECK(fl::to_string(fl::NodeKind::action) == "action");
  CHECK(fl::to_string(fl::NodeKind::gate) == "gate");
  CHECK(fl::to_string(fl::NodeKind::approval) == "approval");
  CHECK(fl::to_string(fl::NodeKind::return_) == "return");
  CHECK(fl::to_string(fl::NodeKind::foreach) == "foreach");
  CHECK(fl::to_string(fl::NodeKind::subgraph) == "subgraph");
}
