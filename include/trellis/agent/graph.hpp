#pragma once
/// @file
/// `Graph<S>`: a durable agent graph over the typed state S (any type with nlohmann
/// to_json/from_json).
///
/// ```cpp
/// trellis::agent::Graph<Doc> g;
/// g.add<Draft>().add<Review>().add<Revise>().entry("draft").max_steps(50)
///  .retry({.attempts = 3, .initial_backoff = 100ms, .multiplier = 2, .max_backoff = 5s});
/// auto out = g.run("run-7", Doc{.request = "..."}, store);  // Succeeded | WaitingApproval | ...
/// out = g.resume("run-7", store, trellis::agent::Approve{.reviewer = "ana"});
/// ```
///
/// The run loop, one step at a time: check cancellation and the step bound, find the node,
/// pass the hooks, run the node on a copy of the state, pass the hooks again, then commit one
/// checkpoint {status, state, next node, step, attempt} atomically (a version-checked append in
/// the store), then log events. A crash loses at most the step in flight: resume continues at
/// the first uncommitted node. The run's status moves only through a StateMachine over
/// `lifecycle()`, so an impossible status is never committed.
///
/// Side effects go through `ctx.effect` (effect.hpp): each has its own started record and
/// receipt, committed around the call, and the step's checkpoint lists their keys. Replaying
/// the step after a crash returns the receipts instead of calling again. When a run fails, the
/// compensations of its succeeded effects run (after the Failed checkpoint is committed; a
/// crash among them leaves them to `resume`, which finishes them and returns the failure).
/// A fork is a new run: its effects get new keys and run again.
///
/// A run call holds the run's lease throughout and writes every checkpoint and effect record
/// with its token; when the store's leases expire, a heartbeat renews it every lease_ttl/3
/// (detail/lease_keeper.hpp). A lease lost meanwhile (another worker took the run) stops the
/// call with run_busy, the node seeing RunContext::stop_requested(), and nothing of the step
/// in flight is committed.
///
/// Approvals: a decision on a pause (resume.hpp) is committed as soon as it is given, with who
/// gave it, when, the comment or reason and the request it answers (Checkpoint::decision), in a
/// checkpoint of its own that leaves the pause, before the step it lets run; then a
/// `decision_recorded` event. A crash during that step does not ask again: resume() (with no
/// decision) reruns the step with the stored decision, which the node sees in
/// RunContext::resume() as it was given. A Reject (or a decision after the request expired) is
/// stored with the failure it causes.
///
/// Operators (operations.hpp, the `trellis` command) act on runs through the store, from any
/// process, without running a node: an Approve or Input recorded on a pause (request ids: the
/// pause's checkpoint seq, Outcome::request_id) leaves the run Queued with the decision, which
/// the next resume() applies as if it had been given to it (a Reject fails the run); a cancel
/// request is seen by the run call that advances the run between steps, when its step pauses,
/// and by its node through RunContext::stop_token() (polled every RunOptions::cancel_poll): the
/// step in flight commits (or, if the node throws after its stop token fired, is dropped), and
/// the run ends Cancelled; a run that ends (succeeds, fails) first answers the request. A run
/// cancelled while it waited for a decision waits again (under a new request id) when it is
/// resumed or forked, so its approval is never skipped. A run failed with
/// reconciliation_required keeps its compensations for an operator: a reconciliation reopens
/// it, and resume() continues it from the recorded receipt; resumed without one, it gives up
/// and runs its compensations.
///
/// Reasons a run fails are outcomes (Outcome::reason), not exceptions; misuse and
/// infrastructure failures are exceptions (errors.hpp): resuming a finished run (run_finished),
/// an unknown run id (unknown_run), a run stored by another graph (graph_mismatch), a lease
/// held by another worker (run_busy).
///
/// Declared edges: a node may declare where it can go, with `g.edges("review", {"revise",
/// trellis::agent::end_node})` or a Node::successors() override (node names, and end_node for
/// Halt). When both declare, the graph's declaration wins (it replaces the node's, so a graph
/// can narrow or widen a reused node). A step that leaves the declared set fails the run with
/// Reason::undeclared_edge, naming the node and the edge: a Goto to an undeclared node, a Halt
/// without end_node declared, an Interrupt whose `then` is not declared (an empty `then`, the
/// node itself, is always allowed); whatever the hooks made of the step counts. A Goto to a
/// node the graph does not have still fails with unknown_node. A declared successor that is not
/// a node (nor end_node), or a declaration of a node the graph does not have, is a graph_error
/// when a run starts or resumes. Nodes that declare nothing go anywhere, as before.
/// For drawings only (not enforced): `g.approval_gate("review")` (or Node::approval_gate())
/// marks a node that may pause for an approval, `g.effects("refund", {"refund"})` (or
/// Node::effect_names(); the graph's list replaces the node's) names the effects a node may
/// make. Declarations are not part of the fingerprint: adding them does not orphan stored runs.
/// `shape()` gives all of it (graph_shape.hpp); run() stores it (Store::put_graph) before the
/// run's first checkpoint; `to_mermaid()` and `to_dot()` draw it (diagram.hpp).
///
/// Subgraphs: a node runs another graph as a child run of its own (its id derived from the
/// run's, its own history and checkpoints) with `subgraph(ctx, child_graph, input)`, waits
/// with it durably and receives its final state; see subgraph.hpp.
///
/// One node on its own: `step(run, node, store, options)` runs one node of a stored run, dry
/// (nothing written, no effect called) or committed (a real step); see step.hpp.
///
/// The loop itself is compiled once for every state type (detail/run_loop.hpp,
/// src/agent/run_loop.cpp); Graph<S> keeps the typed parts (nodes, hooks, the state's JSON
/// conversions) and hands them to it. Its events (event_kind.hpp) go to the store's log and to
/// `events()`, a Boost.Signals2 bus that needs <trellis/signals2/event_bus.hpp> (the agent's
/// headers do not include Boost; <trellis/trellis.hpp> includes the adapter).
///
/// A state that JSON cannot carry back as it is (a NaN or infinite number, nesting deeper than
/// trellis::max_json_depth counted from the stored record's root: the state itself sits two
/// levels down) is refused by every store before anything is written, and run()/resume()
/// throw that trellis::unwritable_value, naming the member ("/state/scores/2"). The step is
/// not acknowledged and not failed: like a store failure, the run stays at its last
/// checkpoint, and a resume (with a node that produces a writable state) reruns the step. The
/// same holds for an interrupt's proposed input and a decision's Input. Lifecycle observers
/// (RunOptions::on_status, monitor) may already have seen the refused step's status change.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/detail/run_loop.hpp"
#include "trellis/agent/detail/step.hpp"
#include "trellis/agent/diagram.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/event_kind.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/hooks.hpp"
#include "trellis/agent/node.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/progress_printer.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/retry.hpp"
#include "trellis/agent/run_event.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/agent/step.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/persist/detail/json_convertible.hpp"

