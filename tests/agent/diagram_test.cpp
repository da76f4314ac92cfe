// SPDX-License-Identifier: MIT
/// @file
/// Declared edges (Graph::edges, Node::successors: undeclared_edge, validation), graph shapes
/// (Graph::shape, stored by run()) and pictures of agent graphs (to_mermaid, to_dot, run_path)
/// against golden files in tests/agent/golden (TRELLIS_UPDATE_GOLDEN=1 rewrites them); every
/// DOT drawing is also given to Graphviz's `dot -Tsvg` when it is installed.

#include <trellis/agent/diagram.hpp>
#include <trellis/agent/errors.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/testing.hpp>

#include "agent_test_support.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#ifndef TRELLIS_AGENT_GOLDEN_DIR
#error "TRELLIS_AGENT_GOLDEN_DIR must name tests/agent/golden (tests/agent/tests.cmake sets it)"
#endif

namespace tt = trellis::testing;

namespace {

const std::filesystem::path golden = TRELLIS_AGENT_GOLDEN_DIR;
const std::string end_node(ag::end_node);

/// A node made of a function that declares its successors, gate and effects itself.
class DeclNode final : public ag::Node<Doc> {
 public:
  DeclNode(std::string name, Step step, std::optional<std::vector<std::string>> successors,
           bool gate = false, std::vector<std::string> effects = {})
      : name_(std::move(name)),
        step_(std::move(step)),
        successors_(std::move(successors)),
        gate_(gate),
        effects_(std::move(effects)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(Doc& s, ag::RunContext& ctx) override {
    s.trail.push_back(name_);
    return step_(s, ctx);
  }
  std::optional<std::vector<std::string>> successors() const override { return successors_; }
  bool approval_gate() const override { return gate_; }
  std::vector<std::string> effect_names() const override { return effects_; }

 private:
  std::string name_;
  Step step_;
  std::optional<std::vector<std::string>> successors_;
  bool gate_;
  std::vector<std::string> effects_;
};

/// A store that records the shapes run() puts.
class ShapeRecordingStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  void put_graph(const ag::GraphShape& shape) override { shapes.push_back(shape); }
  std::vector<ag::GraphShape> shapes;
};

/// draft -> review (an approval gate: pauses until approved, then goes to revise once and to
/// publish after) -> revise -> review -> publish (makes the "publish" effect) -> end.
struct ReviewGraph {
  Harness h;
  int reviews = 0;

  explicit ReviewGraph(bool declared = true) {
    using Opt = std::optional<std::vector<std::string>>;
    const auto decl = [declared](std::vector<std::string> to) {
      return declared ? Opt(std::move(to)) : std::nullopt;
    };
    h.graph.add(std::make_unique<DeclNode>("draft", to("review"), decl({"review"})));
    h.graph.add(std::make_unique<DeclNode>(
        "review",
        [this](Doc&, ag::RunContext& ctx) -> ag::NextStep {
          if (!ctx.approved()) return ag::Interrupt{"look at it"};
          return ag::Goto{++reviews == 1 ? "revise" : "publish"};
        },
        decl({"revise", "publish"}), declared));
    h.graph.add(std::make_unique<DeclNode>("revise", to("review"), decl({"review"})));
    h.graph.add(std::make_unique<DeclNode>(
        "publish",
        [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
          ctx.effect("publish", {{"doc", 1}}, ag::EffectPolicy::at_least_once,
                     [](const ag::EffectCall&) { return 1; });
          return ag::Halt{};
        },
        decl({end_node}), false,
        declared ? std::vector<std::string>{"publish"} : std::vector<std::string>{}));
    h.graph.entry("draft");
  }

