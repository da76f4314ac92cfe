// One node on its own (step.hpp): Graph<S>::step, dry or committed, compiled once for every
// state type.

#include "trellis/agent/detail/step.hpp"

#include <chrono>
#include <exception>

#include "trellis/agent/chain.hpp"
#include "trellis/agent/detail/effect_runner.hpp"
#include "trellis/agent/detail/lease_keeper.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/event_kind.hpp"
#include "trellis/agent/run_event.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/base/error.hpp"

namespace trellis::agent::detail {

namespace {

/// Where a step's events go: a committed step logs them like the loop (the store's log and
/// the graph's bus), a dry one nowhere.
class StepHost final : public EffectHost {
 public:
  StepHost(const GraphSpec& spec, Store& store, const Checkpoint& cp, Clock& clock, bool commit)
      : spec_(spec), store_(store), cp_(cp), clock_(clock), commit_(commit) {}

  void emit(EventKind kind, const std::string& node, double ms,
            nlohmann::json detail = nlohmann::json::object()) {
    if (!commit_) return;
    const RunEventRecord e{std::string(to_string(kind)), cp_.run_id, cp_.step,         node,
                           now_iso8601(clock_),          ms,         std::move(detail)};
    try {
      store_.append_event(cp_.run_id, nlohmann::json(e));
    } catch (const std::exception&) {  // the log is observability: it never fails a step
    }
    spec_.events.publish(e);
  }
  void node(std::string name) { node_ = std::move(name); }

  void effect_event(EventKind kind, nlohmann::json detail, bool durable) override {
    if (!commit_) return;
    if (durable) {
      emit(kind, node_, 0.0, std::move(detail));
    } else {
      spec_.events.publish(RunEventRecord{std::string(to_string(kind)), cp_.run_id, cp_.step, node_,
                                          now_iso8601(clock_), 0.0, std::move(detail)});
    }
  }
  bool observed() const noexcept override { return commit_ && spec_.events.observed(); }
  const CompensateFn* declared_compensation(std::string_view name) const override {
    const auto it = spec_.compensations.find(name);
    return it == spec_.compensations.end() ? nullptr : &it->second;
  }

