#pragma once
/// @file
/// Internal: Graph<S>::step (step.hpp) without S, compiled once (src/agent/step.cpp).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/detail/run_loop.hpp"
#include "trellis/agent/step.hpp"

namespace trellis::agent {
class Store;
}  // namespace trellis::agent

namespace trellis::agent::detail {

/// StepResult<S> without S.
struct StepRun {
  NextStep next;
  std::unique_ptr<StateBox> state;  ///< never null
  std::vector<StepEffect> effects;
  bool committed = false;
  std::optional<Checkpoint> checkpoint;
  Reason reason = Reason::none;
  std::string detail;
};

/// Graph::step: runs node `node` of run `run_id` once, dry or committed (step.hpp).
StepRun step_node(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                  const std::string& node, Store& store, const StepOptions& options);

}  // namespace trellis::agent::detail
