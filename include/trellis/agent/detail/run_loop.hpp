#pragma once
/// @file
/// Internal: the agent run loop, compiled once (src/agent/run_loop.cpp) for every state type.
///
/// `Graph<S>` (graph.hpp) is a typed builder and facade: it keeps its nodes and hooks, and
/// hands the loop a StateInterface, the only place that knows S (copy a state, convert it to
/// and from JSON, run a node on it, pass it to the hooks). Everything else (leases, the
/// lifecycle machine, checkpoints, retries, decisions, effects, compensations, events) lives
/// here and in the .cpp, once.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/detail/event_hub.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/hooks.hpp"
#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/retry.hpp"
#include "trellis/agent/run_context.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent::detail {

/// A value of the run's state type (Graph<S>'s box around an S), opaque to the loop.
class StateBox {
 public:
  virtual ~StateBox() = default;
};

/// What the hooks' before() decided, a Modify already applied to the state.
using HookVerdict = std::variant<Proceed, Deny, Replace>;

/// The loop's only view of the state type and of the typed nodes and hooks (Graph<S>
/// implements it). Nodes are numbered in the order they were added (GraphSpec::nodes).
class StateInterface {
 public:
  virtual std::unique_ptr<StateBox> copy_state(const StateBox& state) const = 0;
  virtual nlohmann::json state_to_json(const StateBox& state) const = 0;
  /// Throws nlohmann::json::exception for JSON that is not a state.
  virtual std::unique_ptr<StateBox> state_from_json(const nlohmann::json& j) const = 0;
  virtual PermissionMode required_mode(std::size_t node) const = 0;
  /// Passes `state` to every hook's before(), in order, until one does not Proceed.
  virtual HookVerdict pass_before(const NodeInfo& node, StateBox& state, const RunContext& ctx) = 0;
  virtual NextStep run_node(std::size_t node, StateBox& state, RunContext& ctx) = 0;
  /// Passes `next` through every hook's after(), in order.
  virtual NextStep pass_after(const NodeInfo& node, const StateBox& state, NextStep next,
                              const RunContext& ctx) = 0;

 protected:
  ~StateInterface() = default;
};

/// Everything about a graph that does not depend on S.
struct GraphSpec {
  using Migrate = std::function<nlohmann::json(nlohmann::json state, int from_version)>;

  std::map<std::string, std::size_t, std::less<>> nodes;  ///< name -> number (sorted: stable)
  std::string entry;
  std::uint64_t max_steps = 1000;
  RetryPolicy retry;
  std::string version = "1";
  bool resume_across_edits = false;  ///< Graph::resume_across_edits
  int schema = 1;
  Migrate migrate;
  std::map<std::string, CompensateFn, std::less<>> compensations;
  EventHub events;

  /// What is declared about a node for checks and drawings (graph.hpp, "Declared edges").
  struct Declared {
    std::optional<std::vector<std::string>> successors;  ///< nullopt: undeclared (anywhere)
    bool approval = false;
    std::optional<std::vector<std::string>> effects;  ///< nullopt: not declared here
  };
  /// By node name: what the nodes declared of themselves (Node::successors, approval_gate,
  /// effect_names; read when added), and what the graph declared of them (Graph::edges,
  /// approval_gate, effects), which wins.
  std::map<std::string, Declared, std::less<>> by_node;
  std::map<std::string, Declared, std::less<>> by_graph;

  /// Registers a node's name and returns its number; graph_error for an empty or taken name.
  std::size_t add_node(std::string name);
  /// The graph's identity stored with every run: its user version and its node names.
  std::string fingerprint() const;

