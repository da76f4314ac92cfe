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
/// Reasons a run fails are outcomes (Outcome::reason), not exceptions; misuse and
/// infrastructure failures are exceptions (errors.hpp): resuming a finished run (run_finished),
/// an unknown run id (unknown_run), a run stored by another graph (graph_mismatch), a lease
/// held by another worker (run_busy).
///
/// A state that JSON cannot carry back as it is (a NaN or infinite number, nesting deeper than
/// trellis::max_json_depth counted from the stored record's root: the state itself sits two
/// levels down) is refused by every store before anything is written, and run()/resume()
/// throw that trellis::unwritable_value, naming the member ("/state/scores/2"). The step is
/// not acknowledged and not failed: like a store failure, the run stays at its last
/// checkpoint, and a resume (with a node that produces a writable state) reruns the step. The
/// same holds for an interrupt's proposed input and a decision's Input. Lifecycle observers
/// (RunOptions::on_status, monitor) may already have seen the refused step's status change.

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/detail/effect_runner.hpp"
#include "trellis/agent/detail/lease_keeper.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/events.hpp"
#include "trellis/agent/failpoint.hpp"
#include "trellis/agent/hooks.hpp"
#include "trellis/agent/node.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/retry.hpp"
#include "trellis/agent/run_monitor.hpp"
#include "trellis/agent/run_status.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/machine/state_machine.hpp"
#include "trellis/persist/detail/json_convertible.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/reactive/context.hpp"

namespace trellis::agent {

/// Per-call settings of run() and resume().
struct RunOptions {
  const ModeSwitch* mode = nullptr;     ///< the permission mode (nullptr: Default)
  std::stop_token stop = {};            ///< cancellation, checked between steps
  Clock* clock = nullptr;               ///< nullptr: SystemClock
  std::function<double()> random = {};  ///< uniform [0, 1) for jitter; empty: a seeded engine
  std::string worker = "worker";        ///< the lease owner's name (in run_busy messages)
  /// Called on every status change of the run (from, to), on the calling thread.
  std::function<void(RunStatus, RunStatus)> on_status = {};
  /// Follows the run's status as reactive state (state_is); set at the start of the call.
  RunMonitor* monitor = nullptr;
};

namespace detail {
std::string now_iso8601(const Clock& clock);
std::string format_time(Clock::time_point t);
}  // namespace detail

template <class S>
class Graph {
  static_assert(trellis::detail::json_convertible<S>,
                "trellis: agent::Graph<S> needs nlohmann::json conversions for S: define "
                "to_json(nlohmann::json&, const S&) and from_json(const nlohmann::json&, S&), or "
                "NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(S, ...)");

 public:
  using Migrate = std::function<nlohmann::json(nlohmann::json state, int from_version)>;

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
    if (name.empty()) throw graph_error("trellis: a node needs a non-empty name");
    if (!nodes_.emplace(name, std::move(node)).second)
      throw graph_error("trellis: the graph already has a node named '" + name + "'");
    return *this;
  }
  Graph& entry(std::string name) {
    entry_ = std::move(name);
    return *this;
  }
  /// Steps a run may take in all (loops such as draft <-> review are bounded by it).
  Graph& max_steps(std::uint64_t n) {
    max_steps_ = n;
    return *this;
  }
  Graph& retry(RetryPolicy policy) {
    retry_ = policy;
    return *this;
  }
  /// The user's version of the graph: part of the fingerprint stored with every run.
  Graph& version(std::string v) {
    version_ = std::move(v);
    return *this;
  }
  /// The state's schema version, and how to bring older stored states up to it.
  Graph& schema(int version, Migrate migrate = {}) {
    schema_ = version;
    migrate_ = std::move(migrate);
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
    compensations_.insert_or_assign(std::move(effect_name), std::move(compensate));
    return *this;
  }
  /// Adds the built-in ModeGate hook.
  Graph& mode_gate() { return hook(std::make_shared<ModeGate<S>>()); }

  std::uint64_t max_steps() const noexcept { return max_steps_; }

  /// Identifies the graph a run was stored by: its user version and its node names.
  std::string fingerprint() const {
    std::string f = "v=" + version_ + ";nodes=";
    bool first = true;
    for (const auto& [name, node] : nodes_) {  // std::map: sorted, stable
      if (!first) f += ',';
      f += name;
      first = false;
    }
    return f;
  }

