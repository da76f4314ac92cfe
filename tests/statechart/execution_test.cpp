// SPDX-License-Identifier: MIT
/// @file
/// What actions and guards meet while a chart runs: the microstep budget (chart_livelock),
/// actions and guards that throw (error.execution, SCXML 5.9), delayed sends and cancel on a
/// ManualChartClock, `ChartActions::in()`, unknown state ids, and `can(e)`.
#include "chart_test_support.hpp"

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace execution_test {

using namespace trellis;
using namespace std::chrono_literals;
using chart_test::Lines;
using chart_test::Log;
using chart_test::Rig;
using chart_test::say;
using chart_test::say_error;
using chart_test::say_event;
using chart_test::trace;
using chart_test::traced;

namespace {

ChartOptions budget(std::size_t microsteps) {
  ChartOptions o;
  o.microstep_budget = microsteps;
  return o;
}

ChartOptions on_clock(const ChartClock& clock) {
  ChartOptions o;
  o.clock = &clock;
  return o;
}

[[noreturn]] void boom() { throw std::runtime_error("boom"); }

}  // namespace

// --- the microstep budget ------------------------------------------------------------------------

namespace {

/// x --go--> loop {a <-> b, eventless}; loop --stop--> x.
ChartBuilder<Log> eventless_loop() {
  ChartBuilder<Log> b("looping");
  b.state("x", [](auto& s) { s.on("go").to("a"); });
  b.state("loop", [](auto& s) {
    s.state("a", [](auto& x) { x.always().to("b"); });
    s.state("b", [](auto& x) { x.always().to("a"); });
    s.on("stop").to("x");
  });
  return b;
}

}  // namespace

TEST_CASE("chart execution: an eventless loop throws chart_livelock from send") {
  Rig rig(eventless_loop(), budget(50));
  try {
    (void)rig.chart.send("go");
    FAIL("no chart_livelock");
  } catch (const chart_livelock& e) {
    CHECK(std::string(e.id()) == "statechart.livelock");
    CHECK(std::string(e.what()).find("'looping'") != std::string::npos);
    CHECK(std::string(e.what()).find("50") != std::string::npos);
  }
}

TEST_CASE("chart execution: a livelocked macrostep commits the configuration it reached") {
  Rig rig(eventless_loop(), budget(50));
  CHECK_THROWS_AS((void)rig.chart.send("go"), chart_livelock);
  CHECK(rig.chart.snapshot().step() == 1);
  CHECK_FALSE(rig.chart.in("x").get());
  CHECK(rig.chart.in("loop").get());
  const Lines atomic = rig.chart.atomic_configuration();
  CHECK((atomic == Lines{"a"} || atomic == Lines{"b"}));
}

TEST_CASE("chart execution: after a livelock the chart takes events again") {
  Rig rig(eventless_loop(), budget(50));
  CHECK_THROWS_AS((void)rig.chart.send("go"), chart_livelock);
  CHECK(rig.chart.send("stop") == SendResult::Transitioned);
  CHECK(rig.chart.configuration() == Lines{"x"});
}

TEST_CASE("chart execution: raised events that keep raising each other throw chart_livelock") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("ping").raise("pong");
    s.on("pong").raise("ping");
  });
  Rig rig(b, budget(100));
  CHECK_THROWS_AS((void)rig.chart.send("ping"), chart_livelock);
}

TEST_CASE("chart execution: a chart that livelocks while starting throws from its constructor") {
  ChartBuilder<Log> b("c");
  b.state("a", [](auto& s) { s.always().to("b"); });
  b.state("b", [](auto& s) { s.always().to("a"); });
  Context ctx;
  CHECK_THROWS_AS(StateChart<Log>(ctx, b.build(), Log{}, budget(10)), chart_livelock);
}

// --- error.execution
// ------------------------------------------------------------------------------

