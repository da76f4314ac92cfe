// SPDX-License-Identifier: MIT
/// @file
/// The chart core against W3C SCXML 1.0 Appendix D, one rule per case: entry and exit order,
/// transition selection (document order, descendant priority, conflicts), internal, external
/// and targetless transitions, eventless transitions, the internal queue, event descriptors,
/// several and deep targets, history and done events. Every expected trace is worked out by
/// hand from the specification's procedures (named in the comments), not from the output.
#include "chart_test_support.hpp"

#include <cstdint>
#include <memory>
#include <string>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace semantics_test {

using namespace trellis;
using chart_test::Lines;
using chart_test::Log;
using chart_test::Rig;
using chart_test::say;
using chart_test::say_event;
using chart_test::trace;
using chart_test::traced;

namespace {

/// p (parallel) with regions r1 {a1, a2} and r2 {b1, b2}, every state traced; `more(p)` adds
/// what a case needs to p, `leaves` fills the atomic states.
template <class More>
ChartBuilder<Log> two_regions(More more) {
  ChartBuilder<Log> b("c");
  b.parallel("p", [&](auto& p) {
    traced(p);
    p.state("r1", [](auto& r) {
      traced(r);
      r.state("a1", [](auto& s) {
        traced(s);
        s.on("a").to("a2");
      });
      r.state("a2", trace());
    });
    p.state("r2", [](auto& r) {
      traced(r);
      r.state("b1", [](auto& s) {
        traced(s);
        s.on("b").to("b2");
      });
      r.state("b2", trace());
    });
    more(p);
  });
  return b;
}

}  // namespace

// --- entry and exit order (enterStates, exitStates) -----------------------------------------

TEST_CASE("chart semantics: the initial configuration is entered in document order") {
  Rig rig(two_regions([](auto&) {}));
  // Entry order is document order: the parallel state, then each region before its child.
  CHECK(rig.news() == Lines{"+p", "+r1", "+a1", "+r2", "+b1"});
  CHECK(rig.chart.configuration() == Lines{"p", "r1", "a1", "r2", "b1"});
}

TEST_CASE("chart semantics: leaving a parallel state exits in reverse document order") {
  auto b = two_regions([](auto& p) { p.on("out").to("z").call("t", say("t")); });
  b.state("z", trace());
  Rig rig(b);
  rig.news();
  CHECK(rig.chart.send("out") == SendResult::Transitioned);
  // microstep: exitStates (children first, later regions first), the content, enterStates.
  CHECK(rig.news() == Lines{"-b1", "-r2", "-a1", "-r1", "-p", "t", "+z"});
  CHECK(rig.chart.configuration() == Lines{"z"});
}

// --- selectTransitions and removeConflictingTransitions ----------------------------------------

TEST_CASE("chart semantics: a state's transitions are tried in document order") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("e").when("never", [] { return false; }).to("x");
    s.on("e").to("y");
    s.on("e").to("z");
  });
  b.state("x");
  b.state("y");
  b.state("z");
  Rig rig(b);
  rig.chart.send("e");
  // The first transition whose event matches and whose guard holds; later ones are not taken.
  CHECK(rig.chart.configuration() == Lines{"y"});
}

TEST_CASE("chart semantics: a child's transition preempts its ancestor's on the same event") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.state("s1", [](auto& c) { c.on("e").to("s2"); });
    s.state("s2");
    s.on("e").to("t");
  });
  b.state("t");
  Rig rig(b);
  rig.chart.send("e");
  // The atomic state is searched first, then its ancestors: the first match stops the search.
  CHECK(rig.chart.configuration() == Lines{"s", "s2"});
}

TEST_CASE("chart semantics: transitions of two regions that do not conflict are both taken") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) {
        traced(s);
        s.on("e").to("a2").call("ta", say("ta"));
      });
      r.state("a2", trace());
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) {
        traced(s);
        s.on("e").to("b2").call("tb", say("tb"));
      });
      r.state("b2", trace());
    });
  });
  Rig rig(b);
  rig.news();
  rig.chart.send("e");
  // One microstep: the union of the exit sets in exit order, the contents in document order,
  // then the union of the entry sets in entry order.
  CHECK(rig.news() == Lines{"-b1", "-a1", "ta", "tb", "+a2", "+b2"});
  CHECK(rig.chart.atomic_configuration() == Lines{"a2", "b2"});
}

