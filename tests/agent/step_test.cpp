// SPDX-License-Identifier: MIT
/// @file
/// One node on its own (Graph::step, step.hpp): a dry step calls no effect and writes nothing
/// (receipts, stubs or effect_refused), a committed step is a real step of the run.

#include <trellis/agent/errors.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/step.hpp>

#include "agent_test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

const nlohmann::json refund_args = {{"order", "o-7"}, {"amount", 120}};

/// check -> refund (pays back through the "refund" effect, at most once) -> done.
struct RefundGraph {
  Harness h;
  int paid = 0;  ///< calls of the refund effect's function
  bool swallow = false;

  RefundGraph() {
    h.node("check", to("refund"));
    h.node("refund", [this](Doc& s, ag::RunContext& ctx) -> ag::NextStep {
      try {
        const nlohmann::json r = ctx.effect("refund", refund_args, ag::EffectPolicy::at_most_once,
                                            [this](const ag::EffectCall&) {
                                              ++paid;
                                              return nlohmann::json{{"id", "re_real"}};
                                            });
        s.text = r.at("id").get<std::string>();
      } catch (const ag::effect_refused&) {
        if (!swallow) throw;
      }
      return ag::Goto{"done"};
    });
    h.node("done", halt());
    h.graph.entry("check");
  }

  /// Stores run-1 standing at "refund" (step 1, not run yet).
  void at_refund() {
    ag::Checkpoint first;
    first.run_id = "run-1";
    first.status = RunStatus::Running;
    first.next_node = "refund";
    first.step = 1;
    first.state = Doc{"before", {"check"}};
    first.fingerprint = h.graph.fingerprint();
    first.created_at = "2024-01-01T00:00:00Z";
    h.store.create(first);
  }

  ag::StepResult<Doc> step(ag::StepOptions o = {}) {
    o.clock = &h.clock;
    return h.graph.step("run-1", "refund", h.store, std::move(o));
  }
};

/// Everything the store holds of run-1.
struct Snapshot {
  std::optional<ag::Checkpoint> latest;
  std::vector<ag::Checkpoint> history;
  std::vector<ag::EffectRecord> effects;
  std::vector<nlohmann::json> events;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(ag::Store& store) {
  return {store.latest("run-1"), store.history("run-1"), store.effects("run-1"),
          store.events("run-1")};
}

}  // namespace

TEST_CASE("step: a dry step of the refund node without a receipt pays nothing") {
  RefundGraph g;
  g.at_refund();
  try {
    g.step();
    FAIL("the dry step did not refuse the effect");
  } catch (const ag::effect_refused& e) {
    CHECK(e.name() == "refund");
    CHECK(std::string(e.what()).find("'refund'") != std::string::npos);
  }
  CHECK(g.paid == 0);
}

TEST_CASE("step: effect_refused leaves a dry step even when the node catches it") {
  RefundGraph g;
  g.swallow = true;
  g.at_refund();
  CHECK_THROWS_AS(g.step(), ag::effect_refused);
  CHECK(g.paid == 0);
}

TEST_CASE("step: a dry step answers an effect from its stub and shows the next step and state") {
  RefundGraph g;
  g.at_refund();
  const auto r = g.step({.stubs = {{"refund", {{"id", "re_stub"}}}}});
  CHECK(g.paid == 0);
  CHECK(std::get<ag::Goto>(r.next).node == "done");
  CHECK(r.state.text == "re_stub");
  CHECK(r.state.trail == std::vector<std::string>{"check", "refund"});
  REQUIRE(r.effects.size() == 1);
  CHECK(r.effects[0].name == "refund");
  CHECK(r.effects[0].source == ag::EffectSource::stub);
  CHECK(r.effects[0].result == nlohmann::json{{"id", "re_stub"}});
  CHECK(r.effects[0].args == refund_args);
  CHECK_FALSE(r.committed);
  CHECK_FALSE(r.checkpoint.has_value());
  CHECK(r.reason == Reason::none);
}

TEST_CASE("step: a dry step writes nothing to the store") {
  RefundGraph g;
  g.at_refund();
  const Snapshot before = snapshot(g.h.store);
  g.step({.stubs = {{"refund", {{"id", "re_stub"}}}}});
  CHECK_THROWS_AS(g.step(), ag::effect_refused);
  CHECK(snapshot(g.h.store) == before);
}

