// explore on charts: reachable configurations, transitions never taken, states never entered,
// dead ends, livelocks and errors, bounds. Every expectation below is derived by hand from the
// charts (see media_player_chart.hpp for the media player's numbering).

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "media_player_chart.hpp"
#include "trellis/statechart/testing.hpp"

using namespace trellis;
using namespace std::chrono_literals;
namespace tt = trellis::testing;
using Ids = std::vector<std::string>;

TEST_CASE("chart explore: reaches every configuration of the media player by a shortest path") {
  const auto r = tt::explore(media::player(), media::alphabet());
  REQUIRE(r.configurations.size() == 7);
  const auto path = [&](const Ids& config) {
    const auto* c = r.find(config);
    REQUIRE_MESSAGE(c != nullptr, r.summary());
    return c->path.events;
  };
  CHECK(path({"stopped"}).empty());
  CHECK(path({"buffering", "loud"}) == Ids{"play"});
  CHECK(path({"off"}) == Ids{"power"});
  CHECK(path({"paused"}) == Ids{"play", "pause"});
  CHECK(path({"streaming", "loud"}) == Ids{"play", "loaded"});
  CHECK(path({"buffering", "muted"}) == Ids{"play", "mute"});
  CHECK(path({"streaming", "muted"}) == Ids{"play", "loaded", "mute"});
  CHECK(r.find({"off"})->done);
  CHECK_FALSE(r.find({"paused"})->done);
  CHECK_FALSE(r.reached({"broken"}));
}

TEST_CASE("chart explore: a path lists the configuration after each event") {
  const auto r = tt::explore(media::player(), media::alphabet());
  const auto* c = r.find({"streaming", "muted"});
  REQUIRE(c != nullptr);
  CHECK(c->path.configurations ==
        std::vector<Ids>{
            {"stopped"}, {"buffering", "loud"}, {"streaming", "loud"}, {"streaming", "muted"}});
}

TEST_CASE("chart explore: history values tell states of one configuration apart") {
  const auto r = tt::explore(media::player(), media::alphabet());
  // history unrecorded or one of 4 values: stopped 5, each of the 4 playing configurations 5,
  // paused 4 (pausing records), off 5
  CHECK(r.states == 34);
  CHECK(r.find({"stopped"})->stored == 5);
  CHECK(r.find({"streaming", "muted"})->stored == 5);
  CHECK(r.find({"paused"})->stored == 4);
  CHECK(r.find({"off"})->stored == 5);
  CHECK(r.complete());
}

TEST_CASE("chart explore: counts moves, transitions taken and the depth") {
  const auto r = tt::explore(media::player(), media::alphabet());
  CHECK(r.moves == 34 * 7);
  // stopped 2 each, playing 4 each, paused 2 each, off none
  CHECK(r.transitions == 5 * 2 + 20 * 4 + 4 * 2);
  // playing with history "streaming, muted" in {streaming, loud}: play loaded mute pause play mute
  CHECK(r.depth == 6);
}

TEST_CASE("chart explore: lists the transitions never taken by document index") {
  const auto r = tt::explore(media::player(), media::alphabet());
  const auto never = r.never_taken();
  REQUIRE(never.size() == 2);
  CHECK(never[0].index == 2);
  CHECK(never[0].description == "transition 3 of 'stopped' on 'fault'");
  CHECK(never[1].index == 7);
  CHECK(never[1].description == "transition 2 of 'streaming' on 'seek'");
}

TEST_CASE("chart explore: counts how often each transition was taken") {
  const auto r = tt::explore(media::player(), media::alphabet());
  std::vector<std::size_t> taken;
  for (const auto& c : r.coverage) taken.push_back(c.taken);
  // play and power from 5 stopped states; stop and pause from 20 playing states; loaded,
  // stall and the two mutes from 10 each; play and stop from 4 paused states
  CHECK(taken == std::vector<std::size_t>{5, 5, 0, 20, 20, 10, 10, 0, 10, 10, 4, 4});
}

TEST_CASE("chart explore: lists the states never entered") {
  const auto r = tt::explore(media::player(), media::alphabet());
  CHECK(r.never_entered == Ids{"broken"});
}

