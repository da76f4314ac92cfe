// SPDX-License-Identifier: MIT
/// @file
/// The agent graph's run loop (issue 5, sections 1 and 3-5) on MemoryStore: transitions,
/// checkpoints, crash recovery, retries, cancellation, the lifecycle table, hooks and
/// permission modes, approvals, resume errors, schema migration, events and the run lease.
/// Every case runs on a ManualClock and a fixed random source, so backoff, jitter and
/// approval expiry are exact.

#include <trellis/agent/errors.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/run_monitor.hpp>
#include <trellis/testing.hpp>

#include "agent_test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef TRELLIS_AGENT_GOLDEN_DIR
#error "TRELLIS_AGENT_GOLDEN_DIR must name tests/agent/golden (tests/agent/tests.cmake sets it)"
#endif

namespace ag = trellis::agent;
namespace tt = trellis::testing;
using namespace std::chrono_literals;
using ag::PermissionMode;
using ag::Reason;
using ag::RunStatus;

namespace {

using Trail = std::vector<std::string>;

const std::filesystem::path golden_dir{TRELLIS_AGENT_GOLDEN_DIR};

}  // namespace

// --- transitions -----------------------------------------------------------------------------

TEST_CASE("agent: Goto moves to the named node and Halt ends the run as succeeded") {
  Harness h;
  h.node("a", to("b")).node("b", to("c")).node("c", halt());
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(out.reason == Reason::none);
  CHECK(out.steps == 3);
  REQUIRE(out.state.has_value());
  CHECK(out.state->trail == Trail{"a", "b", "c"});
  CHECK(h.latest().status == RunStatus::Succeeded);
}

TEST_CASE("agent: Interrupt pauses the run, and resume continues at its `then`") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"look at it", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  const auto paused = h.run();
  CHECK(paused.interrupted());
  CHECK(paused.steps == 1);
  REQUIRE(paused.interrupt.has_value());
  CHECK(paused.interrupt->reason == "look at it");
  CHECK(h.latest().status == RunStatus::WaitingApproval);
  CHECK(h.latest().next_node == "b");
  CHECK(h.calls["b"] == 0);

  const auto done = h.resume("run-1", ag::Approve{});
  CHECK(done.succeeded());
  CHECK(done.state->trail == Trail{"a", "b"});
  CHECK(h.calls["a"] == 1);
}

TEST_CASE(
    "agent: an Interrupt without `then` reruns the interrupting node, which sees the "
    "decision") {
  Harness h;
  std::vector<bool> approved;
  h.node("gate", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    approved.push_back(ctx.approved());
    if (!ctx.approved()) return ag::Interrupt{"approve me"};
    return ag::Halt{};
  });
  h.graph.entry("gate");
  CHECK(h.run().interrupted());
  CHECK(h.resume("run-1", ag::Approve{"ana"}).succeeded());
  CHECK(approved == std::vector<bool>{false, true});
}

TEST_CASE("agent: an unknown Goto name fails the run with unknown_node, not a halt") {
  Harness h;
  h.node("a", to("nowhere"));
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.failed());
  CHECK_FALSE(out.succeeded());
  CHECK(out.reason == Reason::unknown_node);
  CHECK(out.detail.find("nowhere") != std::string::npos);
  CHECK(h.latest().status == RunStatus::Failed);
  CHECK(h.latest().reason == Reason::unknown_node);
}

TEST_CASE(
    "agent: a Halt with completed_with_errors ends the run Succeeded with that reason, stored") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
    return ag::Halt{.reason = Reason::completed_with_errors, .detail = "2 items failed"};
  });
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(out.reason == Reason::completed_with_errors);
  CHECK(out.detail == "2 items failed");
  CHECK(h.latest().status == RunStatus::Succeeded);
  CHECK(h.latest().reason == Reason::completed_with_errors);
  CHECK(h.latest().detail == "2 items failed");
}

TEST_CASE("agent: a Halt with a failure's reason fails the run with node_error, naming the node") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
    return ag::Halt{.reason = Reason::approval_rejected};
  });
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::node_error);
  CHECK(out.detail.find("'a'") != std::string::npos);
  CHECK(out.detail.find("approval_rejected") != std::string::npos);
}

TEST_CASE("agent: max_steps bounds a draft <-> review loop") {
  Harness h;
  h.node("draft", to("review")).node("review", to("draft"));
  h.graph.entry("draft").max_steps(7);
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::max_steps);
  CHECK(out.steps == 7);
  CHECK(h.calls["draft"] == 4);
  CHECK(h.calls["review"] == 3);
}

TEST_CASE("agent: a draft <-> review loop that ends within max_steps succeeds") {
  Harness h;
  h.node("draft", to("review")).node("review", [](Doc& s, ag::RunContext&) -> ag::NextStep {
    if (s.trail.size() < 6) return ag::Goto{"draft"};
    return ag::Halt{};
  });
  h.graph.entry("draft").max_steps(6);
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(out.steps == 6);
}

// --- checkpoints and crashes -----------------------------------------------------------------

TEST_CASE(
    "agent: every step commits one checkpoint of state, next node, step, attempt and "
    "status") {
  Harness h;
  h.node("a", [](Doc& s, ag::RunContext&) -> ag::NextStep {
     s.text = "drafted";
     return ag::Goto{"b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  const auto history = h.store.history("run-1");
  REQUIRE(history.size() == 3);  // the run's creation, then one per step

  CHECK(history[0].seq == 0);
  CHECK(history[0].status == RunStatus::Queued);
  CHECK(history[0].next_node == "a");
  CHECK(history[0].step == 0);
  CHECK(history[0].state == nlohmann::json(Doc{}));

  CHECK(history[1].seq == 1);
  CHECK(history[1].status == RunStatus::Running);
  CHECK(history[1].next_node == "b");
  CHECK(history[1].step == 1);
  CHECK(history[1].attempt == 0);
  CHECK(history[1].state == nlohmann::json(Doc{"drafted", {"a"}}));

  CHECK(history[2].seq == 2);
  CHECK(history[2].status == RunStatus::Succeeded);
  CHECK(history[2].next_node.empty());
  CHECK(history[2].step == 2);
  CHECK(history[2].state == nlohmann::json(Doc{"drafted", {"a", "b"}}));

  for (const auto& cp : history) {
    CHECK(cp.run_id == "run-1");
    CHECK(cp.fingerprint == h.graph.fingerprint());
    CHECK(cp.created_at == "2024-01-01T00:00:00.000Z");
  }
}

TEST_CASE("agent: a node's changes are discarded when it throws") {
  Harness h;
  h.node("a", [](Doc& s, ag::RunContext&) -> ag::NextStep {
    s.text = "half-written";
    throw std::runtime_error("disk full");
  });
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.state->text.empty());
  CHECK(h.latest().state == nlohmann::json(Doc{}));
}

TEST_CASE("agent: a crash between commits resumes at the first uncommitted node") {
  Harness h;
  h.node("a", to("b")).node("b", to("c")).node("c", to("d")).node("d", halt());
  h.graph.entry("a");
  {
    CrashingStore dying(h.store, 2);  // a and b commit; c runs, and the process dies
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  CHECK(h.latest().next_node == "c");
  CHECK(h.latest().step == 2);
  CHECK(h.calls == std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}});

  const auto out = h.resume();  // the restarted process, on the same store
  CHECK(out.succeeded());
  CHECK(h.calls == std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 2}, {"d", 1}});
  CHECK(out.state->trail == Trail{"a", "b", "c", "d"});  // c's lost run left no trace
}