TEST_CASE("chart semantics: of two conflicting transitions the earlier in document order wins") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) { s.on("e").to("x").call("ta", say("ta")); });
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) { s.on("e").to("y").call("tb", say("tb")); });
    });
  });
  b.state("x");
  b.state("y");
  Rig rig(b);
  rig.chart.send("e");
  // Both leave p, so their exit sets intersect; b1 is not a descendant of a1: a1's wins.
  CHECK(rig.chart.configuration() == Lines{"x"});
  CHECK(rig.news() == Lines{"ta"});
}

TEST_CASE("chart semantics: a conflicting transition from a descendant removes an ancestor's") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) { r.state("a"); });
    p.state("r2", [](auto& r) {
      r.state("b", [](auto& s) { s.on("e").to("b2"); });
      r.state("b2");
    });
    p.on("e").to("out");
  });
  b.state("out");
  Rig rig(b);
  rig.chart.send("e");
  // Selection in document order: a finds p's transition, b its own. They conflict (both exit
  // b); b is a descendant of p, so p's transition is removed although it was selected first.
  CHECK(rig.chart.configuration() == Lines{"p", "r1", "a", "r2", "b2"});
}

TEST_CASE("chart semantics: a targetless transition never conflicts") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) {
        traced(s);
        s.on("e").to("a2").call("ta", say("ta"));
      });
      r.state("a2", trace());
    });
    p.state("r2", [](auto& r) { r.state("b1", trace()); });
    p.on("e").call("tp", say("tp"));
  });
  Rig rig(b);
  rig.news();
  rig.chart.send("e");
  // a1 selects its own transition, b1 finds p's targetless one: its exit set is empty.
  CHECK(rig.news() == Lines{"-a1", "ta", "tp", "+a2"});
}

// --- internal, external and targetless transitions (getTransitionDomain) -----------------------

namespace {

/// s {s1, s2} with every state traced; `more(s)` adds s's transitions.
template <class More>
ChartBuilder<Log> compound(More more) {
  ChartBuilder<Log> b("c");
  b.state("s", [&](auto& s) {
    traced(s);
    s.state("s1", [](auto& x) {
      traced(x);
      x.on("next").to("s2");
    });
    s.state("s2", trace());
    more(s);
  });
  return b;
}

}  // namespace

TEST_CASE("chart semantics: an internal transition to a descendant does not exit its source") {
  Rig rig(compound([](auto& s) { s.on("e").internal().to("s2"); }));
  rig.news();
  rig.chart.send("e");
  // The domain is the compound source itself.
  CHECK(rig.news() == Lines{"-s1", "+s2"});
}

TEST_CASE("chart semantics: an external transition to a descendant exits and enters its source") {
  Rig rig(compound([](auto& s) { s.on("e").to("s2"); }));
  rig.news();
  rig.chart.send("e");
  // The domain is the LCCA of the source and the target: the chart's root.
  CHECK(rig.news() == Lines{"-s1", "-s", "+s", "+s2"});
}

TEST_CASE("chart semantics: an internal transition targeting its own source is external") {
  Rig rig(compound([](auto& s) { s.on("e").internal().to("s"); }));
  rig.news();
  rig.chart.send("e");
  // The short cut needs every target to be a proper descendant of the source.
  CHECK(rig.news() == Lines{"-s1", "-s", "+s", "+s1"});
}

TEST_CASE("chart semantics: an internal transition from a parallel state is external") {
  Rig rig(two_regions([](auto& p) { p.on("e").internal().to("a2"); }));
  rig.news();
  rig.chart.send("e");
  // The short cut needs a compound source; the LCCA skips parallel states: the root.
  CHECK(rig.news() == Lines{"-b1", "-r2", "-a1", "-r1", "-p", "+p", "+r1", "+a2", "+r2", "+b1"});
}

TEST_CASE("chart semantics: a targetless transition exits nothing and runs its content") {
  Rig rig(compound([](auto& s) { s.on("e").call("t", say("t")); }));
  rig.news();
  CHECK(rig.chart.send("e") == SendResult::Transitioned);
  CHECK(rig.news() == Lines{"t"});
  CHECK(rig.chart.configuration() == Lines{"s", "s1"});
}

TEST_CASE("chart semantics: an external self-transition exits and re-enters its atomic state") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.on("e").to("s");
  });
  Rig rig(b);
  rig.news();
  CHECK(rig.chart.send("e") == SendResult::Transitioned);
  CHECK(rig.news() == Lines{"-s", "+s"});
}