TEST_CASE("chart explore: the media player has no dead end and is ok") {
  const auto r = tt::explore(media::player(), media::alphabet());
  CHECK(r.dead_ends == 0);
  CHECK(r.failures.empty());
  CHECK_MESSAGE(r.ok(), r.summary());
}

TEST_CASE("chart explore: a configuration where no event does anything is a dead end") {
  auto events = media::alphabet();
  events.emplace_back("fault");
  const auto r = tt::explore(media::player(), events);
  CHECK(r.dead_ends == 5);  // broken, with each of the 5 history values
  REQUIRE_FALSE(r.dead_end_examples.empty());
  CHECK(r.dead_end_examples[0].events == Ids{"fault"});
  CHECK(r.dead_end_examples[0].configurations == std::vector<Ids>{{"stopped"}, {"broken"}});
  CHECK_FALSE(r.ok());
  CHECK(r.never_entered.empty());
}

TEST_CASE("chart explore: a final configuration is not a dead end") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) { s.on("go").to("end"); });
  b.final("end");
  const auto r = tt::explore(b.build(), {"go"});
  CHECK(r.states == 2);
  CHECK(r.dead_ends == 0);
  CHECK(r.ok());
}

TEST_CASE("chart explore: a livelock is reported with its shortest sequence") {
  ChartBuilder<> b("loop");
  b.state("idle", [](auto& s) { s.on("go").to("ping"); });
  b.state("ping", [](auto& s) { s.always().to("pong"); });
  b.state("pong", [](auto& s) { s.always().to("ping"); });
  tt::ChartExploreOptions<NoData> options;
  options.microstep_budget = 20;
  const auto r = tt::explore(b.build(), {"go"}, options);
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].kind == tt::ChartFailureKind::livelock);
  CHECK(r.failures[0].what.find("did not become stable within 20 microsteps") != std::string::npos);
  CHECK(r.failures[0].path.events == Ids{"go"});
  CHECK(r.failures[0].count == 1);
  CHECK_FALSE(r.ok());
}

TEST_CASE("chart explore: an action that throws is reported as error.execution") {
  ChartBuilder<> b("c");
  b.state("a", [](auto& s) {
    s.on("ok").to("b");
    s.on("boom").call("explode", [] { throw std::runtime_error("kaput"); }).to("b");
  });
  b.state("b", [](auto& s) { s.on("back").to("a"); });
  const auto r = tt::explore(b.build(), {"ok", "boom", "back"});
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].kind == tt::ChartFailureKind::execution_error);
  CHECK(r.failures[0].what == "error.execution: kaput");
  CHECK(r.failures[0].path.events == Ids{"boom"});
  CHECK(r.failures[0].path.configurations == std::vector<Ids>{{"a"}, {"b"}});
  CHECK(r.failures[0].count == 1);  // boom is only enabled in a, which is one state
}

namespace {

// start enters waiting, which sends itself "timeout" after a second; cancel goes back to idle
// and cancels it; the timeout ends the chart.
Chart<> timer_chart() {
  ChartBuilder<> b("timer");
  b.state("idle", [](auto& s) { s.on("start").to("waiting"); });
  b.state("waiting", [](auto& s) {
    s.on_entry().send("timeout", 1000ms, "t");
    s.on_exit().cancel("t");
    s.on("timeout").to("expired");
    s.on("cancel").to("idle");
  });
  b.final("expired");
  return b.build();
}

}  // namespace

TEST_CASE("chart explore: a pending delayed send fires as a move of its own") {
  const auto r = tt::explore(timer_chart(), {"start", "cancel"});
  CHECK(r.states == 3);
  const auto* expired = r.find({"expired"});
  REQUIRE(expired != nullptr);
  CHECK(expired->path.events == Ids{"start", "timeout (delayed)"});
  CHECK(r.never_taken().empty());
  CHECK(r.dead_ends == 0);
}

TEST_CASE(
    "chart explore: without delayed sends firing, a state waiting only for one is a "
    "dead end") {
  tt::ChartExploreOptions<NoData> options;
  options.fire_delayed_sends = false;
  const auto r = tt::explore(timer_chart(), {"start"}, options);
  CHECK(r.states == 2);
  CHECK(r.never_entered == Ids{"expired"});
  CHECK(r.dead_ends == 1);
  REQUIRE(r.dead_end_examples.size() == 1);
  CHECK(r.dead_end_examples[0].events == Ids{"start"});
}

