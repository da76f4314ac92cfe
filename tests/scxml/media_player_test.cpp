// The README's media player: the chart built in code (examples/media_player/media_player.hpp)
// and the same chart read from examples/media_player/media_player.scxml behave the same.

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "media_player/media_player.hpp"
#include "trellis/scxml/load.hpp"
#include "trellis/scxml/save.hpp"

namespace {

trellis::scxml::Bindings<media::Player> bindings() {
  trellis::scxml::Bindings<media::Player> b;
  b.guard("has_next", [](const media::Player& p) { return p.track < p.tracks; });
  b.action("next_track", [](media::Player& p) { ++p.track; });
  b.action("count_buffered", [](media::Player& p) { ++p.buffered; });
  return b;
}

struct Step {
  std::vector<std::string> configuration;
  media::Player data;
  bool operator==(const Step&) const = default;
};

// Every event of the player's alphabet in a long fixed sequence, with the clock moved between
// some of them so that the buffering timer fires (or is cancelled).
std::vector<Step> drive(const trellis::Chart<media::Player>& chart) {
  using namespace std::chrono_literals;
  trellis::ManualChartClock clock;
  trellis::Context ctx;
  trellis::StateChart<media::Player> player(ctx, chart, {}, {.clock = &clock});
  std::vector<Step> steps{{player.configuration(), player.data()}};
  const char* events[] = {"power", "play",  "unmute", "wait",  "stall",    "next",  "pause",
                          "wait",  "power", "power",  "play",  "wait",     "next",  "next",
                          "mute",  "stop",  "play",   "wait",  "buffered", "power", "power",
                          "pause", "play",  "wait",   "stall", "stop",     "wait"};
  for (const char* e : events) {
    if (std::string(e) == "wait") {
      clock.advance(600ms);
      player.fire_due();
    } else {
      player.send(e);
    }
    steps.push_back({player.configuration(), player.data()});
  }
  return steps;
}

}  // namespace

TEST_CASE("media player: the SCXML file runs like the chart built in code") {
  const auto from_file =
      trellis::scxml::load_file<media::Player>(TRELLIS_MEDIA_PLAYER_SCXML, bindings());
  const std::vector<Step> expected = drive(media::player_chart());
  CHECK(drive(from_file) == expected);
  // and the walk went somewhere: both regions moved, the timer fired, tracks advanced
  CHECK(expected.back().data.buffered >= 2);
  CHECK(expected.back().data.track == 3);
}

TEST_CASE("media player: the chart built in code saves to SCXML that loads back the same") {
  const std::string text = trellis::scxml::save(media::player_chart());
  const auto reloaded = trellis::scxml::load_text<media::Player>(text, bindings());
  CHECK(drive(reloaded) == drive(media::player_chart()));
}