TEST_CASE("agent: a crash before the first commit resumes at the entry node") {
  Harness h;
  h.node("a", to("b")).node("b", halt());
  h.graph.entry("a");
  {
    CrashingStore dying(h.store, 0);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  CHECK(h.latest().status == RunStatus::Queued);
  CHECK(h.resume().succeeded());
  CHECK(h.calls == std::map<std::string, int>{{"a", 2}, {"b", 1}});
}

// --- retries ---------------------------------------------------------------------------------

namespace {
/// A node that throws transient_error until its attempt `succeed_at` (0-based), recording the
/// attempt numbers it saw.
Step flaky(std::uint32_t succeed_at, std::vector<std::uint32_t>* attempts) {
  return [=](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    attempts->push_back(ctx.attempt());
    if (ctx.attempt() < succeed_at) throw ag::transient_error("rate limited");
    return ag::Halt{};
  };
}
}  // namespace

TEST_CASE("agent: a transient error retries the node with backoff 100 ms, then 200 ms") {
  Harness h;
  std::vector<std::uint32_t> attempts;
  h.node("call", flaky(2, &attempts));
  h.graph.entry("call").retry(
      {.attempts = 3, .initial_backoff = 100ms, .multiplier = 2, .max_backoff = 5s});
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(attempts == std::vector<std::uint32_t>{0, 1, 2});
  CHECK(h.clock.sleeps() == std::vector<ag::Clock::duration>{100ms, 200ms});
  CHECK(out.steps == 1);
}

TEST_CASE("agent: each failed attempt is committed before the backoff") {
  Harness h;
  std::vector<std::uint32_t> attempts;
  h.node("call", flaky(2, &attempts));
  h.graph.entry("call").retry({.attempts = 3});
  REQUIRE(h.run().succeeded());
  const auto history = h.store.history("run-1");
  REQUIRE(history.size() == 4);
  CHECK(history[1].attempt == 1);
  CHECK(history[1].step == 0);
  CHECK(history[1].next_node == "call");
  CHECK(history[1].status == RunStatus::Running);
  CHECK(history[2].attempt == 2);
  CHECK(history[3].attempt == 0);  // a step that succeeds starts the next node afresh
  CHECK(history[3].step == 1);
  CHECK(history[2].created_at == "2024-01-01T00:00:00.100Z");  // committed after 100 ms
}

TEST_CASE("agent: jitter stays within the policy's fraction of the backoff") {
  for (const double r : {0.0, 0.25, 0.999999}) {
    CAPTURE(r);
    Harness h;
    h.random = r;
    std::vector<std::uint32_t> attempts;
    h.node("call", flaky(3, &attempts));
    h.graph.entry("call").retry({.attempts = 4,
                                 .initial_backoff = 100ms,
                                 .multiplier = 2,
                                 .max_backoff = 5s,
                                 .jitter = 0.1});
    REQUIRE(h.run().succeeded());
    const auto sleeps = h.clock.sleeps();
    REQUIRE(sleeps.size() == 3);
    const std::chrono::milliseconds base[] = {100ms, 200ms, 400ms};
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(sleeps[i] >= base[i] * 9 / 10);
      CHECK(sleeps[i] <= base[i] * 11 / 10);
    }
  }
  CHECK(ag::backoff({.initial_backoff = 100ms, .jitter = 0.1}, 1, 0.0) == 90ms);
  CHECK(ag::backoff({.initial_backoff = 100ms, .jitter = 0.1}, 1, 0.75) == 105ms);
}

TEST_CASE("agent: the backoff is capped at max_backoff, jitter included") {
  Harness h;
  h.random = 0.999999;
  std::vector<std::uint32_t> attempts;
  h.node("call", flaky(4, &attempts));
  h.graph.entry("call").retry(
      {.attempts = 5, .initial_backoff = 100ms, .multiplier = 10, .max_backoff = 1s});
  REQUIRE(h.run().succeeded());
  const auto sleeps = h.clock.sleeps();
  REQUIRE(sleeps.size() == 4);
  CHECK(sleeps[0] == 110ms);
  CHECK(sleeps[1] == 1s);
  CHECK(sleeps[2] == 1s);
  CHECK(sleeps[3] == 1s);
}

TEST_CASE("agent: the attempt count survives a crash mid-retries") {
  Harness h;
  std::vector<std::uint32_t> attempts;
  h.node("call", flaky(2, &attempts));
  h.graph.entry("call").retry(
      {.attempts = 3, .initial_backoff = 100ms, .multiplier = 2, .max_backoff = 5s});
  {
    // The first failure commits attempt 1; the second failure's commit dies with the process.
    CrashingStore dying(h.store, 1);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  CHECK(h.latest().attempt == 1);
  CHECK(attempts == std::vector<std::uint32_t>{0, 1});

  ag::ManualClock restarted{t0 + 1h};
  auto o = h.options();
  o.clock = &restarted;
  attempts.clear();
  const auto out = h.resume("run-1", std::nullopt, o);
  CHECK(out.succeeded());
  CHECK(attempts == std::vector<std::uint32_t>{1, 2});  // not 0 again
  CHECK(restarted.sleeps() == std::vector<ag::Clock::duration>{200ms});
}

TEST_CASE("agent: a transient error that outlives the policy fails with retries_exhausted") {
  Harness h;
  std::vector<std::uint32_t> attempts;
  h.node("call", flaky(99, &attempts));
  h.graph.entry("call").retry({.attempts = 3});
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::retries_exhausted);
  CHECK(out.detail.find("rate limited") != std::string::npos);
  CHECK(attempts.size() == 3);
  CHECK(h.clock.sleeps().size() == 2);
}

TEST_CASE("agent: a non-transient exception fails the run with node_error at once") {
  Harness h;
  h.node("call", [&](Doc&, ag::RunContext&) -> ag::NextStep {
    throw std::invalid_argument("bad request");
  });
  h.graph.entry("call").retry({.attempts = 5});
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::node_error);
  CHECK(out.detail.find("bad request") != std::string::npos);
  CHECK(h.calls["call"] == 1);
  CHECK(h.clock.sleeps().empty());
}

// --- cancellation ----------------------------------------------------------------------------

TEST_CASE("agent: a stop request ends the run as cancelled at the next node boundary") {
  Harness h;
  std::stop_source stop;
  h.node("a", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
     stop.request_stop();  // mid-node: the node finishes, its step is committed
     CHECK(ctx.stop_requested());
     return ag::Goto{"b"};
   }).node("b", halt());
  h.graph.entry("a");
  auto o = h.options();
  o.stop = stop.get_token();
  const auto out = h.run("run-1", o);
  CHECK(out.cancelled());
  CHECK(out.steps == 1);
  CHECK(h.calls["b"] == 0);
  CHECK(h.latest().status == RunStatus::Cancelled);
  CHECK(h.latest().next_node == "b");
}

TEST_CASE("agent: a cancelled run resumes from its last commit") {
  Harness h;
  std::stop_source stop;
  h.node("a", [&](Doc&, ag::RunContext&) -> ag::NextStep {
     stop.request_stop();
     return ag::Goto{"b"};
   }).node("b", halt());
  h.graph.entry("a");
  auto o = h.options();
  o.stop = stop.get_token();
  REQUIRE(h.run("run-1", o).cancelled());
  const auto out = h.resume();
  CHECK(out.succeeded());
  CHECK(h.calls == std::map<std::string, int>{{"a", 1}, {"b", 1}});
  CHECK(out.state->trail == Trail{"a", "b"});
}