namespace trellis::agent {

class EventBus;  // <trellis/signals2/event_bus.hpp>
class Worker;    // worker.hpp

template <class S>
class Graph : private detail::StateInterface {
  static_assert(trellis::detail::json_convertible<S>,
                "trellis: agent::Graph<S> needs nlohmann::json conversions for S: define "
                "to_json(nlohmann::json&, const S&) and from_json(const nlohmann::json&, S&), or "
                "NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(S, ...)");

 public:
  using Migrate = detail::GraphSpec::Migrate;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Adds a node constructed from `args`; its name must be unique.
  template <class N, class... Args>
  Graph& add(Args&&... args) {
    static_assert(std::is_base_of_v<Node<S>, N>, "trellis: Graph<S>::add<N>() needs a Node<S>");
    return add(std::make_unique<N>(std::forward<Args>(args)...));
  }
  Graph& add(std::unique_ptr<Node<S>> node) {
    std::string name(node->name());
    spec_.add_node(name);  // numbered in order: nodes_[number]
    detail::GraphSpec::Declared own{node->successors(), node->approval_gate(), std::nullopt};
    if (std::vector<std::string> effects = node->effect_names(); !effects.empty())
      own.effects = std::move(effects);
    if (own.successors || own.approval || own.effects)
      spec_.by_node.insert_or_assign(std::move(name), std::move(own));
    nodes_.push_back(std::move(node));
    return *this;
  }
  /// Declares where node `node` may go (node names, and end_node for Halt); replaces what the
  /// node declares itself and an earlier call for it. Checked when a run starts (see above).
  Graph& edges(std::string node, std::vector<std::string> successors) {
    spec_.by_graph[std::move(node)].successors = std::move(successors);
    return *this;
  }
  /// The same, from a list that may hold end_node: `g.edges("review", {"revise", end_node})`.
  Graph& edges(std::string node, std::initializer_list<std::string_view> successors) {
    return edges(std::move(node), std::vector<std::string>(successors.begin(), successors.end()));
  }
  /// Marks node `node` as an approval gate (drawings).
  Graph& approval_gate(std::string node) {
    spec_.by_graph[std::move(node)].approval = true;
    return *this;
  }
  /// Names the effects node `node` may make (drawings); replaces the node's own list.
  Graph& effects(std::string node, std::vector<std::string> names) {
    spec_.by_graph[std::move(node)].effects = std::move(names);
    return *this;
  }
  Graph& entry(std::string name) {
    spec_.entry = std::move(name);
    return *this;
  }
  /// Steps a run may take in all (loops such as draft <-> review are bounded by it).
  Graph& max_steps(std::uint64_t n) {
    spec_.max_steps = n;
    return *this;
  }
  Graph& retry(RetryPolicy policy) {
    spec_.retry = policy;
    return *this;
  }
  /// The user's version of the graph: part of the fingerprint stored with every run.
  Graph& version(std::string v) {
    spec_.version = std::move(v);
    return *this;
  }
  /// Lets a run stored by an edited graph resume when the edit kept the graph's version and
  /// every node along the run's path (the nodes its checkpoints ran or wait at): the fingerprint
  /// check then accepts it, and the run's later checkpoints carry this graph's fingerprint. Off
  /// by default (any change of the node names refuses the run: graph_mismatch); graph files
  /// turn it on. A worker claims runs by fingerprint, so a run stored by the graph before the
  /// edit is advanced by resume(), not claimed by a worker holding only the edited graph.
  Graph& resume_across_edits(bool on = true) {
    spec_.resume_across_edits = on;
    return *this;
  }
  /// The state's schema version, and how to bring older stored states up to it.
  Graph& schema(int version, Migrate migrate = {}) {
    spec_.schema = version;
    spec_.migrate = std::move(migrate);
    return *this;
  }
  Graph& hook(std::shared_ptr<Hook<S>> h) {
    hooks_.push_back(std::move(h));
    return *this;
  }
  /// Declares the compensation of the effects named `effect_name` for every run of the graph.
  /// The overload of RunContext::effect that takes a compensation covers failures within the
  /// same run call; this one also covers a run that fails (or is resumed to finish its
  /// compensations) in a later process, after the effect's step was committed.
  Graph& compensation(std::string effect_name, CompensateFn compensate) {
    spec_.compensations.insert_or_assign(std::move(effect_name), std::move(compensate));
    return *this;
  }
  /// Adds the built-in ModeGate hook.
  Graph& mode_gate() { return hook(std::make_shared<ModeGate<S>>()); }

