// SPDX-License-Identifier: MIT
// The SCXML writer: a chart built in code, saved and loaded back, is the same chart; a chart
// written by hand in SCXML runs like the same chart built in code.

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "trellis/scxml.hpp"
#include "trellis/statechart.hpp"

using namespace trellis;
using namespace std::chrono_literals;
namespace sc = trellis::scxml;

namespace {

struct Player {
  std::vector<std::string> log;
  bool media = true;
};

auto note(std::string what) {
  return [what](Player& p) { p.log.push_back(what); };
}
bool has_media(const Player& p) { return p.media; }

/// A media player: nested, parallel, deep history, a delayed send with cancel, raise, log,
/// guards (bound and In()), an internal transition and an initial with content.
ChartBuilder<Player> player_builder() {
  ChartBuilder<Player> b("player");
  b.state("stopped", [](auto& s) {
    s.on("play").when("has_media", has_media).to("playing").call("rewind", note("rewind"));
    s.on("eject").to("ejected").raise("bye").log("ejecting");
  });
  b.state("playing", [](auto& s) {
    s.on_entry("light_on", note("light on"));
    s.on_exit("light_off", note("light off"));
    s.on("stop").to("stopped");
    s.on("pause").to("paused");
    s.on("seek").internal().to("buffering");
    s.parallel("running", [](auto& p) {
      p.state("video", [](auto& r) {
        r.state("buffering", [](auto& x) {
          x.on_entry().send("stall", 5s, "stall_timer").call("buffer", note("buffer"));
          x.on("buffered").to("streaming");
        });
        r.state("streaming", [](auto& x) {
          x.on_entry().cancel("stall_timer");
          x.on("stall").to("buffering");
        });
      });
      p.state("audio", [](auto& r) {
        r.initial("loud").call("volume", note("volume"));
        r.state("muted", [](auto& x) { x.on("unmute").to("loud"); });
        r.state("loud", [](auto& x) { x.on("mute").when_in("streaming").to("muted"); });
      });
    });
    s.history("resume", History::deep, "running");
  });
  b.state("paused", [](auto& s) { s.on("play").to("resume"); });
  b.final("ejected");
  return b;
}

sc::Bindings<Player> player_bindings() {
  sc::Bindings<Player> b;
  b.guard("has_media", has_media);
  for (const char* what : {"rewind", "buffer", "volume"}) b.action(what, note(what));
  b.action("light_on", note("light on")).action("light_off", note("light off"));
  return b;
}

void same_block(const ChartDefinition& a, const ChartBlock& x, const ChartDefinition& b,
                const ChartBlock& y) {
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(x[i].kind == y[i].kind);
    CHECK(x[i].name == y[i].name);
    CHECK(x[i].delay == y[i].delay);
    CHECK(x[i].send_id == y[i].send_id);
    CHECK((x[i].action < 0) == (y[i].action < 0));
    if (x[i].action >= 0 && y[i].action >= 0)
      CHECK(a.actions[static_cast<std::size_t>(x[i].action)].name ==
            b.actions[static_cast<std::size_t>(y[i].action)].name);
  }
}

void same_transition(const ChartDefinition& a, int ta, const ChartDefinition& b, int tb) {
  REQUIRE((ta < 0) == (tb < 0));
  if (ta < 0) return;
  const ChartTransition& x = a.transition(ta);
  const ChartTransition& y = b.transition(tb);
  CHECK(x.source == y.source);
  CHECK(x.event == y.event);
  CHECK(x.targets == y.targets);
  CHECK(x.internal == y.internal);
  CHECK(x.pseudo == y.pseudo);
  REQUIRE((x.guard < 0) == (y.guard < 0));
  if (x.guard >= 0) {
    const ChartGuard& g = a.guards[static_cast<std::size_t>(x.guard)];
    const ChartGuard& h = b.guards[static_cast<std::size_t>(y.guard)];
    CHECK(g.name == h.name);
    CHECK(g.in_id == h.in_id);
    CHECK(g.in_state == h.in_state);
    CHECK(static_cast<bool>(g.fn) == static_cast<bool>(h.fn));
  }
  same_block(a, x.content, b, y.content);
}

/// Structural equality: states, kinds, nesting, transitions, targets, events, guards, content.
void same_chart(const ChartDefinition& a, const ChartDefinition& b) {
  CHECK(a.name == b.name);
  REQUIRE(a.states.size() == b.states.size());
  for (std::size_t i = 0; i < a.states.size(); ++i) {
    const ChartState& x = a.states[i];
    const ChartState& y = b.states[i];
    CAPTURE(x.id);
    CHECK(x.id == y.id);
    CHECK(x.kind == y.kind);
    CHECK(x.parent == y.parent);
    CHECK(x.children == y.children);
    CHECK(x.histories == y.histories);
    REQUIRE(x.transitions.size() == y.transitions.size());
    for (std::size_t t = 0; t < x.transitions.size(); ++t)
      same_transition(a, x.transitions[t], b, y.transitions[t]);
    same_transition(a, x.initial, b, y.initial);
    REQUIRE(x.on_entry.size() == y.on_entry.size());
    for (std::size_t k = 0; k < x.on_entry.size(); ++k)
      same_block(a, x.on_entry[k], b, y.on_entry[k]);
    REQUIRE(x.on_exit.size() == y.on_exit.size());
    for (std::size_t k = 0; k < x.on_exit.size(); ++k) same_block(a, x.on_exit[k], b, y.on_exit[k]);
  }
}