TEST_CASE("agent: a stop request during the backoff cancels before the next attempt") {
  Harness h;
  std::stop_source stop;
  h.node("call", [&](Doc&, ag::RunContext&) -> ag::NextStep {
    stop.request_stop();
    throw ag::transient_error("timeout");
  });
  h.graph.entry("call").retry({.attempts = 3});
  auto o = h.options();
  o.stop = stop.get_token();
  const auto out = h.run("run-1", o);
  CHECK(out.cancelled());
  CHECK(h.calls["call"] == 1);
  CHECK(h.latest().attempt == 1);
  CHECK(h.latest().next_node == "call");
}

// --- the lifecycle ---------------------------------------------------------------------------

TEST_CASE("agent: the lifecycle's exhaustive matrix matches the hand-written golden file") {
  const auto m = tt::transition_matrix(ag::lifecycle());
  CHECK(tt::check_golden(golden_dir / "lifecycle.md", tt::to_markdown(m)));
}

TEST_CASE("agent: succeeded is sticky, and failed leaves only on a reconciliation") {
  const auto m = tt::transition_matrix(ag::lifecycle());
  const auto v = tt::sticky_terminals(m, {RunStatus::Succeeded}, {});
  CHECK_MESSAGE(v.empty(), tt::joined(v));
  for (const auto e : trellis::enumeration<ag::RunEvent>::values) {
    CAPTURE(trellis::enumeration<ag::RunEvent>::name(e));
    CHECK_FALSE(m.at(RunStatus::Succeeded, e).has_value());
    if (e != ag::RunEvent::Reconcile) CHECK_FALSE(m.at(RunStatus::Failed, e).has_value());
  }
  CHECK(m.at(RunStatus::Failed, ag::RunEvent::Reconcile) == RunStatus::Queued);
  CHECK(ag::terminal(RunStatus::Succeeded));
  CHECK(ag::terminal(RunStatus::Failed));
  CHECK_FALSE(ag::terminal(RunStatus::Cancelled));
}

TEST_CASE("agent: cancel is accepted from queued, running, waiting_approval and waiting only") {
  const auto m = tt::transition_matrix(ag::lifecycle());
  for (const auto s : trellis::enumeration<RunStatus>::values) {
    CAPTURE(trellis::enumeration<RunStatus>::name(s));
    const bool accepted = s == RunStatus::Queued || s == RunStatus::Running ||
                          s == RunStatus::WaitingApproval || s == RunStatus::Waiting;
    CHECK(m.at(s, ag::RunEvent::Cancel).has_value() == accepted);
    if (accepted) CHECK(m.at(s, ag::RunEvent::Cancel) == RunStatus::Cancelled);
  }
}

TEST_CASE("agent: every status is reachable from queued, and cancelled goes back to running") {
  const auto m = tt::transition_matrix(ag::lifecycle());
  const auto v = tt::reachable_from(m, RunStatus::Queued);
  CHECK_MESSAGE(v.empty(), tt::joined(v));
  CHECK(m.at(RunStatus::Cancelled, ag::RunEvent::Start) == RunStatus::Running);
  CHECK(m.at(RunStatus::Running, ag::RunEvent::Interrupt) == RunStatus::WaitingApproval);
  CHECK(m.at(RunStatus::WaitingApproval, ag::RunEvent::Continue) == RunStatus::Running);
  const auto d = tt::deterministic(ag::lifecycle());
  CHECK_MESSAGE(d.empty(), tt::joined(d));
}

TEST_CASE("agent: RunOptions::on_status sees every status change of the run, in order") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"check", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  std::vector<std::pair<RunStatus, RunStatus>> seen;
  auto o = h.options();
  o.on_status = [&](RunStatus from, RunStatus to) { seen.emplace_back(from, to); };
  REQUIRE(h.run("run-1", o).interrupted());
  REQUIRE(h.resume("run-1", ag::Approve{}, o).succeeded());
  using P = std::pair<RunStatus, RunStatus>;
  CHECK(seen == std::vector<P>{{RunStatus::Queued, RunStatus::Running},
                               {RunStatus::Running, RunStatus::WaitingApproval},
                               {RunStatus::WaitingApproval, RunStatus::Running},
                               {RunStatus::Running, RunStatus::Succeeded}});
}

TEST_CASE("agent: a machine over the lifecycle observes state_is(WaitingApproval)") {
  trellis::Context ctx;
  trellis::StateMachine<RunStatus, ag::RunEvent> life{ctx, RunStatus::Queued, ag::lifecycle()};
  auto waiting = life.state_is(RunStatus::WaitingApproval);
  CHECK_FALSE(waiting.get());
  CHECK(static_cast<bool>(life.send(ag::RunEvent::Start)));
  CHECK(static_cast<bool>(life.send(ag::RunEvent::Interrupt)));
  CHECK(waiting.get());
  CHECK(static_cast<bool>(life.send(ag::RunEvent::Continue)));
  CHECK_FALSE(waiting.get());
}

// --- hooks -----------------------------------------------------------------------------------

namespace {
/// A hook made of two functions (either may be empty: Proceed, and the step unchanged).
class FnHook final : public ag::Hook<Doc> {
 public:
  using Before = std::function<ag::BeforeDecision<Doc>(const ag::NodeInfo&, const Doc&,
                                                       const ag::RunContext&)>;
  using After = std::function<ag::NextStep(const ag::NodeInfo&, const Doc&, ag::NextStep,
                                           const ag::RunContext&)>;
  FnHook(Before before, After after = {}) : before_(std::move(before)), after_(std::move(after)) {}
  ag::BeforeDecision<Doc> before(const ag::NodeInfo& n, const Doc& s,
                                 const ag::RunContext& ctx) override {
    return before_ ? before_(n, s, ctx) : ag::BeforeDecision<Doc>{ag::Proceed{}};
  }
  ag::NextStep after(const ag::NodeInfo& n, const Doc& s, ag::NextStep next,
                     const ag::RunContext& ctx) override {
    return after_ ? after_(n, s, std::move(next), ctx) : next;
  }

 private:
  Before before_;
  After after_;
};
}  // namespace

TEST_CASE("agent: a hook that proceeds sees every node before and after it runs") {
  Harness h;
  std::vector<std::string> seen;
  h.graph.hook(std::make_shared<FnHook>(
      [&](const ag::NodeInfo& n, const Doc&, const ag::RunContext&) -> ag::BeforeDecision<Doc> {
        seen.push_back("before " + std::string(n.name));
        return ag::Proceed{};
      },
      [&](const ag::NodeInfo& n, const Doc& s, ag::NextStep next, const ag::RunContext&) {
        seen.push_back("after " + std::string(n.name) + " " + s.trail.back());
        return next;
      }));
  h.node("a", to("b")).node("b", halt());
  h.graph.entry("a");
  CHECK(h.run().succeeded());
  CHECK(seen == std::vector<std::string>{"before a", "after a a", "before b", "after b b"});
}

TEST_CASE("agent: a hook's Modify changes the state the node runs on and the commit") {
  Harness h;
  h.graph.hook(std::make_shared<FnHook>(
      [](const ag::NodeInfo& n, const Doc& s, const ag::RunContext&) -> ag::BeforeDecision<Doc> {
        if (n.name != "b") return ag::Proceed{};
        Doc changed = s;
        changed.text = "redacted";
        return ag::Modify<Doc>{changed};
      }));
  std::string b_saw;
  h.node("a", [](Doc& s, ag::RunContext&) -> ag::NextStep {
     s.text = "secret";
     return ag::Goto{"b"};
   }).node("b", [&](Doc& s, ag::RunContext&) -> ag::NextStep {
    b_saw = s.text;
    return ag::Halt{};
  });
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(b_saw == "redacted");
  CHECK(out.state->text == "redacted");
  CHECK(h.latest().state.at("text") == "redacted");
}

