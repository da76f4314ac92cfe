#pragma once
// A small media player for the chart testing tools: nested (playing > running > video/audio),
// parallel (running's two regions) and deep history (resume), with two transitions no test
// alphabet sends (fault, seek) and a state only they lead to (broken).
//
// States in document order: stopped, playing, running, video, buffering, streaming, audio,
// loud, muted, resume (deep history), paused, broken, off (final).
// Transitions in document order:
//   0 stopped  play  -> playing        6 streaming stall  -> buffering
//   1 stopped  power -> off            7 streaming seek   -> buffering
//   2 stopped  fault -> broken         8 loud      mute   -> muted
//   3 playing  stop  -> stopped        9 muted     mute   -> loud
//   4 playing  pause -> paused        10 paused    play   -> resume
//   5 buffering loaded -> streaming   11 paused    stop   -> stopped

#include <vector>

#include "trellis/statechart.hpp"

namespace media {

inline trellis::Chart<> player() {
  trellis::ChartBuilder<> b("player");
  b.state("stopped", [](auto& s) {
    s.on("play").to("playing");
    s.on("power").to("off");
    s.on("fault").to("broken");
  });
  b.state("playing", [](auto& s) {
    s.on("stop").to("stopped");
    s.on("pause").to("paused");
    s.parallel("running", [](auto& p) {
      p.state("video", [](auto& r) {
        r.state("buffering", [](auto& st) { st.on("loaded").to("streaming"); });
        r.state("streaming", [](auto& st) {
          st.on("stall").to("buffering");
          st.on("seek").to("buffering");
        });
      });
      p.state("audio", [](auto& r) {
        r.state("loud", [](auto& st) { st.on("mute").to("muted"); });
        r.state("muted", [](auto& st) { st.on("mute").to("loud"); });
      });
    });
    s.history("resume", trellis::History::deep, "running");
  });
  b.state("paused", [](auto& s) {
    s.on("play").to("resume");
    s.on("stop").to("stopped");
  });
  b.state("broken");
  b.final("off");
  return b.build();
}

// The alphabet the tests send: everything but fault and seek.
inline std::vector<trellis::ChartEvent> alphabet() {
  return {"play", "pause", "stop", "loaded", "stall", "mute", "power"};
}

}  // namespace media
