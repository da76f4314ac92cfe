#pragma once
/// @file
/// Subgraphs: a node runs another graph as a child run, with its own id, history and
/// checkpoints, on the parent's store.
///
/// ```cpp
/// ag::NextStep run(Release& s, ag::RunContext& ctx) override {
///   auto child = ag::subgraph(ctx, checklist_graph, Checklist{.version = s.version});
///   if (!child.done()) return *child.wait;  // the parent waits with the child (durably)
///   s.checked = child.output->items;        // the child's final state
///   return ag::Goto{"ship"};
/// }
/// ```
///
/// The child's id is derived from the parent's: "<parent>.<node>.<step>" (".<n>" added for
/// the n-th effect of the step when the node makes others before it; a long or unusual id
/// becomes the parent's first 95 characters, a dot and 32 hex digits of a SHA-256). The step is
/// the one the parent's effects are keyed by, and the id is recorded as an effect of the
/// parent's step (named "trellis.subgraph", its arguments {graph: the child's fingerprint},
/// its receipt {child: id}): a rerun of the node (after a crash, a pause, or a wait for the
/// child) finds the same child and continues it; it never starts another.
///
/// Each call advances the child as far as it goes in the parent's step, with the parent's
/// store, clock, permission mode, worker name, cancel poll, durable waits and yield token;
/// the child's stop token is the parent node's. Then, by the child's status:
/// - Succeeded: `output` is the child's final state; the node goes on.
/// - Failed: throws subgraph_failed (the child's reason and detail in its message): the
///   node's own error handling, else the parent fails (node_error).
/// - WaitingApproval: `wait` is an Interrupt that surfaces the child's request (its approval:
///   action, proposed input, risk reason, expiry), its reason "subgraph CHILD request N:
///   <the child's reason>". A decision given on the parent (Graph::resume, record_decision,
///   `trellis approve PARENT`) reaches the node's rerun, and subgraph() forwards it to the
///   child when the parent's pause stands for the child's current request (a decision on a
///   request the child has left is not forwarded: the child's newer pause surfaces instead).
///   A Reject given on the parent fails the parent at once (as any Reject) and the child
///   stays paused: reject or cancel it on its own. A decision given on the child directly
///   (record_decision on the child, `trellis approve CHILD`) makes the parent Queued too,
///   without a decision: resumed (or claimed by a worker), its node continues the child.
/// - Waiting (a Sleep, a durable retry backoff): `wait` is a Sleep until the child's wake
///   time with `replay`, so the parent is Waiting on a durable timer too and its rerun
///   continues the same child.
/// - Queued or Running (the child gave its run back: a worker stopping, `yield`): `wait` is a
///   Sleep due at once with `replay`.
/// - Cancelled: when the parent is being stopped (its node's stop token: a cancel request on
///   the parent, the caller's stop, a lost lease), subgraph() throws and the parent's run
///   ends Cancelled (or run_busy) as for any node; otherwise (the child alone was cancelled
///   while the parent ran it) a cancel request is recorded on the parent, which then ends
///   Cancelled too. A child found Cancelled when the node starts is resumed: resuming a
///   cancelled parent resumes its child.
/// cancel_run on the parent (operations.hpp, `trellis cancel PARENT`) also cancels its
/// unfinished children, each with a request of its own.
///
/// A child run is an ordinary run of the child graph: a Worker that has the child graph may
/// claim it when it is due (leases keep it to one process at a time; the parent then finds it
/// ahead). While another process holds the child's lease, `wait` is a Sleep of one second with
/// `replay`: the parent waits, durably, and looks again. The parent needs no such worker: it
/// advances the child itself whenever its node runs. In Graph::step (step.hpp) subgraph() throws
/// graph_error: a step outside a run call has no store to advance a child on.

#include <optional>
#include <string>
#include <utility>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/graph.hpp"
#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/run_context.hpp"
#include "trellis/agent/run_options.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

/// What subgraph() found: the child's final state once it succeeded, else the step the
/// parent's node returns to wait for it.
template <class C>
struct SubgraphResult {
  std::string run_id;                           ///< the child run's id
  RunStatus status = RunStatus::Queued;         ///< the child's status when subgraph() returned
  std::optional<C> output = std::nullopt;       ///< set when the child succeeded: its final state
  std::optional<NextStep> wait = std::nullopt;  ///< set otherwise: return it from the node

  bool done() const noexcept { return output.has_value(); }
};

