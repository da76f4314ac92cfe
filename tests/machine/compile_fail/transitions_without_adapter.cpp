// SPDX-License-Identifier: MIT
// Must not compile: transitions() is the Boost.Signals2 adapter's; without its header the
// diagnostic must name the header to include.
#include <trellis/machine/state_machine.hpp>

#include <optional>

enum class Light { Red, Green };
enum class Tick { Advance };

std::optional<Light> step(const Light&, const Tick&) { return Light::Green; }

int main() {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, step};
  (void)m.transitions();
}
