// SPDX-License-Identifier: MIT
// Must compile: the correct use of what the other cases in this folder misuse.
#include <trellis/machine/diagram.hpp>
#include <trellis/testing.hpp>

#include <optional>

enum class Light { Red, Green };
TRELLIS_ENUM(Light, Red, Green);
enum class Tick { Advance };
TRELLIS_ENUM(Tick, Advance);

int main() {
  const auto t = trellis::TransitionTable<Light, Tick>{}
                     .from(Light::Red)
                     .on(Tick::Advance)
                     .when([](const Light&) { return true; })
                     .to(Light::Green);
  (void)trellis::to_mermaid(trellis::testing::transition_matrix(t));
  trellis::TransitionTable<Light, Tick> named;  // rows of a named table: .to() ends each one
  named.from(Light::Red).on(Tick::Advance).to(Light::Green);
  named.any().on(Tick::Advance).stay();
  return named(Light::Red, Tick::Advance) == Light::Green ? 0 : 1;
}
