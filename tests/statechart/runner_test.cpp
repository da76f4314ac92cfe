// SPDX-License-Identifier: MIT
/// @file
/// The chart runners on the signal graph (StateChart on a Context, ThreadSafeStateChart on a
/// ThreadSafeContext; AsyncStateChart and threads are in chart_concurrency_test.cpp): eager
/// and glitch-free `in()`, observers' order and what they are told, batches, and the
/// configuration as a sorted list.
#include "chart_test_support.hpp"

#include <string>
#include <utility>
#include <vector>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace runner_test {

using namespace trellis;
using chart_test::Lines;
using chart_test::Log;

namespace {

template <class Ctx>
struct On {
  explicit On(const ChartBuilder<Log>& b) : chart(ctx, b.build()) {}
  Ctx ctx;
  BasicStateChart<Log, Ctx> chart;
};

/// p {r1 {a1 --flip--> a2 --flip--> a1}, r2 {b1 <-> b2, eventless, following r1}}: one "flip"
/// is two microsteps (r1 moves, then r2 follows), one macrostep.
ChartBuilder<Log> follower() {
  ChartBuilder<Log> b("follower");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) { s.on("flip").to("a2"); });
      r.state("a2", [](auto& s) { s.on("flip").to("a1"); });
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) { s.always().when_in("a2").to("b2"); });
      r.state("b2", [](auto& s) { s.always().when_in("a1").to("b1"); });
    });
  });
  return b;
}

/// x --go--> y --go--> x; x --pass--> via (eventless) --> y; y --stay--> y (external).
ChartBuilder<Log> simple() {
  ChartBuilder<Log> b("simple");
  b.state("x", [](auto& s) {
    s.on("go").to("y");
    s.on("pass").to("via");
  });
  b.state("via", [](auto& s) { s.always().to("y"); });
  b.state("y", [](auto& s) {
    s.on("go").to("x");
    s.on("stay").to("y");
    s.on("tick").call("tick", [](Log& l) { ++l.count; });
  });
  return b;
}

}  // namespace

#define CHART_SYNC_CONTEXTS Context, ThreadSafeContext

TEST_CASE_TEMPLATE("chart runner: in() is true exactly while its state is active", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  const Signal<bool> x = rig.chart.in("x");
  const Signal<bool> y = rig.chart.state_is("y");
  CHECK(x.get());
  CHECK_FALSE(y.get());
  rig.chart.send("go");
  CHECK_FALSE(x.get());  // fresh when send returns: eager, nothing to settle
  CHECK(y.get());
}

TEST_CASE_TEMPLATE("chart runner: an effect reading in() never sees half a macrostep", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(follower());
  const Signal<bool> a2 = rig.chart.in("a2");
  const Signal<bool> b2 = rig.chart.in("b2");
  std::vector<std::pair<bool, bool>> seen;
  const Effect e = rig.ctx.effect([&] { seen.emplace_back(a2.get(), b2.get()); });
  for (int i = 0; i < 4; ++i) rig.chart.send("flip");
  // Between the microsteps r1 has moved and r2 not yet: never committed, never seen.
  CHECK(seen == std::vector<std::pair<bool, bool>>{
                    {false, false}, {true, true}, {false, false}, {true, true}, {false, false}});
}

TEST_CASE_TEMPLATE("chart runner: on_transition is told the configurations before and after", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(follower());
  std::vector<std::pair<Lines, Lines>> told;
  std::vector<std::uint64_t> steps;
  const auto s = rig.chart.on_transition(
      [&](const ChartConfiguration& before, const ChartConfiguration& after) {
        told.emplace_back(before.atomic_ids(), after.atomic_ids());
        steps.push_back(after.step());
      });
  rig.chart.send("flip");
  rig.chart.send("flip");
  CHECK(told == std::vector<std::pair<Lines, Lines>>{{{"a1", "b1"}, {"a2", "b2"}},
                                                     {{"a2", "b2"}, {"a1", "b1"}}});
  CHECK(steps == std::vector<std::uint64_t>{1, 2});
}

