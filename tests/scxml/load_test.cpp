// SPDX-License-Identifier: MIT
// The SCXML loader: what each element does once loaded, and how documents trellis cannot run
// are refused (the code, the element, its line and column).

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "trellis/scxml.hpp"
#include "trellis/statechart.hpp"

using namespace trellis;
using namespace std::chrono_literals;
namespace sc = trellis::scxml;

namespace {

/// A document: the <scxml> start tag on line 1 (with `attrs`), then `body` from line 2.
std::string doc(const std::string& body, const std::string& attrs = "") {
  return R"~(<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0")~" +
         (attrs.empty() ? "" : " " + attrs) + ">\n" + body + "</scxml>\n";
}

/// The same with the trellis namespace declared.
std::string tdoc(const std::string& body, const std::string& attrs = "") {
  return doc(body,
             R"~(xmlns:trellis="https://trellis.dev/scxml")~" + (attrs.empty() ? "" : " " + attrs));
}

struct Trace {
  std::vector<std::string> lines;
  bool ready = false;
  int count = 0;
};

sc::Bindings<Trace> trace_bindings() {
  sc::Bindings<Trace> b;
  for (const char* what : {"enter_a", "exit_a", "enter_b", "exit_b", "on_t", "enter_p", "exit_p"})
    b.action(what, [w = std::string(what)](Trace& t) { t.lines.push_back(w); });
  b.guard("ready", [](const Trace& t) { return t.ready; });
  b.action("make_ready", [](Trace& t) { t.ready = true; });
  return b;
}

template <class D = NoData>
sc::scxml_error refusal(const std::string& text, const sc::Bindings<D>& b = {},
                        const sc::LoadOptions& o = {}) {
  try {
    (void)sc::load_text(text, b, o);
  } catch (const sc::scxml_error& e) {
    return e;
  }
  throw std::logic_error("the document was loaded");
}

struct Refusal {
  const char* what;
  std::string text;
  const char* code;
  const char* element;
  int line;
  int column;
};

void check_refusals(const std::vector<Refusal>& cases, const sc::LoadOptions& o = {}) {
  for (const Refusal& r : cases) {
    const std::string what = r.what;
    CAPTURE(what);
    CAPTURE(r.text);
    const sc::scxml_error e = refusal<Trace>(r.text, trace_bindings(), o);
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(e.id() == r.code);
    CHECK(e.element() == r.element);
    CHECK(e.line() == r.line);
    CHECK(e.column() == r.column);
    CHECK(e.file() == "<text>");
  }
}

}  // namespace

// --- what each element does --------------------------------------------------------------------

TEST_CASE("scxml load: <scxml initial> picks the first state; without it the first child") {
  Context ctx;
  StateChart<> a(ctx, sc::load(doc("<state id='a'/><state id='b'/>\n", "initial='b'")));
  CHECK(a.atomic_configuration() == std::vector<std::string>{"b"});
  StateChart<> b(ctx, sc::load(doc("<state id='a'/><state id='b'/>\n")));
  CHECK(b.atomic_configuration() == std::vector<std::string>{"a"});
}

TEST_CASE("scxml load: <scxml name> names the chart, \"scxml\" by default") {
  CHECK(sc::load(doc("<state id='a'/>", "name='door'")).name() == "door");
  CHECK(sc::load(doc("<state id='a'/>")).name() == "scxml");
}

TEST_CASE("scxml load: a <state initial> enters that child, a compound state its first") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="p" initial="p2"><state id="p1"/><state id="p2"/></state>
    <state id="q"><state id="q1"/><state id="q2"/></state>)~")));
  CHECK(c.configuration() == std::vector<std::string>{"p", "p2"});
}

TEST_CASE("scxml load: <initial> enters its transition's target after running its content") {
  Context ctx;
  StateChart<Trace> c(ctx, sc::load(tdoc(R"~(
    <state id="p">
      <onentry><trellis:call name="enter_p"/></onentry>
      <initial><transition target="b"><trellis:call name="on_t"/></transition></initial>
      <state id="a"/>
      <state id="b"><onentry><trellis:call name="enter_b"/></onentry></state>
    </state>)~"),
                                    trace_bindings()));
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b"});
  CHECK(c.data().lines == std::vector<std::string>{"enter_p", "on_t", "enter_b"});
}

