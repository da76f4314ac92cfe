// SPDX-License-Identifier: MIT
/// @file
/// FileGraph (issue 16): graph files run on the durable engine, on MemoryStore: actions and
/// their effects, assign on a candidate, conditional edges, approvals, error routing, the
/// graph-level `continue`, capabilities at run time, foreach item by item, inputs.

#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/agent/memory_store.hpp"
#include "trellis/flow/builtin_actions.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/file_graph.hpp"

namespace ag = trellis::agent;
namespace fl = trellis::flow;
using nlohmann::json;

namespace {

/// A registry with the built-ins and a few test actions: `test.add` ({a, b} -> {sum}),
/// `test.fail` (throws), `test.echo` (returns its params), counted per call.
struct Actions {
  fl::ActionRegistry registry = fl::ActionRegistry::with_builtins();
  std::map<std::string, int> calls;
  std::function<void(const json&)> on_echo;

  Actions() {
    registry.add(
        "test.add",
        [this](const fl::ActionCall& c) {
          ++calls["test.add"];
          return json{{"sum", c.params.at("a").get<int>() + c.params.at("b").get<int>()}};
        },
        ag::EffectPolicy::idempotent,
        {.result_schema = {{"type", "object"}, {"properties", {{"sum", {{"type", "number"}}}}}}});
    registry.add(
        "test.fail",
        [this](const fl::ActionCall&) -> json {
          ++calls["test.fail"];
          throw std::runtime_error("the service said no");
        },
        ag::EffectPolicy::at_least_once);
    registry.add(
        "test.echo",
        [this](const fl::ActionCall& c) {
          ++calls["test.echo"];
          calls["test.echo:" + c.params.dump()] += 1;
          if (on_echo) on_echo(c.params);
          return c.params;
        },
        ag::EffectPolicy::idempotent);
  }
};

fl::FileGraph make(const std::string& yaml, const Actions& a, fl::FileGraphOptions o = {}) {
  return fl::FileGraph(fl::load_graph_text(yaml, "test.yaml"), a.registry, std::move(o));
}

}  // namespace

TEST_CASE("file graph: an action's result is assigned and a condition chooses the edge") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: sums
version: "1"
start: add
inputs:
  x: {type: number, required: true}
state: {total: 0}
permissions: ["test.*"]
nodes:
  add:
    action: test.add
    params: {a: "${inputs.x}", b: 10}
    assign: {total: "${result.sum}"}
    next:
      - {to: big, when: "state.total > 15"}
      - {to: small}
  big:
    return: {size: big, total: "${state.total}"}
  small:
    return: {size: small, total: "${state.total}"}
)",
                 a);
  ag::MemoryStore store;
  auto big = fg.run("r1", {{"x", 7}}, store);
  REQUIRE(big.succeeded());
  CHECK(big.state->output == json{{"size", "big"}, {"total", 17}});
  CHECK(big.state->state.at("total") == 17);
  auto small = fg.run("r2", {{"x", 1}}, store);
  REQUIRE(small.succeeded());
  CHECK(small.state->output.at("size") == "small");
  // The action ran as an effect: its receipt is stored with its name and params.
  const auto effects = store.effects("r1");
  REQUIRE(effects.size() == 1);
  CHECK(effects[0].name == "test.add");
  CHECK(effects[0].args == json{{"a", 7}, {"b", 10}});
}

TEST_CASE("file graph: every assign reads the state before the assign (a swap swaps)") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: swap
version: "1"
start: swap
state: {x: 1, y: 2}
permissions: []
nodes:
  swap:
    gate: true
    assign: {x: "${state.y}", y: "${state.x}"}
    next: done
  done:
    return: "${state}"
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json{{"x", 2}, {"y", 1}});
}

TEST_CASE(
    "file graph: a failing assign discards the candidate, and on_error sees the unchanged state "
    "with _last_error") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: discard
version: "1"
start: step
state: {kept: old}
permissions: []
nodes:
  step:
    gate: true
    assign: {kept: new, broken: "${state.missing.deeper}"}
    next: done
    on_error: recover
  recover:
    return: "${state}"
  done:
    return: ok
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output.at("kept") == "old");
  CHECK_FALSE(out.state->output.contains("broken"));
  const json& last = out.state->output.at("_last_error");
  CHECK(last.at("node") == "step");
  CHECK(last.at("code") == "flow.expression");
  CHECK(last.at("error").get<std::string>().find("state.missing") != std::string::npos);
}

