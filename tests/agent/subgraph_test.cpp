// SPDX-License-Identifier: MIT
// Subgraphs (subgraph.hpp): a node runs another graph as a child run of its own; the parent
// waits with it, receives its output, forwards decisions to it and cancels it.

#include <trellis/agent/chain.hpp>
#include <trellis/agent/failpoint.hpp>
#include <trellis/agent/operations.hpp>
#include <trellis/agent/subgraph.hpp>
#include <trellis/persist/errors.hpp>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "agent_test_support.hpp"

namespace {

/// A parent graph whose node "check" runs `child` (a graph over Doc) with the text "in", and
/// keeps the child's trail; then "done".
struct Family {
  Harness parent;
  ag::Graph<Doc> child;
  std::map<std::string, int> child_calls;

  Family() {
    parent
        .node("check",
              [this](Doc& s, ag::RunContext& ctx) -> ag::NextStep {
                auto r = ag::subgraph(ctx, child, Doc{.text = "in", .trail = {}});
                if (!r.done()) return *r.wait;
                s.text = r.output->text;
                for (const std::string& t : r.output->trail) s.trail.push_back("child:" + t);
                return ag::Goto{"done"};
              })
        .node("done", halt());
    parent.graph.entry("check");
  }
  Family& child_node(std::string name, Step step) {
    child.add(std::make_unique<FnNode>(std::move(name), std::move(step), PermissionMode::Plan,
                                       &child_calls));
    return *this;
  }
  ag::Outcome<Doc> resume_child(std::optional<ag::Resume> d = std::nullopt) {
    ag::RunOptions o;
    o.clock = &parent.clock;
    return child.resume(kid, parent.store, std::move(d), o);
  }
  const std::string kid = "run-1.check.0";
};

Step ask() {
  return [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    if (ctx.resume()) return ag::Goto{"b"};
    return ag::Interrupt{
        "approval: ship",
        ag::ApprovalRequest{"ship 1.2", {{"version", "1.2"}}, "irreversible", t0 + 1h}};
  };
}

}  // namespace

TEST_CASE("subgraph: the child's final state reaches the parent; the child is a run of its own") {
  Family f;
  f.child_node("a", [](Doc& s, ag::RunContext&) -> ag::NextStep {
    s.text += "+a";
    return ag::Goto{"b"};
  });
  f.child_node("b", halt());
  f.child.entry("a");
  const auto out = f.parent.run();
  REQUIRE(out.succeeded());
  CHECK(out.state->text == "in+a");
  CHECK(out.state->trail == std::vector<std::string>{"check", "child:a", "child:b", "done"});
  // The child: its own id (derived from the parent's), history and fingerprint.
  const auto cp = f.parent.store.latest(f.kid);
  REQUIRE(cp.has_value());
  CHECK(cp->status == RunStatus::Succeeded);
  CHECK(cp->fingerprint == f.child.fingerprint());
  CHECK(f.parent.store.history(f.kid).size() == 3);  // queued, after a, after b (succeeded)
  CHECK(f.parent.store.runs().size() == 2);
  CHECK(ag::child_runs(f.parent.store, "run-1").empty());  // finished children are not listed
}

TEST_CASE("subgraph: a crash in the child resumes the same child when the parent resumes") {
  Family f;
  f.child_node("a", to("b")).child_node("b", halt());
  f.child.entry("a");
  {
    // The child's first step commits, then the process "dies" (an injected I/O error).
    trellis::ScopedFailpoint fp("step.after_commit", trellis::FailpointAction::error, 1);
    CHECK_THROWS_AS(f.parent.run(), trellis::persist_error);
  }
  CHECK(f.parent.latest().step == 0);  // the parent's step did not commit
  CHECK(f.parent.latest(f.kid).next_node == "b");
  const auto out = f.parent.resume();
  REQUIRE(out.succeeded());
  CHECK(f.child_calls["a"] == 1);  // continued, not started again
  CHECK(f.child_calls["b"] == 1);
  CHECK(f.parent.store.runs().size() == 2);
}

TEST_CASE("subgraph: child ids are stable, valid run ids, unique per parent, node and step") {
  CHECK(ag::child_run_id("p", "check", 3) == "p.check.3");
  CHECK(ag::child_run_id("p", "check", 3, 2) == "p.check.3.2");
  const std::string odd = ag::child_run_id("p", "has space", 1);
  CHECK(odd == ag::child_run_id("p", "has space", 1));
  CHECK(odd != ag::child_run_id("p", "has space", 2));
  CHECK_NOTHROW(ag::check_run_id(odd));
  const std::string long_parent(128, 'x');
  const std::string id = ag::child_run_id(long_parent, "n", 1);
  CHECK(id.size() <= 128);
  CHECK_NOTHROW(ag::check_run_id(id));
  CHECK(id != ag::child_run_id(long_parent, "n", 2));
}