// --- eventless transitions and the internal queue (mainEventLoop) ----------------------------

TEST_CASE("chart semantics: eventless transitions run to a stable configuration at start") {
  ChartBuilder<Log> b("c");
  b.state("a", [](auto& s) {
    traced(s);
    s.always().to("b");
  });
  b.state("b", [](auto& s) {
    traced(s);
    s.always().to("z");
  });
  b.state("z", trace());
  Rig rig(b);
  CHECK(rig.news() == Lines{"+a", "-a", "+b", "-b", "+z"});
  CHECK(rig.chart.configuration() == Lines{"z"});
}

TEST_CASE("chart semantics: an eventless chain is part of the macrostep of the event") {
  ChartBuilder<Log> b("c");
  b.state("x", [](auto& s) { s.on("go").to("a"); });
  b.state("a", [](auto& s) { s.always().to("b"); });
  b.state("b", [](auto& s) { s.always().to("z"); });
  b.state("z");
  Rig rig(b);
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  CHECK(rig.chart.configuration() == Lines{"z"});
  CHECK(rig.chart.snapshot().step() == 1);  // one macrostep committed
}

TEST_CASE("chart semantics: eventless guards are evaluated again after every microstep") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on("set").call("set flag", [](Log& l) { l.flag = true; });
    s.always().when("flag", [](const Log& l) { return l.flag; }).to("t");
  });
  b.state("t");
  Rig rig(b);
  CHECK(rig.chart.configuration() == Lines{"s"});
  rig.chart.send("set");
  CHECK(rig.chart.configuration() == Lines{"t"});
}

TEST_CASE("chart semantics: raised events are processed in the order they were raised") {
  ChartBuilder<Log> b("c");
  b.state("s0", [](auto& s) { s.on("go").to("s1").raise("one").raise("two"); });
  b.state("s1", [](auto& s) {
    s.on("one").to("s2");
    s.on("two").to("wrong");
  });
  b.state("s2", [](auto& s) { s.on("two").to("s3"); });
  b.state("s3");
  b.state("wrong");
  Rig rig(b);
  rig.chart.send("go");
  CHECK(rig.chart.configuration() == Lines{"s3"});
}

TEST_CASE("chart semantics: eventless transitions run before the next internal event") {
  ChartBuilder<Log> b("c");
  b.state("s0", [](auto& s) { s.on("go").to("s1").raise("one").raise("two"); });
  b.state("s1", [](auto& s) { s.on("one").to("s2"); });
  b.state("s2", [](auto& s) {
    s.always().to("s3");
    s.on("two").to("wrong");
  });
  b.state("s3", [](auto& s) { s.on("two").to("ok"); });
  b.state("ok");
  b.state("wrong");
  Rig rig(b);
  rig.chart.send("go");
  // "one" takes s1 to s2; s2's eventless transition fires before "two" is dequeued.
  CHECK(rig.chart.configuration() == Lines{"ok"});
}

TEST_CASE("chart semantics: internal events are processed before external ones") {
  ChartBuilder<Log> b("c");
  b.state("s0", [](auto& s) { s.on("go").to("s1").send("ext").raise("int"); });
  b.state("s1", [](auto& s) {
    s.on("int").to("s2");
    s.on("ext").to("wrong");
  });
  b.state("s2", [](auto& s) { s.on("ext").to("s3"); });
  b.state("s3");
  b.state("wrong");
  Rig rig(b);
  rig.chart.send("go");
  // "ext" was sent first but joins the external queue: it waits for the macrostep's end.
  CHECK(rig.chart.configuration() == Lines{"s3"});
}

// --- event descriptors (3.12.1) ---------------------------------------------------------------

namespace {

/// A chart whose one state `s` takes `descriptors` to `hit`.
std::unique_ptr<Rig> matching(const std::string& descriptors) {
  ChartBuilder<Log> b("c");
  b.state("s", [&](auto& s) { s.on(descriptors).to("hit"); });
  b.state("hit");
  return std::make_unique<Rig>(b);
}

}  // namespace

TEST_CASE("chart semantics: a descriptor matches its name and the names it prefixes on a dot") {
  const std::unique_ptr<Rig> rig(matching("error"));
  CHECK(rig->chart.can("error"));
  CHECK(rig->chart.can("error.send"));
  CHECK(rig->chart.can("error.send.failed"));
  CHECK_FALSE(rig->chart.can("errors"));
  CHECK_FALSE(rig->chart.can("err"));
  CHECK_FALSE(rig->chart.can("my.error"));
  CHECK(rig->chart.send("error.send.failed") == SendResult::Transitioned);
  CHECK(rig->chart.configuration() == Lines{"hit"});
}