TEST_CASE("file graph: an action that throws goes to the node's on_error target") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: route
version: "1"
start: call
permissions: ["test.*"]
nodes:
  call:
    action: test.fail
    next: done
    on_error: handle
  handle:
    return: {handled: "${state._last_error.error}"}
  done:
    return: {handled: false}
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.reason == ag::Reason::none);
  CHECK(out.state->output.at("handled").get<std::string>().find("the service said no") !=
        std::string::npos);
}

TEST_CASE("file graph: without on_error a node's failure fails the run with node_error") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: fail
version: "1"
start: call
permissions: ["test.*"]
nodes:
  call:
    action: test.fail
    next: done
  done:
    return: ok
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  CHECK(out.failed());
  CHECK(out.reason == ag::Reason::node_error);
  CHECK(out.detail.find("the service said no") != std::string::npos);
}

TEST_CASE(
    "file graph: with on_error continue the run goes on along the default edge and ends "
    "completed_with_errors, the errors listed") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: go-on
version: "1"
start: call
on_error: continue
permissions: ["test.*"]
nodes:
  call:
    action: test.fail
    next: done
  done:
    return: finished
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.reason == ag::Reason::completed_with_errors);
  CHECK(out.detail.find("node 'call'") != std::string::npos);
  REQUIRE(out.state->errors.size() == 1);
  CHECK(out.state->errors[0].at("node") == "call");
  CHECK(out.state->output == "finished");
}

TEST_CASE(
    "file graph: an action whose capability the permissions do not grant is a node error, "
    "routed, and the action is not called") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: caps
version: "1"
start: run
inputs:
  cmd: {type: string, required: true}
permissions: ["exec:echo"]
nodes:
  run:
    action: exec
    params: {command: "${inputs.cmd}", args: [hi]}
    next: done
    on_error: denied
  denied:
    return: "${state._last_error.code}"
  done:
    return: "${state}"
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", {{"cmd", "touch"}}, store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == "flow.capability_denied");
  CHECK(store.effects("r").empty());  // nothing was started
}

TEST_CASE("file graph: an approval node pauses with its rendered request, then routes") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: gate
version: "1"
start: ask
inputs:
  amount: {type: number, required: true}
permissions: []
nodes:
  ask:
    approval:
      request: "Refund ${inputs.amount} EUR?"
      proposed_input: {amount: "${inputs.amount}"}
      risk_reason: money leaves
      expires_in: 1h
    assign: {approved_by: "${decision.reviewer}"}
    next: done
  done:
    return: "${state.approved_by}"
)",
                 a);
  ag::MemoryStore store;
  auto paused = fg.run("r", {{"amount", 120}}, store);
  REQUIRE(paused.interrupted());
  REQUIRE(paused.interrupt->approval.has_value());
  CHECK(paused.interrupt->approval->action == "Refund 120 EUR?");
  CHECK(paused.interrupt->approval->proposed_input == json{{"amount", 120}});
  CHECK(paused.interrupt->approval->risk_reason == "money leaves");
  CHECK(paused.interrupt->approval->expires_at.has_value());
  auto done = fg.graph().resume("r", store, ag::Approve{.reviewer = "ana"});
  REQUIRE(done.succeeded());
  CHECK(done.state->output == "ana");
}

TEST_CASE("file graph: foreach calls its action once per item and collects results in order") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: fan
version: "1"
start: each
state: {xs: [3, 1, 2]}
permissions: ["test.*"]
nodes:
  each:
    foreach:
      over: "${state.xs}"
      as: x
      action: test.add
      params: {a: "${x}", b: "${index}"}
    assign: {sums: "${result}"}
    next: done
  done:
    return: "${state.sums}"
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.state->output == json::array({{{"sum", 3}}, {{"sum", 2}}, {{"sum", 4}}}));
  CHECK(store.effects("r").size() == 3);
}

