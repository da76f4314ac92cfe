#pragma once
/// @file
/// `GraphRunner`: what the commands need of a program's graph (run, resume, step, enqueue, and
/// a Worker for `worker`), without its state type, so the command line is compiled once for
/// every graph. `cli::main` (main.hpp) adapts a `Graph<S>` into one; the `trellis` command has
/// none of its own (it links no C++ graph): it adapts a graph file's (`--graph FILE`).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/agent/step.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {
class Worker;  // worker.hpp
}  // namespace trellis::agent

namespace trellis::agent::cli {

/// What one node on its own did (StepResult<S> with the state as JSON).
struct StepReport {
  NextStep next;
  nlohmann::json state;
  std::vector<StepEffect> effects;
  bool committed = false;
  std::optional<Checkpoint> checkpoint;
  Reason reason = Reason::none;
  std::string detail;
};

/// How a run call ended (Outcome<S> with the state as JSON).
struct RunReport {
  std::string run_id;
  RunStatus status = RunStatus::Queued;
  Reason reason = Reason::none;
  std::string detail;
  std::uint64_t steps = 0;
  nlohmann::json state;  ///< the last committed state, as the graph's to_json wrote it
  std::optional<Interrupt> interrupt;  ///< while WaitingApproval
  std::string request_id;              ///< while WaitingApproval: what a decision names
};

class GraphRunner {
 public:
  virtual ~GraphRunner() = default;
  /// The graph's fingerprint (Graph::fingerprint).
  virtual std::string fingerprint() const = 0;
  /// The graph's shape when the graph can give it (for `runs draw`).
  virtual std::optional<GraphShape> shape() const { return std::nullopt; }
  /// Why `state` is not a state of the graph (it does not convert), or empty when it is.
  virtual std::string check_state(const nlohmann::json& state) const = 0;
  /// Starts run `run_id` with `state` (checked by check_state), or with a default-constructed
  /// state when `state` is null.
  virtual RunReport run(const std::string& run_id, const nlohmann::json* state, Store& store) = 0;
  /// Continues run `run_id` (after a crash, a cancellation, a decision recorded by an operator).
  virtual RunReport resume(const std::string& run_id, Store& store) = 0;
  /// Runs node `node` of run `run_id` once (Graph::step): dry, or committed with
  /// `options.commit`.
  virtual StepReport step(const std::string& run_id, const std::string& node, Store& store,
                          StepOptions options) = 0;
  /// Starts run `run_id` in the background (Graph::enqueue): committed Queued, for a Worker
  /// to advance; `state` as for run(). The default refuses (graph_error): a runner written
  /// before workers existed offers no `enqueue`.
  virtual void enqueue(const std::string& run_id, const nlohmann::json* state, Store& store,
                       const EnqueueOptions& options);
  /// Adds the graph to `worker` (Worker::add), for the `worker` command. The default refuses
  /// (graph_error), as for enqueue().
  virtual void add_to(Worker& worker);
};

/// The command line: parses argv and runs one command on `store` (the program's own store,
/// used when no `--store` is given; nullptr: `--store` is required, except with a graph file)
/// with `graph` (nullptr, the `trellis` command: the commands that need a graph, `run`,
/// `resume`, `step`, `enqueue` and `worker`, need a graph file, `run FILE`, `step FILE` or
/// `--graph FILE`, and say so without one). The graph-file commands (`validate`, `run FILE`,
/// `step FILE`, `draw FILE`) are offered either way. Returns the exit code (docs/cli.md): 0 ok,
/// 2 usage, 3 not found, 4 conflict or stale request, 5 expired, 1 any other error.
int run_commands(int argc, char** argv, Store* store, GraphRunner* graph);

/// A command that a layer above cli adds to the command line (the web layer's `serve`).
struct ExtraCommand {
  std::string name;         ///< its word on the command line
  std::string description;  ///< its line in --help
  /// Runs it with the arguments that follow its name (its own options, --help included) and
  /// the store the command line names (`--store` before the command name; opened on the first
  /// call, to write: it must exist). Returns the exit code.
  std::function<int(const std::vector<std::string>& args, const std::function<Store&()>& store)>
      run;
};

/// run_commands with `extra` commands too.
int run_commands(int argc, char** argv, Store* store, GraphRunner* graph,
                 const std::vector<ExtraCommand>& extra);

}  // namespace trellis::agent::cli