TEST_CASE("chart execution: an action that throws ends its block and raises error.execution") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) { s.on("go").to("t"); });
  b.state("t", [](auto& t) {
    t.on_entry().call("A", [] { boom(); }).call("B", say("B"));
    t.on_entry("C", say("C"));  // another block: it still runs
    t.on("error.execution").to("failed").call("why", say_error());
  });
  b.state("failed");
  Rig rig(b);
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  // error.execution is internal: handled in the same macrostep, with the exception as data.
  CHECK(rig.news() == Lines{"C", "boom"});
  CHECK(rig.chart.configuration() == Lines{"failed"});
}

TEST_CASE("chart execution: an action that throws in a transition does not stop the transition") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) { s.on("go").to("t").call("A", [] { boom(); }).call("B", say("B")); });
  b.state("t", [](auto& t) { t.on_entry("entered", say("entered t")); });
  Rig rig(b);
  rig.chart.send("go");
  CHECK(rig.news() == Lines{"entered t"});
  CHECK(rig.chart.configuration() == Lines{"t"});
}

TEST_CASE("chart execution: a guard that throws is false and raises error.execution") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("go").when("throws", []() -> bool { boom(); }).to("bad");
    s.on("go").to("other");
  });
  b.state("bad");
  b.state("other", [](auto& s) { s.on("error.execution").to("handled").call("why", say_error()); });
  b.state("handled");
  Rig rig(b);
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  CHECK(rig.chart.configuration() == Lines{"handled"});
  CHECK(rig.news() == Lines{"boom"});
}

// --- delayed sends and the clock
// --------------------------------------------------------------------

TEST_CASE("chart execution: a zero-delay send is delivered after the macrostep, within send()") {
  ChartBuilder<Log> b("c");
  b.state("s1", [](auto& s) { s.on("go").to("s2").send("next"); });
  b.state("s2", [](auto& s) { s.on("next").to("s3"); });
  b.state("s3");
  ManualChartClock clock;
  Rig rig(b, on_clock(clock));
  std::vector<std::pair<Lines, Lines>> steps;
  const auto seen =
      rig.chart.on_transition([&](const ChartConfiguration& from, const ChartConfiguration& to) {
        steps.emplace_back(from.ids(), to.ids());
      });
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  // Two macrosteps, the second for the sent event; the clock never moved.
  CHECK(steps == std::vector<std::pair<Lines, Lines>>{{{"s1"}, {"s2"}}, {{"s2"}, {"s3"}}});
  CHECK(rig.chart.pending_sends().empty());
}

namespace {

/// s1 --go--> s2, sending "tick" after 100 ms with id "t1"; s2 --tick--> s3; "abort" cancels.
ChartBuilder<Log> delayed() {
  ChartBuilder<Log> b("c");
  b.state("s1", [](auto& s) { s.on("go").to("s2").send("tick", 100ms, "t1"); });
  b.state("s2", [](auto& s) {
    s.on("tick").to("s3");
    s.on("abort").cancel("t1");
  });
  b.state("s3");
  return b;
}

}  // namespace

TEST_CASE("chart execution: a delayed send waits for its due time on the chart's clock") {
  ManualChartClock clock;
  Rig rig(delayed(), on_clock(clock));
  const auto start = clock.now();
  rig.chart.send("go");
  const std::vector<DelayedSend> pending = rig.chart.pending_sends();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].event.name == "tick");
  CHECK(pending[0].id == "t1");
  CHECK(pending[0].due == start + 100ms);
  CHECK(rig.chart.next_due() == start + 100ms);
  CHECK(rig.chart.fire_due() == 0);
  clock.advance(99ms);
  CHECK(rig.chart.fire_due() == 0);
  CHECK(rig.chart.configuration() == Lines{"s2"});
}