  std::uint64_t max_steps() const noexcept { return spec_.max_steps; }

  /// Identifies the graph a run was stored by: its user version and its node names.
  std::string fingerprint() const { return spec_.fingerprint(); }

  /// The nodes, entry, declared edges, approval gates and effects (graph_shape.hpp).
  GraphShape shape() const { return spec_.shape(); }
  /// A Mermaid flowchart of the graph, with `path` (run_path(store.history(run))) over it when
  /// given (diagram.hpp).
  std::string to_mermaid(const RunPath* path = nullptr) const {
    return agent::to_mermaid(shape(), path);
  }
  /// A Graphviz (DOT) drawing of the graph, with `path` over it when given (diagram.hpp).
  std::string to_dot(const RunPath* path = nullptr) const { return agent::to_dot(shape(), path); }

  /// The events of every run of this graph (also appended to the store's per-run log), on a
  /// Boost.Signals2 bus: needs <trellis/signals2/event_bus.hpp> (the bus is created by the
  /// first call; until then no observer-only event is built).
  template <class Bus = EventBus>
  Bus& events() {
    static_assert(
        requires { sizeof(Bus); },
        "trellis: Graph::events() is a Boost.Signals2 bus: #include "
        "<trellis/signals2/event_bus.hpp> (or <trellis/trellis.hpp>)");
    return spec_.events.template sink<Bus>();
  }

  /// Starts run `run_id` at the entry node and runs it until it ends or pauses.
  Outcome<S> run(const std::string& run_id, S initial, Store& store, RunOptions options = {}) {
    return typed(detail::start_run(spec_, *this, run_id, std::make_unique<Box>(std::move(initial)),
                                   store, std::move(options)));
  }

  /// Starts run `run_id` in the background: writes its first checkpoint (Queued at the entry
  /// node, with `options`' priority and start time) and returns at once; a Worker that has
  /// this graph runs it (worker.hpp). graph_error when the run exists.
  void enqueue(const std::string& run_id, S initial, Store& store, EnqueueOptions options = {}) {
    detail::enqueue_run(spec_, *this, run_id, std::make_unique<Box>(std::move(initial)), store,
                        options);
  }

