// SPDX-License-Identifier: MIT
// Must compile: the correct use of what the other cases in this folder misuse.
#include <trellis/machine/diagram.hpp>
#include <trellis/machine/testing.hpp>

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
}
