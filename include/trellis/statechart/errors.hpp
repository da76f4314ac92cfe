#pragma once
/// @file
/// The statechart layer's errors (codes "statechart.*", listed in docs/errors.md). Each derives
/// from trellis::error (trellis/base/error.hpp); `what()` names the chart, the state or the
/// transition and the reason.

#include <string_view>

#include "trellis/base/error.hpp"

namespace trellis {

/// A chart that cannot be built as declared: `ChartBuilder::build()` throws it with every
/// problem it found, one per line (an unknown target, an initial state that is not a
/// descendant, a history state outside a compound or parallel state, an unreachable state, a
/// parallel state with fewer than two regions, a duplicate id, a cycle of default entries).
/// Code "statechart.definition".
class chart_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A state id that the chart does not have, asked of a running chart (`in("nope")`,
/// `on_enter("nope", f)`) or found in a restored configuration. Code "statechart.unknown_state".
class unknown_state : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A macrostep that did not become stable within the chart's microstep budget (eventless
/// transitions or raised events that keep firing one another). The send that started it
/// throws this after committing the configuration reached so far; the internal queue is
/// dropped. Appendix D has no such bound: trellis's deviation, in docs/statecharts.md. Code
/// "statechart.livelock".
class chart_livelock : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

}  // namespace trellis
