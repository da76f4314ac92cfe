// The agent run loop (graph.hpp's model comment describes it), compiled once for every state
// type: Graph<S> passes its typed side as a StateInterface.

#include "trellis/agent/detail/run_loop.hpp"

#include <chrono>
#include <exception>
#include <random>

#include "trellis/agent/chain.hpp"
#include "trellis/agent/detail/cancel_watcher.hpp"
#include "trellis/agent/detail/effect_runner.hpp"
#include "trellis/agent/detail/lease_keeper.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/failpoint.hpp"
#include "trellis/agent/run_monitor.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/machine/state_machine.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/reactive/context.hpp"

namespace trellis::agent::detail {

namespace {

Clock& clock_of(const RunOptions& o) {
  return o.clock != nullptr ? *o.clock : SystemClock::instance();
}

void validate(const GraphSpec& spec) {
  if (spec.entry.empty()) throw graph_error("trellis: the graph has no entry node");
  if (!spec.nodes.contains(spec.entry))
    throw graph_error("trellis: the entry node '" + spec.entry + "' is not in the graph");
  spec.check_declarations();
}

/// One run call: the loop, with the run's lifecycle machine and its newest checkpoint.
class Execution final : public EffectHost {
 public:
  Execution(const GraphSpec& spec, StateInterface& typed, Store& store, RunOptions& options,
            LeaseKeeper& keeper, Checkpoint cp, std::unique_ptr<StateBox> state)
      : spec_(spec),
        typed_(typed),
        store_(store),
        options_(options),
        keeper_(keeper),
        clock_(clock_of(options)),
        cp_(std::move(cp)),
        state_(std::move(state)),
        life_(ctx_, cp_.status, lifecycle()),
        effects_(store, cp_.run_id, keeper.token(), clock_, *this) {
    effects_.chain_from(cp_.hash);
    effects_.pool(options_.fanout_pool);
    if (options_.monitor != nullptr) options_.monitor->set(cp_.status);
    if (options_.on_status || options_.monitor != nullptr)
      status_sub_ = life_.on_transition([this](RunStatus from, RunStatus to) {
        if (options_.monitor != nullptr) options_.monitor->set(to);
        if (options_.on_status) options_.on_status(from, to);
      });
    if (!options_.random) {
      engine_.seed(std::random_device{}());
      options_.random = [this] { return std::uniform_real_distribution<double>(0, 1)(engine_); };
    }
  }

  /// Runs the loop; `decision` is applied to a paused run only (elsewhere the stored one, if
  /// any, is the one that counts).
  /// `claimed`: a worker claimed the run, due by the store's clock (not checked again with the
  /// run call's clock, which may run behind).
  RunResult start(const Resume* decision, bool claimed = false) {
    if (cp_.status == RunStatus::Cancelled) {
      // Resuming answers the cancel requests made so far (a pending one is not applied again).
      const std::vector<CancelRequest> asked =
          store_.cancel_requests(cp_.run_id, cp_.cancel_handled);
      if (!asked.empty()) cp_.cancel_handled = asked.back().id;
      change(RunEvent::Start);
      if (cp_.interrupt) {
        // A run cancelled while it waited for a decision waits again: its pause is not
        // skipped. A decision given with the resume applies to it.
        pause_again();
        if (!decision) return outcome();
      } else {
        emit(EventKind::resumed, cp_.next_node, 0.0);
      }
    }
    if (cp_.status == RunStatus::WaitingApproval) {
      if (!decision) {
        // The expiry timer: nobody decided in time (a Worker claims the run when it is due).
        if (auto expired = expiry_passed(claimed)) return std::move(*expired);
        return outcome();  // not expired yet (a clock behind the store's): nothing to do
      }
      if (auto out = decide(*decision)) return std::move(*out);
      emit(EventKind::resumed, cp_.next_node, 0.0);
    } else if (cp_.status == RunStatus::Queued || cp_.status == RunStatus::Waiting) {
      // A timer not due yet (a Sleep, a durable backoff, a run enqueued for later): nothing
      // to do, nothing written.
      if (!claimed && !cp_.wake_at.empty() && now_iso8601(clock_) < cp_.wake_at) return outcome();
      change(RunEvent::Start);
    }
    // The node's stop_token also fires on a cancel request (looked for every cancel_poll).
    cancel_watch_ = CancelWatcher::watch(store_, cp_.run_id, cp_.cancel_handled,
                                         options_.cancel_poll, keeper_.stop_source());
    return loop();
  }

  /// Runs the compensations a failed run still owes; nullopt when it owes none.
  std::optional<RunResult> finish_compensations() {
    const CompensationReport report = effects_.compensate();
    if (report.due == 0) return std::nullopt;
    return outcome(report);
  }

  /// This call created the run: its first step is fresh too (see fresh_from_).
  void created_here() noexcept { fresh_from_ = 0; }

