// A consumer of trellis::reactive and trellis::machine alone: a computed total, an effect, and
// a state machine on a pure table; no oneTBB, Boost, nlohmann_json, OpenSSL or SQLite.
#include <trellis/machine/state_machine.hpp>
#include <trellis/machine/transition_table.hpp>
#include <trellis/reactive.hpp>

#include <cstdio>

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
  std::printf("reactive-only consumer: total %d, light green\n", seen);
  return 0;
}