  /// Runs the whole story: two approvals, one revision.
  void run_to_end() {
    REQUIRE(h.run().interrupted());
    REQUIRE(h.resume("run-1", ag::Approve{"ana"}).interrupted());
    REQUIRE(h.resume("run-1", ag::Approve{"ana"}).succeeded());
  }
};

/// A graph's shape with a run's path over it, as the drawing cases draw it.
struct Drawing {
  ag::GraphShape shape;
  std::optional<ag::RunPath> path;
  const ag::RunPath* over() const { return path ? &*path : nullptr; }
};

Drawing review_graph() { return {ReviewGraph().h.graph.shape(), std::nullopt}; }

Drawing review_run() {
  ReviewGraph g;
  g.run_to_end();
  return {g.h.graph.shape(), ag::run_path(g.h.store.history("run-1"))};
}

Drawing review_paused() {
  ReviewGraph g;
  REQUIRE(g.h.run().interrupted());
  return {g.h.graph.shape(), ag::run_path(g.h.store.history("run-1"))};
}

Drawing undeclared_run() {
  ReviewGraph g(false);
  g.run_to_end();
  return {g.h.graph.shape(), ag::run_path(g.h.store.history("run-1"))};
}

Drawing failed_run() {
  Harness h;
  h.node("a", to("b")).node("b", [](Doc&, ag::RunContext&) -> ag::NextStep {
    throw std::runtime_error("boom");
  });
  h.graph.entry("a").edges("a", {"b"}).edges("b", {end_node});
  REQUIRE(h.run().failed());
  return {h.graph.shape(), ag::run_path(h.store.history("run-1"))};
}

/// Names that hold what Mermaid and DOT read as syntax.
Drawing escaping() {
  const std::string first = "say \"hi\": <now>";
  const std::string second = "two\nlines; #1 & 50%";
  Drawing d;
  d.shape.fingerprint = "f";
  d.shape.entry = first;
  d.shape.nodes = {{first, {second, end_node}, true, true, {"a|b"}},
                   {second, {}, false, false, {"back\\slash `x`"}}};
  ag::RunPath p;
  p.run_id = "r";
  p.status = RunStatus::Running;
  p.current = second;
  p.visits = {{first, 1}};
  p.edges = {{first, second, false, 1}, {second, "not in the shape {x}", false, 1}};
  d.path = std::move(p);
  return d;
}

std::string mermaid(const Drawing& d) { return ag::to_mermaid(d.shape, d.over()); }
std::string dot(const Drawing& d) { return ag::to_dot(d.shape, d.over()); }

}  // namespace

// --- declared edges --------------------------------------------------------------------------

TEST_CASE("declared edges: a run that stays within its nodes' declarations succeeds") {
  ReviewGraph g;
  g.run_to_end();
  CHECK(g.h.latest().status == RunStatus::Succeeded);
}

TEST_CASE("declared edges: a Goto outside the declared set fails the run with undeclared_edge") {
  Harness h;
  h.node("a", to("c")).node("b", halt()).node("c", halt());
  h.graph.entry("a").edges("a", {"b"});
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::undeclared_edge);
  CHECK(out.detail.find("node 'a'") != std::string::npos);
  CHECK(out.detail.find("'c'") != std::string::npos);
  CHECK(h.calls["c"] == 0);
}

TEST_CASE("declared edges: a Halt from a node that does not declare end_node fails the run") {
  Harness h;
  h.node("a", halt()).node("b", halt());
  h.graph.entry("a").edges("a", {"b"});
  const auto out = h.run();
  CHECK(out.reason == Reason::undeclared_edge);
  CHECK(out.detail.find(end_node) != std::string::npos);
}

TEST_CASE("declared edges: an Interrupt whose `then` is not declared fails the run") {
  Harness h;
  h.node("a",
         [](Doc&, ag::RunContext&) -> ag::NextStep {
           return ag::Interrupt{"wait", {}, "c"};
         })
      .node("b", halt())
      .node("c", halt());
  h.graph.entry("a").edges("a", {"b"});
  const auto out = h.run();
  CHECK(out.reason == Reason::undeclared_edge);
  CHECK(out.detail.find("'c'") != std::string::npos);
}

TEST_CASE("declared edges: an Interrupt without `then` (the node itself) is always allowed") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    if (!ctx.approved()) return ag::Interrupt{"wait"};
    return ag::Halt{};
  });
  h.graph.entry("a").edges("a", {end_node});
  REQUIRE(h.run().interrupted());
  CHECK(h.resume("run-1", ag::Approve{"ana"}).succeeded());
}