  void emit(EventKind kind, const std::string& node, double ms,
            nlohmann::json detail = nlohmann::json::object()) {
    if (!spec_.events.observed()) {
      // As to_json(RunEventRecord) writes it, the detail moved in (a fan-out logs an event per
      // item: copying each detail showed).
      nlohmann::json j = nlohmann::json::object();
      j["kind"] = to_string(kind);
      j["run_id"] = cp_.run_id;
      j["step"] = cp_.step;
      j["node"] = node;
      j["at"] = now_iso8601(clock_);
      j["duration_ms"] = ms;
      j["detail"] = std::move(detail);
      log(j);
      return;
    }
    const RunEventRecord e = record(kind, node, ms, std::move(detail));
    log(nlohmann::json(e));
    spec_.events.publish(e);
  }
  void log(const nlohmann::json& event) {
    try {
      store_.append_event(cp_.run_id, event);
    } catch (const std::exception&) {  // the log is observability: it never fails a run
    }
  }

  // EffectHost
  void effect_event(EventKind kind, nlohmann::json detail, bool durable) override {
    if (durable)
      emit(kind, cp_.next_node, 0.0, std::move(detail));
    else
      spec_.events.publish(record(kind, cp_.next_node, 0.0, std::move(detail)));
  }
  bool observed() const noexcept override { return spec_.events.observed(); }
  const CompensateFn* declared_compensation(std::string_view name) const override {
    const auto it = spec_.compensations.find(name);
    return it == spec_.compensations.end() ? nullptr : &it->second;
  }

 private:
  RunEventRecord record(EventKind kind, const std::string& node, double ms,
                        nlohmann::json detail) const {
    return RunEventRecord{std::string(to_string(kind)), cp_.run_id, cp_.step,         node,
                          now_iso8601(clock_),          ms,         std::move(detail)};
  }

  /// step_completed's detail: the next node, and the effects replayed from receipts.
  nlohmann::json step_detail(nlohmann::json next) const {
    nlohmann::json d = {{"next", std::move(next)}};
    if (!effects_.replayed().empty()) d["replayed"] = effects_.replayed();
    return d;
  }

  /// Fails a pause whose approval request expired, with no decision; nullopt when it has not.
  /// `claimed`: the store's clock said it expired (a worker claimed it for that).
  std::optional<RunResult> expiry_passed(bool claimed) {
    const std::optional<ApprovalRequest>& request =
        cp_.interrupt ? cp_.interrupt->approval : std::nullopt;
    if (!request || !request->expires_at || (!claimed && clock_.now() <= *request->expires_at))
      return std::nullopt;
    return fail(Reason::approval_expired, "nobody decided before the approval request expired at " +
                                              format_time(*request->expires_at));
  }

  /// Applies a decision to a paused run, committing it first (the audit trail, and what the
  /// step sees again if it reruns after a crash); returns an outcome when it ends the run.
  std::optional<RunResult> decide(const Resume& given) {
    Decision decision{given, now_iso8601(clock_), cp_.seq, cp_.interrupt.value_or(Interrupt{})};
    const std::optional<ApprovalRequest>& request = decision.request.approval;
    if (request && request->expires_at && clock_.now() > *request->expires_at)
      return fail(Reason::approval_expired,
                  "the approval request expired at " + format_time(*request->expires_at),
                  std::move(decision));
    if (const auto* reject = std::get_if<Reject>(&given)) {
      std::string who = reject->reviewer.empty() ? "" : " by " + reject->reviewer;
      return fail(Reason::approval_rejected,
                  "rejected" + who + (reject->reason.empty() ? "" : ": " + reject->reason),
                  std::move(decision));
    }
    change(RunEvent::Continue);
    Checkpoint c = base();
    c.status = RunStatus::Running;
    c.decision = std::move(decision);
    commit(std::move(c));
    emit_decision();
    return std::nullopt;
  }

  /// Commits again the pause a cancellation interrupted (WaitingApproval, the same interrupt,
  /// so a new request id).
  void pause_again() {
    change(RunEvent::Interrupt);
    Checkpoint c = base();
    c.status = RunStatus::WaitingApproval;
    c.interrupt = cp_.interrupt;
    commit(std::move(c));
    emit(EventKind::interrupted, cp_.resume_node, 0.0, {{"reason", cp_.interrupt->reason}});
  }

  /// The decision_recorded event of the decision the newest checkpoint holds.
  void emit_decision() {
    nlohmann::json d = *cp_.decision;
    d.erase("request");  // in the checkpoint; the event says which one (answers)
    d.erase("value");
    emit(EventKind::decision_recorded, cp_.next_node, 0.0, std::move(d));
  }

