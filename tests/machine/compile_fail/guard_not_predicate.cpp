// SPDX-License-Identifier: MIT
// Must not compile: a guard that takes the wrong arguments; the diagnostic must say what a
// guard must be callable as.
#include <trellis/machine/transition_table.hpp>

enum class Light { Red, Green };
enum class Tick { Advance };

int main() {
  (void)trellis::TransitionTable<Light, Tick>{}
      .from(Light::Red)
      .on(Tick::Advance)
      .when([](int, int, int) { return true; })
      .to(Light::Green);
}
