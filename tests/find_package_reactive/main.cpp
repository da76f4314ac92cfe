// A consumer of trellis::reactive, trellis::machine and trellis::statechart alone: a computed
// total, an effect, a state machine on a pure table and a statechart built in code; no oneTBB,
// Boost, nlohmann_json, OpenSSL, SQLite or an XML parser.
#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_table.hpp>
#include <trellis/reactive.hpp>
#include <trellis/statechart.hpp>

#include <cstdio>
#include <string>
#include <vector>

enum class Light { Red, Green };
enum class Tick { Next };

int main() {
  trellis::Context ctx;
  auto price = ctx.cell(10);
  auto quantity = ctx.cell(3);
  auto total = ctx.computed([&] { return price.get() * quantity.get(); });
  int seen = 0;
  auto watch = ctx.effect([&] { seen = total.get(); });
  quantity.set(4);
  if (seen != 40) {
    std::printf("expected 40, saw %d\n", seen);
    return 1;
  }

  trellis::TransitionTable<Light, Tick> table;
  table.from(Light::Red).on(Tick::Next).to(Light::Green);
  table.from(Light::Green).on(Tick::Next).to(Light::Red);
  trellis::StateMachine<Light, Tick> light{ctx, Light::Red, table};
  int transitions = 0;
  auto counter = light.on_transition([&](const Light&, const Light&) { ++transitions; });
  light.send(Tick::Next);
  if (light.state() != Light::Green || transitions != 1) {
    std::printf("expected Green\n");
    return 1;
  }
  trellis::ChartBuilder<> b("player");
  b.state("stopped", [](auto& s) { s.on("play").to("playing"); });
  b.parallel("playing", [](auto& p) {
    p.state("video", [](auto& r) { r.state("buffering"); });
    p.state("audio", [](auto& r) { r.state("muted"); });
  });
  trellis::StateChart<> chart(ctx, b.build());
  chart.send("play");
  if (chart.atomic_configuration() != std::vector<std::string>{"buffering", "muted"}) {
    std::printf("expected buffering and muted\n");
    return 1;
  }
  std::printf("reactive-only consumer: total %d, light green, chart playing\n", seen);
  return 0;
}