TEST_CASE("scxml load: every region of a <parallel> is active") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <parallel id="p">
      <state id="r1"><state id="x1"/><state id="x2"/></state>
      <state id="r2"><state id="y1"><transition event="go" target="y2"/></state><state id="y2"/></state>
    </parallel>)~")));
  CHECK(c.atomic_configuration() == std::vector<std::string>{"x1", "y1"});
  c.send("go");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"x1", "y2"});
}

TEST_CASE("scxml load: reaching a <final> child raises done.state of its parent") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="job">
      <state id="work"><transition event="finish" target="end"/></state>
      <final id="end"/>
      <transition event="done.state.job" target="idle"/>
    </state>
    <state id="idle"/>)~")));
  c.send("finish");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"idle"});
}

TEST_CASE("scxml load: a top-level <final> ends the chart") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="a"><transition event="stop" target="f"/></state><final id="f"/>)~")));
  CHECK_FALSE(c.done());
  c.send("stop");
  CHECK(c.done());
}

TEST_CASE("scxml load: shallow <history> returns to the last active child") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="on">
      <history id="h"><transition target="one"/></history>
      <state id="one"><transition event="next" target="two"/></state>
      <state id="two"/>
      <transition event="off" target="off"/>
    </state>
    <state id="off"><transition event="on" target="h"/></state>)~")));
  c.send("next");
  c.send("off");
  c.send("on");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"two"});
}

TEST_CASE("scxml load: deep <history> restores the nested configuration") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="on">
      <history id="h" type="deep"><transition target="a"/></history>
      <state id="a"><transition event="next" target="b2"/></state>
      <state id="b"><state id="b1"/><state id="b2"/></state>
      <transition event="off" target="off"/>
    </state>
    <state id="off"><transition event="on" target="h"/></state>)~")));
  c.send("next");
  c.send("off");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"off"});
  c.send("on");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b2"});
}

TEST_CASE("scxml load: a transition's event descriptors match by prefix") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="a"><transition event="x error" target="b"/></state><state id="b"/>)~")));
  c.send("error.send.failed");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("scxml load: a cond names a bound guard") {
  Context ctx;
  StateChart<Trace> c(ctx, sc::load(tdoc(R"~(
    <state id="a">
      <transition event="go" cond="ready" target="b"/>
      <transition event="prepare"><trellis:call name="make_ready"/></transition>
    </state>
    <state id="b"/>)~"),
                                    trace_bindings()));
  c.send("go");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"a"});
  c.send("prepare");
  c.send("go");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("scxml load: In(), true, false and their combinations are conditions") {
  const std::string text = doc(R"~(
    <parallel id="p">
      <state id="r1"><state id="x1"/><state id="x2"/></state>
      <state id="r2">
        <state id="y">
          <transition event="t1" cond="In('x2')" target="yes"/>
          <transition event="t2" cond="!In('x2') &amp;&amp; (true || false)" target="yes"/>
          <transition event="t3" cond="not In('x1') or false" target="yes"/>
          <transition event="t4" cond="false" target="yes"/>
        </state>
        <state id="yes"/>
      </state>
    </parallel>)~");
  for (const char* event : {"t1", "t2", "t3", "t4"}) {
    CAPTURE(event);
    Context ctx;
    StateChart<> c(ctx, sc::load(text));
    c.send(event);
    const bool moved = c.atomic_configuration() == std::vector<std::string>{"x1", "yes"};
    CHECK(moved == (std::string(event) == "t2"));
  }
}

TEST_CASE("scxml load: a targetless transition runs its content without leaving the state") {
  Context ctx;
  StateChart<Trace> c(ctx, sc::load(tdoc(R"~(
    <state id="a">
      <onexit><trellis:call name="exit_a"/></onexit>
      <transition event="poke"><trellis:call name="on_t"/></transition>
    </state>)~"),
                                    trace_bindings()));
  c.send("poke");
  CHECK(c.data().lines == std::vector<std::string>{"on_t"});
}