  RunResult loop() {
    for (;;) {
      keeper_.check();  // a lost lease stops the run where it is (run_busy)
      if (options_.stop.stop_requested()) return cancel(std::nullopt);
      // A worker shutting down gives the run back as it is (runnable), never cancelled.
      if (options_.yield.stop_requested()) return outcome();
      // An operator's cancel request (Store::request_cancel), from any process.
      if (auto asked = pending_cancel()) return cancel(std::move(*asked));
      if (cp_.step >= spec_.max_steps)
        return fail(Reason::max_steps,
                    "stopped after " + std::to_string(cp_.step) + " steps (max_steps)");
      const auto it = spec_.nodes.find(cp_.next_node);
      if (it == spec_.nodes.end())
        return fail(Reason::unknown_node, "no node named '" + cp_.next_node + "'");
      const std::string& name = it->first;
      const std::size_t node = it->second;
      const NodeInfo info{name, typed_.required_mode(node)};
      const PermissionMode mode =
          options_.mode != nullptr ? options_.mode->get() : PermissionMode::Default;
      // The rerun of a node that interrupted keys its effects by the step of its first pause
      // in a row, so what it did before pausing replays (kept until the next step).
      const bool rerun = !cp_.resume_node.empty() && cp_.resume_node == name && cp_.step > 0;
      const std::uint64_t effect_step = rerun ? cp_.rerun_step.value_or(cp_.step - 1) : cp_.step;
      effects_.begin(name, effect_step);
      // A step this call reached itself, at its first attempt, has no records to replay: no
      // other process can have run it (this call held the lease since it committed the step).
      if (!rerun && cp_.attempt == 0 && cp_.step >= fresh_from_) effects_.fresh();
      // The stored decision holds for every attempt of this step (a retry keeps it, and so
      // does a rerun after a crash), not later ones: the step's commit clears it.
      RunContext ctx(
          {.run_id = cp_.run_id,
           .node = name,
           .step = cp_.step,
           .attempt = cp_.attempt,
           .mode = mode,
           .stop = keeper_.stop_token(),
           .resume = cp_.decision ? std::optional<Resume>(cp_.decision->given) : std::nullopt,
           .clock = &clock_,
           .effects = &effects_,
           .store = &store_,
           .options = &options_});
      emit(EventKind::step_started, name, 0.0);
      const auto t0 = std::chrono::steady_clock::now();

      std::optional<NextStep> next;
      std::unique_ptr<StateBox> work = typed_.copy_state(*state_);
      HookVerdict verdict = typed_.pass_before(info, *work, ctx);
      if (auto* deny = std::get_if<Deny>(&verdict)) return fail(Reason::denied, deny->reason);
      if (auto* replace = std::get_if<Replace>(&verdict)) next = std::move(replace->step);
      if (!next) {
        std::exception_ptr thrown;
        try {
          next = typed_.run_node(node, *work, ctx);
        } catch (...) {
          thrown = std::current_exception();
        }
        keeper_.check();  // the lease was lost while the node ran: nothing of it is committed
        // What an effect ran into wins over what the node made of it (it may have caught it):
        // a store failure stops the run at its last checkpoint (resume applies the policies),
        // a cut-off at_most_once effect fails it.
        effects_.rethrow_if_broken();
        if (effects_.reconciliation())
          return fail(Reason::reconciliation_required, effects_.reconciliation()->what());
        if (thrown) {
          try {
            std::rethrow_exception(thrown);
          } catch (const transient_error& e) {
            if (auto out = retry_later(name, e.what())) return std::move(*out);
            continue;
          } catch (const store_error&) {
            throw;  // infrastructure: the run is not failed, it stops at its last checkpoint
          } catch (const persist_error&) {
            throw;
          } catch (const std::exception& e) {
            // A node that answered a cancellation by throwing (an aborted call) was cancelled,
            // not broken: the run ends Cancelled, resumable.
            if (options_.stop.stop_requested()) return cancel(std::nullopt);
            if (auto asked = pending_cancel()) return cancel(std::move(*asked));
            return fail(Reason::node_error, "node '" + name + "' threw: " + e.what());
          }
        }
      }
      next = typed_.pass_after(info, *work, std::move(*next), ctx);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

      if (const auto* go = std::get_if<Goto>(&*next); go && !spec_.nodes.contains(go->node))
        return fail(Reason::unknown_node, "node '" + name + "' named a next node '" + go->node +
                                              "' that the graph does not have");
      if (auto why = spec_.undeclared_edge(name, *next))
        return fail(Reason::undeclared_edge, std::move(*why));
      if (auto why = misused_halt(name, *next)) return fail(Reason::node_error, std::move(*why));
      state_ = std::move(work);
      if (std::holds_alternative<Halt>(*next)) change(RunEvent::Succeed);
      if (std::holds_alternative<Interrupt>(*next)) change(RunEvent::Interrupt);
      if (std::holds_alternative<Sleep>(*next)) change(RunEvent::Wait);
      Checkpoint done =
          next_checkpoint(cp_, *next, name, effect_step, typed_.state_to_json(*state_));
      if (const auto* sleep = std::get_if<Sleep>(&*next)) done.wake_at = wake_time(*sleep, clock_);
      if (terminal(done.status)) answer_cancels(done);  // a request to a finished run is moot
      commit(std::move(done));
      if (const auto* go = std::get_if<Goto>(&*next)) {
        emit(EventKind::step_completed, name, ms, step_detail(go->node));
      } else if (std::holds_alternative<Halt>(*next)) {
        emit(EventKind::step_completed, name, ms, step_detail(nullptr));
        if (cp_.reason == Reason::none)
          emit(EventKind::graph_completed, name, 0.0);
        else  // completed_with_errors
          emit(EventKind::graph_completed, name, 0.0,
               {{"reason", std::string(enumeration<Reason>::name(cp_.reason))},
                {"detail", cp_.detail}});
        return outcome();
      } else if (std::holds_alternative<Sleep>(*next)) {
        emit(EventKind::step_completed, name, ms, step_detail(cp_.next_node));
        emit(EventKind::waiting, cp_.next_node, 0.0, {{"wake_at", cp_.wake_at}});
        if (auto asked = pending_cancel()) return cancel(std::move(*asked));
        return outcome();
      } else {
        emit(EventKind::step_completed, name, ms, step_detail(cp_.next_node));
        emit(EventKind::interrupted, name, 0.0, {{"reason", std::get<Interrupt>(*next).reason}});
        trellis::failpoint("approval.waiting", cp_.run_id);
        // A cancel request that came during the step is answered here, not left pending on a
        // paused run (it keeps its pause: resumed, it waits again).
        if (auto asked = pending_cancel()) return cancel(std::move(*asked));
        return outcome();
      }
    }
  }