TEST_CASE("subgraph: an approval in the child surfaces on the parent; its decision reaches it") {
  Family f;
  f.child_node("a", ask()).child_node("b", halt());
  f.child.entry("a");
  const auto out = f.parent.run();
  REQUIRE(out.interrupted());
  REQUIRE(out.interrupt->approval.has_value());
  CHECK(out.interrupt->approval->action == "ship 1.2");
  CHECK(out.interrupt->approval->proposed_input == nlohmann::json{{"version", "1.2"}});
  CHECK(out.interrupt->approval->risk_reason == "irreversible");
  CHECK(out.interrupt->approval->expires_at == t0 + 1h);
  const auto child_cp = f.parent.latest(f.kid);
  REQUIRE(child_cp.status == RunStatus::WaitingApproval);
  CHECK(out.interrupt->reason ==
        "subgraph " + f.kid + " request " + ag::request_id(child_cp) + ": approval: ship");
  // Both wait: an operator sees the parent's request (and the child's).
  CHECK(ag::pending_approvals(f.parent.store).size() == 2);

  const auto done = f.parent.resume("run-1", ag::Approve{.reviewer = "ana", .comment = "go"});
  REQUIRE(done.succeeded());
  const auto child_history = f.parent.store.history(f.kid);
  bool decided = false;
  for (const auto& cp : child_history)
    if (cp.decision) {
      decided = true;
      CHECK(std::get<ag::Approve>(cp.decision->given).reviewer == "ana");
    }
  CHECK(decided);
  CHECK(f.child_calls["a"] == 2);
  CHECK(ag::verify_chain(f.parent.store, "run-1").intact());
  CHECK(ag::verify_chain(f.parent.store, f.kid).intact());
}

TEST_CASE("subgraph: a Reject on the parent fails the parent and leaves the child waiting") {
  Family f;
  f.child_node("a", ask()).child_node("b", halt());
  f.child.entry("a");
  REQUIRE(f.parent.run().interrupted());
  const auto out = f.parent.resume("run-1", ag::Reject{.reason = "no"});
  CHECK(out.failed());
  CHECK(out.reason == Reason::approval_rejected);
  CHECK(f.parent.latest(f.kid).status == RunStatus::WaitingApproval);
}

TEST_CASE("subgraph: a decision recorded on the child makes the parent go on without one") {
  Family f;
  f.child_node("a", ask()).child_node("b", halt());
  f.child.entry("a");
  REQUIRE(f.parent.run().interrupted());
  const auto child_cp = f.parent.latest(f.kid);
  CHECK(ag::surfacing_runs(f.parent.store, f.kid, ag::request_id(child_cp)) ==
        std::vector<std::string>{"run-1"});
  ag::record_decision(f.parent.store, f.kid, ag::request_id(child_cp),
                      ag::Approve{.reviewer = "bo"}, f.parent.clock);
  CHECK(f.parent.latest().status == RunStatus::Queued);  // runnable: resume or a worker
  CHECK(ag::pending_approvals(f.parent.store).empty());
  const auto out = f.parent.resume();
  REQUIRE(out.succeeded());
  for (const auto& cp : f.parent.store.history(f.kid))
    if (cp.decision) CHECK(std::get<ag::Approve>(cp.decision->given).reviewer == "bo");
  CHECK(f.child_calls["a"] == 2);
  // The checkpoint that made the parent Queued is a link of its hash chain like any other.
  const ag::ChainReport parent_chain = ag::verify_chain(f.parent.store, "run-1");
  CHECK_MESSAGE(parent_chain.intact(), parent_chain.text());
  CHECK(ag::verify_chain(f.parent.store, f.kid).intact());
}

TEST_CASE(
    "subgraph: while another process holds the child's lease, the parent waits and "
    "looks again; it does not fail") {
  Family f;
  f.child_node("a", ask()).child_node("b", halt());
  f.child.entry("a");
  REQUIRE(f.parent.run().interrupted());
  const auto child_cp = f.parent.latest(f.kid);
  ag::record_decision(f.parent.store, f.kid, ag::request_id(child_cp),
                      ag::Approve{.reviewer = "bo"}, f.parent.clock);
  REQUIRE(f.parent.latest().status == RunStatus::Queued);
  {
    // Another process (a worker that has the child graph) advances the child.
    ag::Lease elsewhere = f.parent.store.lease(f.kid, "another worker");
    const auto out = f.parent.resume();
    CHECK(out.waiting());
    CHECK(f.parent.latest().status == RunStatus::Waiting);
  }
  f.parent.clock.advance(2s);
  const auto done = f.parent.resume();
  CHECK(done.succeeded());
  CHECK(ag::verify_chain(f.parent.store, "run-1").intact());
}

