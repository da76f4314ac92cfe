#pragma once
/// @file
/// The media player statechart (README "Statecharts"; issue 13's example): nested states, two
/// parallel regions, deep history and a delayed send, with typed data.
///
///   off --power--> on (back where it was: on's deep history, first time `stopped`)
///   on: stopped --play--> playing --pause--> paused --play--> playing (its regions resumed)
///       playing = video (buffering --buffered--> streaming --stall--> buffering)
///               | audio (muted <--unmute/mute--> loud)
///       buffering sends itself `buffered` after 500 ms (cancelled if it is left before)
///       next [has next] / next track, in any state of `on`; stop --> stopped

#include <string>
#include <vector>

#include <trellis/statechart.hpp>

namespace media {

struct Player {
  int track = 1;
  int tracks = 3;
  int buffered = 0;  // how many times buffering completed
  friend bool operator==(const Player&, const Player&) = default;
};

inline trellis::Chart<Player> player_chart() {
  using namespace std::chrono_literals;
  trellis::ChartBuilder<Player> b("media");
  b.state("off", [](auto& s) { s.on("power").to("on.resume"); });
  b.state("on", [](auto& on) {
    on.history("on.resume", trellis::History::deep, "stopped");
    on.on("power").to("off");
    on.on("next")
        .when("has next", [](const Player& p) { return p.track < p.tracks; })
        .call("next track", [](Player& p) { ++p.track; });
    on.state("stopped", [](auto& s) { s.on("play").to("playing"); });
    on.parallel("playing", [](auto& p) {
      p.history("playing.resume", trellis::History::deep, "video", "audio");
      p.on("pause").to("paused");
      p.on("stop").to("stopped");
      p.state("video", [](auto& v) {
        v.state("buffering", [](auto& s) {
          s.on_entry().send("buffered", 500ms, "buffer-timer");
          s.on_exit().cancel("buffer-timer");
          s.on("buffered").to("streaming").call("count", [](Player& p) { ++p.buffered; });
        });
        v.state("streaming", [](auto& s) { s.on("stall").to("buffering"); });
      });
      p.state("audio", [](auto& a) {
        a.state("muted", [](auto& s) { s.on("unmute").to("loud"); });
        a.state("loud", [](auto& s) { s.on("mute").to("muted"); });
      });
    });
    on.state("paused", [](auto& s) {
      s.on("play").to("playing.resume");
      s.on("stop").to("stopped");
    });
  });
  return b.build();
}

}  // namespace media