  /// The newest cancel request the run has not answered, if any.
  std::optional<CancelRequest> pending_cancel() {
    std::vector<CancelRequest> asked = store_.cancel_requests(cp_.run_id, cp_.cancel_handled);
    if (asked.empty()) return std::nullopt;
    return std::move(asked.back());
  }

  /// Marks the requests made so far as answered by `c` (a checkpoint that ends the run).
  void answer_cancels(Checkpoint& c) {
    if (auto asked = pending_cancel()) c.cancel_handled = asked->id;
  }

  /// Commits the cancellation (on the caller's stop token, or answering `request`).
  RunResult cancel(std::optional<CancelRequest> request) {
    change(RunEvent::Cancel);
    Checkpoint next = base();
    next.status = RunStatus::Cancelled;
    nlohmann::json detail = nlohmann::json::object();
    if (request) {
      next.cancel_handled = request->id;
      next.detail = "cancelled" + (request->by.empty() ? std::string() : " by " + request->by) +
                    (request->reason.empty() ? std::string() : ": " + request->reason);
      detail = {{"request", request->id}, {"by", request->by}, {"reason", request->reason}};
    }
    commit(std::move(next));
    emit(EventKind::cancelled, cp_.next_node, 0.0, std::move(detail));
    return outcome();
  }

  /// A transient failure: count it (committed), then wait the backoff, or give up.
  std::optional<RunResult> retry_later(const std::string& node, const std::string& what) {
    const std::uint32_t failed = cp_.attempt + 1;
    if (failed >= spec_.retry.attempts)
      return fail(Reason::retries_exhausted,
                  "node '" + node + "' failed " + std::to_string(failed) + " times: " + what);
    const auto wait = backoff(spec_.retry, failed, options_.random());
    Checkpoint c = base();
    c.status = RunStatus::Running;
    c.attempt = failed;
    if (options_.durable_waits) {  // a timer: the run is given back until the backoff ends
      change(RunEvent::Wait);
      c.status = RunStatus::Waiting;
      c.wake_at = format_time(clock_.now() + wait);
    }
    commit(std::move(c));
    emit(EventKind::retry_scheduled, node, 0.0,
         {{"attempt", failed}, {"backoff_ms", wait.count()}, {"error", what}});
    if (options_.durable_waits) {
      emit(EventKind::waiting, cp_.next_node, 0.0, {{"wake_at", cp_.wake_at}});
      // A node that gave up on a cancel request (its stop token) may have thrown a transient
      // error: the request is answered now, not after the backoff.
      if (auto asked = pending_cancel()) return cancel(std::move(*asked));
      return outcome();
    }
    clock_.sleep_for(wait, keeper_.stop_token());
    return std::nullopt;
  }

  /// Fails the run; `decision`: the decision on the pause that fails it, stored with it.
  RunResult fail(Reason reason, std::string detail,
                 std::optional<Decision> decision = std::nullopt) {
    change(RunEvent::Fail);
    Checkpoint c = base();
    c.status = RunStatus::Failed;
    c.reason = reason;
    c.detail = detail;
    const bool decided = decision.has_value();
    if (decided) c.decision = std::move(decision);
    answer_cancels(c);
    commit(std::move(c));
    if (decided) emit_decision();
    emit(EventKind::graph_failed, cp_.next_node, 0.0,
         {{"reason", std::string(enumeration<Reason>::name(reason))}, {"detail", detail}});
    // An effect in doubt waits for an operator: reconciled, the run goes on from the step that
    // failed, which its compensations would have undone; resumed without one, it compensates.
    if (reason == Reason::reconciliation_required) return outcome();
    // The failure is committed first, so a crash during the compensations leaves a failed run
    // that resume() finishes (finish_compensations).
    return outcome(effects_.compensate());
  }