  /// The events of every run of this graph (also appended to the store's per-run log).
  EventBus& events() noexcept { return events_; }

  /// Starts run `run_id` at the entry node and runs it until it ends or pauses.
  Outcome<S> run(const std::string& run_id, S initial, Store& store, RunOptions options = {}) {
    check_run_id(run_id);
    validate();
    Lease lease = store.lease(run_id, options.worker);
    detail::LeaseKeeper keeper(store, lease.token(), options.stop);
    if (store.latest(run_id))
      throw graph_error("trellis: run '" + run_id + "' already exists; resume it instead");
    Checkpoint first;
    first.run_id = run_id;
    first.status = RunStatus::Queued;
    first.next_node = entry_;
    first.state = nlohmann::json(initial);
    first.schema = schema_;
    first.fingerprint = fingerprint();
    Clock& clock = clock_of(options);
    first.created_at = detail::now_iso8601(clock);
    store.create(first);
    Execution ex(*this, store, options, keeper, std::move(first), std::move(initial));
    ex.emit("graph_started", {}, 0.0);
    return ex.start(nullptr);
  }

  /// Continues run `run_id` from its newest checkpoint: after a crash, a cancellation or a
  /// pause (which needs `decision`: Approve, Reject or Input; it is committed before the step
  /// it lets run, and a resume after a crash during that step reuses it). A decision given to
  /// a run that is not paused is ignored.
  Outcome<S> resume(const std::string& run_id, Store& store,
                    std::optional<Resume> decision = std::nullopt, RunOptions options = {}) {
    check_run_id(run_id);
    validate();
    Lease lease = store.lease(run_id, options.worker);
    detail::LeaseKeeper keeper(store, lease.token(), options.stop);
    std::optional<Checkpoint> cp = store.latest(run_id);
    if (!cp) throw unknown_run("trellis: no run '" + run_id + "' in the store");
    if (cp->fingerprint != fingerprint())
      throw graph_mismatch("trellis: run '" + run_id + "' was stored by graph [" + cp->fingerprint +
                           "], this graph is [" + fingerprint() + "]");
    trellis::failpoint("resume.started", run_id);
    if (cp->status == RunStatus::Failed) {
      // A failed run whose compensations did not all run (a crash, or no function for them
      // in that process) finishes them; otherwise it is over.
      S state = decode_state(*cp);
      Execution ex(*this, store, options, keeper, std::move(*cp), std::move(state));
      if (auto out = ex.finish_compensations()) return *out;
    }
    if (terminal(cp->status))
      throw run_finished("trellis: run '" + run_id + "' has already " +
                         (cp->status == RunStatus::Succeeded ? "succeeded" : "failed") +
                         "; it cannot be resumed");
    if (cp->status == RunStatus::WaitingApproval && !decision)
      throw graph_error("trellis: run '" + run_id +
                        "' waits for a decision: resume it with Approve, Reject or Input");
    S state = decode_state(*cp);
    if (cp->schema != schema_) {
      // Migrated: every later checkpoint holds the state in this program's schema, and says
      // so (otherwise the next resume would migrate it again, and a failure would commit the
      // old form).
      cp->state = nlohmann::json(state);
      cp->schema = schema_;
    }
    const bool after_crash = cp->status == RunStatus::Queued || cp->status == RunStatus::Running;
    const std::string at = cp->next_node;
    Execution ex(*this, store, options, keeper, std::move(*cp), std::move(state));
    // A pause or a cancellation logs its own resumed event (in start()); a crash does not.
    if (after_crash) ex.emit("resumed", at, 0.0);
    return ex.start(decision ? &*decision : nullptr);
  }