TEST_CASE("chart execution: a due send is delivered by fire_due(), not by the clock alone") {
  ManualChartClock clock;
  Rig rig(delayed(), on_clock(clock));
  rig.chart.send("go");
  clock.advance(100ms);
  CHECK(rig.chart.configuration() == Lines{"s2"});
  CHECK(rig.chart.fire_due() == 1);
  CHECK(rig.chart.configuration() == Lines{"s3"});
  CHECK(rig.chart.pending_sends().empty());
  CHECK_FALSE(rig.chart.next_due().has_value());
}

TEST_CASE("chart execution: send() also delivers the delayed sends that are due") {
  ManualChartClock clock;
  Rig rig(delayed(), on_clock(clock));
  rig.chart.send("go");
  clock.advance(150ms);
  CHECK(rig.chart.send("unrelated") == SendResult::Rejected);  // the result is its own event's
  CHECK(rig.chart.configuration() == Lines{"s3"});
}

TEST_CASE("chart execution: cancel removes a pending send by its id") {
  ManualChartClock clock;
  Rig rig(delayed(), on_clock(clock));
  rig.chart.send("go");
  rig.chart.send("abort");
  CHECK(rig.chart.pending_sends().empty());
  clock.advance(1s);
  CHECK(rig.chart.fire_due() == 0);
  CHECK(rig.chart.configuration() == Lines{"s2"});
}

TEST_CASE("chart execution: sends due at the same time are delivered in the order sent") {
  ChartBuilder<Log> b("c");
  b.state("s1", [](auto& s) { s.on("go").to("s2").send("first", 10ms).send("second", 10ms); });
  b.state("s2", [](auto& s) {
    s.on("first").to("s3");
    s.on("second").to("wrong");
  });
  b.state("s3", [](auto& s) { s.on("second").to("s4"); });
  b.state("s4");
  b.state("wrong");
  ManualChartClock clock;
  Rig rig(b, on_clock(clock));
  rig.chart.send("go");
  clock.advance(10ms);
  CHECK(rig.chart.fire_due() == 2);
  CHECK(rig.chart.configuration() == Lines{"s4"});
}

TEST_CASE("chart execution: an action's ChartActions::send and cancel work like the builder's") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("arm").call("arm", [](ChartActions& ops) {
      ops.send(ChartEvent("fire", 7), 5ms, "x");
      ops.send(ChartEvent("other"), 5ms, "y");
    });
    s.on("disarm").call("disarm", [](ChartActions& ops) {
      ops.cancel("y");
      ops.cancel("no such id");  // ignored
    });
    s.on("fire").call("log", [](Log& l, const ChartEvent& e) {
      l.lines.push_back(e.name + " " + std::to_string(*e.data_as<int>()));
    });
    s.on("other").call("log", say_event());
  });
  ManualChartClock clock;
  Rig rig(b, on_clock(clock));
  rig.chart.send("arm");
  rig.chart.send("disarm");
  clock.advance(5ms);
  CHECK(rig.chart.fire_due() == 1);
  CHECK(rig.news() == Lines{"fire 7"});
}

// --- in(), unknown ids and can()
// ------------------------------------------------------------------

TEST_CASE("chart execution: an action's in() sees the states entered so far in the microstep") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) { r.state("a1"); });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) {
        s.on_entry("probe", [](Log& l, ChartActions& ops) {
          l.lines.push_back(std::string("a1 ") + (ops.in("a1") ? "in" : "out"));
          l.lines.push_back(std::string("b1 ") + (ops.in("b1") ? "in" : "out"));
        });
      });
    });
  });
  Rig rig(b);
  // Entry in document order: r1's a1 is active before r2's b1 runs its entry actions.
  CHECK(rig.news() == Lines{"a1 in", "b1 in"});
}

