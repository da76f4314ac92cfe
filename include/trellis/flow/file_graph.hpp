#pragma once
/// @file
/// `FileGraph`: a graph file (graph_file.hpp) run on the durable engine: an agent::Graph over
/// FlowState, whose nodes are the file's nodes. Everything the engine gives a C++ graph applies:
/// checkpoints after every step, resume after a crash, approvals, cancellation, Workers
/// (`worker.add(fg.graph())`), the `trellis` command's run commands.
///
/// ```cpp
/// auto actions = trellis::flow::ActionRegistry::with_builtins();
/// auto fg = trellis::flow::FileGraph::load("triage.yaml", actions, {.work_root = "work"});
/// trellis::agent::FileStore store{"runs"};
/// auto out = fg.run("t-1", {{"ticket", "disk full"}}, store);  // inputs checked, defaults
/// ```
///
/// A step of each node kind:
/// - action: render `params`, check the capability (capability_denied), call the action as an
///   effect (its name, the rendered params as arguments, its policy), then apply `assign` to a
///   candidate state (each value read against the state before the assign, with `result`),
///   then choose the edge (the first branch whose `when` holds on the candidate); the candidate
///   becomes the state only when all of it succeeded;
/// - gate: assign and route; approval: pause (agent::Interrupt with the rendered request and
///   its expiry), then on Approve or Input assign (with `decision`) and route; a Reject fails
///   the run (approval_rejected); return: render `output` into FlowState::output and end;
/// - foreach: one call of its action per element of `over`, each an effect of its own
///   (agent::RunContext::effects, fanout.hpp: keyed by the item's index), up to the node's (or
///   the graph's) max_concurrency at a time, each recorded as soon as it finishes, so after a
///   crash only the items without a receipt run again; the results, in input order (null for a
///   failed item), are `result` (a list) for the node's assign and edges. Every item's params
///   are rendered and its capability checked before any item runs: one that cannot be is the
///   node's failure. Failure policy: max_failures / max_failure_ratio (graph_file.hpp); the
///   failures it tolerates are recorded in FlowState::errors (the run ends
///   completed_with_errors); an item's transient error retries the node while the retry policy
///   has tries left (the finished items replay);
/// - subgraph: render `inputs`, check them against the child file's declarations (as
///   initial() does), then run the child file as a child run (agent/subgraph.hpp: its id
///   "<run>.<node>.<step>", its own history and checkpoints, on the same store): its `return`
///   output is `result` for the node's assign and edges; while it waits (an approval, a
///   timer) the parent waits with it (its approval surfaces on the parent; a decision on the
///   parent is forwarded to it); a failed child is the node's failure (subgraph_failed,
///   routed by `on_error`). The child file is loaded relative to this one when the FileGraph
///   is built; its actions run under its own `permissions` and those of every graph that runs
///   it (a call one of them does not grant: capability_denied, in the child).
///
/// A node's failure (an action's exception, a capability denied, an expression or template
/// error, an assign or edge failure) with the candidate discarded: with the node's `on_error`,
/// the run goes there with `state._last_error` = {node, error, code}; else with the graph's
/// `on_error: continue`, the error is recorded (FlowState::errors and `state._last_error`) and
/// the run goes along the node's default edge (the branch without `when`), and the run ends
/// Succeeded with Reason::completed_with_errors (a node without a default edge, such as a
/// `return`, has nowhere to go on: the run fails); else the run fails (node_error). A
/// transient error is retried by the retry policy first (agent::transient_error; the policy is
/// FileGraphOptions::retry). Never routed: the engine's own failures (a store or I/O error, a
/// cancellation, a lost lease, an effect to reconcile), which stop the step as in any graph.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/graph.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/retry.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/flow/action.hpp"
#include "trellis/flow/graph_file.hpp"

namespace trellis::flow {

/// The state of a run of a file graph, as stored.
struct FlowState {
  nlohmann::json inputs = nlohmann::json::object();  ///< the run's inputs (defaults filled)
  nlohmann::json state = nlohmann::json::object();   ///< the graph's state
  nlohmann::json output = nullptr;                   ///< set by the `return` node
  /// Errors suppressed by `on_error: continue`: {node, error, code, step}, in order.
  std::vector<nlohmann::json> errors;

  friend bool operator==(const FlowState&, const FlowState&) = default;
};
void to_json(nlohmann::json& j, const FlowState& s);
void from_json(const nlohmann::json& j, FlowState& s);

struct FileGraphOptions {
  /// Runs' work directories are work_root / run id (created when a node needs it). Empty:
  /// "trellis-work" in the current directory.
  std::filesystem::path work_root = {};
  /// The graph's retry policy for transient errors (agent::Graph::retry).
  std::optional<agent::RetryPolicy> retry = std::nullopt;
};

class FileGraph {
 public:
  /// Validates `file` against `actions` (validate.hpp: graph_file_error with every error) and
  /// builds the graph. `actions` must outlive the FileGraph.
  FileGraph(GraphFile file, const ActionRegistry& actions, FileGraphOptions options = {});
  /// load_graph_file(path), then the above.
  static FileGraph load(const std::filesystem::path& path, const ActionRegistry& actions,
                        FileGraphOptions options = {});

  FileGraph(FileGraph&&) noexcept;
  FileGraph& operator=(FileGraph&&) noexcept;
  ~FileGraph();

  const GraphFile& file() const noexcept;
  /// The engine's graph (version = the file's `version`, entry = `start`, max_steps, declared
  /// edges from the file): run, resume, step, fork, Worker::add, cli::main.
  agent::Graph<FlowState>& graph() noexcept;

  /// The initial state of a run with `inputs` (an object): the inputs checked against the
  /// file's `inputs` declarations (a required one missing, an undeclared one, one of the wrong
  /// type: graph_file_error naming the input, positioned at its declaration), defaults filled;
  /// the file's initial state.
  FlowState initial(const nlohmann::json& inputs) const;

  /// graph().run(run_id, initial(inputs), store, options).
  agent::Outcome<FlowState> run(const std::string& run_id, const nlohmann::json& inputs,
                                agent::Store& store, agent::RunOptions options = {});

  struct Impl;  ///< src/flow/file_graph.cpp

 private:
  /// A subgraph's graph: its calls granted by `ceilings` (the runners' permissions) too.
  FileGraph(GraphFile file, const ActionRegistry& actions, FileGraphOptions options,
            std::vector<std::vector<std::string>> ceilings);

  std::unique_ptr<Impl> impl_;
};

}  // namespace trellis::flow
