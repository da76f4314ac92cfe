// SPDX-License-Identifier: MIT
/// @file
/// Shared doubles for the statechart suites: a `Log` data type whose actions append lines,
/// `traced(state)` (entry and exit actions that log "+id" and "-id"), and `Rig`, a
/// single-threaded chart over a Log whose `news()` returns the lines logged since it was last
/// asked. The expected lines in the suites are derived by hand from W3C SCXML 1.0 Appendix D.
#pragma once

#include <trellis/statechart.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace chart_test {

using Lines = std::vector<std::string>;

/// The chart data of the suites: what the actions did, in order.
struct Log {
  Lines lines;
  int count = 0;
  bool flag = false;
  friend bool operator==(const Log&, const Log&) = default;
};

/// An action that logs `line`.
inline auto say(std::string line) {
  return [line = std::move(line)](Log& l) { l.lines.push_back(line); };
}

/// An action that logs the name of the event it runs for.
inline auto say_event() {
  return [](Log& l, const trellis::ChartEvent& e) { l.lines.push_back(e.name); };
}

/// An action that logs the message of the exception an `error.execution` event carries.
inline auto say_error() {
  return [](Log& l, const trellis::ChartEvent& e) {
    const auto* p = e.data_as<std::exception_ptr>();
    if (p == nullptr || !*p) {
      l.lines.push_back("(no exception)");
      return;
    }
    try {
      std::rethrow_exception(*p);
    } catch (const std::exception& x) {
      l.lines.push_back(x.what());
    }
  };
}

/// Entry and exit actions that log "+id" and "-id".
template <class S>
void traced(S& s) {
  const std::string id = s.id();
  s.on_entry("enter " + id, say("+" + id));
  s.on_exit("exit " + id, say("-" + id));
}

/// A builder callback for a state that only traces itself.
inline auto trace() {
  return [](auto& s) { traced(s); };
}

/// A chart over a Log on a Context of its own.
struct Rig {
  explicit Rig(const trellis::ChartBuilder<Log>& b, trellis::ChartOptions options = {},
               const trellis::ChartBuildOptions& build = {})
      : chart(ctx, b.build(build), Log{}, options) {}

  /// The lines logged since the last call (or since the chart started).
  Lines news() {
    Lines all = chart.data().lines;
    Lines fresh(all.begin() + static_cast<std::ptrdiff_t>(mark), all.end());
    mark = all.size();
    return fresh;
  }

  trellis::Context ctx;
  trellis::StateChart<Log> chart;
  std::size_t mark = 0;
};

}  // namespace chart_test
