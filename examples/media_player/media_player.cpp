// The media player statechart (media_player.hpp) on simulated time: nested and parallel
// states, deep history, and a delayed send that fires when the clock passes it.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "media_player.hpp"

namespace {

std::string join(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : " ") + id;
  return out;
}

}  // namespace

int main() {
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
