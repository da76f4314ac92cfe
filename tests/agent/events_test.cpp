// SPDX-License-Identifier: MIT
// The agent's event kinds (event_kind.hpp), the event record (run_event.hpp), RunContext built
// from its Info, and the checkpoint a step's result commits (detail/run_loop.hpp).
#include <trellis/agent/detail/run_loop.hpp>
#include <trellis/agent/event_kind.hpp>
#include <trellis/agent/run_context.hpp>
#include <trellis/agent/run_event.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ag = trellis::agent;
using ag::EventKind;

TEST_CASE("agent events: every kind keeps the name the stores' logs hold") {
  // The on-disk contract: these strings are in every event log written so far.
  const std::vector<std::string_view> logged{"graph_started",
                                             "resumed",
                                             "step_started",
                                             "step_completed",
                                             "retry_scheduled",
                                             "interrupted",
                                             "decision_recorded",
                                             "graph_completed",
                                             "graph_failed",
                                             "cancelled",
                                             "effect_started",
                                             "effect_completed",
                                             "effect_failed",
                                             "effect_replayed",
                                             "effect_reconciliation_required",
                                             "compensation_pending",
                                             "compensation_started",
                                             "compensation_completed",
                                             "compensation_failed",
                                             "reconciled",
                                             "waiting",
                                             "forked"};
  REQUIRE(trellis::enumeration<EventKind>::size == logged.size());
  for (std::size_t i = 0; i < logged.size(); ++i)
    CHECK(ag::to_string(trellis::enumeration<EventKind>::values[i]) == logged[i]);
}

TEST_CASE("agent events: a record's kind reads back as its enumeration") {
  ag::RunEventRecord e;
  e.kind = "step_completed";
  CHECK(e.kind_id() == EventKind::step_completed);
  CHECK(e.is(EventKind::step_completed));
  CHECK_FALSE(e.is(EventKind::step_started));
}

TEST_CASE("agent events: a kind this program does not know has no enumeration") {
  ag::RunEventRecord e;
  e.kind = "step_teleported";
  CHECK_FALSE(e.kind_id().has_value());
}

TEST_CASE("agent events: a record's JSON holds the kind's name") {
  const ag::RunEventRecord e{std::string(ag::to_string(EventKind::interrupted)),
                             "run-1",
                             2,
                             "review",
                             "2024-01-01T00:00:00.000Z",
                             0.0,
                             {{"reason", "why"}}};
  CHECK(nlohmann::json(e).at("kind") == "interrupted");
}

TEST_CASE("agent RunContext: built from one Info, it reports the step it was given") {
  ag::ManualClock clock;
  const ag::RunContext ctx({.run_id = "r",
                            .node = "n",
                            .step = 3,
                            .attempt = 1,
                            .mode = ag::PermissionMode::Plan,
                            .stop = {},
                            .resume = ag::Resume{ag::Approve{"ana", ""}},
                            .clock = &clock,
                            .effects = nullptr});
  CHECK(ctx.run_id() == "r");
  CHECK(ctx.node() == "n");
  CHECK(ctx.step() == 3);
  CHECK(ctx.attempt() == 1);
  CHECK(ctx.mode() == ag::PermissionMode::Plan);
  CHECK(ctx.approved());
  CHECK(&ctx.clock() == &clock);
}

TEST_CASE("agent RunContext: an Info without a clock uses the system clock") {
  const ag::RunContext ctx(ag::RunContext::Info{.run_id = "r", .node = "n"});
  CHECK(&ctx.clock() == &ag::SystemClock::instance());
}

TEST_CASE("agent RunContext: an effect outside a run is a graph_error") {
  ag::RunContext ctx(ag::RunContext::Info{.run_id = "r", .node = "n"});
  CHECK_THROWS_AS(
      ctx.effect("mail", {}, ag::EffectPolicy::idempotent, [](const ag::EffectCall&) { return 1; }),
      ag::graph_error);
}

namespace {

// A checkpoint in the middle of a run: after a decision, with leftovers of a failed attempt.
ag::Checkpoint running() {
  ag::Checkpoint cp;
  cp.run_id = "run-1";
  cp.seq = 4;
  cp.status = ag::RunStatus::Running;
  cp.next_node = "review";
  cp.step = 2;
  cp.attempt = 1;
  cp.state = {{"text", "old"}};
  cp.resume_node = "review";
  cp.rerun_step = 1;
  cp.decision = ag::Decision{ag::Approve{"ana", ""}, "2024-01-01T00:00:00.000Z", 3, {}};
  return cp;
}

}  // namespace

TEST_CASE("agent next_checkpoint: a Goto moves on to the named node with the new state") {
  const ag::Checkpoint c =
      ag::detail::next_checkpoint(running(), ag::Goto{"revise"}, "review", 1, {{"text", "new"}});
  CHECK(c.status == ag::RunStatus::Running);
  CHECK(c.next_node == "revise");
  CHECK(c.step == 3);
  CHECK(c.attempt == 0);
  CHECK(c.state == nlohmann::json{{"text", "new"}});
  CHECK(c.resume_node.empty());
  CHECK_FALSE(c.rerun_step.has_value());
  CHECK_FALSE(c.decision.has_value());
  CHECK_FALSE(c.interrupt.has_value());
}

TEST_CASE("agent next_checkpoint: a Halt ends the run with no next node") {
  const ag::Checkpoint c = ag::detail::next_checkpoint(running(), ag::Halt{}, "review", 2, {});
  CHECK(c.status == ag::RunStatus::Succeeded);
  CHECK(c.next_node.empty());
  CHECK(c.step == 3);
  CHECK_FALSE(c.decision.has_value());
}

TEST_CASE("agent next_checkpoint: an Interrupt waits, to rerun the node keyed by its step") {
  const ag::Interrupt pause{"approve the revision", std::nullopt, ""};
  const ag::Checkpoint c = ag::detail::next_checkpoint(running(), pause, "review", 1, {});
  CHECK(c.status == ag::RunStatus::WaitingApproval);
  CHECK(c.next_node == "review");
  CHECK(c.resume_node == "review");
  CHECK(c.rerun_step == 1u);
  CHECK(c.interrupt == pause);
  CHECK_FALSE(c.decision.has_value());  // the new pause waits for a decision of its own
}

TEST_CASE("agent next_checkpoint: an Interrupt with `then` continues there after the decision") {
  const ag::Interrupt pause{"check", std::nullopt, "revise"};
  const ag::Checkpoint c = ag::detail::next_checkpoint(running(), pause, "review", 2, {});
  CHECK(c.next_node == "revise");
  CHECK(c.resume_node == "review");
}
