// A traffic light: a pure transition function, a StateMachine deciding events with it, an
// eager state_is() signal, an observer printing each transition, and an event it rejects.
#include <cstdio>
#include <optional>
#include <trellis/machine/state_machine.hpp>

enum class Light { Red, Green, Yellow };
enum class Tick { Advance, Skip };
const char* name(Light l) {
  return l == Light::Red ? "Red" : l == Light::Green ? "Green" : "Yellow";
}
std::optional<Light> step(const Light& s, const Tick& e) {  // pure; nullopt rejects the event
  if (e == Tick::Skip) return s == Light::Green ? std::optional(Light::Red) : std::nullopt;
  return s == Light::Red ? Light::Green : s == Light::Green ? Light::Yellow : Light::Red;
}

int main() {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> light{ctx, Light::Red, step};  // any callable works
  auto red = light.state_is(Light::Red);  // an eager Signal<bool>, fresh when send() returns
  auto printer = light.on_transition([](const Light& from, const Light& to) {
    std::printf("%s -> %s\n", name(from), name(to));  // once per committed transition
  });
  light.send(Tick::Advance);                       // prints "Red -> Green"
  light.send(Tick::Skip);                          // prints "Green -> Red"
  trellis::SendResult r = light.send(Tick::Skip);  // Rejected: Skip leaves Green only
  std::printf("Skip at %s: %s, red = %d\n", name(light.state()), r ? "accepted" : "rejected",
              red.get());

  for (int i = 0; i < 3; ++i) light.send(Tick::Advance);  // Green, Yellow, back to Red
  printer.reset();                                        // dropping the handle stops the observer
  light.send(Tick::Advance);                              // Red -> Green, not printed
  const bool ok = !r && light.state() == Light::Green && !red.get();
  std::printf(ok ? "done\n" : "unexpected result\n");
  return ok ? 0 : 1;
}