  /// The successors declared for `node` (the graph's declaration, else the node's own);
  /// nullptr when undeclared.
  const std::vector<std::string>* successors(std::string_view node) const;
  /// graph_error when a declaration names a node the graph does not have (a successor that is
  /// neither a node nor end_node, or Graph::edges/approval_gate/effects of an unknown node).
  void check_declarations() const;
  /// The detail of the undeclared_edge failure when `next`, from `node`, leaves the node's
  /// declared set (a Goto outside it, a Halt without end_node in it, an Interrupt whose
  /// non-empty `then` is outside it); nullopt when it is allowed or nothing is declared.
  std::optional<std::string> undeclared_edge(std::string_view node, const NextStep& next) const;
  /// What can be known of the graph without running it (graph_shape.hpp).
  GraphShape shape() const;
};

/// How a run call ended: Outcome<S> without S.
struct RunResult {
  RunStatus status = RunStatus::Queued;
  Reason reason = Reason::none;
  std::string detail;
  std::uint64_t steps = 0;
  std::unique_ptr<StateBox> state;  ///< the last committed state (never null)
  std::optional<Interrupt> interrupt;
  std::string request_id;  ///< while WaitingApproval
  std::string wake_at;     ///< while Waiting
};

/// Graph::run: creates run `run_id` at the entry node and runs it until it ends or pauses.
RunResult start_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                    std::unique_ptr<StateBox> initial, Store& store, RunOptions options);
/// Graph::resume; `decision`: nullptr when none was given.
RunResult resume_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                     Store& store, const Resume* decision, RunOptions options);
/// Graph::enqueue: writes run `run_id`'s first checkpoint (Queued) and returns.
void enqueue_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                 std::unique_ptr<StateBox> initial, Store& store, const EnqueueOptions& options);
/// Worker: advances run `claim.newest.run_id`, whose lease `claim` holds (Store::claim), as
/// resume_run does without a decision (a pause is advanced only when its approval expired: it
/// fails). The lease is released when the call returns.
RunResult advance_claimed(const GraphSpec& spec, StateInterface& typed, Claim claim, Store& store,
                          RunOptions options);
/// Graph::fork.
void fork_run(const GraphSpec& spec, const std::string& from_id, std::uint64_t seq,
              const std::string& new_id, Store& store);
/// Creates run `new_id` from `cp` (a checkpoint of another run) and returns its first
/// checkpoint: a running or cancelled checkpoint forks Queued, a finished one as a fresh start
/// at its next node or `entry`, a pause forks waiting. The first checkpoint records `origin`
/// (its run_id, seq and at set here from `cp` and `clock`), and the `forked` event is logged.
/// graph_error when `new_id` exists.
Checkpoint fork_checkpoint(Store& store, Checkpoint cp, std::string_view new_id,
                           std::string_view entry, Clock& clock, ForkOrigin origin = {});
/// The `forked` event of a fork whose first checkpoint is `first`.
RunEventRecord forked_event(const Checkpoint& first);
/// When a Sleep committed now by `clock` wakes: its `until`, else now + its duration (UTC text).
std::string wake_time(const Sleep& sleep, const Clock& clock);
/// Graph::decode_state: the state stored in `cp`, migrated to the spec's schema.
std::unique_ptr<StateBox> decode_state(const GraphSpec& spec, const StateInterface& typed,
                                       const Checkpoint& cp);

/// Why `next`, returned by node `node`, cannot end a run (a Halt with a reason other than none
/// or completed_with_errors), or nullopt. The run then fails with Reason::node_error.
std::optional<std::string> misused_halt(std::string_view node, const NextStep& next);

/// The checkpoint that commits a step's result after `cp` (seq, created_at and effects are
/// the commit's): `next` (Goto: Running at its node; Halt: Succeeded; Interrupt:
/// WaitingApproval, at `then` or again at `node`; Sleep: Waiting, at `then` or again at
/// `node`, its wake_at left to the caller: wake_time), one more step, no failed attempt, `state`,
/// and the decision used up. `effect_step`: the step the attempt's effects were keyed by (an
/// Interrupt, and a Sleep with `replay`, keep it, so the rerun of `node` replays them).
Checkpoint next_checkpoint(const Checkpoint& cp, const NextStep& next, std::string_view node,
                           std::uint64_t effect_step, nlohmann::json state);

}  // namespace trellis::agent::detail
