// SPDX-License-Identifier: MIT
/// @file
/// ChartBuilder: what it accepts (every guard and action signature its header lists) and what
/// `build()` refuses, each problem named, all of them at once.
#include "chart_test_support.hpp"

#include <string>
#include <vector>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace builder_test {

using namespace trellis;
using chart_test::Lines;
using chart_test::Log;
using chart_test::Rig;

TEST_CASE("chart builder: every guard signature of the header is accepted") {
  // This file builds with -Wall -Wextra -Werror, as users' code may.
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("e")
        .when("full", [](const Log&, const ChartEvent&, const ChartQuery& q) { return q.in("s"); })
        .to("t1");
    s.on("e")
        .when("data and event", [](const Log& l, const ChartEvent&) { return l.flag; })
        .to("t2");
    s.on("e").when("data", [](const Log& l) { return l.flag; }).to("t3");
    s.on("e").when("nothing", [] { return false; }).to("t4");
  });
  for (const char* t : {"t1", "t2", "t3", "t4"}) b.state(t);
  Rig rig(b);
  rig.chart.send("e");
  CHECK(rig.chart.configuration() == Lines{"t1"});
}

// --- what build() refuses ------------------------------------------------------------------------

namespace {

/// Whether one of `problems` contains `text`.
bool lists(const std::vector<std::string>& problems, const std::string& text) {
  for (const std::string& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("chart builder: a transition to an unknown state is a problem") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) { s.on("e").to("nowhere"); });
  const auto problems = b.problems();
  CHECK(problems ==
        std::vector<std::string>{"transition 1 of state 'a' targets unknown state 'nowhere'"});
}

TEST_CASE("chart builder: an initial that is not a descendant is a problem") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) {
    s.initial("b");
    s.state("a1", [](auto& x) { x.on("e").to("b"); });
  });
  b.state("b", [](auto& s) { s.on("back").to("a1"); });
  CHECK(b.problems() == std::vector<std::string>{
                            "the initial of 'a' targets 'b', which is not a descendant of 'a'"});
}

TEST_CASE("chart builder: an initial naming its own state is a cycle") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) {
    s.initial("a");
    s.state("a1");
  });
  const auto problems = b.problems();
  CHECK(lists(problems, "the initial of 'a' targets 'a', itself or an ancestor"));
}

TEST_CASE("chart builder: a history at the top level is a problem") {
  ChartBuilder<> b("c");
  b.state("a");
  b.root().history("h", History::shallow, "a");
  CHECK(lists(b.problems(), "history state 'h' is at the chart's top level"));
}

TEST_CASE("chart builder: a history in a state without children is a problem") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) { s.history("h", History::deep, "a"); });
  CHECK(lists(b.problems(), "history state 'h' is inside 'a', which has no child states"));
}

TEST_CASE("chart builder: a history in a parallel state is accepted") {
  ChartBuilder<> b("c");
  b.parallel("p", [](auto& p) {
    p.history("h", History::deep, "x");
    p.state("r1", [](auto& r) { r.state("x"); });
    p.state("r2", [](auto& r) { r.state("y"); });
  });
  CHECK(b.problems().empty());
}

TEST_CASE("chart builder: a state nothing leads to is unreachable") {
  ChartBuilder<> b("c");
  b.state("a");
  b.state("lost");
  CHECK(b.problems() == std::vector<std::string>{
                            "state 'lost' is unreachable: no transition or default entry leads "
                            "to it"});
}

TEST_CASE("chart builder: a parallel state with one region is a problem") {
  ChartBuilder<> b("c");
  b.parallel("p", [](auto& p) { p.state("only"); });
  CHECK(b.problems() ==
        std::vector<std::string>{"parallel state 'p' has 1 region (a parallel state needs at least "
                                 "two)"});
}

TEST_CASE("chart builder: two states with one id are a problem") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) { s.state("x", [](auto& x) { x.on("e").to("b"); }); });
  b.state("b", [](auto& s) { s.state("x"); });
  CHECK(lists(b.problems(), "two states are named 'x'"));
}

TEST_CASE("chart builder: build() throws chart_error listing every problem at once") {
  ChartBuilder<> b("broken");
  b.state("a", [](auto& s) {
    s.on("e").to("nowhere");
    s.on("f").to("p");
  });
  b.parallel("p", [](auto& p) { p.state("only"); });
  b.state("lost");
  b.root().history("h", History::shallow, "a");
  b.state("c", [](auto& s) {
    s.initial("a");
    s.state("c1");
  });
  const std::vector<std::string> problems = b.problems();
  // p's one region, the top-level h, 'nowhere', c's initial, and three unreachable states:
  // lost, c and c1 (nothing leads to c, and c's initial does not lead to c1).
  CHECK(problems.size() == 7);
  try {
    (void)b.build();
    FAIL("built");
  } catch (const chart_error& e) {
    const std::string what = e.what();
    CHECK(std::string(e.id()) == "statechart.definition");
    CHECK(what.find("'broken'") != std::string::npos);
    for (const std::string& p : problems) {
      CAPTURE(p);
      CHECK(what.find(p) != std::string::npos);
    }
  }
}

TEST_CASE("chart builder: allow_unreachable accepts a state nothing leads to") {
  ChartBuilder<Log> b("c");
  b.state("a");
  b.state("lost");
  ChartBuildOptions options;
  options.allow_unreachable = true;
  CHECK(b.problems(options).empty());
  Rig rig(b, {}, options);
  CHECK(rig.chart.configuration() == Lines{"a"});
}

TEST_CASE("chart builder: allow_single_region accepts a parallel state with one region") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) { p.state("only"); });
  ChartBuildOptions options;
  options.allow_single_region = true;
  CHECK(b.problems(options).empty());
  Rig rig(b, {}, options);
  CHECK(rig.chart.configuration() == Lines{"p", "only"});
}

TEST_CASE("chart builder: a chart built for one data type refuses another") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) { s.on("e").call("log", chart_test::say("x")); });
  CHECK_THROWS_AS((void)Chart<NoData>(b.build().shared_definition()), chart_error);
}

TEST_CASE("chart builder: the builder may build again after build()") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) { s.on("e").to("t"); });
  b.state("t");
  const Chart<Log> first = b.build();
  const Chart<Log> second = b.build();
  CHECK(first.definition().states.size() == second.definition().states.size());
  CHECK(&first.definition() != &second.definition());
}

}  // namespace builder_test