/// The id subgraph() gives the child of run `parent` started by node `node` at effect step
/// `step` with effect ordinal `ordinal` (see above).
std::string child_run_id(std::string_view parent, std::string_view node, std::uint64_t step,
                         std::uint32_t ordinal = 0);

/// The unfinished child runs of run `parent` (the receipts of its "trellis.subgraph" effects
/// whose child has not succeeded or failed), in the order they were started.
std::vector<std::string> child_runs(Store& store, std::string_view parent);

/// The runs paused on request `request` of run `child` because they surface it: its parent,
/// then the parent's parent when it surfaces the parent's pause, and so on (empty: none).
/// record_decision on the child makes each of them Queued (see above).
std::vector<std::string> surfacing_runs(Store& store, const std::string& child,
                                        const std::string& request);

namespace detail {

/// How a child run call ended, without its state.
struct ChildStatus {
  RunStatus status = RunStatus::Queued;
  Reason reason = Reason::none;
  std::string detail;
  std::optional<Interrupt> interrupt;
  std::string request_id;
  std::string wake_at;
};

/// The typed child graph as advance_child drives it (subgraph() implements it over Graph<C>).
class ChildGraph {
 public:
  virtual std::string fingerprint() const = 0;
  /// Graph::run of run `id` with the input.
  virtual ChildStatus start(const std::string& id, Store& store, RunOptions options) = 0;
  /// Graph::resume of run `id`; `decision`: nullptr when none.
  virtual ChildStatus resume(const std::string& id, Store& store, const Resume* decision,
                             RunOptions options) = 0;
  /// Keeps the state of `cp`, the newest checkpoint of the child, which succeeded.
  virtual void succeeded(const Checkpoint& cp) = 0;

 protected:
  ~ChildGraph() = default;
};

template <class S>
ChildStatus child_status(Outcome<S>& out) {
  return ChildStatus{out.status,    out.reason,     std::move(out.detail),
                     out.interrupt, out.request_id, out.wake_at};
}

/// The child's id, its status, and the parent's wait (see above); throws subgraph_failed.
struct ChildStep {
  std::string run_id;
  RunStatus status = RunStatus::Queued;
  std::optional<NextStep> wait;
};
ChildStep advance_child(RunContext& ctx, ChildGraph& child);

/// After a decision was recorded on request `request` of run `child`: the run whose pause
/// surfaces that request (its parent: a prefix of the child's id, paused on it) is made Queued
/// without a decision, so a resume or a worker runs its node again, which continues the child;
/// and so on up (a grandparent surfacing the parent's pause). A parent not paused on it is left
/// as it is; one a process holds is asked for again every 100 ms for up to 5 s (its node may be
/// committing the pause it read before the decision), then left to that process.
void wake_parents(Store& store, const std::string& child, const std::string& request, Clock& clock);

}  // namespace detail

/// Runs (or continues) the child run of graph `child` that this step of the parent's node
/// started, with `input` as its initial state when it starts (see above). graph_error outside
/// a run call; subgraph_failed when the child failed; graph_mismatch when the child's run was
/// stored by another graph.
template <class C>
SubgraphResult<C> subgraph(RunContext& ctx, Graph<C>& child, C input) {
  class Typed final : public detail::ChildGraph {
   public:
    Typed(Graph<C>& g, C in) : g_(g), input_(std::move(in)) {}
    std::string fingerprint() const override { return g_.fingerprint(); }
    detail::ChildStatus start(const std::string& id, Store& store, RunOptions options) override {
      return keep(g_.run(id, std::move(input_), store, std::move(options)));
    }
    detail::ChildStatus resume(const std::string& id, Store& store, const Resume* decision,
                               RunOptions options) override {
      std::optional<Resume> d;
      if (decision != nullptr) d = *decision;
      return keep(g_.resume(id, store, std::move(d), std::move(options)));
    }
    void succeeded(const Checkpoint& cp) override { output = g_.decode_state(cp); }
    std::optional<C> output;

   private:
    detail::ChildStatus keep(Outcome<C> out) {
      if (out.succeeded()) output = std::move(out.state);
      return detail::child_status(out);
    }
    Graph<C>& g_;
    C input_;
  };
  Typed typed(child, std::move(input));
  detail::ChildStep step = detail::advance_child(ctx, typed);
  SubgraphResult<C> out;
  out.run_id = std::move(step.run_id);
  out.status = step.status;
  if (step.status == RunStatus::Succeeded) out.output = std::move(typed.output);
  out.wait = std::move(step.wait);
  return out;
}

}  // namespace trellis::agent