TEST_CASE("agent: a hook's Deny fails the run with denied and the node does not run") {
  Harness h;
  h.graph.hook(std::make_shared<FnHook>(
      [](const ag::NodeInfo& n, const Doc&, const ag::RunContext&) -> ag::BeforeDecision<Doc> {
        if (n.name == "b") return ag::Deny{"b is off limits"};
        return ag::Proceed{};
      }));
  h.node("a", to("b")).node("b", halt());
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.reason == Reason::denied);
  CHECK(out.detail == "b is off limits");
  CHECK(h.calls["b"] == 0);
  CHECK(out.steps == 1);
}

TEST_CASE("agent: a hook's Replace skips the node and takes the given step") {
  Harness h;
  h.graph.hook(std::make_shared<FnHook>(
      [](const ag::NodeInfo& n, const Doc&, const ag::RunContext&) -> ag::BeforeDecision<Doc> {
        if (n.name == "b") return ag::Replace{ag::Goto{"c"}};
        return ag::Proceed{};
      }));
  h.node("a", to("b")).node("b", to("c")).node("c", halt());
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(h.calls["b"] == 0);
  CHECK(out.state->trail == Trail{"a", "c"});
  CHECK(out.steps == 3);  // the replaced step counts as a step
}

TEST_CASE("agent: a hook's after() changes the next step") {
  Harness h;
  h.graph.hook(std::make_shared<FnHook>(
      FnHook::Before{},
      [](const ag::NodeInfo& n, const Doc&, ag::NextStep next, const ag::RunContext&) {
        if (n.name == "a") return ag::NextStep{ag::Goto{"audit"}};
        return next;
      }));
  h.node("a", to("b")).node("b", halt()).node("audit", halt());
  h.graph.entry("a");
  const auto out = h.run();
  CHECK(out.succeeded());
  CHECK(out.state->trail == Trail{"a", "audit"});
  CHECK(h.calls["b"] == 0);
}

TEST_CASE("agent: a hook added before a node that is added later still applies to it") {
  Harness h;
  std::vector<std::string> seen;
  h.graph.hook(std::make_shared<FnHook>(
      [&](const ag::NodeInfo& n, const Doc&, const ag::RunContext&) -> ag::BeforeDecision<Doc> {
        seen.emplace_back(n.name);
        return ag::Proceed{};
      }));
  h.node("late", halt());
  h.graph.entry("late");
  CHECK(h.run().succeeded());
  CHECK(seen == std::vector<std::string>{"late"});
}

// --- permission modes ------------------------------------------------------------------------

namespace {
/// read (Plan) -> write (AcceptEdits, destructive) -> halt, behind the ModeGate.
void destructive_graph(Harness& h) {
  h.node("read", to("write")).node("write", halt(), PermissionMode::AcceptEdits);
  h.graph.entry("read").mode_gate();
}
}  // namespace

TEST_CASE("agent: ModeGate in Plan mode denies a destructive node") {
  Harness h;
  destructive_graph(h);
  ag::ModeSwitch mode{PermissionMode::Plan};
  auto o = h.options();
  o.mode = &mode;
  const auto out = h.run("run-1", o);
  CHECK(out.failed());
  CHECK(out.reason == Reason::denied);
  CHECK(out.detail.find("AcceptEdits") != std::string::npos);
  CHECK(h.calls["write"] == 0);
  CHECK(h.calls["read"] == 1);
}

TEST_CASE("agent: ModeGate in Default mode asks for approval, and Approve runs the node") {
  Harness h;
  destructive_graph(h);
  ag::ModeSwitch mode{PermissionMode::Default};
  auto o = h.options();
  o.mode = &mode;
  const auto paused = h.run("run-1", o);
  CHECK(paused.interrupted());
  REQUIRE(paused.interrupt.has_value());
  REQUIRE(paused.interrupt->approval.has_value());
  CHECK(paused.interrupt->approval->action.find("write") != std::string::npos);
  CHECK(h.calls["write"] == 0);

  const auto out = h.resume("run-1", ag::Approve{"ana"}, o);
  CHECK(out.succeeded());
  CHECK(h.calls["write"] == 1);
  CHECK(out.state->trail == Trail{"read", "write"});
}

TEST_CASE("agent: ModeGate's approval rejected fails the run with approval_rejected") {
  Harness h;
  destructive_graph(h);
  ag::ModeSwitch mode{PermissionMode::Default};
  auto o = h.options();
  o.mode = &mode;
  REQUIRE(h.run("run-1", o).interrupted());
  const auto out = h.resume("run-1", ag::Reject{"too risky", "ana"}, o);
  CHECK(out.failed());
  CHECK(out.reason == Reason::approval_rejected);
  CHECK(out.detail.find("too risky") != std::string::npos);
  CHECK(out.detail.find("ana") != std::string::npos);
  CHECK(h.calls["write"] == 0);
}

TEST_CASE("agent: ModeGate in BypassPermissions mode runs a destructive node") {
  Harness h;
  destructive_graph(h);
  ag::ModeSwitch mode{PermissionMode::BypassPermissions};
  auto o = h.options();
  o.mode = &mode;
  CHECK(h.run("run-1", o).succeeded());
  CHECK(h.calls["write"] == 1);
}

TEST_CASE("agent: the mode changes mid-run through the ModeSwitch with no node edited") {
  Harness h;
  ag::ModeSwitch mode{PermissionMode::Plan};
  h.node("read",
         [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
           CHECK(ctx.mode() == PermissionMode::Plan);
           mode.set(PermissionMode::AcceptEdits);  // an operator, while the graph runs
           return ag::Goto{"write"};
         })
      .node(
          "write",
          [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
            CHECK(ctx.mode() == PermissionMode::AcceptEdits);
            return ag::Halt{};
          },
          PermissionMode::AcceptEdits);
  h.graph.entry("read").mode_gate();
  auto o = h.options();
  o.mode = &mode;
  CHECK(h.run("run-1", o).succeeded());
  CHECK(h.calls["write"] == 1);
}

// --- approvals -------------------------------------------------------------------------------

namespace {
ag::ApprovalRequest publish_request(std::optional<ag::Clock::time_point> expires = std::nullopt) {
  return {"publish the draft", {{"channel", "blog"}}, "it goes public", expires};
}
}  // namespace

TEST_CASE("agent: an approval request is stored with the paused run") {
  Harness h;
  h.node("review", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"needs a person", publish_request(t0 + 1h), "publish"};
   }).node("publish", halt());
  h.graph.entry("review");
  const auto out = h.run();
  REQUIRE(out.interrupt.has_value());
  CHECK(out.interrupt->approval == publish_request(t0 + 1h));
  const auto stored = h.latest();
  REQUIRE(stored.interrupt.has_value());
  CHECK(*stored.interrupt == *out.interrupt);
  CHECK(stored.resume_node == "review");
  CHECK(stored.next_node == "publish");
}