  /// The next checkpoint, starting as a copy of the newest.
  Checkpoint base() const {
    Checkpoint c = cp_;
    c.reason = Reason::none;
    c.detail.clear();
    c.reconciliation.reset();  // only in the checkpoint that reopened the run
    c.forked_from.reset();     // only in a fork's first checkpoint
    c.wake_at.clear();         // only while the timer is pending
    if (c.status != RunStatus::WaitingApproval) c.interrupt.reset();
    return c;
  }

  /// Commits the next checkpoint, with the keys of the effects the attempt made.
  void commit(Checkpoint next) {
    next.seq = cp_.seq + 1;
    next.created_at = now_iso8601(clock_);
    // A pause is kept while the run waits, and by a cancellation of the pause (resumed, the
    // run waits again).
    // A pause that expired (nobody decided: no Decision holds the request) keeps it too, so a
    // fork of the failure asks again.
    if (next.status != RunStatus::WaitingApproval && next.status != RunStatus::Cancelled &&
        !(next.status == RunStatus::Failed && next.reason == Reason::approval_expired))
      next.interrupt.reset();
    next.effects = effects_.take_keys();
    next.receipts = effects_.receipts(next.effects);
    seal(next, cp_.hash);
    store_.commit(next, cp_.seq, keeper_.token());
    cp_ = std::move(next);
    effects_.chain_from(cp_.hash);
    trellis::failpoint("step.after_commit", cp_.run_id);
  }

  void change(RunEvent e) {
    if (!life_.send(e))
      throw graph_error("trellis: run '" + cp_.run_id + "' cannot go from " +
                        std::string(enumeration<RunStatus>::name(life_.state())) + " on " +
                        std::string(enumeration<RunEvent>::name(e)));
  }

  /// The run call's result (it ends the call: the state moves out).
  RunResult outcome(const CompensationReport& report) {
    RunResult out = outcome();
    const auto add = [&out](const char* what, const std::vector<std::string>& items) {
      if (items.empty()) return;
      std::string list;
      for (const std::string& e : items) list += (list.empty() ? "" : ", ") + e;
      out.detail += (out.detail.empty() ? "" : "; ") + std::string(what) + list;
    };
    add("compensation pending: ", report.left);
    add("compensation failed: ", report.failed);
    return out;
  }

  RunResult outcome() {
    RunResult out;
    out.status = cp_.status;
    out.reason = cp_.reason;
    out.detail = cp_.detail;
    out.steps = cp_.step;
    out.state = std::move(state_);
    if (cp_.status == RunStatus::WaitingApproval) {
      out.interrupt = cp_.interrupt;
      out.request_id = request_id(cp_);
    }
    if (cp_.status == RunStatus::Waiting) out.wake_at = cp_.wake_at;
    return out;
  }

