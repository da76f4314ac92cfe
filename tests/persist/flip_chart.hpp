// SPDX-License-Identifier: MIT
/// @file
/// The chart durable_child runs in "chart" mode and crash_test.cpp reopens: "even" and "odd",
/// swapped by "flip", which counts itself and queues a "tick" due at once; "tick" counts
/// itself. Whatever a crash interrupts, a reopened chart (which delivers the ticks due) holds
/// as many ticks as flips, and the state named by the parity of the flips.
#pragma once

#include <trellis/statechart/builder.hpp>

#include <nlohmann/json.hpp>

#include <chrono>

namespace flip_chart {

struct Flips {
  int flips = 0;
  int ticks = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Flips, flips, ticks)

inline trellis::Chart<Flips> make() {
  const auto flip = [](Flips& f) { ++f.flips; };
  const auto tick = [](Flips& f) { ++f.ticks; };
  trellis::ChartBuilder<Flips> b("flips");
  b.state("even", [&](auto& s) {
    s.on("flip").to("odd").call("flip", flip).send("tick", std::chrono::milliseconds(0));
    s.on("tick").call("tick", tick);
  });
  b.state("odd", [&](auto& s) {
    s.on("flip").to("even").call("flip", flip).send("tick", std::chrono::milliseconds(0));
    s.on("tick").call("tick", tick);
  });
  return b.build();
}

}  // namespace flip_chart