TEST_CASE("chart semantics: an event that no descriptor matches is rejected") {
  const std::unique_ptr<Rig> rig(matching("error"));
  CHECK(rig->chart.send("errors") == SendResult::Rejected);
  CHECK(rig->chart.configuration() == Lines{"s"});
  CHECK(rig->chart.snapshot().step() == 0);
}

TEST_CASE("chart semantics: the descriptor * matches every event") {
  const std::unique_ptr<Rig> rig(matching("*"));
  CHECK(rig->chart.can("a"));
  CHECK(rig->chart.can("error.execution"));
  CHECK(rig->chart.can("done.state.s"));
}

TEST_CASE("chart semantics: a trailing .* or . in a descriptor is ignored") {
  const std::unique_ptr<Rig> star(matching("a.*"));
  CHECK(star->chart.can("a"));
  CHECK(star->chart.can("a.b"));
  CHECK_FALSE(star->chart.can("ab"));
  const std::unique_ptr<Rig> dot(matching("a."));
  CHECK(dot->chart.can("a"));
  CHECK(dot->chart.can("a.b.c"));
  CHECK_FALSE(dot->chart.can("ab"));
}

TEST_CASE("chart semantics: a transition matches when any of its descriptors does") {
  const std::unique_ptr<Rig> rig(matching("x  y.z"));
  CHECK(rig->chart.can("x"));
  CHECK(rig->chart.can("x.1"));
  CHECK(rig->chart.can("y.z.w"));
  CHECK_FALSE(rig->chart.can("y"));
  CHECK_FALSE(rig->chart.can("y.zz"));
  CHECK_FALSE(rig->chart.can("x2"));
}

TEST_CASE("chart semantics: descriptor_matches and event_matches follow the same rules") {
  CHECK(descriptor_matches("error", "error.send.failed"));
  CHECK_FALSE(descriptor_matches("error", "errors"));
  CHECK(descriptor_matches("*", "anything.at.all"));
  CHECK(descriptor_matches("a.*", "a"));
  CHECK(descriptor_matches("a.b", "a.b.c"));
  CHECK_FALSE(descriptor_matches("a.b", "a"));
  CHECK(event_matches("x error", "error.send"));
  CHECK_FALSE(event_matches("x error", "y"));
  CHECK_FALSE(event_matches("", "x"));
}

// --- several, deep and default targets (computeEntrySet) -------------------------------------

TEST_CASE("chart semantics: one transition may target a state in each region") {
  auto b = two_regions([](auto&) {});
  b.state("x", [](auto& s) {
    traced(s);
    s.on("go").to("a2", "b2");
  });
  b.initial("x");
  Rig rig(b);
  rig.news();
  rig.chart.send("go");
  CHECK(rig.news() == Lines{"-x", "+p", "+r1", "+a2", "+r2", "+b2"});
}

TEST_CASE("chart semantics: targets in two regions from inside exit the parallel state") {
  // a1 -> {a2, b2}: the LCCA of a1, a2 and b2 is never the parallel p, so p is left too.
  ChartBuilder<Log> c("c");
  c.parallel("p", [](auto& p) {
    traced(p);
    p.state("r1", [](auto& r) {
      traced(r);
      r.state("a1", [](auto& s) {
        traced(s);
        s.on("go").to("a2", "b2");
      });
      r.state("a2", trace());
    });
    p.state("r2", [](auto& r) {
      traced(r);
      r.state("b1", trace());
      r.state("b2", trace());
    });
  });
  Rig rig(c);
  rig.news();
  rig.chart.send("go");
  CHECK(rig.news() == Lines{"-b1", "-r2", "-a1", "-r1", "-p", "+p", "+r1", "+a2", "+r2", "+b2"});
}

TEST_CASE("chart semantics: an initial may name a deep descendant") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.initial("s1").call("s initial", say("s initial"));
    s.state("s1", trace());
    s.state("s2", [](auto& t) {
      traced(t);
      t.state("s21", trace());
      t.state("s22", trace());
    });
  });
  b.initial("s22");
  Rig rig(b);
  // The document's initial transition enters s22's ancestors; s is not entered by default,
  // so its initial transition (and its content) does not run.
  CHECK(rig.news() == Lines{"+s", "+s2", "+s22"});
}