TEST_CASE("file graph: a foreach stopped midway runs again only its unfinished items") {
  Actions a;
  std::stop_source stop;
  a.on_echo = [&](const json& params) {
    if (params.at("n") == 2) stop.request_stop();  // cancelled after item 2's call
  };
  auto fg = make(R"(trellis_graph: 1
name: fan
version: "1"
start: each
state: {ns: [0, 1, 2, 3, 4]}
permissions: ["test.*"]
nodes:
  each:
    foreach: {over: "${state.ns}", as: n, action: test.echo, params: {n: "${n}"},
              max_concurrency: 1}
    assign: {out: "${result}"}
    next: done
  done:
    return: "${state.out}"
)",
                 a);
  ag::MemoryStore store;
  auto first = fg.graph().run("r", fg.initial(json::object()), store, {.stop = stop.get_token()});
  CHECK(first.cancelled());
  CHECK(a.calls["test.echo"] == 3);
  a.on_echo = nullptr;
  auto done = fg.graph().resume("r", store);
  REQUIRE(done.succeeded());
  CHECK(done.state->output ==
        json::array({{{"n", 0}}, {{"n", 1}}, {{"n", 2}}, {{"n", 3}}, {{"n", 4}}}));
  // Items 0-2 replayed from their receipts; 3 and 4 ran once.
  for (int n = 0; n < 5; ++n) CHECK(a.calls["test.echo:" + json{{"n", n}}.dump()] == 1);
}

TEST_CASE("file graph: a foreach tolerates failures up to max_failures and lists them") {
  Actions a;
  a.registry.add(
      "test.odd_fails",
      [](const fl::ActionCall& c) -> json {
        if (c.params.at("n").get<int>() % 2 == 1) throw std::runtime_error("odd");
        return c.params.at("n");
      },
      ag::EffectPolicy::idempotent);
  auto fg = make(R"(trellis_graph: 1
name: tolerate
version: "1"
start: each
state: {ns: [0, 1, 2, 3]}
permissions: ["test.*"]
nodes:
  each:
    foreach: {over: "${state.ns}", as: n, action: test.odd_fails, params: {n: "${n}"},
              max_failures: 2}
    assign: {out: "${result}"}
    next: done
  done:
    return: "${state.out}"
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", json::object(), store);
  REQUIRE(out.succeeded());
  CHECK(out.reason == ag::Reason::completed_with_errors);
  CHECK(out.state->output == json::array({0, nullptr, 2, nullptr}));
  CHECK(out.state->errors.size() == 2);
}

TEST_CASE("file graph: inputs are checked against their declarations, defaults filled") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: inputs
version: "1"
start: done
inputs:
  topic: {type: string, required: true}
  depth: {type: number, default: 2}
permissions: []
nodes:
  done:
    return: "${inputs}"
)",
                 a);
  CHECK(fg.initial({{"topic", "x"}}).inputs == json{{"topic", "x"}, {"depth", 2}});
  CHECK_THROWS_AS(fg.initial(json::object()), fl::graph_file_error);              // required
  CHECK_THROWS_AS(fg.initial({{"topic", 3}}), fl::graph_file_error);              // wrong type
  CHECK_THROWS_AS(fg.initial({{"topic", "x"}, {"x", 1}}), fl::graph_file_error);  // undeclared
  try {
    fg.initial(json::object());
  } catch (const fl::graph_file_error& e) {
    REQUIRE_FALSE(e.problems().empty());
    CHECK(e.problems()[0].at.file == "test.yaml");
    CHECK(e.problems()[0].at.line == 6);  // where `topic` is declared
    CHECK(std::string(e.what()).find("topic") != std::string::npos);
  }
}

TEST_CASE(
    "file graph: a file whose version and node names are unchanged resumes its runs; "
    "another version is refused") {
  Actions a;
  const std::string v1 = R"(trellis_graph: 1
name: edit
version: "1"
start: ask
permissions: []
nodes:
  ask:
    approval: {request: "go?"}
    next: done
  done:
    return: v1
)";
  ag::MemoryStore store;
  {
    auto fg = make(v1, a);
    REQUIRE(fg.run("r", json::object(), store).interrupted());
  }
  std::string edited = v1;
  edited.replace(edited.find("return: v1"), 10, "return: v2");
  auto same = make(edited, a);
  auto out = same.graph().resume("r", store, ag::Approve{});
  REQUIRE(out.succeeded());
  CHECK(out.state->output == "v2");

  REQUIRE(make(v1, a).run("r2", json::object(), store).interrupted());
  std::string bumped = v1;
  bumped.replace(bumped.find("version: \"1\""), 12, "version: \"2\"");
  auto other = make(bumped, a);
  CHECK_THROWS_AS(other.graph().resume("r2", store, ag::Approve{}), ag::graph_mismatch);
}

