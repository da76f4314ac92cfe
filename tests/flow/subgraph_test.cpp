// SPDX-License-Identifier: MIT
/// @file
/// FileGraph subgraph nodes (issue 16): a node runs another graph file as a child run; its
/// `return` output is the node's `result`; approvals surface on the parent; a failing child is
/// the node's failure (on_error); the child's calls need the parent's permissions too.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/agent/failpoint.hpp"
#include "trellis/agent/memory_store.hpp"
#include "trellis/flow/builtin_actions.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/file_graph.hpp"
#include "trellis/persist/errors.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace subgraph_test {

namespace ag = trellis::agent;
namespace fl = trellis::flow;
using nlohmann::json;

namespace {

/// A folder of graph files, removed at the end.
struct Files {
  std::filesystem::path dir;
  Files() {
    dir = std::filesystem::temp_directory_path() /
          ("trellis-subgraph-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(dir / "sub");
  }
  ~Files() { std::filesystem::remove_all(dir); }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = dir / name;
    std::ofstream(p) << text;
    return p;
  }
};

/// The built-ins and `test.echo` (returns its params, counted), `test.fail` (throws).
struct Actions {
  fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  std::map<std::string, int> calls;
  Actions() {
    registry.add(
        "test.echo",
        [this](const fl::ActionCall& c) {
          ++calls["test.echo"];
          return c.params;
        },
        ag::EffectPolicy::idempotent);
    registry.add(
        "test.fail",
        [this](const fl::ActionCall&) -> json {
          ++calls["test.fail"];
          throw std::runtime_error("the checklist is incomplete");
        },
        ag::EffectPolicy::at_least_once);
  }
};

const char* parent_yaml = R"(trellis_graph: 1
name: parent
version: "1"
start: check
inputs:
  version: {type: string, required: true}
permissions: [PERMS]
nodes:
  check:
    subgraph: {graph: sub/child.yaml, inputs: {version: "${inputs.version}"}}
    assign: {checked: "${result.checked}"}
    next: done
    on_error: broken
  broken:
    return: {error: "${state._last_error.code}"}
  done:
    return: {checked: "${state.checked}"}
)";

std::string parent_with(const std::string& perms) {
  std::string y = parent_yaml;
  y.replace(y.find("PERMS"), 5, perms);
  return y;
}

const char* child_echo = R"(trellis_graph: 1
name: child
version: "1"
start: echo
inputs:
  version: {type: string, required: true}
permissions: ["test.*"]
nodes:
  echo:
    action: test.echo
    params: {v: "${inputs.version}"}
    assign: {v: "${result.v}"}
    next: done
  done:
    return: {checked: "${state.v} ok"}
)";

}  // namespace

TEST_CASE("file subgraph: the child's return output is the node's result; both are runs") {
  Files f;
  f.write("sub/child.yaml", child_echo);
  Actions a;
  auto fg = fl::FileGraph::load(f.write("parent.yaml", parent_with("\"test.*\"")), a.registry,
                                {.work_root = f.dir / "work"});
  ag::MemoryStore store;
  const auto out = fg.run("p-1", {{"version", "1.2"}}, store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json{{"checked", "1.2 ok"}});
  const auto child = store.latest("p-1.check.0");
  REQUIRE(child.has_value());
  CHECK(child->status == ag::RunStatus::Succeeded);
  CHECK(store.runs().size() == 2);
  CHECK(a.calls["test.echo"] == 1);
}

TEST_CASE("file subgraph: the child's calls need the parent's permissions too") {
  Files f;
  f.write("sub/child.yaml", child_echo);
  Actions a;
  auto fg = fl::FileGraph::load(f.write("parent.yaml", parent_with("\"read_file\"")), a.registry,
                                {.work_root = f.dir / "work"});
  ag::MemoryStore store;
  const auto out = fg.run("p-1", {{"version", "1.2"}}, store);
  REQUIRE(out.succeeded());  // through on_error
  CHECK(out.state->output == json{{"error", "agent.subgraph_failed"}});
  CHECK(a.calls["test.echo"] == 0);
  CHECK(store.latest("p-1.check.0")->status == ag::RunStatus::Failed);
}

TEST_CASE("file subgraph: a failing child goes to the parent node's on_error") {
  Files f;
  f.write("sub/child.yaml", R"(trellis_graph: 1
name: child
version: "1"
start: fail
inputs:
  version: {type: string}
permissions: ["test.*"]
nodes:
  fail:
    action: test.fail
    next: done
  done:
    return: {checked: no}
)");
  Actions a;
  auto fg = fl::FileGraph::load(f.write("parent.yaml", parent_with("\"test.*\"")), a.registry,
                                {.work_root = f.dir / "work"});
  ag::MemoryStore store;
  const auto out = fg.run("p-1", {{"version", "1.2"}}, store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json{{"error", "agent.subgraph_failed"}});
  CHECK(out.state->state.at("_last_error")
            .at("error")
            .get<std::string>()
            .find("the checklist is incomplete") != std::string::npos);
}

TEST_CASE(
    "file subgraph: an approval in the child surfaces on the parent; the decision reaches it") {
  Files f;
  f.write("sub/child.yaml", R"(trellis_graph: 1
name: child
version: "1"
start: sign
inputs:
  version: {type: string, required: true}
permissions: []
nodes:
  sign:
    approval:
      request: "Sign off ${inputs.version}?"
      proposed_input: {version: "${inputs.version}"}
    assign: {by: "${decision.reviewer}"}
    next: done
  done:
    return: {checked: "signed by ${state.by}"}
)");
  Actions a;
  auto fg = fl::FileGraph::load(f.write("parent.yaml", parent_with("")), a.registry,
                                {.work_root = f.dir / "work"});
  ag::MemoryStore store;
  const auto paused = fg.run("p-1", {{"version", "1.2"}}, store);
  REQUIRE(paused.interrupted());
  REQUIRE(paused.interrupt->approval.has_value());
  CHECK(paused.interrupt->approval->action == "Sign off 1.2?");
  CHECK(paused.interrupt->approval->proposed_input == json{{"version", "1.2"}});
  CHECK(paused.interrupt->reason.starts_with("subgraph p-1.check.0 request "));
  const auto out = fg.graph().resume("p-1", store, ag::Approve{.reviewer = "ana"});
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json{{"checked", "signed by ana"}});
}

TEST_CASE("file subgraph: a crash inside the child resumes the same child") {
  Files f;
  f.write("sub/child.yaml", child_echo);
  Actions a;
  auto fg = fl::FileGraph::load(f.write("parent.yaml", parent_with("\"test.*\"")), a.registry,
                                {.work_root = f.dir / "work"});
  ag::MemoryStore store;
  {
    trellis::ScopedFailpoint fp("step.after_commit", trellis::FailpointAction::error, 1);
    CHECK_THROWS_AS(fg.run("p-1", {{"version", "1.2"}}, store), trellis::persist_error);
  }
  const auto out = fg.graph().resume("p-1", store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json{{"checked", "1.2 ok"}});
  CHECK(a.calls["test.echo"] == 1);  // the child's step replayed, not called again
  CHECK(store.runs().size() == 2);
}

}  // namespace subgraph_test