TEST_CASE("chart semantics: an initial may name a state in each region") {
  auto b = two_regions([](auto&) {});
  b.initial("a2", "b2");
  Rig rig(b);
  CHECK(rig.news() == Lines{"+p", "+r1", "+a2", "+r2", "+b2"});
}

TEST_CASE(
    "chart semantics: an initial's content runs after the parent's entry, before the child's") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.initial("s1").call("initial", say("initial"));
    s.state("s1", trace());
  });
  Rig rig(b);
  CHECK(rig.news() == Lines{"+s", "initial", "+s1"});
}

TEST_CASE("chart semantics: entering a region's state enters the other regions by default") {
  auto b = two_regions([](auto&) {});
  b.state("x", [](auto& s) { s.on("go").to("a2"); });
  b.initial("x");
  Rig rig(b);
  rig.chart.send("go");
  CHECK(rig.chart.atomic_configuration() == Lines{"a2", "b1"});
}

// --- history ----------------------------------------------------------------------------------

namespace {

/// s {hs (shallow, default s1), hd (deep, default s1), s1, s2 {s21, s22}}, left for "out" and
/// re-entered through either history.
ChartBuilder<Log> history_chart() {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.history("hs", History::shallow, "s1");
    s.history("hd", History::deep, "s1");
    s.state("s1", [](auto& x) { x.on("down").to("s2"); });
    s.state("s2", [](auto& x) {
      x.state("s21", [](auto& y) { y.on("deeper").to("s22"); });
      x.state("s22");
    });
    s.on("leave").to("out");
  });
  b.state("out", [](auto& s) {
    s.on("back_shallow").to("hs");
    s.on("back_deep").to("hd");
  });
  return b;
}

}  // namespace

TEST_CASE("chart semantics: shallow history restores the child, which enters its default") {
  Rig rig(history_chart());
  rig.chart.send("down");
  rig.chart.send("deeper");
  rig.chart.send("leave");
  rig.chart.send("back_shallow");
  CHECK(rig.chart.configuration() == Lines{"s", "s2", "s21"});
}

TEST_CASE("chart semantics: deep history restores the atomic descendants") {
  Rig rig(history_chart());
  rig.chart.send("down");
  rig.chart.send("deeper");
  rig.chart.send("leave");
  rig.chart.send("back_deep");
  CHECK(rig.chart.configuration() == Lines{"s", "s2", "s22"});
}

TEST_CASE("chart semantics: a history entered before anything was recorded takes its default") {
  ChartBuilder<Log> b("c");
  b.state("out", [](auto& s) { s.on("in").to("h"); });
  b.state("s", [](auto& s) {
    traced(s);
    s.history("h", History::deep, "s2").call("default", say("default"));
    s.state("s1", trace());
    s.state("s2", trace());
  });
  Rig fresh(b);
  fresh.news();
  fresh.chart.send("in");
  // The default content runs after s's entry (defaultHistoryContent), before s2's.
  CHECK(fresh.news() == Lines{"+s", "default", "+s2"});
}

TEST_CASE("chart semantics: a history's default content does not run once history is recorded") {
  ChartBuilder<Log> b("c");
  b.state("out", [](auto& s) { s.on("in").to("h"); });
  b.state("s", [](auto& s) {
    traced(s);
    s.history("h", History::shallow, "s2").call("default", say("default"));
    s.state("s1", trace());
    s.state("s2", [](auto& x) {
      traced(x);
      x.on("next").to("s1");
    });
    s.on("leave").to("out");
  });
  Rig rig(b);
  rig.chart.send("in");
  rig.chart.send("next");
  rig.chart.send("leave");
  rig.news();
  rig.chart.send("in");
  CHECK(rig.news() == Lines{"+s", "+s1"});
}

TEST_CASE("chart semantics: a history default content not run is not kept for a later entry") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.history("h", History::deep, "s1").call("default", say("default"));
    s.state("s1", trace());
    // Internal, into the history: s is not entered, so the default content has no entry to
    // follow (defaultHistoryContent belongs to one enterStates call).
    s.on("again").internal().to("h");
    s.on("leave").to("out");
  });
  b.state("out", [](auto& s) { s.on("in").to("s"); });
  Rig rig(b);
  rig.news();
  rig.chart.send("again");
  CHECK(rig.news() == Lines{"-s1", "+s1"});
  rig.chart.send("leave");
  rig.news();
  rig.chart.send("in");  // s's own initial, not its history
  CHECK(rig.news() == Lines{"+s", "+s1"});
}

