// GraphRunner's defaults for what runners written before workers existed do not offer
// (graph_runner.hpp).

#include "trellis/cli/graph_runner.hpp"

#include "trellis/agent/errors.hpp"

namespace trellis::agent::cli {

void GraphRunner::enqueue(const std::string& run_id, const nlohmann::json*, Store&,
                          const EnqueueOptions&) {
  throw graph_error("trellis: this program's graph runner cannot enqueue run '" + run_id +
                    "' (GraphRunner::enqueue is not implemented)");
}

void GraphRunner::add_to(Worker&) {
  throw graph_error(
      "trellis: this program's graph runner cannot run in a worker (GraphRunner::add_to is not "
      "implemented)");
}

}  // namespace trellis::agent::cli