TEST_CASE("agent: Input passes its json to the next node through ctx.resume()") {
  Harness h;
  nlohmann::json received;
  h.node("ask", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"which title?", std::nullopt, "apply"};
   }).node("apply", [&](Doc& s, ag::RunContext& ctx) -> ag::NextStep {
    REQUIRE(ctx.resume().has_value());
    received = std::get<ag::Input>(*ctx.resume()).value;
    s.text = received.at("title").get<std::string>();
    return ag::Goto{"after"};
  });
  std::optional<ag::Resume> after_saw = ag::Approve{};
  h.node("after", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    after_saw = ctx.resume();  // the decision is for the first node after the pause only
    return ag::Halt{};
  });
  h.graph.entry("ask");
  REQUIRE(h.run().interrupted());
  const auto out = h.resume("run-1", ag::Input{{{"title", "Hello"}}});
  CHECK(out.succeeded());
  CHECK(received == nlohmann::json{{"title", "Hello"}});
  CHECK(out.state->text == "Hello");
  CHECK_FALSE(after_saw.has_value());
}

TEST_CASE("agent: an approval decided after expires_at fails with approval_expired") {
  Harness h;
  h.node("review", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"needs a person", publish_request(t0 + 1h), "publish"};
   }).node("publish", halt());
  h.graph.entry("review");
  REQUIRE(h.run().interrupted());
  h.clock.advance(1h + 1ms);
  const auto out = h.resume("run-1", ag::Approve{"ana"});
  CHECK(out.failed());
  CHECK(out.reason == Reason::approval_expired);
  CHECK(h.calls["publish"] == 0);
  CHECK(h.latest().status == RunStatus::Failed);
}

TEST_CASE("agent: an approval decided at expires_at is still in time") {
  Harness h;
  h.node("review", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"needs a person", publish_request(t0 + 1h), "publish"};
   }).node("publish", halt());
  h.graph.entry("review");
  REQUIRE(h.run().interrupted());
  h.clock.advance(1h);
  CHECK(h.resume("run-1", ag::Approve{"ana"}).succeeded());
}

// --- decisions as records --------------------------------------------------------------------

TEST_CASE("agent: a decision is committed with who, when, the comment and the request it answers") {
  Harness h;
  h.node("review", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"needs a person", publish_request(t0 + 1h), "publish"};
   }).node("publish", halt());
  h.graph.entry("review");
  REQUIRE(h.run().interrupted());
  const ag::Checkpoint waiting = h.latest();
  h.clock.advance(1min);
  REQUIRE(h.resume("run-1", ag::Approve{"ana", "fine by me"}).succeeded());

  const auto history = h.store.history("run-1");
  REQUIRE(history.size() == waiting.seq + 3);  // the pause, the decision, the publish step
  const ag::Checkpoint& decided = history[waiting.seq + 1];
  CHECK(decided.status == RunStatus::Running);
  CHECK(decided.step == waiting.step);  // not a step: it lets one run
  CHECK(decided.next_node == "publish");
  REQUIRE(decided.decision.has_value());
  CHECK(decided.decision->given == ag::Resume{ag::Approve{"ana", "fine by me"}});
  CHECK(decided.decision->decided_at == "2024-01-01T00:01:00.000Z");
  CHECK(decided.decision->answers == waiting.seq);
  CHECK(decided.decision->request == *waiting.interrupt);
  CHECK_FALSE(history.back().decision.has_value());  // the step it let run has committed

  const auto events = h.store.events("run-1");
  const auto recorded = std::find_if(events.begin(), events.end(), [](const nlohmann::json& e) {
    return e.at("kind") == "decision_recorded";
  });
  REQUIRE(recorded != events.end());
  CHECK(recorded->at("detail") == nlohmann::json{{"kind", "approve"},
                                                 {"reviewer", "ana"},
                                                 {"comment", "fine by me"},
                                                 {"decided_at", "2024-01-01T00:01:00.000Z"},
                                                 {"answers", waiting.seq}});
  CHECK(std::next(recorded)->at("kind") == "resumed");
}

TEST_CASE(
    "agent: a crash during the approved step reruns it with the stored decision, without asking "
    "again") {
  Harness h;
  std::vector<std::optional<ag::Resume>> seen;
  h.node("gate", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    seen.push_back(ctx.resume());
    if (!ctx.approved()) return ag::Interrupt{"approve me", publish_request()};
    return ag::Halt{};
  });
  h.graph.entry("gate");
  REQUIRE(h.run().interrupted());
  {
    CrashingStore dying(h.store, 1);  // the decision commits; the approved step's commit dies
    CHECK_THROWS_AS(h.graph.resume("run-1", dying, ag::Approve{"ana", "go"}, h.options()),
                    PowerCut);
  }
  const ag::Checkpoint after_crash = h.latest();
  CHECK(after_crash.status == RunStatus::Running);
  REQUIRE(after_crash.decision.has_value());
  CHECK(after_crash.decision->given == ag::Resume{ag::Approve{"ana", "go"}});

  const auto out = h.resume();  // no decision: the stored one is used
  CHECK(out.succeeded());
  const ag::Resume approved = ag::Approve{"ana", "go"};
  CHECK(seen == std::vector<std::optional<ag::Resume>>{std::nullopt, approved, approved});
  CHECK(h.calls["gate"] == 3);
  CHECK(h.event_kinds().back() == "graph_completed");
}

TEST_CASE("agent: the stored decision survives a retry of the step it applies to") {
  Harness h;
  std::vector<std::optional<ag::Resume>> seen;
  int failures = 1;
  h.node("ask", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"which title?", std::nullopt, "apply"};
   }).node("apply", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    seen.push_back(ctx.resume());
    if (failures-- > 0) throw ag::transient_error("rate limited");
    return ag::Halt{};
  });
  h.graph.entry("ask").retry({.attempts = 3});
  REQUIRE(h.run().interrupted());
  REQUIRE(h.resume("run-1", ag::Input{{{"title", "Hello"}}, "cy"}).succeeded());
  const ag::Resume input = ag::Input{{{"title", "Hello"}}, "cy"};
  CHECK(seen == std::vector<std::optional<ag::Resume>>{input, input});
}

TEST_CASE("agent: a rejection is stored with the failure it causes") {
  Harness h;
  h.node("review", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"needs a person", publish_request(), "publish"};
   }).node("publish", halt());
  h.graph.entry("review");
  REQUIRE(h.run().interrupted());
  const std::uint64_t waiting = h.latest().seq;
  const auto out = h.resume("run-1", ag::Reject{"too vague", "bo"});
  CHECK(out.reason == Reason::approval_rejected);
  const ag::Checkpoint failed = h.latest();
  CHECK(failed.seq == waiting + 1);
  CHECK(failed.status == RunStatus::Failed);
  REQUIRE(failed.decision.has_value());
  CHECK(failed.decision->given == ag::Resume{ag::Reject{"too vague", "bo"}});
  CHECK(failed.decision->answers == waiting);
  const auto kinds = h.event_kinds();
  REQUIRE(kinds.size() >= 2);
  CHECK(kinds[kinds.size() - 2] == "decision_recorded");
  CHECK(kinds.back() == "graph_failed");
}

TEST_CASE("agent: an Input that cannot be written is refused and the run still waits") {
  Harness h;
  h.node("ask", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"which score?", std::nullopt, "apply"};
   }).node("apply", halt());
  h.graph.entry("ask");
  REQUIRE(h.run().interrupted());
  const ag::Checkpoint waiting = h.latest();
  try {
    (void)h.resume("run-1", ag::Input{{{"score", std::nan("")}}});
    FAIL("an Input holding NaN was acknowledged");
  } catch (const trellis::unwritable_value& e) {
    CHECK(e.member() == "/decision/value/score");
    CHECK(e.reason() == "is NaN");
  }
  CHECK(h.latest() == waiting);
  CHECK(h.calls["apply"] == 0);
  CHECK(h.resume("run-1", ag::Input{{{"score", 0.5}}}).succeeded());
}