TEST_CASE_TEMPLATE("chart runner: observers run in registration order after the commit", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  Lines order;
  const auto a = rig.chart.on_enter(
      "y", [&] { order.push_back("enter y, now " + rig.chart.configuration().front()); });
  const auto b = rig.chart.on_transition(
      [&](const ChartConfiguration&, const ChartConfiguration&) { order.push_back("transition"); });
  const auto c = rig.chart.on_exit("x", [&] { order.push_back("exit x"); });
  rig.chart.send("go");
  CHECK(order == Lines{"enter y, now y", "transition", "exit x"});
}

TEST_CASE_TEMPLATE("chart runner: on_enter and on_exit fire once per entry and exit", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  int entered = 0;
  int exited = 0;
  const auto a = rig.chart.on_enter("y", [&] { ++entered; });
  const auto b = rig.chart.on_exit("y", [&] { ++exited; });
  rig.chart.send("go");
  CHECK((entered == 1 && exited == 0));
  rig.chart.send("tick");  // targetless: y stays
  CHECK((entered == 1 && exited == 0));
  rig.chart.send("go");
  CHECK((entered == 1 && exited == 1));
}

TEST_CASE_TEMPLATE("chart runner: an external self-transition fires on_exit and on_enter", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  rig.chart.send("go");
  Lines told;
  const auto a = rig.chart.on_exit("y", [&] { told.push_back("exit y"); });
  const auto b = rig.chart.on_enter("y", [&] { told.push_back("enter y"); });
  CHECK(rig.chart.send("stay") == SendResult::Transitioned);
  CHECK(told == Lines{"exit y", "enter y"});
  CHECK(rig.chart.in("y").get());
}

TEST_CASE_TEMPLATE("chart runner: a targetless transition is a committed step", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  rig.chart.send("go");
  int told = 0;
  const auto s = rig.chart.on_transition(
      [&](const ChartConfiguration& before, const ChartConfiguration& after) {
        ++told;
        CHECK(before.ids() == after.ids());
        CHECK(after.reentered().empty());
      });
  CHECK(rig.chart.send("tick") == SendResult::Transitioned);
  CHECK(told == 1);
  CHECK(rig.chart.read([](const Log& l) { return l.count; }) == 1);
}

TEST_CASE_TEMPLATE("chart runner: a rejected event tells no observer", Ctx, CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  int told = 0;
  const auto s = rig.chart.on_transition(
      [&](const ChartConfiguration&, const ChartConfiguration&) { ++told; });
  CHECK(rig.chart.send("stay") == SendResult::Rejected);
  CHECK(told == 0);
  CHECK(rig.chart.snapshot().step() == 0);
}

TEST_CASE_TEMPLATE("chart runner: a state passed through within a macrostep is not reported", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  int entered = 0;
  int exited = 0;
  const auto a = rig.chart.on_enter("via", [&] { ++entered; });
  const auto b = rig.chart.on_exit("via", [&] { ++exited; });
  const Signal<bool> via = rig.chart.in("via");
  int via_true = 0;
  const Effect e = rig.ctx.effect([&] { via_true += via.get() ? 1 : 0; });
  rig.chart.send("pass");
  // "via" was active only between two microsteps: no committed configuration holds it.
  CHECK(rig.chart.configuration() == Lines{"y"});
  CHECK(via_true == 0);
  CHECK(entered == 0);
  CHECK(exited == 0);
}