namespace {

/// two_regions with a history of kind `kind` in p (default: region r1), left for "out".
ChartBuilder<Log> parallel_history(History kind) {
  ChartBuilder<Log> b("c");
  b.parallel("p", [&](auto& p) {
    p.history("h", kind, "r1");
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) { s.on("a").to("a2"); });
      r.state("a2");
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) { s.on("b").to("b2"); });
      r.state("b2");
    });
    p.on("leave").to("out");
  });
  b.state("out", [](auto& s) { s.on("back").to("h"); });
  return b;
}

}  // namespace

TEST_CASE("chart semantics: deep history in a parallel state restores every region") {
  Rig rig(parallel_history(History::deep));
  rig.chart.send("a");
  rig.chart.send("b");
  rig.chart.send("leave");
  rig.chart.send("back");
  CHECK(rig.chart.atomic_configuration() == Lines{"a2", "b2"});
}

TEST_CASE("chart semantics: shallow history in a parallel state restores its regions only") {
  Rig rig(parallel_history(History::shallow));
  rig.chart.send("a");
  rig.chart.send("b");
  rig.chart.send("leave");
  rig.chart.send("back");
  // It recorded the regions (p's active children); each region enters its default again.
  CHECK(rig.chart.atomic_configuration() == Lines{"a1", "b1"});
}

TEST_CASE("chart semantics: an exit action runs while its state is still active") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.on_exit("probe", [](Log& l, ChartActions& ops) {
      l.lines.push_back(ops.in("s") ? "s active" : "s gone");
    });
    s.on("leave").to("out");
  });
  b.state("out");
  Rig rig(b);
  rig.chart.send("leave");
  CHECK(rig.news() == Lines{"s active"});
}

// --- final states and done events --------------------------------------------------------------

TEST_CASE("chart semantics: entering a compound state's final raises done.state.<id>") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    s.state("s1", [](auto& x) { x.on("finish").to("sf"); });
    s.final("sf");
    s.on("done.state.s").to("after");
  });
  b.state("after");
  Rig rig(b);
  CHECK(rig.chart.send("finish") == SendResult::Transitioned);
  CHECK(rig.chart.configuration() == Lines{"after"});
}

TEST_CASE("chart semantics: a parallel state is done when every region is, right after the last") {
  ChartBuilder<Log> b("c");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("x", [](auto& s) { s.on("e1").to("xf"); });
      r.final("xf");
    });
    p.state("r2", [](auto& r) {
      r.state("y", [](auto& s) { s.on("e2").to("yf"); });
      r.final("yf");
    });
    p.on("done.state").call("log", say_event());
  });
  Rig rig(b);
  rig.chart.send("e1");
  CHECK(rig.news() == Lines{"done.state.r1"});
  rig.chart.send("e2");
  CHECK(rig.news() == Lines{"done.state.r2", "done.state.p"});
}

TEST_CASE("chart semantics: a top-level final state makes the chart done") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) {
    traced(s);
    s.on("go").to("end");
  });
  b.final("end", trace());
  Rig rig(b);
  rig.news();
  CHECK_FALSE(rig.chart.done());
  CHECK(rig.chart.send("go") == SendResult::Transitioned);
  CHECK(rig.chart.done());
  CHECK(rig.chart.snapshot().done());
  // trellis keeps the final configuration and runs no exit action (Appendix D's
  // exitInterpreter would exit every state): see docs/statecharts.md.
  CHECK(rig.news() == Lines{"-s", "+end"});
  CHECK(rig.chart.configuration() == Lines{"end"});
}

TEST_CASE("chart semantics: a done chart rejects every later event") {
  ChartBuilder<Log> b("c");
  b.state("s", [](auto& s) { s.on("go").to("end"); });
  b.final("end");
  Rig rig(b);
  rig.chart.send("go");
  const std::uint64_t step = rig.chart.snapshot().step();
  CHECK_FALSE(rig.chart.can("go"));
  CHECK(rig.chart.send("go") == SendResult::Rejected);
  CHECK(rig.chart.send("anything") == SendResult::Rejected);
  CHECK(rig.chart.snapshot().step() == step);
}

}  // namespace semantics_test