// --- states that cannot be written -----------------------------------------------------------

namespace {

/// A node over a JSON state, made of a function.
class JsonNode final : public ag::Node<nlohmann::json> {
 public:
  using Fn = std::function<ag::NextStep(nlohmann::json&, ag::RunContext&)>;
  JsonNode(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(nlohmann::json& s, ag::RunContext& ctx) override { return fn_(s, ctx); }

 private:
  std::string name_;
  Fn fn_;
};

/// An array inside `levels` others: [[...[]...]].
nlohmann::json nested(int levels) {
  nlohmann::json v = nlohmann::json::array();
  for (int i = 0; i < levels; ++i) {
    nlohmann::json outer = nlohmann::json::array();
    outer.push_back(std::move(v));
    v = std::move(outer);
  }
  return v;
}

}  // namespace

TEST_CASE(
    "agent: a step whose state cannot be written throws unwritable_value, commits nothing, and "
    "a resume reruns it") {
  for (const char* what : {"NaN", "+Inf", "-Inf", "too deep"}) {
    CAPTURE(what);
    const std::string bad = what;
    ag::Graph<nlohmann::json> g;
    bool fixed = false;
    int runs = 0;
    g.add(std::make_unique<JsonNode>("measure", [&](nlohmann::json& s, ag::RunContext&) {
      ++runs;
      if (fixed)
        s["score"] = 0.5;
      else if (bad == "NaN")
        s["score"] = std::nan("");
      else if (bad == "too deep")
        s["score"] = nested(trellis::max_json_depth);
      else
        s["score"] = (bad == "+Inf" ? 1 : -1) * std::numeric_limits<double>::infinity();
      return ag::NextStep{ag::Goto{"report"}};
    }));
    g.add(std::make_unique<JsonNode>(
        "report", [](nlohmann::json&, ag::RunContext&) { return ag::NextStep{ag::Halt{}}; }));
    g.entry("measure");
    ag::MemoryStore store;
    try {
      (void)g.run("run-1", nlohmann::json::object(), store);
      FAIL("a state that cannot be written was acknowledged");
    } catch (const trellis::unwritable_value& e) {
      CHECK(std::string(e.member()).starts_with("/state/score"));
      if (bad != "too deep") CHECK(e.reason() == "is " + bad);
      CHECK(std::string(e.what()).find("run 'run-1'") != std::string::npos);
    }
    const auto history = store.history("run-1");
    REQUIRE(history.size() == 1);  // the run's first checkpoint, and nothing after it
    CHECK(history[0].status == RunStatus::Queued);
    fixed = true;
    const auto out = g.resume("run-1", store);
    CHECK(out.succeeded());
    CHECK(out.state->at("score") == 0.5);
    CHECK(runs == 2);
  }
}

// --- resume errors ---------------------------------------------------------------------------

TEST_CASE("agent: resuming a waiting run without a decision throws graph_error") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().interrupted());
  CHECK_THROWS_AS(h.resume(), ag::graph_error);
  CHECK(h.latest().status == RunStatus::WaitingApproval);  // nothing changed
  CHECK(h.resume("run-1", ag::Approve{}).succeeded());     // and the lease was released
}

TEST_CASE("agent: resuming a finished run throws run_finished") {
  Harness h;
  h.node("ok", halt()).node("bad", to("nowhere"));
  h.graph.entry("ok");
  REQUIRE(h.run("done").succeeded());
  h.graph.entry("bad");
  REQUIRE(h.run("broken").failed());
  CHECK_THROWS_AS(h.resume("done"), ag::run_finished);
  CHECK_THROWS_AS(h.resume("done", ag::Approve{}), ag::run_finished);
  CHECK_THROWS_AS(h.resume("broken"), ag::run_finished);
  CHECK(h.calls["ok"] == 1);
}

TEST_CASE("agent: resuming an unknown run id throws unknown_run") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a");
  CHECK_THROWS_AS(h.resume("never-started"), ag::unknown_run);
  CHECK(h.store.runs().empty());  // never a silent fresh start
}

TEST_CASE("agent: starting a run id that exists throws graph_error") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  CHECK_THROWS_AS(h.run(), ag::graph_error);
  CHECK(h.store.history("run-1").size() == 2);
}

TEST_CASE("agent: a run stored by a graph with other nodes throws graph_mismatch") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().interrupted());

  ag::Graph<Doc> other;
  other.add(std::make_unique<FnNode>("a", to("c"), PermissionMode::Plan, nullptr))
      .add(std::make_unique<FnNode>("c", halt(), PermissionMode::Plan, nullptr))
      .entry("a");
  auto o = h.options();
  CHECK_THROWS_AS(other.resume("run-1", h.store, ag::Approve{}, o), ag::graph_mismatch);
  CHECK(h.latest().status == RunStatus::WaitingApproval);
}

TEST_CASE("agent: a run stored by another version of the graph throws graph_mismatch") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a").version("1");
  REQUIRE(h.run().interrupted());
  h.graph.version("2");
  CHECK_THROWS_AS(h.resume("run-1", ag::Approve{}), ag::graph_mismatch);
}

TEST_CASE(
    "agent: resume_across_edits resumes a run whose path the edited graph keeps, and "
    "refuses one whose path it does not") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a").version("1");
  REQUIRE(h.run("kept").interrupted());
  REQUIRE(h.run("lost").interrupted());
  const std::string stored = h.latest("kept").fingerprint;

  // An edit that adds a node: the path (a, then b) is still there.
  auto edit = [](ag::Graph<Doc>& g, bool relaxed) {
    g.add(std::make_unique<FnNode>("a", halt(), PermissionMode::Plan, nullptr))
        .add(std::make_unique<FnNode>("b", halt(), PermissionMode::Plan, nullptr))
        .add(std::make_unique<FnNode>("extra", halt(), PermissionMode::Plan, nullptr))
        .entry("a")
        .version("1")
        .resume_across_edits(relaxed);
  };
  auto o = h.options();
  ag::Graph<Doc> strict;
  edit(strict, false);
  CHECK_THROWS_AS(strict.resume("kept", h.store, ag::Approve{}, o), ag::graph_mismatch);
  ag::Graph<Doc> relaxed;
  edit(relaxed, true);
  auto out = relaxed.resume("kept", h.store, ag::Approve{}, o);
  CHECK(out.succeeded());
  // The checkpoints written after the edit carry the edited graph's fingerprint.
  CHECK(h.latest("kept").fingerprint == relaxed.fingerprint());
  CHECK(h.latest("kept").fingerprint != stored);

  // An edit without node b, on whose path the waiting run is: refused, naming the node.
  ag::Graph<Doc> without_b;
  without_b.add(std::make_unique<FnNode>("a", halt(), PermissionMode::Plan, nullptr))
      .add(std::make_unique<FnNode>("c", halt(), PermissionMode::Plan, nullptr))
      .entry("a")
      .version("1")
      .resume_across_edits();
  try {
    without_b.resume("lost", h.store, ag::Approve{}, o);
    FAIL("resumed a run whose path the graph lost");
  } catch (const ag::graph_mismatch& e) {
    CHECK(std::string(e.what()).find("'b'") != std::string::npos);
  }
  CHECK(h.latest("lost").status == RunStatus::WaitingApproval);

  // Another version: refused whatever the nodes.
  ag::Graph<Doc> bumped;
  edit(bumped, true);
  bumped.version("2");
  CHECK_THROWS_AS(bumped.resume("lost", h.store, ag::Approve{}, o), ag::graph_mismatch);
}

