#pragma once
/// @file
/// `trellis::agent::cli::main`: the `trellis` command's operator commands (docs/cli.md) inside
/// a program that links its graph, plus the ones that need the graph: `run RUN [--state JSON]`,
/// `resume RUN`, `step RUN --node N [--state JSON] [--commit] [--effect NAME=JSON]...` (one
/// node on its own: step.hpp), `enqueue RUN [--state JSON] [--priority N] [--at T]` (started
/// in the background) and `worker [--threads N] [--poll MS] [--drain | --for SECONDS]` (a
/// Worker over the graph: worker.hpp). An application gets the whole operator command line in one
/// line:
///
/// ```cpp
/// int main(int argc, char** argv) {
///   trellis::agent::Graph<Doc> g;  // ... nodes, entry
///   trellis::agent::FileStore store{"runs"};
///   return trellis::agent::cli::main(argc, argv, g, store);  // `prog runs ls`, `prog resume r-7`
/// }
/// ```
///
/// `--store` is optional here: without it the commands use `store`. The graph is adapted into
/// a GraphRunner (graph_runner.hpp), so the command line itself is compiled once.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "trellis/agent/graph.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/agent/worker.hpp"
#include "trellis/cli/graph_runner.hpp"

namespace trellis::agent::cli {

namespace detail {

template <class S>
class GraphAdapter final : public GraphRunner {
 public:
  explicit GraphAdapter(Graph<S>& graph) : graph_(graph) {}

  std::string fingerprint() const override { return graph_.fingerprint(); }

  std::optional<GraphShape> shape() const override { return graph_.shape(); }

  std::string check_state(const nlohmann::json& state) const override {
    try {
      (void)state.get<S>();
      return {};
    } catch (const nlohmann::json::exception& e) {
      return e.what();
    }
  }

  RunReport run(const std::string& run_id, const nlohmann::json* state, Store& store) override {
    if (state) return report(run_id, graph_.run(run_id, state->get<S>(), store));
    if constexpr (std::is_default_constructible_v<S>)
      return report(run_id, graph_.run(run_id, S{}, store));
    else
      throw graph_error("trellis: this graph's state has no default: give --state JSON");
  }

  void enqueue(const std::string& run_id, const nlohmann::json* state, Store& store,
               const EnqueueOptions& options) override {
    if (state) return graph_.enqueue(run_id, state->get<S>(), store, options);
    if constexpr (std::is_default_constructible_v<S>)
      graph_.enqueue(run_id, S{}, store, options);
    else
      throw graph_error("trellis: this graph's state has no default: give --state JSON");
  }

  void add_to(Worker& worker) override { worker.add(graph_); }

  RunReport resume(const std::string& run_id, Store& store) override {
    return report(run_id, graph_.resume(run_id, store));
  }

  StepReport step(const std::string& run_id, const std::string& node, Store& store,
                  StepOptions options) override {
    StepResult<S> r = graph_.step(run_id, node, store, std::move(options));
    return StepReport{std::move(r.next),  nlohmann::json(r.state), std::move(r.effects),
                      r.committed,        std::move(r.checkpoint), r.reason,
                      std::move(r.detail)};
  }

 private:
  static RunReport report(const std::string& run_id, Outcome<S> out) {
    RunReport r;
    r.run_id = run_id;
    r.status = out.status;
    r.reason = out.reason;
    r.detail = std::move(out.detail);
    r.steps = out.steps;
    if (out.state) r.state = nlohmann::json(*out.state);
    r.interrupt = std::move(out.interrupt);
    r.request_id = std::move(out.request_id);
    return r;
  }

  Graph<S>& graph_;
};

}  // namespace detail

/// Runs one operator command (argv as main received it) on `store`, or on the store `--store`
/// names, with `graph` for `run`, `resume`, `step`, `enqueue` and `worker`. Returns the exit
/// code (docs/cli.md).
template <class S>
int main(int argc, char** argv, Graph<S>& graph, Store& store) {
  detail::GraphAdapter<S> adapter(graph);
  return run_commands(argc, argv, &store, &adapter);
}

}  // namespace trellis::agent::cli