  const GraphSpec& spec_;
  StateInterface& typed_;
  Store& store_;
  RunOptions& options_;
  LeaseKeeper& keeper_;
  Clock& clock_;
  Checkpoint cp_;
  std::unique_ptr<StateBox> state_;
  trellis::Context ctx_;
  StateMachine<RunStatus, RunEvent> life_;
  Subscription status_sub_;
  std::mt19937_64 engine_;
  EffectRunner effects_;
  /// The first step this call reaches itself: the one after the step it started from (the run's
  /// first, when this call created the run: start_run).
  std::uint64_t fresh_from_ = cp_.step + 1;
  CancelWatcher::Watch cancel_watch_;  // last: ends first, before what it points at
};

std::string mismatch(const std::string& run_id, const std::string& stored,
                     const std::string& ours) {
  return "trellis: run '" + run_id + "' was stored by graph [" + stored + "], this graph is [" +
         ours + "]";
}

/// Accepts `cp` (the newest checkpoint of its run, or the one a fork starts from) for this graph:
/// its fingerprint is this graph's, or (Graph::resume_across_edits) it was written by an edit of
/// it with the same version whose path (every node the run's checkpoints up to `cp` ran or wait
/// at) this graph still has; `cp` then takes this graph's fingerprint. graph_mismatch otherwise.
void accept_fingerprint(const GraphSpec& spec, Store& store, Checkpoint& cp,
                        const std::string& fingerprint) {
  if (cp.fingerprint == fingerprint) return;
  const std::string same_version = "v=" + spec.version + ";nodes=";
  if (!spec.resume_across_edits || !cp.fingerprint.starts_with(same_version))
    throw graph_mismatch(mismatch(cp.run_id, cp.fingerprint, fingerprint));
  auto missing = [&](const std::string& node) {
    return !node.empty() && node != end_node && !spec.nodes.contains(node);
  };
  auto refuse = [&](const std::string& node) {
    throw graph_mismatch("trellis: run '" + cp.run_id + "' was stored by an edit of this graph (" +
                         cp.fingerprint + ") and its path goes through node '" + node +
                         "', which this graph no longer has; keep the node, or finish the run "
                         "with the graph it started with");
  };
  if (missing(cp.next_node)) refuse(cp.next_node);
  if (missing(cp.resume_node)) refuse(cp.resume_node);
  for (const Checkpoint& earlier : store.history(cp.run_id)) {
    if (earlier.seq > cp.seq) break;
    if (missing(earlier.next_node)) refuse(earlier.next_node);
    if (missing(earlier.resume_node)) refuse(earlier.resume_node);
  }
  cp.fingerprint = fingerprint;
}

}  // namespace

std::size_t GraphSpec::add_node(std::string name) {
  if (name.empty()) throw graph_error("trellis: a node needs a non-empty name");
  const std::size_t number = nodes.size();
  if (!nodes.emplace(name, number).second)
    throw graph_error("trellis: the graph already has a node named '" + name + "'");
  return number;
}

std::string GraphSpec::fingerprint() const {
  std::string f = "v=" + version + ";nodes=";
  bool first = true;
  for (const auto& entry : nodes) {  // std::map: sorted, stable
    if (!first) f += ',';
    f += entry.first;
    first = false;
  }
  return f;
}

Checkpoint next_checkpoint(const Checkpoint& cp, const NextStep& next, std::string_view node,
                           std::uint64_t effect_step, nlohmann::json state) {
  Checkpoint c = cp;
  c.reason = Reason::none;
  c.detail.clear();
  c.interrupt.reset();
  c.step = cp.step + 1;
  c.attempt = 0;
  c.state = std::move(state);
  c.resume_node.clear();
  c.rerun_step.reset();
  c.decision.reset();  // used up by this step (a new pause waits for a decision of its own)
  c.reconciliation.reset();
  c.forked_from.reset();
  c.wake_at.clear();  // the caller sets it for a Sleep (wake_time)
  if (const auto* go = std::get_if<Goto>(&next)) {
    c.status = RunStatus::Running;
    c.next_node = go->node;
  } else if (const auto* halt = std::get_if<Halt>(&next)) {
    c.status = RunStatus::Succeeded;
    c.next_node.clear();
    c.reason = halt->reason;  // none, or completed_with_errors (misused_halt)
    if (halt->reason != Reason::none) c.detail = halt->detail;
  } else if (const auto* sleep = std::get_if<Sleep>(&next)) {
    c.status = RunStatus::Waiting;
    c.next_node = sleep->then.empty() ? std::string(node) : sleep->then;
    if (sleep->replay && c.next_node == node) {  // the rerun replays this step's effects
      c.resume_node = std::string(node);
      c.rerun_step = effect_step;
    }
  } else {
    const Interrupt& pause = std::get<Interrupt>(next);
    c.status = RunStatus::WaitingApproval;
    c.next_node = pause.then.empty() ? std::string(node) : pause.then;
    c.resume_node = std::string(node);
    c.rerun_step = effect_step;
    c.interrupt = pause;
  }
  return c;
}

std::optional<std::string> misused_halt(std::string_view node, const NextStep& next) {
  const auto* halt = std::get_if<Halt>(&next);
  if (!halt || halt->reason == Reason::none || halt->reason == Reason::completed_with_errors)
    return std::nullopt;
  return "node '" + std::string(node) + "' ended the run with reason '" +
         std::string(enumeration<Reason>::name(halt->reason)) +
         "': a Halt ends it succeeded (reason none or completed_with_errors)";
}

std::string wake_time(const Sleep& sleep, const Clock& clock) {
  // A sleep "forever" (past what the clock's nanoseconds reach, year 2262) wakes in 2200.
  using namespace std::chrono;
  const Clock::time_point last = sys_days{year{2200} / January / 1};
  if (sleep.until) return format_time(std::min(*sleep.until, last));
  const Clock::time_point now = clock.now();
  if (sleep.duration >= last - now) return format_time(last);
  return format_time(std::max(now + sleep.duration, now));
}

std::unique_ptr<StateBox> decode_state(const GraphSpec& spec, const StateInterface& typed,
                                       const Checkpoint& cp) {
  nlohmann::json j = cp.state;
  if (cp.schema > spec.schema)
    throw graph_mismatch("trellis: run '" + cp.run_id + "' holds state schema " +
                         std::to_string(cp.schema) + ", newer than this program's " +
                         std::to_string(spec.schema));
  if (cp.schema < spec.schema) {
    if (!spec.migrate)
      throw graph_mismatch("trellis: run '" + cp.run_id + "' holds state schema " +
                           std::to_string(cp.schema) + " and the graph has no migration to " +
                           std::to_string(spec.schema));
    j = spec.migrate(std::move(j), cp.schema);
  }
  try {
    return typed.state_from_json(j);
  } catch (const nlohmann::json::exception& e) {
    throw store_error("trellis: the state of run '" + cp.run_id + "' does not decode: " + e.what());
  }
}

RunResult start_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                    std::unique_ptr<StateBox> initial, Store& store, RunOptions options) {
  check_run_id(run_id);
  validate(spec);
  Lease lease = store.lease(run_id, options.worker);
  LeaseKeeper keeper(store, lease.token(), options.stop);
  if (store.latest(run_id))
    throw graph_error("trellis: run '" + run_id + "' already exists; resume it instead");
  Checkpoint first;
  first.run_id = run_id;
  first.status = RunStatus::Queued;
  first.next_node = spec.entry;
  first.state = typed.state_to_json(*initial);
  first.schema = spec.schema;
  first.fingerprint = spec.fingerprint();
  first.created_at = now_iso8601(clock_of(options));
  seal(first, "");
  store.put_graph(spec.shape());  // for programs that draw the run without the graph
  store.create(first);
  Execution ex(spec, typed, store, options, keeper, std::move(first), std::move(initial));
  ex.created_here();
  ex.emit(EventKind::graph_started, {}, 0.0);
  return ex.start(nullptr);
}