TEST_CASE(
    "file graph: a file edited to add a node resumes its waiting runs; one that drops a node on "
    "their path refuses them, naming it") {
  Actions a;
  const std::string v1 = R"(trellis_graph: 1
name: edit
version: "1"
start: ask
permissions: []
nodes:
  ask:
    approval: {request: "go?"}
    next: done
  done:
    return: v1
)";
  ag::MemoryStore store;
  REQUIRE(make(v1, a).run("r", json::object(), store).interrupted());
  REQUIRE(make(v1, a).run("r2", json::object(), store).interrupted());
  // A new node, off the waiting runs' path (ask, then done).
  const std::string added = v1 + R"(  later:
    return: unused
)";
  auto grown = make(added, a);
  auto out = grown.graph().resume("r", store, ag::Approve{});
  REQUIRE(out.succeeded());
  CHECK(out.state->output == "v1");

  // `ask`, where the run waits, renamed: refused, nothing written.
  std::string renamed = v1;
  renamed.replace(renamed.find("start: ask"), 10, "start: gate");
  renamed.replace(renamed.find("  ask:"), 6, "  gate:");
  const auto before = store.history("r2").size();
  try {
    make(renamed, a).graph().resume("r2", store, ag::Approve{});
    FAIL("resumed a run whose path the file lost");
  } catch (const ag::graph_mismatch& e) {
    CHECK(std::string(e.what()).find("'ask'") != std::string::npos);
  }
  CHECK(store.history("r2").size() == before);
}

TEST_CASE(
    "file graph: an edge whose condition fails on the assigned state undoes the assign, and "
    "on_error sees the state as it was") {
  Actions a;
  auto fg = make(R"(trellis_graph: 1
name: undo
version: "1"
start: step
inputs:
  s: {type: string, required: true}
state: {x: 0, nested: {a: 1}}
permissions: []
nodes:
  step:
    gate: true
    assign: {x: "${inputs.s}", nested.b: 2, fresh: yes}
    next:
      - {to: done, when: "state.x > 1"}
      - {to: done}
    on_error: recover
  recover:
    return: "${state}"
  done:
    return: ok
)",
                 a);
  ag::MemoryStore store;
  auto out = fg.run("r", {{"s", "text"}}, store);
  REQUIRE(out.succeeded());
  const json& st = out.state->output;
  CHECK(st.at("x") == 0);
  CHECK(st.at("nested") == json{{"a", 1}});
  CHECK_FALSE(st.contains("fresh"));
  CHECK(st.at("_last_error").at("code") == "flow.expression");
}

// ---- cache: true (node result caching) ----------------------------------------------------------

namespace {

const char* kCachedAdd = R"(trellis_graph: 1
name: cached
version: "1"
start: add
inputs:
  x: {type: number, required: true}
permissions: ["test.*"]
nodes:
  add:
    action: test.add
    cache: true
    params: {a: "${inputs.x}", b: 10}
    assign: {total: "${result.sum}"}
    next: done
  done:
    return: {total: "${state.total}"}
)";

}  // namespace

TEST_CASE("file graph: a cached action's second run with the same params is a cache hit") {
  Actions a;
  auto fg = make(kCachedAdd, a);
  ag::MemoryStore store;
  REQUIRE(fg.run("r1", {{"x", 7}}, store).succeeded());
  CHECK(a.calls["test.add"] == 1);
  CHECK(store.effects("r1").at(0).cached_from.empty());
  const auto second = fg.run("r2", {{"x", 7}}, store);
  REQUIRE(second.succeeded());
  CHECK(second.state->output == json{{"total", 17}});
  CHECK(a.calls["test.add"] == 1);  // not called again
  const auto hit = store.effects("r2");
  REQUIRE(hit.size() == 1);
  CHECK_FALSE(hit[0].cached_from.empty());
  const auto entry = store.cached(hit[0].cached_from);
  REQUIRE(entry);
  CHECK(entry->run_id == "r1");
  CHECK(entry->node == "add");
  CHECK(entry->action == "test.add");
  CHECK(entry->version == "1");
  CHECK(entry->graph == fg.file().content_hash);
  // Other params: a miss.
  REQUIRE(fg.run("r3", {{"x", 8}}, store).succeeded());
  CHECK(a.calls["test.add"] == 2);
  CHECK(store.effects("r3").at(0).cached_from.empty());
}

