// The statechart core: building, entering, Appendix D's selection and ordering.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "trellis/statechart.hpp"

using namespace trellis;

namespace {

struct Log {
  std::vector<std::string> lines;
  friend bool operator==(const Log&, const Log&) = default;
};

auto logger(std::string what) {
  return [what](Log& l) { l.lines.push_back(what); };
}

}  // namespace

TEST_CASE("chart: enters the initial configuration, parents before children") {
  ChartBuilder<Log> b("c");
  b.state("a", [](auto& a) {
    a.on_entry("enter a", logger("enter a"));
    a.state("a1", [](auto& s) {
      s.on_entry("enter a1", logger("enter a1"));
      s.on("next").to("a2");
    });
    a.state("a2");
  });
  Context ctx;
  StateChart<Log> chart(ctx, b.build());
  CHECK(chart.configuration() == std::vector<std::string>{"a", "a1"});
  CHECK(chart.data().lines == std::vector<std::string>{"enter a", "enter a1"});
}

TEST_CASE("chart: a transition exits children first and enters parents first") {
  ChartBuilder<Log> b("c");
  b.state("a", [](auto& a) {
    a.on_exit("exit a", logger("exit a"));
    a.state("a1", [](auto& s) {
      s.on_exit("exit a1", logger("exit a1"));
      s.on("go").to("b2").call("t", logger("transition"));
    });
  });
  b.state("b", [](auto& s) {
    s.on_entry("enter b", logger("enter b"));
    s.state("b1");
    s.state("b2", [](auto& x) { x.on_entry("enter b2", logger("enter b2")); });
  });
  Context ctx;
  StateChart<Log> chart(ctx, b.build());
  CHECK(chart.send("go") == SendResult::Transitioned);
  CHECK(chart.configuration() == std::vector<std::string>{"b", "b2"});
  CHECK(chart.data().lines ==
        std::vector<std::string>{"exit a1", "exit a", "transition", "enter b", "enter b2"});
}

TEST_CASE("chart: parallel regions and done.state of a parallel state") {
  ChartBuilder<> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("x", [](auto& s) { s.on("e1").to("xf"); });
      r.final("xf");
    });
    p.state("r2", [](auto& r) {
      r.state("y", [](auto& s) { s.on("e2").to("yf"); });
      r.final("yf");
    });
    p.on("done.state.p").to("end");
  });
  b.state("end");
  Context ctx;
  StateChart<> chart(ctx, b.build());
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"x", "y"});
  chart.send("e1");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"xf", "y"});
  chart.send("e2");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"end"});
}

TEST_CASE("chart: deep history restores the atomic states a compound state left") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& a) {
    a.history("h", History::deep, "a1");
    a.state("a1", [](auto& s) { s.on("next").to("a2"); });
    a.state("a2", [](auto& s) {
      s.state("a21", [](auto& x) { x.on("next").to("a22"); });
      s.state("a22");
    });
    a.on("out").to("b");
  });
  b.state("b", [](auto& s) { s.on("back").to("h"); });
  Context ctx;
  StateChart<> chart(ctx, b.build());
  chart.send("next");
  chart.send("next");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"a22"});
  chart.send("out");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"b"});
  chart.send("back");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"a22"});
}

TEST_CASE("chart: build lists every problem") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& a) { a.on("x").to("nowhere"); });
  b.parallel("p", [](auto& p) { p.state("only"); });
  b.state("island");
  const std::vector<std::string> problems = b.problems();
  CHECK(problems.size() >= 3);
  CHECK_THROWS_AS(b.build(), chart_error);
}

TEST_CASE("chart: a named guard decides whether its transition is taken") {
  // (when() once failed to compile under -Wextra -Werror: missing-field-initializers)
  ChartBuilder<Log> b("c");
  b.state("a", [](auto& s) {
    s.on("go").when("has lines", [](const Log& l) { return !l.lines.empty(); }).to("b");
  });
  b.state("b");
  Context ctx;
  StateChart<Log> chart(ctx, b.build());
  CHECK(chart.send("go") == SendResult::Rejected);
  StateChart<Log> other(ctx, b.build(), Log{{"x"}});
  CHECK(other.send("go") == SendResult::Transitioned);
  CHECK(other.configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("chart: a named guard over the data decides whether its transition is taken") {
  struct Coins {
    int n = 0;
  };
  ChartBuilder<Coins> b("c");
  b.state("locked", [](auto& s) {
    s.on("push").when("paid", [](const Coins& c) { return c.n > 0; }).to("open");
    s.on("coin").call("add", [](Coins& c) { ++c.n; });
  });
  b.state("open");
  Context ctx;
  StateChart<Coins> chart(ctx, b.build());
  chart.send("push");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"locked"});
  chart.send("coin");
  chart.send("push");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"open"});
}

TEST_CASE("chart: a shallow history's default may name a grandchild") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) { s.on("t1").to("h"); });
  b.state("b", [](auto& s) {
    s.history("h", History::shallow, "b12");
    s.state("b1", [](auto& x) {
      x.state("b11");
      x.state("b12");
    });
  });
  Context ctx;
  StateChart<> chart(ctx, b.build());
  chart.send("t1");
  CHECK(chart.atomic_configuration() == std::vector<std::string>{"b12"});
}

TEST_CASE("chart: a delayed send that fell due before a send() is delivered before its event") {
  // "tick" is due first: it must move a -> b before "go" (which only b accepts) arrives.
  using namespace std::chrono_literals;
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) {
    s.on_entry().send("tick", 10ms);
    s.on("tick").to("b");
  });
  b.state("b", [](auto& s) { s.on("go").to("c1"); });
  b.state("c1");
  ManualChartClock clock;
  Context ctx;
  StateChart<> chart(ctx, b.build(), {}, {.clock = &clock});
  clock.advance(20ms);
  CHECK(chart.send("go") == SendResult::Transitioned);
  CHECK(chart.configuration() == std::vector<std::string>{"c1"});
}