/// The configurations and the log `events` lead through.
std::vector<std::string> run(const Chart<Player>& chart, const std::vector<std::string>& events) {
  ManualChartClock clock;
  Context ctx;
  StateChart<Player> c(ctx, chart, Player{}, ChartOptions{.clock = &clock});
  std::vector<std::string> out;
  auto record = [&] {
    std::string line;
    for (const std::string& id : c.configuration()) line += id + " ";
    out.push_back(line);
  };
  record();
  for (const std::string& e : events) {
    if (e == "+6s") {
      clock.advance(6s);
      c.fire_due();
    } else {
      c.send(e);
    }
    record();
  }
  for (const std::string& l : c.data().log) out.push_back("log: " + l);
  return out;
}

const std::vector<std::string> session = {"play",   "+6s",  "buffered", "mute", "pause", "play",
                                          "unmute", "seek", "+6s",      "stop", "eject", "play"};

}  // namespace

TEST_CASE("scxml save: a chart built in code loads back as the same chart") {
  const Chart<Player> built = player_builder().build();
  const std::string text = sc::save(built);
  CAPTURE(text);
  const Chart<Player> loaded = sc::load(text, player_bindings());
  same_chart(built.definition(), loaded.definition());
}

TEST_CASE("scxml save: a chart saved and loaded back runs as the original") {
  const Chart<Player> built = player_builder().build();
  const Chart<Player> loaded = sc::load(sc::save(built), player_bindings());
  CHECK(run(loaded, session) == run(built, session));
}

TEST_CASE("scxml save: a saved chart saves again to the same text") {
  const std::string once = sc::save(player_builder().build());
  CHECK(sc::save(sc::load(once, player_bindings())) == once);
}

TEST_CASE("scxml save: the document uses the null datamodel, cond names and trellis:call") {
  const std::string text = sc::save(player_builder().build());
  CHECK(text.find(R"~(datamodel="null")~") != std::string::npos);
  CHECK(text.find(R"~(cond="has_media")~") != std::string::npos);
  CHECK(text.find(R"~(cond="In('streaming')")~") != std::string::npos);
  CHECK(text.find(R"~(<trellis:call name="rewind" />)~") != std::string::npos);
  CHECK(text.find(R"~(<send event="stall" delay="5s" id="stall_timer" />)~") != std::string::npos);
  CHECK(text.find(R"~(<history id="resume" type="deep">)~") != std::string::npos);
}

TEST_CASE("scxml save: what SCXML cannot hold is scxml.unsupported") {
  ChartBuilder<> spaced("c");
  spaced.state("a", [](auto& s) { s.on("e").when("has space", [] { return true; }).to("a"); });
  CHECK_THROWS_WITH_AS(sc::save(spaced.build()),
                       doctest::Contains("guard 'has space' is not a name a cond can hold"),
                       sc::scxml_error);
  ChartBuilder<> root_entry("c");
  root_entry.state("a");
  root_entry.root().on_entry("hello", [] {});
  CHECK_THROWS_AS(sc::save(root_entry.build()), sc::scxml_error);
}

TEST_CASE("scxml load: a chart written in SCXML runs like the same chart built in code") {
  const std::string text = R"~(<?xml version="1.0" encoding="UTF-8"?>
<scxml xmlns="http://www.w3.org/2005/07/scxml" xmlns:trellis="https://trellis.dev/scxml"
       version="1.0" name="player">
  <state id="stopped">
    <transition event="play" cond="has_media" target="playing">
      <trellis:call name="rewind"/>
    </transition>
    <transition event="eject" target="ejected"><raise event="bye"/><log label="ejecting"/></transition>
  </state>
  <state id="playing">
    <onentry><trellis:call name="light_on"/></onentry>
    <onexit><trellis:call name="light_off"/></onexit>
    <transition event="stop" target="stopped"/>
    <transition event="pause" target="paused"/>
    <transition event="seek" target="buffering" type="internal"/>
    <parallel id="running">
      <state id="video">
        <state id="buffering">
          <onentry>
            <send event="stall" delay="5s" id="stall_timer"/>
            <trellis:call name="buffer"/>
          </onentry>
          <transition event="buffered" target="streaming"/>
        </state>
        <state id="streaming">
          <onentry><cancel sendid="stall_timer"/></onentry>
          <transition event="stall" target="buffering"/>
        </state>
      </state>
      <state id="audio">
        <initial><transition target="loud"><trellis:call name="volume"/></transition></initial>
        <state id="muted"><transition event="unmute" target="loud"/></state>
        <state id="loud"><transition event="mute" cond="In('streaming')" target="muted"/></state>
      </state>
    </parallel>
    <history id="resume" type="deep"><transition target="running"/></history>
  </state>
  <state id="paused"><transition event="play" target="resume"/></state>
  <final id="ejected"/>
</scxml>
)~";
  const Chart<Player> loaded = sc::load(text, player_bindings());
  CHECK(run(loaded, session) == run(player_builder().build(), session));
  same_chart(player_builder().build().definition(), loaded.definition());
}