TEST_CASE("chart execution: a guard may ask which states are active") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) {
        s.on("go").when_in("b2").to("a2");
        s.on("go2")
            .when("b2 via query",
                  [](const Log&, const ChartEvent&, const ChartQuery& q) { return q.in("b2"); })
            .to("a2");
      });
      r.state("a2");
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) { s.on("flip").to("b2"); });
      r.state("b2");
    });
  });
  Rig rig(b);
  CHECK_FALSE(rig.chart.can("go"));
  CHECK_FALSE(rig.chart.can("go2"));
  rig.chart.send("flip");
  CHECK(rig.chart.can("go"));
  CHECK(rig.chart.can("go2"));
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  CHECK(rig.chart.atomic_configuration() == Lines{"a2", "b2"});
}

TEST_CASE("chart execution: asking a running chart for an unknown state throws unknown_state") {
  ChartBuilder<Log> b("named");
  b.state("s");
  Rig rig(b);
  try {
    (void)rig.chart.in("nope");
    FAIL("no unknown_state");
  } catch (const unknown_state& e) {
    CHECK(std::string(e.id()) == "statechart.unknown_state");
    CHECK(std::string(e.what()).find("'named'") != std::string::npos);
    CHECK(std::string(e.what()).find("'nope'") != std::string::npos);
  }
  CHECK_THROWS_AS((void)rig.chart.state_is("nope"), unknown_state);
  CHECK_THROWS_AS((void)rig.chart.on_enter("nope", [] {}), unknown_state);
  CHECK_THROWS_AS((void)rig.chart.on_exit("nope", [] {}), unknown_state);
  CHECK_THROWS_AS((void)rig.chart.snapshot().contains("nope"), unknown_state);
}

TEST_CASE("chart execution: an action asking for an unknown state raises error.execution") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("go").call("probe", [](ChartActions& ops) { (void)ops.in("nope"); });
    s.on("error.execution").to("failed").call("kind", [](Log& l, const ChartEvent& e) {
      try {
        std::rethrow_exception(*e.data_as<std::exception_ptr>());
      } catch (const unknown_state&) {
        l.lines.push_back("unknown_state");
      } catch (...) {
        l.lines.push_back("something else");
      }
    });
  });
  b.state("failed");
  Rig rig(b);
  rig.chart.send("go");
  CHECK(rig.news() == Lines{"unknown_state"});
}

TEST_CASE("chart execution: can(e) evaluates guards but runs no action") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.on("go").when("flag", [](const Log& l) { return !l.flag; }).to("t").call("t", say("t"));
  });
  b.state("t", trace());
  Rig rig(b);
  rig.news();
  CHECK(rig.chart.can("go"));
  CHECK_FALSE(rig.chart.can("other"));
  CHECK(rig.news().empty());
  CHECK(rig.chart.configuration() == Lines{"s"});
  CHECK(rig.chart.snapshot().step() == 0);
}

TEST_CASE("chart execution: can(e) with a guard that throws is false and raises nothing") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("go").when("throws", []() -> bool { boom(); }).to("t");
    s.on("tick").call("tick", say("tick"));
    s.on("error.execution").to("failed");
  });
  b.state("t");
  b.state("failed");
  Rig rig(b);
  CHECK_FALSE(rig.chart.can("go"));
  rig.chart.send("tick");
  CHECK(rig.chart.configuration() == Lines{"s"});
}

TEST_CASE("chart execution: an action may take any signature the builder lists") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("go")
        .call("full", [](Log& l, const ChartEvent& e, ChartActions&) { l.lines.push_back(e.name); })
        .call("data and event", [](Log& l, const ChartEvent&) { l.lines.push_back("2"); })
        .call("data and actions", [](Log& l, ChartActions&) { l.lines.push_back("3"); })
        .call("data", [](Log& l) { l.lines.push_back("4"); })
        .call("actions", [](ChartActions& ops) { ops.raise("raised"); })
        .call("nothing", [] {});
    s.on("raised").call("heard", say_event());
  });
  Rig rig(b);
  rig.chart.send("go");
  CHECK(rig.news() == Lines{"go", "2", "3", "4", "raised"});
}

}  // namespace execution_test