TEST_CASE("declared edges: the graph's declaration replaces the node's own") {
  Harness h;
  h.graph.add(std::make_unique<DeclNode>("a", to("c"), std::vector<std::string>{"b"}));
  h.node("b", halt()).node("c", halt());
  h.graph.entry("a").edges("a", {"c"});
  CHECK(h.run().succeeded());
}

TEST_CASE("declared edges: a node's own successors() are enforced") {
  Harness h;
  h.graph.add(std::make_unique<DeclNode>("a", to("c"), std::vector<std::string>{"b"}));
  h.node("b", halt()).node("c", halt());
  h.graph.entry("a");
  CHECK(h.run().reason == Reason::undeclared_edge);
}

TEST_CASE("declared edges: a Goto to a node the graph lacks is still unknown_node") {
  Harness h;
  h.node("a", to("nowhere")).node("b", halt());
  h.graph.entry("a").edges("a", {"b"});
  CHECK(h.run().reason == Reason::unknown_node);
}

TEST_CASE("declared edges: a declared successor that is not a node is a graph_error at start") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a").edges("a", {"missing"});
  CHECK_THROWS_AS(h.run(), ag::graph_error);
  CHECK_FALSE(h.store.latest("run-1").has_value());
}

TEST_CASE("declared edges: declaring edges of a node the graph lacks is a graph_error") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a").edges("ghost", {"a"});
  CHECK_THROWS_AS(h.run(), ag::graph_error);
}

TEST_CASE("declared edges: a graph without declarations goes anywhere, as before") {
  Harness h;
  h.node("a", to("c")).node("b", halt()).node("c", halt());
  h.graph.entry("a");
  CHECK(h.run().succeeded());
}

// --- shapes ----------------------------------------------------------------------------------

TEST_CASE("graph shape: nodes in the order added, with entry, edges, gates and effects") {
  ReviewGraph g;
  const ag::GraphShape s = g.h.graph.shape();
  CHECK(s.fingerprint == g.h.graph.fingerprint());
  CHECK(s.entry == "draft");
  REQUIRE(s.nodes.size() == 4);
  CHECK(s.nodes[0].name == "draft");
  CHECK(s.nodes[1] == ag::NodeShape{"review", {"revise", "publish"}, true, true, {}});
  CHECK(s.nodes[3] == ag::NodeShape{"publish", {end_node}, true, false, {"publish"}});
}

TEST_CASE("graph shape: Graph::approval_gate and Graph::effects mark a node") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a").approval_gate("a").effects("a", {"refund", "mail"});
  const ag::GraphShape shape = h.graph.shape();
  const ag::NodeShape& a = shape.nodes.at(0);
  CHECK(a.approval);
  CHECK(a.effects == std::vector<std::string>{"refund", "mail"});
  CHECK_FALSE(a.declared);
}

TEST_CASE("graph shape: run() stores the graph's shape in the store") {
  ReviewGraph g;
  ShapeRecordingStore store(g.h.store);
  g.h.graph.run("run-1", Doc{}, store);
  REQUIRE(store.shapes.size() == 1);
  CHECK(store.shapes[0] == g.h.graph.shape());
}

// --- run paths -------------------------------------------------------------------------------

TEST_CASE("run_path: counts the steps on each edge, marks pauses, and ends at end_node") {
  ReviewGraph g;
  g.run_to_end();
  const ag::RunPath p = ag::run_path(g.h.store.history("run-1"));
  CHECK(p.run_id == "run-1");
  CHECK(p.status == RunStatus::Succeeded);
  CHECK(p.current == end_node);
  CHECK(p.steps == 7);
  CHECK(p.visits == std::map<std::string, std::uint64_t>{
                        {"draft", 1}, {"review", 4}, {"revise", 1}, {"publish", 1}});
  const std::vector<ag::RunPath::Edge> edges{
      {"draft", "review", false, 1},   {"review", "review", true, 2},
      {"review", "revise", false, 1},  {"revise", "review", false, 1},
      {"review", "publish", false, 1}, {"publish", end_node, false, 1}};
  CHECK(p.edges == edges);
}