TEST_CASE("subgraph: a decision on the parent's stale request is not forwarded to the child") {
  Family f;
  f.child_node("a", ask());
  f.child_node("b", [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    if (ctx.resume()) return ag::Halt{};
    return ag::Interrupt{"second question"};
  });
  f.child.entry("a");
  REQUIRE(f.parent.run().interrupted());  // surfaces the child's first request
  // The child is decided by its own program and moves on to its second pause.
  ag::RunOptions o;
  o.clock = &f.parent.clock;
  REQUIRE(f.child.resume(f.kid, f.parent.store, ag::Approve{.reviewer = "bo"}, o).interrupted());
  // A decision given on the parent answered the first request: it is not the second's answer.
  const auto again = f.parent.resume("run-1", ag::Approve{.reviewer = "ana"});
  REQUIRE(again.interrupted());
  CHECK(again.interrupt->reason.ends_with(": second question"));
  CHECK(f.parent.latest(f.kid).status == RunStatus::WaitingApproval);
  CHECK(f.parent.latest(f.kid).next_node == "b");
}

TEST_CASE("subgraph: a child that sleeps makes the parent wait on a durable timer") {
  Family f;
  f.child_node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
    return ag::Sleep{.duration = 10min, .then = "b"};
  });
  f.child_node("b", halt());
  f.child.entry("a");
  const auto out = f.parent.run();
  REQUIRE(out.waiting());
  CHECK(out.wake_at == f.parent.latest(f.kid).wake_at);
  CHECK(f.parent.resume().waiting());  // not due: nothing happens
  f.parent.clock.advance(10min);
  const auto done = f.parent.resume();
  REQUIRE(done.succeeded());
  CHECK(f.child_calls["a"] == 1);
  CHECK(f.child_calls["b"] == 1);
  CHECK(f.parent.store.runs().size() == 2);  // the parent's rerun continued the same child
}

TEST_CASE("subgraph: cancelling the parent cancels the child; resuming it resumes the child") {
  Family f;
  f.child_node("a", ask()).child_node("b", halt());
  f.child.entry("a");
  REQUIRE(f.parent.run().interrupted());
  REQUIRE(ag::child_runs(f.parent.store, "run-1") == std::vector<std::string>{f.kid});
  const auto c = ag::cancel_run(f.parent.store, "run-1", "ops", "stop", f.parent.clock);
  CHECK(c.cancelled_now);
  CHECK(f.parent.latest().status == RunStatus::Cancelled);
  CHECK(f.parent.latest(f.kid).status == RunStatus::Cancelled);
  const auto asked = f.parent.store.cancel_requests(f.kid, 0);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].by == "ops");
  // Resumed, the parent waits again (its pause is never skipped); one decision on the parent
  // then answers the child's question too: its node resumes the child with it.
  const auto again = f.parent.resume();
  REQUIRE(again.interrupted());
  const auto done = f.parent.resume("run-1", ag::Approve{.reviewer = "ana"});
  CHECK(done.succeeded());
  CHECK(f.parent.latest(f.kid).status == RunStatus::Succeeded);
  CHECK(f.child_calls["a"] == 2);
}

TEST_CASE("subgraph: a cancel request on a running parent stops the child it runs") {
  Family f;
  f.child_node("a", [](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    // Works until stopped (the parent's stop token reaches the child's node).
    for (int i = 0; i < 2000 && !ctx.stop_requested(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (ctx.stop_requested()) throw std::runtime_error("aborted");
    return ag::Halt{};
  });
  f.child.entry("a");
  auto o = f.parent.options();
  o.cancel_poll = std::chrono::milliseconds(10);
  std::thread ops([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.parent.store.request_cancel(ag::CancelRequest{"run-1", 0, "ops", "stop", "t"});
  });
  const auto out = f.parent.run("run-1", o);
  ops.join();
  CHECK(out.cancelled());
  CHECK(f.parent.latest(f.kid).status == RunStatus::Cancelled);
}

TEST_CASE("subgraph: a failing child fails the parent's node (subgraph_failed)") {
  Family f;
  f.child_node("a", [](Doc&, ag::RunContext&) -> ag::NextStep {
    throw std::runtime_error("checklist item missing");
  });
  f.child.entry("a");
  const auto out = f.parent.run();
  REQUIRE(out.failed());
  CHECK(out.reason == Reason::node_error);
  CHECK(out.detail.find("child run '" + f.kid + "' failed (node_error)") != std::string::npos);
  CHECK(out.detail.find("checklist item missing") != std::string::npos);
}

TEST_CASE("subgraph: outside a run call it is a graph_error") {
  ag::Graph<Doc> child;
  ag::ManualClock clock{t0};
  ag::RunContext ctx({.run_id = "r", .node = "n", .clock = &clock});
  CHECK_THROWS_AS(ag::subgraph(ctx, child, Doc{}), ag::graph_error);
}