namespace {

/// resume_run and advance_claimed, once the run's lease is held: `cp` is its newest checkpoint.
RunResult continue_run(const GraphSpec& spec, StateInterface& typed, Store& store,
                       const Resume* decision, RunOptions& options, LeaseKeeper& keeper,
                       Checkpoint cp, bool claimed) {
  const std::string& run_id = cp.run_id;
  accept_fingerprint(spec, store, cp, spec.fingerprint());
  trellis::failpoint("resume.started", run_id);
  if (cp.status == RunStatus::Failed) {
    // A failed run whose compensations did not all run (a crash, or no function for them in
    // that process) finishes them; otherwise it is over.
    std::unique_ptr<StateBox> state = decode_state(spec, typed, cp);
    Execution ex(spec, typed, store, options, keeper, std::move(cp), std::move(state));
    if (auto out = ex.finish_compensations()) return std::move(*out);
    throw run_finished("trellis: run '" + run_id + "' has already failed; it cannot be resumed");
  }
  if (cp.status == RunStatus::Succeeded)
    throw run_finished("trellis: run '" + run_id + "' has already succeeded; it cannot be resumed");
  // Without a decision, a pause is advanced only to fail it when its request expired.
  const bool expired = cp.interrupt && cp.interrupt->approval &&
                       cp.interrupt->approval->expires_at &&
                       clock_of(options).now() > *cp.interrupt->approval->expires_at;
  if (cp.status == RunStatus::WaitingApproval && decision == nullptr && !expired && !claimed)
    throw graph_error("trellis: run '" + run_id +
                      "' waits for a decision: resume it with Approve, Reject or Input");
  std::unique_ptr<StateBox> state = decode_state(spec, typed, cp);
  if (cp.schema != spec.schema) {
    // Migrated: every later checkpoint holds the state in this program's schema, and says so
    // (otherwise the next resume would migrate it again, and a failure would commit the old
    // form).
    cp.state = typed.state_to_json(*state);
    cp.schema = spec.schema;
  }
  // A crash, or (claimed) a run a worker picks up; a fresh enqueued run logged graph_started.
  const bool fresh = cp.status == RunStatus::Queued && cp.seq == 0;
  const bool due = cp.wake_at.empty() || now_iso8601(clock_of(options)) >= cp.wake_at;
  const bool after_crash =
      (cp.status == RunStatus::Queued || cp.status == RunStatus::Running) && !fresh && due;
  const std::string at = cp.next_node;
  Execution ex(spec, typed, store, options, keeper, std::move(cp), std::move(state));
  // A pause or a cancellation logs its own resumed event (in start()); a crash does not.
  if (after_crash) ex.emit(EventKind::resumed, at, 0.0);
  return ex.start(decision, claimed);
}

}  // namespace

RunResult resume_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                     Store& store, const Resume* decision, RunOptions options) {
  check_run_id(run_id);
  validate(spec);
  Lease lease = store.lease(run_id, options.worker);
  LeaseKeeper keeper(store, lease.token(), options.stop);
  std::optional<Checkpoint> cp = store.latest(run_id);
  if (!cp) throw unknown_run("trellis: no run '" + run_id + "' in the store");
  return continue_run(spec, typed, store, decision, options, keeper, std::move(*cp), false);
}

RunResult advance_claimed(const GraphSpec& spec, StateInterface& typed, Claim claim, Store& store,
                          RunOptions options) {
  validate(spec);
  Lease lease = std::move(claim.lease);
  LeaseKeeper keeper(store, lease.token(), options.stop);
  return continue_run(spec, typed, store, nullptr, options, keeper, std::move(claim.newest), true);
}