TEST_CASE("agent: run ids with path separators or '..' throw invalid_run_id") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a");
  const std::vector<std::string> bad = {
      "a/b", "../x", "..", ".", "a\\b", "/abs", "", std::string(129, 'x'), "a b"};
  for (const std::string& id : bad) {
    CAPTURE(id);
    CHECK_THROWS_AS(h.run(id), ag::invalid_run_id);
    CHECK_THROWS_AS(h.resume(id), ag::invalid_run_id);
  }
  CHECK(h.store.runs().empty());
  CHECK(h.run(std::string(128, 'x')).succeeded());
  CHECK(h.run("run-7.b_2").succeeded());
}

// --- state schema ----------------------------------------------------------------------------

namespace {
/// The state as version 2 of the program keeps it: the text split into title and body.
struct DocV2 {
  std::string title;
  std::string body;
  std::vector<std::string> trail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DocV2, title, body, trail)

nlohmann::json migrate_to_v2(nlohmann::json state, int from) {
  CHECK(from == 1);
  const std::string text = state.at("text");
  const auto nl = text.find('\n');
  return {{"title", text.substr(0, nl)},
          {"body", nl == std::string::npos ? "" : text.substr(nl + 1)},
          {"trail", state.at("trail")}};
}

class V2Node final : public ag::Node<DocV2> {
 public:
  explicit V2Node(std::string name, std::vector<DocV2>* seen)
      : name_(std::move(name)), seen_(seen) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(DocV2& s, ag::RunContext&) override {
    seen_->push_back(s);
    s.trail.push_back(name_);
    return ag::Halt{};
  }

 private:
  std::string name_;
  std::vector<DocV2>* seen_;
};
}  // namespace

TEST_CASE("agent: a run stored under schema 1 is migrated by Graph::schema(2, migrate)") {
  Harness h;
  h.node("a", [](Doc& s, ag::RunContext&) -> ag::NextStep {
     s.text = "Title\nBody text";
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().interrupted());
  REQUIRE(h.latest().schema == 1);

  std::vector<DocV2> seen;
  ag::Graph<DocV2> v2;
  v2.add<V2Node>("a", &seen).add<V2Node>("b", &seen).entry("a").schema(2, migrate_to_v2);
  auto o = h.options();
  const auto out = v2.resume("run-1", h.store, ag::Approve{}, o);
  CHECK(out.succeeded());
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].title == "Title");
  CHECK(seen[0].body == "Body text");
  CHECK(seen[0].trail == Trail{"a"});
  // What is committed from now on is version 2's state, and says so.
  CHECK(h.latest().state == nlohmann::json(DocV2{"Title", "Body text", {"a", "b"}}));
  CHECK(h.latest().schema == 2);
}

TEST_CASE("agent: a run stored under a newer schema than the program's is refused") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a").schema(3);
  REQUIRE(h.run().interrupted());
  h.graph.schema(2, [](nlohmann::json j, int) { return j; });
  CHECK_THROWS_AS(h.resume("run-1", ag::Approve{}), ag::graph_mismatch);
  CHECK(h.latest().status == RunStatus::WaitingApproval);
}

TEST_CASE("agent: a run stored under an older schema with no migration is refused") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().interrupted());
  h.graph.schema(2);
  CHECK_THROWS_AS(h.resume("run-1", ag::Approve{}), ag::graph_mismatch);
}

// --- events ----------------------------------------------------------------------------------

namespace {
/// draft -> gate (pauses, then review) -> review (fails once, transiently) -> halt.
void evented_graph(Harness& h) {
  h.node("draft",
         [&h](Doc&, ag::RunContext&) -> ag::NextStep {
           h.clock.advance(5ms);
           return ag::Goto{"gate"};
         })
      .node("gate",
            [](Doc&, ag::RunContext&) -> ag::NextStep {
              return ag::Interrupt{"approve?", std::nullopt, "review"};
            })
      .node("review", [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
        if (ctx.attempt() == 0) throw ag::transient_error("timeout");
        return ag::Halt{};
      });
  h.graph.entry("draft").retry({.attempts = 2});
}

const std::regex iso8601{R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"};
}  // namespace

TEST_CASE("agent: the events log holds a run's events in order, with timestamps") {
  Harness h;
  evented_graph(h);
  REQUIRE(h.run().interrupted());
  h.clock.advance(1min);
  REQUIRE(h.resume("run-1", ag::Approve{}).succeeded());

  const auto events = h.store.events("run-1");
  std::vector<std::string> kinds_nodes;
  for (const auto& e : events)
    kinds_nodes.push_back(e.at("kind").get<std::string>() + " " + e.at("node").get<std::string>());
  CHECK(kinds_nodes == std::vector<std::string>{
                           "graph_started ", "step_started draft", "step_completed draft",
                           "step_started gate", "step_completed gate", "interrupted gate",
                           "decision_recorded review", "resumed review", "step_started review",
                           "retry_scheduled review", "step_started review", "step_completed review",
                           "graph_completed review"});
  std::string previous;
  for (const auto& e : events) {
    CAPTURE(e.dump());
    const std::string at = e.at("at");
    CHECK(std::regex_match(at, iso8601));
    CHECK(at >= previous);
    previous = at;
    CHECK(e.at("run_id") == "run-1");
    CHECK(e.contains("step"));
    CHECK(e.contains("duration_ms"));
  }
  CHECK(events.front().at("at") == "2024-01-01T00:00:00.000Z");
  CHECK(events.back().at("at") == "2024-01-01T00:01:00.105Z");  // 5 ms, 1 min, 100 ms backoff
  CHECK(events[2].at("step") == 1);
  CHECK(events[2].at("detail").at("next") == "gate");
  CHECK(events[6].at("detail").at("reviewer") == "");
  CHECK(events[9].at("detail").at("attempt") == 1);
  CHECK(events[9].at("detail").at("backoff_ms") == 100);
  CHECK(events.back().at("step") == 3);
}

TEST_CASE("agent: a failed run's log ends with graph_failed and its reason") {
  Harness h;
  h.node("a", to("nowhere"));
  h.graph.entry("a");
  REQUIRE(h.run().failed());
  const auto events = h.store.events("run-1");
  CHECK(h.event_kinds() ==
        std::vector<std::string>{"graph_started", "step_started", "graph_failed"});
  CHECK(events.back().at("detail").at("reason") == "unknown_node");
}

TEST_CASE("agent: a cancelled run's log ends with cancelled, and resuming logs resumed") {
  Harness h;
  std::stop_source stop;
  h.node("a", [&](Doc&, ag::RunContext&) -> ag::NextStep {
     stop.request_stop();
     return ag::Goto{"b"};
   }).node("b", halt());
  h.graph.entry("a");
  auto o = h.options();
  o.stop = stop.get_token();
  REQUIRE(h.run("run-1", o).cancelled());
  CHECK(h.event_kinds() ==
        std::vector<std::string>{"graph_started", "step_started", "step_completed", "cancelled"});
  REQUIRE(h.resume().succeeded());
  CHECK(h.event_kinds() ==
        std::vector<std::string>{"graph_started", "step_started", "step_completed", "cancelled",
                                 "resumed", "step_started", "step_completed", "graph_completed"});
}

TEST_CASE("agent: resuming after a crash logs resumed at the first uncommitted node") {
  Harness h;
  h.node("a", to("b")).node("b", halt());
  h.graph.entry("a");
  {
    CrashingStore dying(h.store, 1);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  REQUIRE(h.resume().succeeded());
  const auto events = h.store.events("run-1");
  CHECK(h.event_kinds() ==
        std::vector<std::string>{"graph_started", "step_started", "step_completed", "step_started",
                                 "resumed", "step_started", "step_completed", "graph_completed"});
  CHECK(events[4].at("node") == "b");
}

TEST_CASE("agent: the event bus publishes the same events as the log") {
  Harness h;
  evented_graph(h);
  std::vector<nlohmann::json> published;
  boost::signals2::scoped_connection c = h.graph.events().connect(
      [&](const ag::RunEventRecord& e) { published.push_back(nlohmann::json(e)); });
  REQUIRE(h.run().interrupted());
  REQUIRE(h.resume("run-1", ag::Approve{}).succeeded());
  CHECK(published == h.store.events("run-1"));
  CHECK(published.size() == 13);
}

TEST_CASE(
    "agent: ProgressPrinter prints one line per step in the `[run-7] step 3/50 review ✓ "
    "1.2 ms` shape") {
  Harness h;
  h.node("draft", to("review")).node("review", to("revise")).node("revise", halt());
  h.graph.entry("draft").max_steps(50);
  std::ostringstream out;
  const auto connection = ag::ProgressPrinter(out, h.graph.max_steps()).attach(h.graph.events());
  REQUIRE(h.run("run-7").succeeded());

  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  // std::regex knows no \u escapes: the check mark is spliced in as UTF-8 text.
  const std::regex step_line{R"(\[run-7\] step (\d+)/50 (\w+) )"
                             "\u2713"
                             R"( \d+\.\d ms)"};
  const char* nodes[] = {"draft", "review", "revise"};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(lines[i]);
    std::smatch m;
    REQUIRE(std::regex_match(lines[i], m, step_line));
    CHECK(m[1] == std::to_string(i + 1));
    CHECK(m[2] == nodes[i]);
  }
  CHECK(lines[3] == "[run-7] succeeded after 3 steps");
}

TEST_CASE("agent: ProgressPrinter stops printing when its connection is dropped") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a");
  std::ostringstream out;
  { const auto connection = ag::ProgressPrinter(out).attach(h.graph.events()); }
  REQUIRE(h.run().succeeded());
  CHECK(out.str().empty());
}