namespace {

struct Plays {
  int plays = 0;
  friend bool operator==(const Plays&, const Plays&) = default;
};
struct PlaysHash {
  std::size_t operator()(const Plays& p) const { return std::hash<int>{}(p.plays); }
};

// Three plays at most, counted in the data.
Chart<Plays> counting_chart() {
  ChartBuilder<Plays> b("counter");
  b.state("stopped", [](auto& s) {
    s.on("play")
        .when("under 3 plays", [](const Plays& p) { return p.plays < 3; })
        .call("count", [](Plays& p) { ++p.plays; })
        .to("playing");
  });
  b.state("playing", [](auto& s) { s.on("stop").to("stopped"); });
  return b.build();
}

}  // namespace

TEST_CASE("chart explore: the data is part of a state, through the options' hash") {
  const auto r =
      tt::explore(counting_chart(), {"play", "stop"}, tt::ChartExploreOptions<Plays, PlaysHash>{});
  // (stopped, 0..3) and (playing, 1..3)
  CHECK(r.states == 7);
  CHECK(r.configurations.size() == 2);
  CHECK(r.depth == 6);
  // stopped with 3 plays: the guard refuses play, and stop is playing's
  CHECK(r.dead_ends == 1);
  REQUIRE(r.dead_end_examples.size() == 1);
  CHECK(r.dead_end_examples[0].events == Ids{"play", "stop", "play", "stop", "play", "stop"});
}

TEST_CASE("chart explore: IgnoreData leaves the data out of a state") {
  const auto r = tt::explore(counting_chart(), {"play", "stop"},
                             tt::ChartExploreOptions<Plays, tt::IgnoreData>{});
  CHECK(r.states == 2);
}

TEST_CASE("chart explore: an invariant over configuration and data is checked in every state") {
  tt::ChartExploreOptions<Plays, PlaysHash> options;
  options.invariant("at most 2 plays",
                    [](const ChartConfiguration&, const Plays& p) { return p.plays <= 2; });
  options.invariant("playing or stopped", [](const ChartConfiguration& c) {
    return c.contains("playing") != c.contains("stopped");
  });
  const auto r = tt::explore(counting_chart(), {"play", "stop"}, options);
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].kind == tt::ChartFailureKind::invariant);
  CHECK(r.failures[0].what == "at most 2 plays");
  CHECK(r.failures[0].count == 2);  // (playing, 3) and (stopped, 3)
  CHECK(r.failures[0].path.events == Ids{"play", "stop", "play", "stop", "play"});
}

TEST_CASE("chart explore: max_states bounds the stored states and marks the report partial") {
  tt::ChartExploreOptions<NoData> options;
  options.max_states = 5;
  const auto r = tt::explore(media::player(), media::alphabet(), options);
  CHECK(r.states == 5);
  CHECK(r.cut_by_states);
  CHECK(r.partial());
}

TEST_CASE("chart explore: max_depth bounds how far from the start states are stored") {
  tt::ChartExploreOptions<NoData> options;
  options.max_depth = 1;
  const auto r = tt::explore(media::player(), media::alphabet(), options);
  CHECK(r.states == 3);  // stopped, then {buffering, loud} and off
  CHECK(r.depth == 1);
  CHECK(r.cut_by_depth);
  CHECK_FALSE(r.cut_by_states);
}

TEST_CASE("chart explore: the summary names what was never taken and entered") {
  const auto r = tt::explore(media::player(), media::alphabet());
  const std::string& s = r.summary();
  CHECK(
      s.starts_with("explore 'player': 34 states in 7 configurations, 238 moves (98 took "
                    "transitions), depth 6; complete\n"));
  CHECK(s.find("transitions: 10 of 12 taken\n"
               "  never taken: transition 3 of 'stopped' on 'fault'\n"
               "  never taken: transition 2 of 'streaming' on 'seek'\n"
               "states never entered: broken\n"
               "dead ends: none\n"
               "failures: none\n"
               "ok\n") != std::string::npos);
}

TEST_CASE("chart explore: two runs give equal reports") {
  CHECK(tt::explore(media::player(), media::alphabet()) ==
        tt::explore(media::player(), media::alphabet()));
}
