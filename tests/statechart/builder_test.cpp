// SPDX-License-Identifier: MIT
/// @file
/// ChartBuilder: what it accepts (every guard and action signature its header lists) and what
/// `build()` refuses, each problem named, all of them at once.
#include "chart_test_support.hpp"

#include <string>
#include <vector>

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