// --- two workers -----------------------------------------------------------------------------

TEST_CASE("agent: a second worker on a run whose lease is held gets run_busy") {
  for (const int contenders : {1, 2, 4}) {
    CAPTURE(contenders);
    Harness h;
    std::latch entered{1};
    std::latch release{1};
    h.node("slow", [&](Doc&, ag::RunContext&) -> ag::NextStep {
       entered.count_down();
       release.wait();
       return ag::Goto{"b"};
     }).node("b", halt());
    h.graph.entry("slow");

    auto first = std::async(std::launch::async, [&] { return h.run("run-1"); });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!entered.try_wait()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(1ms);
    }

    std::vector<std::future<std::string>> others;
    for (int i = 0; i < contenders; ++i) {
      others.push_back(std::async(std::launch::async, [&, i]() -> std::string {
        ag::RunOptions o = h.options();
        o.worker = "worker-" + std::to_string(i);
        try {
          if (i % 2 == 0)
            (void)h.graph.resume("run-1", h.store, std::nullopt, o);
          else
            (void)h.graph.run("run-1", Doc{}, h.store, o);
          return "no error";
        } catch (const ag::run_busy&) {
          return "run_busy";
        } catch (const std::exception& e) {
          return std::string("other: ") + e.what();
        }
      }));
    }
    for (auto& f : others) {
      REQUIRE(f.wait_for(30s) == std::future_status::ready);
      CHECK(f.get() == "run_busy");
    }
    release.count_down();
    REQUIRE(first.wait_for(30s) == std::future_status::ready);
    CHECK(first.get().succeeded());
    CHECK(h.calls == std::map<std::string, int>{{"slow", 1}, {"b", 1}});
  }
}

TEST_CASE("agent: the lease is released when a run call ends, so the run can be resumed") {
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
     return ag::Interrupt{"wait", std::nullopt, "b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().interrupted());
  auto lease = h.store.lease("run-1", "someone");  // free again after run()
  CHECK(lease.held());
  CHECK_THROWS_AS(h.resume("run-1", ag::Approve{}), ag::run_busy);
}

// ---------------------------------------------------------------- monitor and fork

TEST_CASE("agent: a RunMonitor follows the run's status as reactive state") {
  Harness h;
  h.node("ask", [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    if (ctx.approved()) return ag::Halt{};
    return ag::Interrupt{"ok?"};
  });
  h.graph.entry("ask");
  trellis::Context ctx;
  ag::RunMonitor monitor{ctx};
  auto waiting = monitor.state_is(RunStatus::WaitingApproval);
  std::vector<bool> seen;
  auto effect = ctx.effect([&] { seen.push_back(waiting.get()); });

  ag::RunOptions o;
  o.monitor = &monitor;
  h.run("run-1", o);
  CHECK(waiting.get());
  CHECK(monitor.status().get() == RunStatus::WaitingApproval);
  h.resume("run-1", ag::Approve{}, o);
  CHECK_FALSE(waiting.get());
  CHECK(monitor.status().get() == RunStatus::Succeeded);
  CHECK(seen == std::vector<bool>{false, true, false});
}

TEST_CASE("agent: fork starts a new run from any checkpoint of another") {
  Harness h;
  h.node("a", to("b")).node("b", to("c")).node("c", halt());
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  const auto history = h.store.history("run-1");
  REQUIRE(history.size() >= 3);
  // Checkpoint 1 was committed after "a": the fork continues at "b" with a's changes only.
  h.graph.fork("run-1", 1, "run-2", h.store);
  const ag::Checkpoint first = h.latest("run-2");
  CHECK(first.seq == 0);
  CHECK(first.next_node == "b");
  CHECK(first.step == 1);
  REQUIRE(first.forked_from.has_value());  // Graph::fork records the origin, with nobody named
  CHECK(first.forked_from->run_id == "run-1");
  CHECK(first.forked_from->seq == 1);
  CHECK(first.forked_from->by.empty());
  h.calls.clear();
  const auto out = h.resume("run-2");
  CHECK(out.succeeded());
  CHECK(out.state->trail == Trail{"a", "b", "c"});
  CHECK(h.calls["a"] == 0);
  CHECK(h.calls["b"] == 1);
  CHECK(h.store.history("run-1").size() == history.size());  // the source is untouched
}

TEST_CASE("agent: fork refuses a missing checkpoint, an existing id and another graph") {
  Harness h;
  h.node("a", halt());
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  CHECK_THROWS_AS(h.graph.fork("run-1", 99, "run-2", h.store), ag::unknown_run);
  CHECK_THROWS_AS(h.graph.fork("run-1", 0, "run-1", h.store), ag::graph_error);
  CHECK_THROWS_AS(h.graph.fork("run-1", 0, "../x", h.store), ag::invalid_run_id);
  Harness other;
  other.node("a", halt()).node("z", halt());
  other.graph.entry("a");
  CHECK_THROWS_AS(other.graph.fork("run-1", 0, "run-2", h.store), ag::graph_mismatch);
}