 private:
  const GraphSpec& spec_;
  Store& store_;
  const Checkpoint& cp_;
  Clock& clock_;
  bool commit_;
  std::string node_;
};

/// The run's newest checkpoint, checked for a step.
Checkpoint load(const GraphSpec& spec, const std::string& run_id, Store& store, bool commit) {
  std::optional<Checkpoint> cp = store.latest(run_id);
  if (!cp) throw unknown_run("trellis: no run '" + run_id + "' in the store");
  const std::string fingerprint = spec.fingerprint();
  if (cp->fingerprint != fingerprint)
    throw graph_mismatch("trellis: run '" + run_id + "' was stored by graph [" + cp->fingerprint +
                         "], this graph is [" + fingerprint + "]");
  if (!commit) return std::move(*cp);
  const std::string status(enumeration<RunStatus>::name(cp->status));
  if (terminal(cp->status))
    throw run_finished("trellis: run '" + run_id + "' is " + status +
                       ": a committed step cannot continue it");
  if (cp->status == RunStatus::WaitingApproval || cp->status == RunStatus::Waiting)
    throw run_conflict("trellis: run '" + run_id + "' is " + status +
                       ": decide (or resume) it before committing a step");
  return std::move(*cp);
}

}  // namespace

StepRun step_node(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                  const std::string& node, Store& store, const StepOptions& options) {
  check_run_id(run_id);
  spec.check_declarations();
  const auto found = spec.nodes.find(node);
  if (found == spec.nodes.end())
    throw graph_error("trellis: the graph has no node named '" + node + "'");
  const bool commit = options.commit;
  if (commit && !options.stubs.empty())
    throw invalid_option("trellis: effect stubs are for a dry step of run '" + run_id +
                         "': a committed step runs its effects for real");
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock::instance();

  // A committed step holds the lease throughout, like a run call; a dry one takes none.
  Lease lease;
  std::optional<LeaseKeeper> keeper;
  if (commit) {
    lease = store.lease(run_id, options.worker);
    keeper.emplace(store, lease.token(), std::stop_token{});
  }
  Checkpoint cp = load(spec, run_id, store, commit);

  std::unique_ptr<StateBox> state;
  if (options.state) {
    try {
      state = typed.state_from_json(*options.state);
    } catch (const nlohmann::json::exception& e) {
      throw graph_error("trellis: the state given to the step of run '" + run_id +
                        "' is not a state of the graph: " + e.what());
    }
  } else {
    state = decode_state(spec, typed, cp);
  }
  if (cp.schema != spec.schema) {
    // Migrated, as resume does: a committed checkpoint (a failure keeps the stored state)
    // holds it in this program's schema.
    cp.state = typed.state_to_json(options.state ? *decode_state(spec, typed, cp) : *state);
    cp.schema = spec.schema;
  }

  StepHost host(spec, store, cp, clock, commit);
  host.node(node);
  EffectRunner effects(store, run_id, commit ? keeper->token() : LeaseToken{}, clock, host);
  effects.keep_log();
  effects.chain_from(cp.hash);
  if (!commit) effects.dry(&options.stubs);
  // The same keys a real step of this node at this position uses (run_loop.cpp): the rerun of
  // a node after its pause keys them by the step it paused at.
  const bool rerun = !cp.resume_node.empty() && cp.resume_node == node && cp.step > 0;
  const std::uint64_t effect_step = rerun ? cp.rerun_step.value_or(cp.step - 1) : cp.step;
  effects.begin(node, effect_step);
  RunContext ctx({.run_id = run_id,
                  .node = node,
                  .step = cp.step,
                  .attempt = cp.attempt,
                  .mode = PermissionMode::Default,
                  .stop = commit ? keeper->stop_token() : std::stop_token{},
                  .resume = cp.decision ? std::optional<Resume>(cp.decision->given) : std::nullopt,
                  .clock = &clock,
                  .effects = &effects});
  const NodeInfo info{found->first, typed.required_mode(found->second)};
  host.emit(EventKind::step_started, node, 0.0,
            {{"manual", true}, {"override", node != cp.next_node}});
  const auto t0 = std::chrono::steady_clock::now();

  StepRun out;
  HookVerdict verdict = typed.pass_before(info, *state, ctx);
  if (auto* deny = std::get_if<Deny>(&verdict)) {
    out.reason = Reason::denied;
    out.detail = deny->reason;
  } else {
    std::optional<NextStep> next;
    if (auto* replace = std::get_if<Replace>(&verdict)) next = std::move(replace->step);
    if (!next) {
      std::exception_ptr thrown;
      try {
        next = typed.run_node(found->second, *state, ctx);
      } catch (...) {
        thrown = std::current_exception();
      }
      if (keeper) keeper->check();
      // What an effect ran into wins over what the node made of it (run_loop.cpp).
      effects.rethrow_if_broken();
      if (effects.refused()) throw *effects.refused();
      if (effects.reconciliation()) {
        out.reason = Reason::reconciliation_required;
        out.detail = effects.reconciliation()->what();
      } else if (thrown) {
        std::rethrow_exception(thrown);
      }
    }
    if (next) {
      out.next = typed.pass_after(info, *state, std::move(*next), ctx);
      if (out.reason != Reason::none) {
      } else if (const auto* go = std::get_if<Goto>(&out.next);
                 go && !spec.nodes.contains(go->node)) {
        out.reason = Reason::unknown_node;
        out.detail =
            "node '" + node + "' named a next node '" + go->node + "' that the graph does not have";
      } else if (auto why = spec.undeclared_edge(node, out.next)) {
        out.reason = Reason::undeclared_edge;
        out.detail = std::move(*why);
      } else if (auto bad = misused_halt(node, out.next)) {
        out.reason = Reason::node_error;
        out.detail = std::move(*bad);
      }
    }
  }
  out.effects = effects.log();
  if (!commit) {
    out.state = std::move(state);
    return out;
  }

  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  Checkpoint c;
  if (out.reason == Reason::none) {
    c = next_checkpoint(cp, out.next, node, effect_step, typed.state_to_json(*state));
    if (const auto* sleep = std::get_if<Sleep>(&out.next)) c.wake_at = wake_time(*sleep, clock);
  } else {  // what the loop's fail() commits
    c = cp;
    c.wake_at.clear();
    c.reconciliation.reset();  // only in the checkpoint that reopened the run
    c.forked_from.reset();     // only in a fork's first checkpoint
    c.status = RunStatus::Failed;
    c.reason = out.reason;
    c.detail = out.detail;
  }
  c.seq = cp.seq + 1;
  c.created_at = now_iso8601(clock);
  if (c.status != RunStatus::WaitingApproval) c.interrupt.reset();
  c.effects = effects.take_keys();
  c.receipts = effects.receipts(c.effects);
  seal(c, cp.hash);
  store.commit(c, cp.seq, keeper->token());
  out.committed = true;
  out.checkpoint = c;
  out.state = std::move(state);
  if (out.reason != Reason::none) {
    host.emit(
        EventKind::graph_failed, node, 0.0,
        {{"reason", std::string(enumeration<Reason>::name(out.reason))}, {"detail", out.detail}});
    effects.compensate();
    return out;
  }
  if (const auto* go = std::get_if<Goto>(&out.next)) {
    host.emit(EventKind::step_completed, node, ms, {{"next", go->node}});
  } else if (std::holds_alternative<Halt>(out.next)) {
    host.emit(EventKind::step_completed, node, ms, {{"next", nullptr}});
    if (c.reason == Reason::none)
      host.emit(EventKind::graph_completed, node, 0.0);
    else  // completed_with_errors
      host.emit(
          EventKind::graph_completed, node, 0.0,
          {{"reason", std::string(enumeration<Reason>::name(c.reason))}, {"detail", c.detail}});
  } else if (std::holds_alternative<Sleep>(out.next)) {
    host.emit(EventKind::step_completed, node, ms, {{"next", c.next_node}});
    host.emit(EventKind::waiting, c.next_node, 0.0, {{"wake_at", c.wake_at}});
  } else {
    host.emit(EventKind::step_completed, node, ms, {{"next", c.next_node}});
    host.emit(EventKind::interrupted, node, 0.0,
              {{"reason", std::get<Interrupt>(out.next).reason}});
  }
  return out;
}

}  // namespace trellis::agent::detail