TEST_CASE("file graph: the same graph spelled otherwise (JSON, member order) hits the cache") {
  Actions a;
  auto yaml = make(kCachedAdd, a);
  auto as_json =
      fl::FileGraph(fl::load_graph_text(
                        R"({"version": "1", "trellis_graph": 1, "name": "cached", "start": "add",
              "permissions": ["test.*"], "inputs": {"x": {"type": "number", "required": true}},
              "nodes": {"done": {"return": {"total": "${state.total}"}},
                        "add": {"params": {"b": 10, "a": "${inputs.x}"}, "action": "test.add",
                                "cache": true, "assign": {"total": "${result.sum}"},
                                "next": "done"}}})",
                        "test.json"),
                    a.registry);
  CHECK(yaml.file().hash != as_json.file().hash);
  CHECK(yaml.file().content_hash == as_json.file().content_hash);
  ag::MemoryStore store;
  REQUIRE(yaml.run("r1", {{"x", 7}}, store).succeeded());
  REQUIRE(as_json.run("r2", {{"x", 7}}, store).succeeded());
  CHECK(a.calls["test.add"] == 1);
}

TEST_CASE("file graph: a bumped action version misses the cache") {
  Actions a;
  ag::MemoryStore store;
  REQUIRE(make(kCachedAdd, a).run("r1", {{"x", 7}}, store).succeeded());
  int v2_calls = 0;
  fl::ActionRegistry v2 = fl::ActionRegistry::with_builtins();
  v2.add("test.add",
         [&](const fl::ActionCall& c) {
           ++v2_calls;
           return json{{"sum", c.params.at("a").get<int>() + c.params.at("b").get<int>() + 1000}};
         },
         ag::EffectPolicy::idempotent, {.version = "2"});
  auto bumped = fl::FileGraph(fl::load_graph_text(kCachedAdd, "test.yaml"), v2);
  const auto out = bumped.run("r2", {{"x", 7}}, store);
  REQUIRE(out.succeeded());
  CHECK(v2_calls == 1);
  CHECK(out.state->output == json{{"total", 1017}});
  CHECK(store.effects("r2").at(0).cached_from.empty());
}

TEST_CASE("file graph: a failed cached action is not cached; the next run calls it again") {
  fl::ActionRegistry r = fl::ActionRegistry::with_builtins();
  int calls = 0;
  bool failing = true;
  r.add(
      "test.flaky",
      [&](const fl::ActionCall&) -> json {
        ++calls;
        if (failing) throw std::runtime_error("not now");
        return "fine";
      },
      ag::EffectPolicy::idempotent);
  auto fg = fl::FileGraph(fl::load_graph_text(R"(trellis_graph: 1
name: flaky
version: "1"
start: call
permissions: ["test.*"]
nodes:
  call:
    action: test.flaky
    cache: true
    next: done
  done:
    return: "${state}"
)",
                                              "test.yaml"),
                          r);
  ag::MemoryStore store;
  CHECK_FALSE(fg.run("r1", json::object(), store).succeeded());
  failing = false;
  REQUIRE(fg.run("r2", json::object(), store).succeeded());
  CHECK(calls == 2);
  CHECK(store.effects("r2").at(0).cached_from.empty());
}

TEST_CASE(
    "file graph: cache: true on an action that is not idempotent is refused, with its place") {
  Actions a;
  try {
    (void)make(R"(trellis_graph: 1
name: refused
version: "1"
start: call
permissions: ["test.*"]
nodes:
  call:
    action: test.fail
    cache: true
    next: done
  done:
    return: null
)",
               a);
    FAIL("a non-idempotent action was cached");
  } catch (const fl::graph_file_error& e) {
    const std::string what = e.what();
    CHECK(what.find("test.yaml:7:3") != std::string::npos);
    CHECK(what.find("not idempotent") != std::string::npos);
  }
}
