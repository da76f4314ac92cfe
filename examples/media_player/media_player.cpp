// The media player statechart (media_player.hpp):
//   media_player                  runs it on simulated time: nested and parallel states, deep
//                                 history, and a delayed send that fires when the clock passes
//   media_player --mermaid        prints the chart as a Mermaid stateDiagram-v2 (--dot: DOT)
//   media_player --durable PATH   runs it persisted in the sidecar PATH, on the system clock:
//                                 the first run powers on and plays (the buffering timer is
//                                 pending when it exits); a later run resumes there, and the
//                                 timer, due meanwhile, fires once when the sidecar is opened

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/persist/durable_state_chart.hpp>
#include <trellis/statechart/diagram.hpp>

#include "media_player.hpp"
#include "media_player_json.hpp"

namespace {

std::string join(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : " ") + id;
  return out;
}

int durable(const char* path) {
  trellis::Context ctx;
  trellis::DurableStateChart<media::Player> player(ctx, path, media::player_chart());
  if (player.epoch() == 0 && player.fired_at_open() == 0) {
    for (const char* e : {"power", "play"}) player.send(e);
    std::printf("started: %s, %zu delayed send(s) pending\n",
                join(player.atomic_configuration()).c_str(), player.pending_sends().size());
    return 0;
  }
  std::printf("resumed: %s after %zu delayed send(s) fired at open\n",
              join(player.atomic_configuration()).c_str(), player.fired_at_open());
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "--mermaid" || mode == "--dot") {
    const auto chart = media::player_chart();
    std::printf("%s",
                (mode == "--dot" ? trellis::to_dot(chart) : trellis::to_mermaid(chart)).c_str());
    return 0;
  }
  if (mode == "--durable" && argc > 2) return durable(argv[2]);
  if (!mode.empty()) {
    std::fprintf(stderr, "usage: media_player [--mermaid | --dot | --durable SIDECAR]\n");
    return 2;
  }
  using namespace std::chrono_literals;
  trellis::ManualChartClock clock;  // simulated time: the example needs no sleeping
  trellis::Context ctx;
  trellis::StateChart<media::Player> player(ctx, media::player_chart(), {}, {.clock = &clock});
  auto log = player.on_transition(
      [](const trellis::ChartConfiguration&, const trellis::ChartConfiguration& to) {
        std::printf("%s\n", join(to.atomic_ids()).c_str());
      });
  trellis::Signal<bool> streaming = player.in("streaming");

  std::printf("%s\n", join(player.atomic_configuration()).c_str());  // off
  for (const char* e : {"power", "play", "unmute"}) player.send(e);
  clock.advance(500ms);
  player.fire_due();  // the buffering timer: buffering -> streaming
  std::printf("streaming: %s\n", streaming.get() ? "yes" : "no");
  for (const char* e : {"next", "pause", "power", "power", "play"}) player.send(e);
  const media::Player data = player.data();
  std::printf("track %d, buffered %d time(s)\n", data.track, data.buffered);
  const bool ok = player.atomic_configuration() == std::vector<std::string>{"streaming", "loud"} &&
                  data.track == 2 && data.buffered == 1;
  if (!ok) return 1;
  std::printf("done\n");
  return 0;
}