TEST_CASE("run_path: a paused run stands at the node that runs after the decision") {
  ReviewGraph g;
  REQUIRE(g.h.run().interrupted());
  const ag::RunPath p = ag::run_path(g.h.store.history("run-1"));
  CHECK(p.status == RunStatus::WaitingApproval);
  CHECK(p.current == "review");
}

TEST_CASE("run_path: an empty history is an empty path") {
  CHECK(ag::run_path({}) == ag::RunPath{});
}

// --- pictures --------------------------------------------------------------------------------

TEST_CASE("to_mermaid: the declared graph matches its golden file") {
  ReviewGraph g;
  CHECK(tt::check_golden(golden / "review.mmd", g.h.graph.to_mermaid()));
  CHECK(g.h.graph.to_mermaid() == mermaid(review_graph()));
}

TEST_CASE("to_dot: the declared graph matches its golden file") {
  ReviewGraph g;
  CHECK(tt::check_golden(golden / "review.dot", g.h.graph.to_dot()));
  CHECK(g.h.graph.to_dot() == dot(review_graph()));
}

TEST_CASE("to_mermaid/to_dot: a run's path over the declared graph matches its golden files") {
  const Drawing d = review_run();
  CHECK(tt::check_golden(golden / "review_run.mmd", mermaid(d)));
  CHECK(tt::check_golden(golden / "review_run.dot", dot(d)));
}

TEST_CASE("to_mermaid/to_dot: a paused run highlights the node it waits at") {
  const Drawing d = review_paused();
  CHECK(tt::check_golden(golden / "review_paused.mmd", mermaid(d)));
  CHECK(tt::check_golden(golden / "review_paused.dot", dot(d)));
}

TEST_CASE("to_mermaid/to_dot: a graph without declarations draws the taken edges dashed") {
  CHECK(tt::check_golden(golden / "undeclared.mmd", ReviewGraph(false).h.graph.to_mermaid()));
  const Drawing d = undeclared_run();
  CHECK(tt::check_golden(golden / "undeclared_run.mmd", mermaid(d)));
  CHECK(tt::check_golden(golden / "undeclared_run.dot", dot(d)));
}

TEST_CASE("to_mermaid/to_dot: a failed run marks the node it failed at") {
  const Drawing d = failed_run();
  CHECK(d.path->current == "b");
  CHECK(tt::check_golden(golden / "failed_run.mmd", mermaid(d)));
  CHECK(tt::check_golden(golden / "failed_run.dot", dot(d)));
}

TEST_CASE("to_mermaid/to_dot: node names are escaped, whatever they hold") {
  const Drawing d = escaping();
  const std::string text = mermaid(d);
  CHECK(tt::check_golden(golden / "escaping.mmd", text));
  CHECK(tt::check_golden(golden / "escaping.dot", dot(d)));
  CHECK(text.find("\"hi\"") == std::string::npos);  // no raw text Mermaid reads as syntax
  CHECK(text.find("<now>") == std::string::npos);
}

TEST_CASE("to_dot: Graphviz's dot accepts every drawing (skipped without dot)") {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    MESSAGE("Graphviz's dot is not installed: the DOT drawings were not checked with it");
    return;
  }
  const std::vector<Drawing> drawings{review_graph(),   review_run(), review_paused(),
                                      undeclared_run(), failed_run(), escaping()};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("trellis_diagram_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < drawings.size(); ++i) {
    const std::string text = dot(drawings[i]);
    const std::filesystem::path file = dir / ("drawing" + std::to_string(i) + ".dot");
    std::ofstream(file) << text;
    const std::string command =
        "dot -Tsvg '" + file.string() + "' -o '" + (dir / "out.svg").string() + "' 2>&1";
    INFO(text);
    CHECK(std::system(command.c_str()) == 0);
  }
  std::filesystem::remove_all(dir);
}