TEST_CASE("scxml load: type=\"internal\" does not exit the source state") {
  const std::string body = R"~(
    <state id="p">
      <onexit><trellis:call name="exit_p"/></onexit>
      <state id="a"><transition event="go" target="b"/></state>
      <state id="b"/>
      <transition event="reset" target="a" TYPE/>
    </state>)~";
  auto run = [&](const std::string& type) {
    std::string b = body;
    b.replace(b.find("TYPE"), 4, type);
    Context ctx;
    StateChart<Trace> c(ctx, sc::load(tdoc(b), trace_bindings()));
    c.send("go");
    c.send("reset");
    CHECK(c.atomic_configuration() == std::vector<std::string>{"a"});
    return c.data().lines;
  };
  CHECK(run("type='internal'").empty());
  CHECK(run("type='external'") == std::vector<std::string>{"exit_p"});
}

TEST_CASE("scxml load: several targets enter a state in each region") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="s"><transition event="go" target="x2 y2"/></state>
    <parallel id="p">
      <state id="r1"><state id="x1"/><state id="x2"/></state>
      <state id="r2"><state id="y1"/><state id="y2"/></state>
    </parallel>)~")));
  c.send("go");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"x2", "y2"});
}

TEST_CASE("scxml load: onentry and onexit run in order, exits before entries") {
  Context ctx;
  StateChart<Trace> c(ctx, sc::load(tdoc(R"~(
    <state id="a">
      <onentry><trellis:call name="enter_a"/></onentry>
      <onexit><trellis:call name="exit_a"/></onexit>
      <transition event="go" target="b"><trellis:call name="on_t"/></transition>
    </state>
    <state id="b"><onentry><trellis:call name="enter_b"/></onentry></state>)~"),
                                    trace_bindings()));
  c.send("go");
  CHECK(c.data().lines == std::vector<std::string>{"enter_a", "exit_a", "on_t", "enter_b"});
}

TEST_CASE("scxml load: <raise> is processed before the next external event") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="a"><transition event="go" target="b"><raise event="again"/></transition></state>
    <state id="b"><transition event="again" target="c"/></state>
    <state id="c"/>)~")));
  c.send("go");
  CHECK(c.atomic_configuration() == std::vector<std::string>{"c"});
}

TEST_CASE("scxml load: <send target=\"#_internal\"> raises the event") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="a"><onentry><send event="next" target="#_internal"/></onentry>
      <transition event="next" target="b"/></state>
    <state id="b"/>)~")));
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("scxml load: a delayed <send> fires when due and <cancel> drops it") {
  const std::string text = doc(R"~(
    <state id="a">
      <onentry><send event="timeout" delay="1.5s" id="t"/></onentry>
      <transition event="timeout" target="late"/>
      <transition event="stop"><cancel sendid="t"/></transition>
    </state>
    <state id="late"/>)~");
  {
    ManualChartClock clock;
    Context ctx;
    StateChart<> c(ctx, sc::load(text), NoData{}, ChartOptions{.clock = &clock});
    clock.advance(1499ms);
    c.fire_due();
    CHECK(c.atomic_configuration() == std::vector<std::string>{"a"});
    clock.advance(1ms);
    c.fire_due();
    CHECK(c.atomic_configuration() == std::vector<std::string>{"late"});
  }
  {
    ManualChartClock clock;
    Context ctx;
    StateChart<> c(ctx, sc::load(text), NoData{}, ChartOptions{.clock = &clock});
    c.send("stop");
    clock.advance(2s);
    c.fire_due();
    CHECK(c.atomic_configuration() == std::vector<std::string>{"a"});
  }
}

TEST_CASE("scxml load: delays read as CSS2 durations in whole milliseconds") {
  const std::vector<std::pair<std::string, std::chrono::milliseconds>> delays = {
      {"500ms", 500ms}, {"2s", 2s}, {"1.5s", 1500ms}, {".5s", 500ms},
      {" 1m ", 1min},   {"1h", 1h}, {"0s", 0ms},      {"1d", 24h}};
  for (const auto& [text, ms] : delays) {
    CAPTURE(text);
    const auto chart = sc::load(
        doc("<state id='a'><onentry><send event='e' delay='" + text + "'/></onentry></state>"));
    CHECK(chart.definition().state(1).on_entry.at(0).at(0).delay == ms);
  }
}

