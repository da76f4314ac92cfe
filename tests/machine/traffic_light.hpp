// SPDX-License-Identifier: MIT
/// @file
/// The traffic light of issue 3 as a test double: Red -> Green -> Yellow -> Red on Advance,
/// and Skip jumps from Green straight to Red. Written twice, as a hand-written `step` and as a
/// table, so the tests can check that both describe the same machine.
#pragma once

#include <trellis/base/enumeration.hpp>
#include <trellis/machine/transition_table.hpp>

#include <optional>

namespace light {

enum class Light { Red, Green, Yellow };
TRELLIS_ENUM(Light, Red, Green, Yellow);

enum class Tick { Advance, Skip };
TRELLIS_ENUM(Tick, Advance, Skip);

inline std::optional<Light> step(const Light& s, const Tick& e) {
  switch (e) {
    case Tick::Advance:
      switch (s) {
        case Light::Red:
          return Light::Green;
        case Light::Green:
          return Light::Yellow;
        case Light::Yellow:
          return Light::Red;
      }
      return std::nullopt;
    case Tick::Skip:
      if (s == Light::Green) return Light::Red;
      return std::nullopt;
  }
  return std::nullopt;
}

inline trellis::TransitionTable<Light, Tick> table() {
  trellis::TransitionTable<Light, Tick> t;
  t.from(Light::Red).on(Tick::Advance).to(Light::Green);
  t.from(Light::Green).on(Tick::Advance).to(Light::Yellow);
  t.from(Light::Yellow).on(Tick::Advance).to(Light::Red);
  t.from(Light::Green).on(Tick::Skip).to(Light::Red);
  return t;
}

}  // namespace light
