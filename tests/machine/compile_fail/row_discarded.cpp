// SPDX-License-Identifier: MIT
// Must not compile (warnings are errors here): a row whose chain stops before .to() or
// .stay() is never added; the diagnostic must say how a row is added.
#include <trellis/machine/transition_table.hpp>

enum class Light { Red, Green };
enum class Tick { Advance };

int main() {
  trellis::TransitionTable<Light, Tick> t;
  t.from(Light::Red).on(Tick::Advance);
  return t(Light::Red, Tick::Advance) ? 0 : 1;
}