void enqueue_run(const GraphSpec& spec, StateInterface& typed, const std::string& run_id,
                 std::unique_ptr<StateBox> initial, Store& store, const EnqueueOptions& options) {
  check_run_id(run_id);
  validate(spec);
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock::instance();
  Checkpoint first;
  first.run_id = run_id;
  first.status = RunStatus::Queued;
  first.next_node = spec.entry;
  first.state = typed.state_to_json(*initial);
  first.schema = spec.schema;
  first.fingerprint = spec.fingerprint();
  first.priority = options.priority;
  if (options.at) first.wake_at = format_time(*options.at);
  first.created_at = now_iso8601(clock);
  seal(first, "");
  if (store.latest(run_id))
    throw graph_error("trellis: run '" + run_id + "' already exists; resume it instead");
  store.put_graph(spec.shape());
  try {
    store.create(first);
  } catch (const run_busy&) {  // created meanwhile by another process
    throw graph_error("trellis: run '" + run_id + "' already exists; resume it instead");
  }
  const RunEventRecord e{std::string(to_string(EventKind::graph_started)),
                         run_id,
                         0,
                         {},
                         first.created_at,
                         0.0,
                         nlohmann::json::object()};
  try {
    store.append_event(run_id, nlohmann::json(e));
  } catch (const std::exception&) {  // the log is observability
  }
  spec.events.publish(e);
}

void fork_run(const GraphSpec& spec, const std::string& from_id, std::uint64_t seq,
              const std::string& new_id, Store& store) {
  check_run_id(from_id);
  check_run_id(new_id);
  std::optional<Checkpoint> cp = store.checkpoint(from_id, seq);
  if (!cp)
    throw unknown_run("trellis: run '" + from_id + "' has no checkpoint " + std::to_string(seq));
  accept_fingerprint(spec, store, *cp, spec.fingerprint());
  const Checkpoint first =
      fork_checkpoint(store, std::move(*cp), new_id, spec.entry, SystemClock::instance());
  spec.events.publish(forked_event(first));  // (logged by fork_checkpoint)
}

RunEventRecord forked_event(const Checkpoint& first) {
  return RunEventRecord{
      std::string(to_string(EventKind::forked)),
      first.run_id,
      first.step,
      first.next_node,
      first.created_at,
      0.0,
      first.forked_from ? nlohmann::json(*first.forked_from) : nlohmann::json::object()};
}

Checkpoint fork_checkpoint(Store& store, Checkpoint cp, std::string_view new_id,
                           std::string_view entry, Clock& clock, ForkOrigin origin) {
  Lease lease = store.lease(new_id, "fork");
  if (store.latest(new_id))
    throw graph_error("trellis: run '" + std::string(new_id) +
                      "' already exists; fork into a new id");
  origin.run_id = cp.run_id;
  origin.seq = cp.seq;
  Checkpoint first = std::move(cp);
  first.run_id = std::string(new_id);
  first.seq = 0;
  first.effects.clear();  // the source run's records: the fork has none of its own yet
  first.cancel_handled = 0;
  first.reconciliation.reset();
  const bool expired_pause = first.status == RunStatus::Failed &&
                             first.reason == Reason::approval_expired && first.interrupt;
  if (terminal(first.status) && (first.decision || expired_pause)) {
    // A run that failed on a decision (rejected, expired) or whose request expired with no
    // decision forks back to the pause: the question is asked again, never skipped. An
    // expired request is asked again without its expiry (with it, the fork would expire at
    // once).
    first.status = RunStatus::WaitingApproval;
    if (first.decision) first.interrupt = first.decision->request;
    if (first.reason == Reason::approval_expired && first.interrupt->approval)
      first.interrupt->approval->expires_at.reset();
    first.reason = Reason::none;
    first.detail.clear();
    first.decision.reset();
  } else if (terminal(first.status)) {  // a finished run's last checkpoint: a fresh start
    first.status = RunStatus::Queued;
    first.reason = Reason::none;
    first.detail.clear();
    first.decision.reset();
    if (first.next_node.empty()) first.next_node = std::string(entry);
  } else if (first.status == RunStatus::Cancelled && first.interrupt) {
    first.status = RunStatus::WaitingApproval;  // cancelled at a pause: it waits there again
    first.detail.clear();
  } else if (first.status != RunStatus::WaitingApproval) {
    first.status = RunStatus::Queued;
    first.detail.clear();
  }
  first.created_at = now_iso8601(clock);
  origin.at = first.created_at;
  first.forked_from = std::move(origin);
  first.receipts.clear();
  seal(first, "");  // a new chain: the source run's links are not the fork's
  store.create(first);
  try {
    store.append_event(first.run_id, nlohmann::json(forked_event(first)));
  } catch (const std::exception&) {  // the log is observability
  }
  return first;
}

}  // namespace trellis::agent::detail
