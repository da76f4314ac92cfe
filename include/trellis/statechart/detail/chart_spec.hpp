#pragma once
/// @file
/// The description a chart is compiled from: a tree of state specs, as the builder and the
/// SCXML loader write it, turned into a ChartDefinition by `compile_chart`, which checks it and
/// reports every problem at once. Internal: users go through ChartBuilder or scxml::load.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trellis/statechart/definition.hpp"

namespace trellis {

/// What `ChartBuilder::build()` (and the SCXML loader) accept beyond the strict default.
struct ChartBuildOptions {
  /// Accept states that no transition or default entry can reach (SCXML documents may have
  /// them; the SCXML loader sets this).
  bool allow_unreachable = false;
  /// Accept a `<parallel>` with a single region (SCXML allows it; the loader sets this).
  bool allow_single_region = false;
  /// Refuse charts nested deeper than this (the interpreter's recursion follows the depth).
  int max_depth = 256;
};

namespace detail {

struct TransitionSpec {
  std::string event;                 ///< descriptors, space-separated; "" = eventless
  std::vector<std::string> targets;  ///< ids
  bool internal = false;
  int guard = -1;  ///< index into the registry's guards
  ChartBlock content;
  std::string where;  ///< for messages: "transition 2 of state 'x'" (filled when empty)
};

struct StateSpec {
  enum class Kind { state, parallel, final_state, shallow_history, deep_history };
  std::string id;  ///< "" gets a generated id
  Kind kind = Kind::state;
  std::vector<std::unique_ptr<StateSpec>> children;  ///< states and histories, document order
  std::vector<TransitionSpec> transitions;
  /// A compound state's `initial` (targets and content), or a history's default transition.
  std::optional<TransitionSpec> initial;
  std::vector<ChartBlock> on_entry;
  std::vector<ChartBlock> on_exit;
  std::string where;  ///< for messages, e.g. "line 12, column 4" (optional)
};

struct ChartRegistry {
  std::vector<ChartGuard> guards;
  std::vector<ChartAction> actions;
  const std::type_info* data_type = nullptr;
};

/// Checks `root` (the chart's root: kind state, id = the chart's name) and compiles it;
/// chart_error listing every problem when it cannot.
std::shared_ptr<const ChartDefinition> compile_chart(const StateSpec& root, ChartRegistry registry,
                                                     const ChartBuildOptions& options);

/// The problems `compile_chart` would report (empty: it compiles).
std::vector<std::string> chart_problems(const StateSpec& root, const ChartRegistry& registry,
                                        const ChartBuildOptions& options);

}  // namespace detail
}  // namespace trellis