TEST_CASE("step: a dry step replays an effect from the receipt a real step would use") {
  RefundGraph g;
  g.at_refund();
  ag::EffectRecord receipt;
  receipt.run_id = "run-1";
  receipt.key = ag::effect_key("run-1", "refund", 1, 0, "refund", refund_args);
  receipt.name = "refund";
  receipt.args = refund_args;
  receipt.policy = ag::EffectPolicy::at_most_once;
  receipt.node = "refund";
  receipt.step = 1;
  receipt.status = ag::EffectStatus::succeeded;
  receipt.result = {{"id", "re_stored"}};
  g.h.store.put_effect(receipt);
  const auto r = g.step({.stubs = {{"refund", {{"id", "re_stub"}}}}});
  CHECK(g.paid == 0);
  CHECK(r.state.text == "re_stored");
  REQUIRE(r.effects.size() == 1);
  CHECK(r.effects[0].source == ag::EffectSource::receipt);
  CHECK(r.effects[0].key == receipt.key);
}

TEST_CASE("step: an injected state is what the node starts from") {
  RefundGraph g;
  g.at_refund();
  const auto r = g.step({.state = Doc{"injected", {"x"}}, .stubs = {{"refund", {{"id", "s"}}}}});
  CHECK(r.state.trail == std::vector<std::string>{"x", "refund"});
}

TEST_CASE("step: a committed step pays for real and commits one checkpoint") {
  RefundGraph g;
  g.at_refund();
  const auto r = g.step({.commit = true});
  CHECK(g.paid == 1);
  CHECK(r.committed);
  REQUIRE(r.checkpoint.has_value());
  CHECK(r.checkpoint->seq == 1);
  CHECK(r.checkpoint->step == 2);
  CHECK(r.checkpoint->next_node == "done");
  CHECK(r.checkpoint->status == RunStatus::Running);
  CHECK(g.h.store.history("run-1").size() == 2);
  CHECK(g.h.latest() == *r.checkpoint);
  CHECK(g.h.graph.decode_state(g.h.latest()).text == "re_real");
  REQUIRE(r.effects.size() == 1);
  CHECK(r.effects[0].source == ag::EffectSource::ran);
  REQUIRE(g.h.store.effects("run-1").size() == 1);
  CHECK(g.h.store.effects("run-1")[0].status == ag::EffectStatus::succeeded);
  // The run goes on from there.
  CHECK(g.h.resume().succeeded());
  CHECK(g.paid == 1);
}

TEST_CASE("step: a committed step refuses stubs: its effects are real") {
  RefundGraph g;
  g.at_refund();
  CHECK_THROWS_AS(g.step({.commit = true, .stubs = {{"refund", 1}}}), trellis::invalid_option);
  CHECK(g.paid == 0);
  CHECK(g.h.store.history("run-1").size() == 1);
}

TEST_CASE("step: a committed step of a finished run is run_finished; a dry one is allowed") {
  RefundGraph g;
  REQUIRE(g.h.run().succeeded());
  CHECK_THROWS_AS(g.step({.commit = true}), ag::run_finished);
  CHECK(g.step({.stubs = {{"refund", {{"id", "s"}}}}}).state.text == "s");
}

TEST_CASE("step: an unknown run is unknown_run and an unknown node a graph_error") {
  RefundGraph g;
  CHECK_THROWS_AS(g.step(), ag::unknown_run);
  g.at_refund();
  CHECK_THROWS_AS(g.h.graph.step("run-1", "nope", g.h.store), ag::graph_error);
}

TEST_CASE("step: an undeclared edge is the dry step's reason, and fails a committed one") {
  RefundGraph g;
  g.h.graph.edges("refund", {ag::end_node});
  g.at_refund();
  const auto dry = g.step({.stubs = {{"refund", {{"id", "s"}}}}});
  CHECK(dry.reason == Reason::undeclared_edge);
  CHECK(dry.detail.find("'done'") != std::string::npos);
  const auto real = g.step({.commit = true});
  CHECK(real.reason == Reason::undeclared_edge);
  REQUIRE(real.checkpoint.has_value());
  CHECK(real.checkpoint->status == RunStatus::Failed);
  CHECK(g.h.latest().reason == Reason::undeclared_edge);
}

TEST_CASE("step: a node's exception leaves step() and commits nothing") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep { throw std::runtime_error("bad"); });
  h.graph.entry("a");
  ag::Checkpoint first;
  first.run_id = "run-1";
  first.next_node = "a";
  first.state = Doc{};
  first.fingerprint = h.graph.fingerprint();
  h.store.create(first);
  CHECK_THROWS_WITH_AS(h.graph.step("run-1", "a", h.store, {.commit = true}), "bad",
                       std::runtime_error);
  CHECK(h.store.history("run-1").size() == 1);
}