  /// Continues run `run_id` from its newest checkpoint: after a crash, a cancellation or a
  /// pause (which needs `decision`: Approve, Reject or Input; it is committed before the step
  /// it lets run, and a resume after a crash during that step reuses it; a pause whose approval
  /// request expired fails with approval_expired, decision or not). A decision given to a run
  /// that is not paused is ignored. A run Waiting on a timer continues once the timer is due;
  /// before, the call returns it Waiting and writes nothing.
  Outcome<S> resume(const std::string& run_id, Store& store,
                    std::optional<Resume> decision = std::nullopt, RunOptions options = {}) {
    return typed(detail::resume_run(spec_, *this, run_id, store, decision ? &*decision : nullptr,
                                    std::move(options)));
  }

  /// Starts run `new_id` from checkpoint `seq` of run `from_id` (time travel): same state,
  /// next node and step count, its own history from there. Resume it to run it. A checkpoint
  /// of a failed or succeeded run can be forked too (it is a new run); one that waits for
  /// approval is forked waiting.
  void fork(const std::string& from_id, std::uint64_t seq, const std::string& new_id,
            Store& store) {
    detail::fork_run(spec_, from_id, seq, new_id, store);
  }

  /// Runs node `node` of run `run_id` once, from the run's position: dry (the default: nothing
  /// written, no effect called; receipts, stubs or effect_refused) or committed (a real step);
  /// see step.hpp.
  StepResult<S> step(const std::string& run_id, const std::string& node, Store& store,
                     StepOptions options = {}) {
    detail::StepRun r = detail::step_node(spec_, *this, run_id, node, store, options);
    return StepResult<S>{std::move(r.next),  std::move(unbox(*r.state)), std::move(r.effects),
                         r.committed,        std::move(r.checkpoint),    r.reason,
                         std::move(r.detail)};
  }

  /// The state stored in `cp` (migrated to the current schema).
  S decode_state(const Checkpoint& cp) const {
    return std::move(unbox(*detail::decode_state(spec_, *this, cp)));
  }

 private:
  struct Box final : detail::StateBox {
    explicit Box(S v) : value(std::move(v)) {}
    S value;
  };
  static S& unbox(detail::StateBox& b) { return static_cast<Box&>(b).value; }
  static const S& unbox(const detail::StateBox& b) { return static_cast<const Box&>(b).value; }

  Outcome<S> typed(detail::RunResult r) const {
    Outcome<S> out;
    out.status = r.status;
    out.reason = r.reason;
    out.detail = std::move(r.detail);
    out.steps = r.steps;
    out.state = std::move(unbox(*r.state));
    out.interrupt = std::move(r.interrupt);
    out.request_id = std::move(r.request_id);
    out.wake_at = std::move(r.wake_at);
    return out;
  }

  // detail::StateInterface: the only code of the loop that knows S. (A state without JSON
  // conversions stops at the static_assert above, not in here.)
  std::unique_ptr<detail::StateBox> copy_state(const detail::StateBox& state) const override {
    return std::make_unique<Box>(unbox(state));
  }
  nlohmann::json state_to_json(const detail::StateBox& state) const override {
    if constexpr (trellis::detail::json_convertible<S>) return nlohmann::json(unbox(state));
    return {};
  }
  std::unique_ptr<detail::StateBox> state_from_json(const nlohmann::json& j) const override {
    if constexpr (trellis::detail::json_convertible<S>)
      return std::make_unique<Box>(j.template get<S>());
    return {};
  }
  PermissionMode required_mode(std::size_t node) const override {
    return nodes_[node]->required_mode();
  }
  detail::HookVerdict pass_before(const NodeInfo& node, detail::StateBox& state,
                                  const RunContext& ctx) override {
    S& s = unbox(state);
    for (const auto& hook : hooks_) {
      BeforeDecision<S> d = hook->before(node, s, ctx);
      if (auto* modify = std::get_if<Modify<S>>(&d))
        s = std::move(modify->state);
      else if (auto* deny = std::get_if<Deny>(&d))
        return std::move(*deny);
      else if (auto* replace = std::get_if<Replace>(&d))
        return std::move(*replace);
    }
    return Proceed{};
  }
  NextStep run_node(std::size_t node, detail::StateBox& state, RunContext& ctx) override {
    return nodes_[node]->run(unbox(state), ctx);
  }
  NextStep pass_after(const NodeInfo& node, const detail::StateBox& state, NextStep next,
                      const RunContext& ctx) override {
    for (const auto& hook : hooks_) next = hook->after(node, unbox(state), std::move(next), ctx);
    return next;
  }

  friend class Worker;  // runs claimed runs through spec_ and the StateInterface

  detail::GraphSpec spec_;
  std::vector<std::unique_ptr<Node<S>>> nodes_;  ///< by number (GraphSpec::nodes)
  std::vector<std::shared_ptr<Hook<S>>> hooks_;
};

}  // namespace trellis::agent