TEST_CASE_TEMPLATE("chart runner: inside a batch the macrosteps reach on_transition as one", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  std::vector<std::pair<Lines, Lines>> told;
  const auto s = rig.chart.on_transition(
      [&](const ChartConfiguration& before, const ChartConfiguration& after) {
        told.emplace_back(before.ids(), after.ids());
      });
  rig.ctx.batch([&] {
    rig.chart.send("go");
    rig.chart.send("tick");
    rig.chart.send("go");
    rig.chart.send("go");
    CHECK(told.empty());  // told at the batch's end
  });
  CHECK(told == std::vector<std::pair<Lines, Lines>>{{{"x"}, {"y"}}});
}

TEST_CASE_TEMPLATE("chart runner: inside a batch on_enter and on_exit compare before and after",
                   Ctx, CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  Lines told;
  const auto a = rig.chart.on_enter("y", [&] { told.push_back("enter y"); });
  const auto b = rig.chart.on_exit("y", [&] { told.push_back("exit y"); });
  const auto c = rig.chart.on_enter("x", [&] { told.push_back("enter x"); });
  const auto d = rig.chart.on_exit("x", [&] { told.push_back("exit x"); });
  rig.ctx.batch([&] {
    rig.chart.send("go");  // x -> y
    rig.chart.send("go");  // y -> x
  });
  // One step from x to x: y was active in neither, x in both; an observer that counts
  // entries minus exits stays right.
  CHECK(told.empty());
  rig.ctx.batch([&] { rig.chart.send("go"); });
  CHECK(told == Lines{"enter y", "exit x"});
}

TEST_CASE_TEMPLATE("chart runner: configuration() lists the active states in document order", Ctx,
                   CHART_SYNC_CONTEXTS) {
  ChartBuilder<Log> b("c");
  b.parallel("zeta", [](auto& p) {
    p.state("mid", [](auto& r) { r.state("z9"); });
    p.state("alpha", [](auto& r) { r.state("b", [](auto& s) { s.state("y0"); }); });
  });
  On<Ctx> rig(b);
  CHECK(rig.chart.configuration() == Lines{"zeta", "mid", "z9", "alpha", "b", "y0"});
  CHECK(rig.chart.atomic_configuration() == Lines{"z9", "y0"});
}

TEST_CASE_TEMPLATE("chart runner: an observer's send is committed at once and told after", Ctx,
                   CHART_SYNC_CONTEXTS) {
  On<Ctx> rig(simple());
  std::vector<std::pair<Lines, Lines>> told;
  Lines inside;
  const auto s = rig.chart.on_transition(
      [&](const ChartConfiguration& before, const ChartConfiguration& after) {
        told.emplace_back(before.ids(), after.ids());
        if (after.contains("y") && told.size() == 1) {
          rig.chart.send("go");
          inside = rig.chart.configuration();
        }
      });
  rig.chart.send("go");
  CHECK(inside == Lines{"x"});
  CHECK(told == std::vector<std::pair<Lines, Lines>>{{{"x"}, {"y"}}, {{"y"}, {"x"}}});
}

TEST_CASE_TEMPLATE("chart runner: a livelock in an observer's send is thrown there, not outside",
                   Ctx, CHART_SYNC_CONTEXTS) {
  ChartBuilder<Log> b("c");
  b.state("x", [](auto& s) { s.on("go").to("y"); });
  b.state("y", [](auto& s) {
    s.on("loop").raise("ping");
    s.on("ping").raise("ping");
  });
  Ctx ctx;
  ChartOptions options;
  options.microstep_budget = 20;
  BasicStateChart<Log, Ctx> chart(ctx, b.build(), Log{}, options);
  bool inner_threw = false;
  const auto s =
      chart.on_transition([&](const ChartConfiguration& before, const ChartConfiguration&) {
        if (!before.contains("x")) return;  // only for x -> y
        try {
          (void)chart.send("loop");
        } catch (const chart_livelock&) {
          inner_threw = true;
        }
      });
  CHECK_NOTHROW((void)chart.send("go"));
  CHECK(inner_threw);
  CHECK_THROWS_AS((void)chart.send("loop"), chart_livelock);
}

}  // namespace runner_test