  /// Starts run `new_id` from checkpoint `seq` of run `from_id` (time travel): same state,
  /// next node and step count, its own history from there. Resume it to run it. A checkpoint
  /// of a failed or succeeded run can be forked too (it is a new run); one that waits for
  /// approval is forked waiting.
  void fork(const std::string& from_id, std::uint64_t seq, const std::string& new_id,
            Store& store) {
    check_run_id(from_id);
    check_run_id(new_id);
    std::optional<Checkpoint> cp = store.checkpoint(from_id, seq);
    if (!cp)
      throw unknown_run("trellis: run '" + from_id + "' has no checkpoint " + std::to_string(seq));
    if (cp->fingerprint != fingerprint())
      throw graph_mismatch("trellis: run '" + from_id + "' was stored by graph [" +
                           cp->fingerprint + "], this graph is [" + fingerprint() + "]");
    Lease lease = store.lease(new_id, "fork");
    if (store.latest(new_id))
      throw graph_error("trellis: run '" + new_id + "' already exists; fork into a new id");
    Checkpoint first = *cp;
    first.run_id = new_id;
    first.seq = 0;
    first.effects.clear();         // the source run's records: the fork has none of its own yet
    if (terminal(first.status)) {  // a finished run's last checkpoint forks as a fresh start
      first.status = RunStatus::Queued;
      first.reason = Reason::none;
      first.detail.clear();
      first.decision.reset();
      if (first.next_node.empty()) first.next_node = entry_;
    } else if (first.status == RunStatus::Running || first.status == RunStatus::Cancelled) {
      first.status = RunStatus::Queued;
    }
    first.created_at = detail::now_iso8601(SystemClock::instance());
    store.create(first);
  }

  /// The state stored in `cp` (migrated to the current schema).
  S decode_state(const Checkpoint& cp) const {
    nlohmann::json j = cp.state;
    if (cp.schema > schema_)
      throw graph_mismatch("trellis: run '" + cp.run_id + "' holds state schema " +
                           std::to_string(cp.schema) + ", newer than this program's " +
                           std::to_string(schema_));
    if (cp.schema < schema_) {
      if (!migrate_)
        throw graph_mismatch("trellis: run '" + cp.run_id + "' holds state schema " +
                             std::to_string(cp.schema) + " and the graph has no migration to " +
                             std::to_string(schema_));
      j = migrate_(std::move(j), cp.schema);
    }
    try {
      return j.template get<S>();
    } catch (const nlohmann::json::exception& e) {
      throw store_error("trellis: the state of run '" + cp.run_id +
                        "' does not decode: " + e.what());
    }
  }

 private:
  void validate() const {
    if (entry_.empty()) throw graph_error("trellis: the graph has no entry node");
    if (!nodes_.contains(entry_))
      throw graph_error("trellis: the entry node '" + entry_ + "' is not in the graph");
  }

  static Clock& clock_of(const RunOptions& o) {
    return o.clock != nullptr ? *o.clock : SystemClock::instance();
  }