TEST_CASE("scxml load: <log> is a no-op that keeps its label") {
  const auto chart =
      sc::load(doc("<state id='a'><onentry><log label='hi' expr='1 + 1'/></onentry></state>"));
  const ChartOp& op = chart.definition().state(1).on_entry.at(0).at(0);
  CHECK(op.kind == ChartOp::Kind::log);
  CHECK(op.name == "hi");
  Context ctx;
  StateChart<> c(ctx, chart);
  CHECK(c.atomic_configuration() == std::vector<std::string>{"a"});
}

TEST_CASE("scxml load: an eventless transition is taken as soon as it is enabled") {
  Context ctx;
  StateChart<> c(ctx, sc::load(doc(R"~(
    <state id="a"><transition target="b"/></state><state id="b"/>)~")));
  CHECK(c.atomic_configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("scxml load: a prefixed SCXML namespace and foreign attributes are accepted") {
  const auto chart = sc::load(R"~(<sc:scxml xmlns:sc="http://www.w3.org/2005/07/scxml"
      xmlns:x="urn:x" version="1.0"><sc:state id="a" x:color="red"/></sc:scxml>)~");
  CHECK(chart.definition().state(1).id == "a");
}

TEST_CASE("scxml load: a document without xmlns is read as SCXML") {
  CHECK(sc::load("<scxml><state id='a'/></scxml>").definition().states.size() == 2);
}

TEST_CASE("scxml load: a path is read as a file, and its errors name it") {
  const std::string path = "trellis_scxml_load_test.scxml";
  {
    std::ofstream out(path);
    out << doc("<state id='a'>\n  <invoke/>\n</state>\n");
  }
  try {
    (void)sc::load(path);
    FAIL("loaded");
  } catch (const sc::scxml_error& e) {
    CHECK(e.file() == path);
    CHECK(std::string(e.what()) == "trellis: " + path + ":3:3: invoke: <invoke> is not supported");
  }
  {
    std::ofstream out(path);
    out << doc("<state id='a'/>\n");
  }
  CHECK(sc::load_file(path).definition().states.size() == 2);
  std::remove(path.c_str());
}

TEST_CASE("scxml load: a file that cannot be read is scxml.invalid naming it") {
  const sc::scxml_error e = [] {
    try {
      (void)sc::load("no/such/file.scxml");
    } catch (const sc::scxml_error& x) {
      return x;
    }
    throw std::logic_error("loaded");
  }();
  CHECK(e.id() == "scxml.invalid");
  CHECK(e.file() == "no/such/file.scxml");
  CHECK(e.line() == 0);
  CHECK(std::string(e.what()).rfind("trellis: no/such/file.scxml: cannot open: ", 0) == 0);
}

TEST_CASE("scxml load: text errors name LoadOptions::source_name") {
  sc::LoadOptions o;
  o.source_name = "inline door";
  const auto e = refusal<NoData>("<scxml><state id='a'><invoke/></state></scxml>", {}, o);
  CHECK(e.file() == "inline door");
  CHECK(std::string(e.what()) == "trellis: inline door:1:22: invoke: <invoke> is not supported");
}

TEST_CASE("scxml load: a document larger than max_bytes is refused before parsing") {
  sc::LoadOptions o;
  o.max_bytes = 16;
  const auto e = refusal<NoData>(doc("<state id='a'/>"), {}, o);
  CHECK(e.id() == "scxml.invalid");
  CHECK(e.reason().find("max_bytes") != std::string::npos);
}

// --- refusals, with their position -------------------------------------------------------------

TEST_CASE("scxml load: malformed XML is scxml.malformed at the parser's position") {
  check_refusals({
      {"mismatched tags", doc("<state id='a'>\n  <state id='b'></stat>\n</state>\n"),
       "scxml.malformed", "", 3, 19},
      {"no root", "  ", "scxml.malformed", "", 1, 3},
      {"a second root", "<scxml><state id='a'/></scxml>\n<scxml/>", "scxml.malformed", "scxml", 2,
       1},
      {"a duplicate attribute", doc("  <state id='a' id='b'/>\n"), "scxml.malformed", "state", 2,
       3},
      {"an undeclared prefix", doc("<state id='a'><onentry><t:call name='x'/></onentry></state>"),
       "scxml.malformed", "t:call", 2, 24},
  });
}

TEST_CASE("scxml load: unsupported SCXML is scxml.unsupported at the element") {
  check_refusals({
      {"datamodel ecmascript", doc("<state id='a'/>", "datamodel='ecmascript'"),
       "scxml.unsupported", "scxml", 1, 1},
      {"datamodel xpath", doc("<state id='a'/>", "datamodel='xpath'"), "scxml.unsupported", "scxml",
       1, 1},
      {"invoke", doc("<state id='a'>\n    <invoke/>\n</state>"), "scxml.unsupported", "invoke", 3,
       5},
      {"script", doc("<script/><state id='a'/>"), "scxml.unsupported", "script", 2, 1},
      {"datamodel", doc("<datamodel><data id='x'/></datamodel><state id='a'/>"),
       "scxml.unsupported", "datamodel", 2, 1},
      {"assign", doc("<state id='a'><onentry><assign location='x' expr='1'/></onentry></state>"),
       "scxml.unsupported", "assign", 2, 24},
      {"if", doc("<state id='a'><onentry><if cond='true'/></onentry></state>"), "scxml.unsupported",
       "if", 2, 24},
      {"foreach", doc("<state id='a'><onexit><foreach array='a' item='i'/></onexit></state>"),
       "scxml.unsupported", "foreach", 2, 23},
      {"donedata", doc("<final id='f'><donedata/></final>"), "scxml.unsupported", "donedata", 2,
       15},
      {"send to the parent",
       doc("<state id='a'><onentry><send event='e' target='#_parent'/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"send to a session by id",
       doc("<state id='a'><onentry><send event='e' target='#_scxml_foo'/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"send with eventexpr", doc("<state id='a'><onentry><send eventexpr='x'/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"send with namelist",
       doc("<state id='a'><onentry><send event='e' namelist='x'/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"send with a param",
       doc("<state id='a'><onentry><send event='e'><param name='x' expr='1'/></send></onentry>"
           "</state>"),
       "scxml.unsupported", "param", 2, 40},
      {"send with a content",
       doc("<state id='a'><onentry><send event='e'><content/></send></onentry></state>"),
       "scxml.unsupported", "content", 2, 40},
      {"send of another type",
       doc("<state id='a'><onentry><send event='e' type='http://www.w3.org/TR/scxml/"
           "#BasicHTTPEventProcessor'/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"send with delayexpr",
       doc("<state id='a'><onentry><send event='e' delayexpr=\"'1s'\"/></onentry></state>"),
       "scxml.unsupported", "send", 2, 24},
      {"delayed send to #_internal",
       doc("<state id='a'><onentry><send event='e' target='#_internal' delay='1s'/></onentry>"
           "</state>"),
       "scxml.unsupported", "send", 2, 24},
      {"cancel with sendidexpr",
       doc("<state id='a'><onentry><cancel sendidexpr='x'/></onentry></state>"),
       "scxml.unsupported", "cancel", 2, 24},
      {"an expression cond", doc("<state id='a'>\n  <transition cond='x &gt; 1'/></state>"),
       "scxml.unsupported", "transition", 3, 3},
      {"a call in a cond", doc("<state id='a'><transition cond='ready()'/></state>"),
       "scxml.unsupported", "transition", 2, 15},
      {"a cond nested too deep",
       doc("<state id='a'><transition cond='" + std::string(40, '!') + "true'/></state>"),
       "scxml.unsupported", "transition", 2, 15},
      {"a foreign element", doc("<state id='a'><onentry><x:y xmlns:x='urn:x'/></onentry></state>"),
       "scxml.unsupported", "x:y", 2, 24},
  });
}

TEST_CASE("scxml load: documents that are not sound charts are scxml.invalid at the element") {
  check_refusals({
      {"unknown target", doc("<state id='a'>\n  <transition event='e' target='nope'/>\n</state>"),
       "scxml.invalid", "transition", 3, 3},
      {"unknown initial", doc("<state id='a'/>", "initial='nope'"), "scxml.invalid", "scxml", 1, 1},
      {"unknown state initial", doc("<state id='a' initial='nope'><state id='b'/></state>"),
       "scxml.invalid", "state", 2, 1},
      {"unknown id in In()", doc("<state id='a'><transition cond=\"In('nope')\"/></state>"),
       "scxml.invalid", "transition", 2, 15},
      {"initial cycle", doc("<state id='a' initial='a'><state id='b'/></state>"), "scxml.invalid",
       "state", 2, 1},
      {"initial names an ancestor",
       doc("<state id='a'><state id='b' initial='a'><state id='c'/></state></state>"),
       "scxml.invalid", "state", 2, 15},
      {"initial elsewhere", doc("<state id='a' initial='c'><state id='b'/></state><state id='c'/>"),
       "scxml.invalid", "state", 2, 1},
      {"history default outside its parent",
       doc("<state id='a'><history id='h'><transition target='c'/></history><state id='b'/>"
           "</state><state id='c'/>"),
       "scxml.invalid", "transition", 2, 31},
      {"history without transition", doc("<state id='a'><history id='h'/><state id='b'/></state>"),
       "scxml.invalid", "history", 2, 15},
      {"history type", doc("<state id='a'><history type='wide'/><state id='b'/></state>"),
       "scxml.invalid", "history", 2, 15},
      {"transition type", doc("<state id='a'><transition type='sideways'/></state>"),
       "scxml.invalid", "transition", 2, 15},
      {"raise without event", doc("<state id='a'><onentry><raise/></onentry></state>"),
       "scxml.invalid", "raise", 2, 24},
      {"send without event", doc("<state id='a'><onentry><send delay='1s'/></onentry></state>"),
       "scxml.invalid", "send", 2, 24},
      {"cancel without sendid", doc("<state id='a'><onentry><cancel/></onentry></state>"),
       "scxml.invalid", "cancel", 2, 24},
      {"a delay without unit",
       doc("<state id='a'><onentry><send event='e' delay='5'/></onentry></state>"), "scxml.invalid",
       "send", 2, 24},
      {"a delay below a millisecond",
       doc("<state id='a'><onentry><send event='e' delay='1.5ms'/></onentry></state>"),
       "scxml.invalid", "send", 2, 24},
      {"the wrong root", "<scxm><state id='a'/></scxm>", "scxml.invalid", "scxm", 1, 1},
      {"the wrong namespace", "<scxml xmlns='urn:other'><state id='a'/></scxml>", "scxml.invalid",
       "scxml", 1, 1},
      {"another version", "<scxml version='2.0'><state id='a'/></scxml>", "scxml.invalid", "scxml",
       1, 1},
      {"a duplicate id", doc("<state id='a'/>\n<final id='a'/>\n"), "scxml.invalid", "final", 3, 1},
      {"a transition under scxml", doc("<transition target='a'/><state id='a'/>"), "scxml.invalid",
       "transition", 2, 1},
      {"an unknown element", doc("<state id='a'><stat id='b'/></state>"), "scxml.invalid", "stat",
       2, 15},
      {"an unknown attribute", doc("<state id='a' colour='red'/>"), "scxml.invalid", "state", 2, 1},
      {"a final region", doc("<parallel id='p'><state id='a'/><final id='f'/></parallel>"),
       "scxml.invalid", "final", 2, 33},
      {"no states", doc(""), "scxml.invalid", "scxml", 1, 1},
      {"an unbound guard", doc("<state id='a'><transition cond='missing'/></state>"),
       "scxml.invalid", "transition", 2, 15},
      {"an unbound action",
       tdoc("<state id='a'><onentry><trellis:call name='missing'/></onentry></state>"),
       "scxml.invalid", "trellis:call", 2, 24},
      {"an unknown trellis element",
       tdoc("<state id='a'><onentry><trellis:run name='x'/></onentry></state>"), "scxml.invalid",
       "trellis:run", 2, 24},
      {"initial on an atomic state", doc("<state id='a' initial='a'/>"), "scxml.invalid", "state",
       2, 1},
  });
}

TEST_CASE("scxml load: a 100,000-deep document is a typed error, not a stack overflow") {
  std::string text = R"~(<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0">)~";
  constexpr int depth = 100'000;
  text.reserve(static_cast<std::size_t>(depth) * 20);
  for (int i = 0; i < depth; ++i) text += "<state>";
  for (int i = 0; i < depth; ++i) text += "</state>";
  text += "</scxml>";
  const auto e = refusal<NoData>(text);
  CHECK(e.id() == "scxml.invalid");
  CHECK(e.element() == "state");
  CHECK(e.line() == 1);
  const int root_tag = static_cast<int>(text.find("<state>"));
  CHECK(e.column() == root_tag + 256 * 7 + 1);  // the 257th <state>
}

TEST_CASE("scxml load: a deep run of foreign elements is refused at the first") {
  std::string text = doc("<state id='a'><onentry>");
  text.resize(text.find("</scxml>"));
  for (int i = 0; i < 100'000; ++i) text += "<x:y xmlns:x='urn:x'>";
  for (int i = 0; i < 100'000; ++i) text += "</x:y>";
  text += "</onentry></state></scxml>";
  const auto e = refusal<NoData>(text);
  CHECK(e.id() == "scxml.unsupported");
  CHECK(e.line() == 2);
  CHECK(e.column() == 24);
}

// --- bindings and the ECMAScript option --------------------------------------------------------

TEST_CASE("scxml bindings: a name bound twice or a guard name no cond can hold is refused") {
  sc::Bindings<> b;
  b.guard("ok", [] { return true; }).action("go", [] {});
  CHECK_THROWS_AS(b.guard("ok", [] { return true; }), invalid_option);
  CHECK_THROWS_AS(b.action("go", [] {}), invalid_option);
  CHECK_THROWS_AS(b.guard("has coins", [] { return true; }), invalid_option);
  CHECK_THROWS_AS(b.guard("true", [] { return true; }), invalid_option);
  CHECK_THROWS_AS(b.action("", [] {}), invalid_option);
}

TEST_CASE("scxml load: guards and actions see the chart's data") {
  struct Counter {
    int n = 0;
  };
  sc::Bindings<Counter> b;
  b.guard("small", [](const Counter& c) { return c.n < 2; }).action("inc", [](Counter& c) {
    ++c.n;
  });
  Context ctx;
  StateChart<Counter> c(ctx, sc::load(tdoc(R"~(
    <state id="a"><transition event="tick" cond="small"><trellis:call name="inc"/></transition>
    </state>)~"),
                                      b));
  for (int i = 0; i < 5; ++i) c.send("tick");
  CHECK(c.data().n == 2);
}

TEST_CASE("scxml load: allow_unused_ecmascript accepts W3C-style documents that use no script") {
  sc::LoadOptions o;
  o.allow_unused_ecmascript = true;
  const std::string text = doc(R"~(
    <state id="s0">
      <onentry><send event="timeout" delayexpr="'1s'"/><raise event="foo"/></onentry>
      <transition event="foo" cond="In('s0') &amp;&amp; !false" target="pass"/>
      <transition event="*" target="fail"/>
    </state>
    <final id="pass"><onentry><log label="Outcome" expr="'pass'"/></onentry></final>
    <final id="fail"><onentry><log label="Outcome" expr="'fail'"/></onentry></final>)~",
                               "datamodel='ecmascript'");
  Context ctx;
  StateChart<> c(ctx, sc::load(text, {}, o));
  CHECK(c.atomic_configuration() == std::vector<std::string>{"pass"});
}

TEST_CASE("scxml load: with allow_unused_ecmascript a name in a cond is still refused") {
  sc::LoadOptions o;
  o.allow_unused_ecmascript = true;
  check_refusals(
      {
          {"a name", doc("<state id='a'><transition cond='x'/></state>", "datamodel='ecmascript'"),
           "scxml.unsupported", "transition", 2, 15},
          {"'and'",
           doc("<state id='a'><transition cond=\"In('a') and true\"/></state>",
               "datamodel='ecmascript'"),
           "scxml.unsupported", "transition", 2, 15},
          {"a delayexpr that is not a literal",
           doc("<state id='a'><onentry><send event='e' delayexpr='d'/></onentry></state>",
               "datamodel='ecmascript'"),
           "scxml.unsupported", "send", 2, 24},
          {"script", doc("<script/><state id='a'/>", "datamodel='ecmascript'"), "scxml.unsupported",
           "script", 2, 1},
      },
      o);
}