  /// One run call: the loop, with the run's lifecycle machine and its newest checkpoint.
  class Execution {
   public:
    Execution(Graph& g, Store& store, RunOptions& options, detail::LeaseKeeper& keeper,
              Checkpoint cp, S state)
        : g_(g),
          store_(store),
          options_(options),
          keeper_(keeper),
          clock_(clock_of(options)),
          cp_(std::move(cp)),
          state_(std::move(state)),
          life_(ctx_, cp_.status, lifecycle()),
          effects_(
              store, cp_.run_id, keeper.token(), clock_,
              [this](const char* kind, nlohmann::json detail, bool durable) {
                if (durable)
                  emit(kind, cp_.next_node, 0.0, std::move(detail));
                else
                  publish(kind, cp_.next_node, std::move(detail));
              },
              [&g] { return !g.events_.empty(); },
              [&g](std::string_view name) -> const CompensateFn* {
                auto it = g.compensations_.find(name);
                return it == g.compensations_.end() ? nullptr : &it->second;
              }) {
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

    /// Runs the loop; `decision` is applied to a paused run only (elsewhere the stored one,
    /// if any, is the one that counts).
    /// `decision`: the one given to resume(), required when the run waits for one (resume()
    /// checks); a pointer, since an optional copied through here trips g++ 12's
    /// -Wmaybe-uninitialized in run(), where the pause branch cannot be taken.
    Outcome<S> start(const Resume* decision) {
      const auto started = std::chrono::steady_clock::now();
      if (cp_.status == RunStatus::WaitingApproval) {
        if (!decision)  // resume() refuses this first; said here for the compiler's sake too
          throw graph_error("trellis: run '" + cp_.run_id + "' waits for a decision");
        if (auto out = decide(*decision)) return *out;
        emit("resumed", cp_.next_node, 0.0);
      } else if (cp_.status == RunStatus::Cancelled) {
        change(RunEvent::Start);
        emit("resumed", cp_.next_node, 0.0);
      } else {
        if (cp_.status == RunStatus::Queued) change(RunEvent::Start);
      }
      Outcome<S> out = loop();
      (void)started;
      return out;
    }

    /// Runs the compensations a failed run still owes; nullopt when it owes none.
    std::optional<Outcome<S>> finish_compensations() {
      const detail::CompensationReport report = effects_.compensate();
      if (report.due == 0) return std::nullopt;
      return outcome(report);
    }

    /// An event for the bus only (not the store's log).
    void publish(const char* kind, const std::string& node, nlohmann::json detail) {
      RunEventRecord e{kind, cp_.run_id,       cp_.step, node, detail::now_iso8601(clock_),
                       0.0,  std::move(detail)};
      try {
        g_.events_(e);
      } catch (const std::exception&) {
      }
    }

    /// step_completed's detail: the next node, and the effects replayed from receipts.
    nlohmann::json step_detail(nlohmann::json next) const {
      nlohmann::json d = {{"next", std::move(next)}};
      if (!effects_.replayed().empty()) d["replayed"] = effects_.replayed();
      return d;
    }

    void emit(const char* kind, const std::string& node, double ms,
              nlohmann::json detail = nlohmann::json::object()) {
      RunEventRecord e{kind, cp_.run_id,       cp_.step, node, detail::now_iso8601(clock_),
                       ms,   std::move(detail)};
      try {
        store_.append_event(cp_.run_id, nlohmann::json(e));
      } catch (const std::exception&) {  // the log is observability: it never fails a run
      }
      try {
        g_.events_(e);
      } catch (const std::exception&) {
      }
    }

   private:
    /// Applies a decision to a paused run, committing it first (the audit trail, and what the
    /// step sees again if it reruns after a crash); returns an outcome when it ends the run.
    std::optional<Outcome<S>> decide(const Resume& given) {
      Decision decision{given, detail::now_iso8601(clock_), cp_.seq,
                        cp_.interrupt.value_or(Interrupt{})};
      const std::optional<ApprovalRequest>& request = decision.request.approval;
      if (request && request->expires_at && clock_.now() > *request->expires_at)
        return fail(Reason::approval_expired,
                    "the approval request expired at " + detail::format_time(*request->expires_at),
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

    /// The decision_recorded event of the decision the newest checkpoint holds.
    void emit_decision() {
      nlohmann::json d = *cp_.decision;
      d.erase("request");  // in the checkpoint; the event says which one (answers)
      d.erase("value");
      emit("decision_recorded", cp_.next_node, 0.0, std::move(d));
    }

    Outcome<S> loop() {
      for (;;) {
        keeper_.check();  // a lost lease stops the run where it is (run_busy)
        if (options_.stop.stop_requested()) {
          change(RunEvent::Cancel);
          Checkpoint next = base();
          next.status = RunStatus::Cancelled;
          commit(std::move(next));
          emit("cancelled", cp_.next_node, 0.0);
          return outcome();
        }
        if (cp_.step >= g_.max_steps_)
          return fail(Reason::max_steps,
                      "stopped after " + std::to_string(cp_.step) + " steps (max_steps)");
        auto it = g_.nodes_.find(cp_.next_node);
        if (it == g_.nodes_.end())
          return fail(Reason::unknown_node, "no node named '" + cp_.next_node + "'");
        Node<S>& node = *it->second;
        const std::string name(node.name());
        const NodeInfo info{name, node.required_mode()};
        const PermissionMode mode =
            options_.mode != nullptr ? options_.mode->get() : PermissionMode::Default;
        // The rerun of a node that interrupted keys its effects by the step of its first pause
        // in a row, so what it did before pausing replays (kept until the next step).
        const bool rerun = !cp_.resume_node.empty() && cp_.resume_node == name && cp_.step > 0;
        const std::uint64_t effect_step = rerun ? cp_.rerun_step.value_or(cp_.step - 1) : cp_.step;
        effects_.begin(name, effect_step);
        // The stored decision holds for every attempt of this step (a retry keeps it, and so
        // does a rerun after a crash), not later ones: the step's commit clears it.
        RunContext ctx(cp_.run_id, name, cp_.step, cp_.attempt, mode, keeper_.stop_token(),
                       cp_.decision ? std::optional<Resume>(cp_.decision->given) : std::nullopt,
                       clock_, &effects_);
        emit("step_started", name, 0.0);
        const auto t0 = std::chrono::steady_clock::now();

        std::optional<NextStep> next;
        S work = state_;
        for (const auto& hook : g_.hooks_) {
          BeforeDecision<S> d = hook->before(info, work, ctx);
          if (auto* m = std::get_if<Modify<S>>(&d)) {
            work = std::move(m->state);
          } else if (auto* deny = std::get_if<Deny>(&d)) {
            return fail(Reason::denied, deny->reason);
          } else if (auto* replace = std::get_if<Replace>(&d)) {
            next = std::move(replace->step);
            break;
          }
        }
        if (!next) {
          std::exception_ptr thrown;
          try {
            next = node.run(work, ctx);
          } catch (...) {
            thrown = std::current_exception();
          }
          keeper_.check();  // the lease was lost while the node ran: nothing of it is committed
          // What an effect ran into wins over what the node made of it (it may have caught
          // it): a store failure stops the run at its last checkpoint (resume applies the
          // policies), a cut-off at_most_once effect fails it.
          effects_.rethrow_if_broken();
          if (effects_.reconciliation())
            return fail(Reason::reconciliation_required, effects_.reconciliation()->what());
          if (thrown) {
            try {
              std::rethrow_exception(thrown);
            } catch (const transient_error& e) {
              if (auto out = retry_later(name, e.what())) return *out;
              continue;
            } catch (const store_error&) {
              throw;  // infrastructure: the run is not failed, it stops at its last checkpoint
            } catch (const persist_error&) {
              throw;
            } catch (const std::exception& e) {
              return fail(Reason::node_error, "node '" + name + "' threw: " + e.what());
            }
          }
        }
        for (const auto& hook : g_.hooks_) next = hook->after(info, work, std::move(*next), ctx);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();

        if (auto* go = std::get_if<Goto>(&*next)) {
          if (!g_.nodes_.contains(go->node))
            return fail(Reason::unknown_node, "node '" + name + "' named a next node '" + go->node +
                                                  "' that the graph does not have");
        }
        state_ = std::move(work);
        if (auto* go = std::get_if<Goto>(&*next)) {
          Checkpoint c = base();
          c.status = RunStatus::Running;
          c.next_node = go->node;
          c.step = cp_.step + 1;
          c.attempt = 0;
          c.state = nlohmann::json(state_);
          c.resume_node.clear();
          c.rerun_step.reset();
          c.decision.reset();
          commit(std::move(c));
          emit("step_completed", name, ms, step_detail(go->node));
        } else if (std::holds_alternative<Halt>(*next)) {
          change(RunEvent::Succeed);
          Checkpoint c = base();
          c.status = RunStatus::Succeeded;
          c.next_node.clear();
          c.resume_node.clear();
          c.rerun_step.reset();
          c.decision.reset();
          c.step = cp_.step + 1;
          c.attempt = 0;
          c.state = nlohmann::json(state_);
          commit(std::move(c));
          emit("step_completed", name, ms, step_detail(nullptr));
          emit("graph_completed", name, 0.0);
          return outcome();
        } else {
          Interrupt& pause = std::get<Interrupt>(*next);
          change(RunEvent::Interrupt);
          Checkpoint c = base();
          c.status = RunStatus::WaitingApproval;
          c.next_node = pause.then.empty() ? name : pause.then;
          c.resume_node = name;
          c.rerun_step = effect_step;
          c.step = cp_.step + 1;
          c.attempt = 0;
          c.state = nlohmann::json(state_);
          c.interrupt = pause;
          c.decision.reset();  // the new pause waits for a decision of its own
          commit(std::move(c));
          emit("step_completed", name, ms, step_detail(cp_.next_node));
          emit("interrupted", name, 0.0, {{"reason", pause.reason}});
          trellis::failpoint("approval.waiting", cp_.run_id);
          return outcome();
        }
      }
    }

    /// A transient failure: count it (committed), then wait the backoff, or give up.
    std::optional<Outcome<S>> retry_later(const std::string& node, const std::string& what) {
      const std::uint32_t failed = cp_.attempt + 1;
      if (failed >= g_.retry_.attempts)
        return fail(Reason::retries_exhausted,
                    "node '" + node + "' failed " + std::to_string(failed) + " times: " + what);
      Checkpoint c = base();
      c.status = RunStatus::Running;
      c.attempt = failed;
      commit(std::move(c));
      const auto wait = backoff(g_.retry_, failed, options_.random());
      emit("retry_scheduled", node, 0.0,
           {{"attempt", failed}, {"backoff_ms", wait.count()}, {"error", what}});
      clock_.sleep_for(wait, keeper_.stop_token());
      return std::nullopt;
    }

    /// Fails the run; `decision`: the decision on the pause that fails it, stored with it.
    Outcome<S> fail(Reason reason, std::string detail,
                    std::optional<Decision> decision = std::nullopt) {
      change(RunEvent::Fail);
      Checkpoint c = base();
      c.status = RunStatus::Failed;
      c.reason = reason;
      c.detail = detail;
      const bool decided = decision.has_value();
      if (decided) c.decision = std::move(decision);
      commit(std::move(c));
      if (decided) emit_decision();
      emit("graph_failed", cp_.next_node, 0.0,
           {{"reason", std::string(enumeration<Reason>::name(reason))}, {"detail", detail}});
      // The failure is committed first, so a crash during the compensations leaves a failed
      // run that resume() finishes (finish_compensations).
      return outcome(effects_.compensate());
    }

    /// The next checkpoint, starting as a copy of the newest.
    Checkpoint base() const {
      Checkpoint c = cp_;
      c.reason = Reason::none;
      c.detail.clear();
      if (c.status != RunStatus::WaitingApproval) c.interrupt.reset();
      return c;
    }

    /// Commits the next checkpoint, with the keys of the effects the attempt made.
    void commit(Checkpoint next) {
      next.seq = cp_.seq + 1;
      next.created_at = detail::now_iso8601(clock_);
      if (next.status != RunStatus::WaitingApproval) next.interrupt.reset();
      next.effects = effects_.take_keys();
      store_.commit(next, cp_.seq, keeper_.token());
      cp_ = std::move(next);
      trellis::failpoint("step.after_commit", cp_.run_id);
    }

    void change(RunEvent e) {
      if (!life_.send(e))
        throw graph_error("trellis: run '" + cp_.run_id + "' cannot go from " +
                          std::string(enumeration<RunStatus>::name(life_.state())) + " on " +
                          std::string(enumeration<RunEvent>::name(e)));
    }

    Outcome<S> outcome(const detail::CompensationReport& report) const {
      Outcome<S> out = outcome();
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

    Outcome<S> outcome() const {
      Outcome<S> out;
      out.status = cp_.status;
      out.reason = cp_.reason;
      out.detail = cp_.detail;
      out.steps = cp_.step;
      out.state = state_;
      if (cp_.status == RunStatus::WaitingApproval) out.interrupt = cp_.interrupt;
      return out;
    }

    Graph& g_;
    Store& store_;
    RunOptions& options_;
    detail::LeaseKeeper& keeper_;
    Clock& clock_;
    Checkpoint cp_;
    S state_;
    trellis::Context ctx_;
    StateMachine<RunStatus, RunEvent> life_;
    Subscription status_sub_;
    std::mt19937_64 engine_;
    detail::EffectRunner effects_;
  };

  std::map<std::string, std::unique_ptr<Node<S>>, std::less<>> nodes_;
  std::string entry_;
  std::uint64_t max_steps_ = 1000;
  RetryPolicy retry_;
  std::string version_ = "1";
  int schema_ = 1;
  Migrate migrate_;
  std::vector<std::shared_ptr<Hook<S>>> hooks_;
  std::map<std::string, CompensateFn, std::less<>> compensations_;
  EventBus events_;
};

}  // namespace trellis::agent
