// Operators' records (operations.hpp): decisions, cancellations, reconciliations and forks,
// committed to the store without the graph.

#include "trellis/agent/operations.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>
#include <utility>

#include "trellis/agent/chain.hpp"
#include "trellis/agent/detail/run_loop.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/event_kind.hpp"
#include "trellis/agent/run_event.hpp"
#include "trellis/agent/subgraph.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

namespace {

std::string name_of(RunStatus s) { return std::string(enumeration<RunStatus>::name(s)); }

std::string quoted(std::string_view run_id) { return "run '" + std::string(run_id) + "'"; }

Checkpoint newest(Store& store, std::string_view run_id) {
  std::optional<Checkpoint> cp = store.latest(run_id);
  if (!cp) throw unknown_run("trellis: no " + quoted(run_id) + " in the store");
  return std::move(*cp);
}

/// Throws run_conflict unless the lifecycle lets a run in `status` take `event`.
RunStatus allowed(std::string_view run_id, RunStatus status, RunEvent event, const char* what) {
  const std::optional<RunStatus> to = lifecycle()(status, event);
  if (!to)
    throw run_conflict("trellis: " + quoted(run_id) + " is " + name_of(status) + ": cannot " +
                       what);
  return *to;
}

/// The checkpoint after `cp`, as an operator commits it: no reason, no effects of its own.
Checkpoint following(const Checkpoint& cp, Clock& clock) {
  Checkpoint c = cp;
  c.seq = cp.seq + 1;
  c.created_at = detail::now_iso8601(clock);
  c.reason = Reason::none;
  c.detail.clear();
  c.effects.clear();
  c.receipts.clear();
  c.reconciliation.reset();
  c.forked_from.reset();
  c.wake_at.clear();      // a decision, a cancellation, a reconciliation: the timer is over
  c.prev_hash = cp.hash;  // sealed (chain.hpp) once complete, before its commit
  c.hash.clear();
  return c;
}

/// Appends event `kind` to the run's log, as the run loop logs its own (the log is
/// observability: a failure to write it never undoes the operation).
void log_event(Store& store, const Checkpoint& cp, EventKind kind, nlohmann::json detail) {
  const RunEventRecord e{std::string(to_string(kind)),
                         cp.run_id,
                         cp.step,
                         cp.next_node,
                         cp.created_at,
                         0.0,
                         std::move(detail)};
  try {
    store.append_event(cp.run_id, nlohmann::json(e));
  } catch (const std::exception&) {
  }
}

/// Reads the run before its lease is taken, so a run id that names no run is refused before
/// anything (a lease file) is written for it.
void must_exist(Store& store, std::string_view run_id) { (void)newest(store, run_id); }

std::string who(const Resume& decision) {
  return std::visit([](const auto& d) { return d.reviewer; }, decision);
}

}  // namespace

Checkpoint record_decision(Store& store, std::string_view run_id, std::string_view request,
                           const Resume& decision, Clock& clock) {
  check_run_id(run_id);
  std::uint64_t seq = 0;
  const auto [end, ec] = std::from_chars(request.data(), request.data() + request.size(), seq);
  if (request.empty() || ec != std::errc() || end != request.data() + request.size())
    throw unknown_request("trellis: '" + std::string(request) + "' is not a request id of " +
                          quoted(run_id) +
                          " (request ids are numbers: see `trellis approvals ls`)");
  const std::string by = who(decision);
  must_exist(store, run_id);
  Lease lease = store.lease(run_id, by.empty() ? "a decision" : "a decision by " + by);
  const Checkpoint cp = newest(store, run_id);
  if (cp.status != RunStatus::WaitingApproval || cp.seq != seq) {
    std::optional<Checkpoint> asked = cp.seq == seq ? cp : store.checkpoint(run_id, seq);
    if (!asked || asked->status != RunStatus::WaitingApproval)
      throw unknown_request("trellis: " + quoted(run_id) + " has no request " +
                            std::string(request));
    throw request_superseded("trellis: request " + std::string(request) + " of " + quoted(run_id) +
                             " is no longer pending: the run is " + name_of(cp.status) +
                             " at checkpoint " + std::to_string(cp.seq) +
                             (cp.status == RunStatus::WaitingApproval
                                  ? " (its pending request is " + request_id(cp) + ")"
                                  : std::string()));
  }
  const Interrupt asked_for = cp.interrupt.value_or(Interrupt{});
  if (asked_for.approval && asked_for.approval->expires_at &&
      clock.now() > *asked_for.approval->expires_at)
    throw request_expired("trellis: request " + std::string(request) + " of " + quoted(run_id) +
                          " expired at " + detail::format_time(*asked_for.approval->expires_at));
  Checkpoint next = following(cp, clock);
  next.interrupt.reset();
  next.decision = Decision{decision, next.created_at, cp.seq, asked_for};
  if (const auto* reject = std::get_if<Reject>(&decision)) {
    next.status = allowed(run_id, cp.status, RunEvent::Fail, "reject it");
    next.reason = Reason::approval_rejected;
    next.detail = "rejected" + (reject->reviewer.empty() ? "" : " by " + reject->reviewer) +
                  (reject->reason.empty() ? "" : ": " + reject->reason);
  } else {
    next.status = allowed(run_id, cp.status, RunEvent::Decide, "decide on it");
  }
  seal(next, cp.hash);
  store.commit(next, cp.seq, lease.token());
  nlohmann::json detail = *next.decision;  // as the run loop logs it: no request, no input value
  detail.erase("request");
  detail.erase("value");
  log_event(store, next, EventKind::decision_recorded, std::move(detail));
  lease = Lease();  // released: a parent waiting on this run (subgraph.hpp) goes on too
  detail::wake_parents(store, std::string(run_id), std::string(request), clock);
  return next;
}

CancelResult cancel_run(Store& store, std::string_view run_id, std::string by, std::string reason,
                        Clock& clock) {
  check_run_id(run_id);
  Checkpoint cp = newest(store, run_id);
  if (terminal(cp.status))
    throw run_conflict("trellis: " + quoted(run_id) + " has already " +
                       (cp.status == RunStatus::Succeeded ? "succeeded" : "failed") +
                       ": there is nothing to cancel");
  if (cp.status == RunStatus::Cancelled && store.cancel_requests(run_id, cp.cancel_handled).empty())
    return CancelResult{0, false, RunStatus::Cancelled};
  CancelResult out;
  out.request = store.request_cancel(
      CancelRequest{std::string(run_id), 0, by, reason, detail::now_iso8601(clock)});
  out.status = cp.status;
  // Its unfinished child runs (subgraph.hpp) are cancelled with it.
  for (const std::string& child : child_runs(store, run_id)) {
    try {
      cancel_run(store, child, by, "its parent run '" + std::string(run_id) + "' was cancelled",
                 clock);
    } catch (const run_conflict&) {  // it ended meanwhile
    }
  }
  std::optional<Lease> lease;
  // Another operator's call holds a run for milliseconds: wait that out. A run call holds it
  // for as long as it runs, and answers the request itself (between steps, or when it pauses).
  for (int attempt = 0; !lease; ++attempt) {
    try {
      lease.emplace(store.lease(run_id, by.empty() ? "a cancellation" : "a cancellation by " + by));
    } catch (const run_busy&) {
      if (attempt == 4) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(10) * (attempt + 1));
    }
  }
  cp = newest(store, run_id);  // it may have moved before the lease was free
  out.status = cp.status;
  if (!lifecycle().accepts(cp.status, RunEvent::Cancel)) return out;  // ended meanwhile
  Checkpoint next = following(cp, clock);
  next.status = RunStatus::Cancelled;
  // A pause keeps its interrupt: resuming the cancelled run pauses it again (graph.hpp).
  next.cancel_handled = out.request;
  next.detail = "cancelled" + (by.empty() ? std::string() : " by " + by) +
                (reason.empty() ? std::string() : ": " + reason);
  seal(next, cp.hash);
  store.commit(next, cp.seq, lease->token());
  log_event(store, next, EventKind::cancelled,
            {{"request", out.request}, {"by", by}, {"reason", reason}});
  out.cancelled_now = true;
  out.status = RunStatus::Cancelled;
  return out;
}

Checkpoint reconcile_run(Store& store, std::string_view run_id, Reconciliation r, Clock& clock) {
  check_run_id(run_id);
  must_exist(store, run_id);
  Lease lease =
      store.lease(run_id, r.by.empty() ? "a reconciliation" : "a reconciliation by " + r.by);
  const Checkpoint cp = newest(store, run_id);
  if (cp.status != RunStatus::Failed || cp.reason != Reason::reconciliation_required)
    throw run_conflict("trellis: " + quoted(run_id) + " is " + name_of(cp.status) +
                       (cp.reason == Reason::none
                            ? std::string()
                            : " (" + std::string(enumeration<Reason>::name(cp.reason)) + ")") +
                       ": only a run that failed with reconciliation_required is reconciled");
  std::optional<EffectRecord> rec = store.effect(run_id, r.key);
  if (!rec)
    throw run_conflict("trellis: " + quoted(run_id) + " has no effect with key '" + r.key + "'");
  for (const EffectRecord& e : store.effects(run_id))
    if (!e.compensates.empty())
      throw run_conflict("trellis: " + quoted(run_id) + ": its compensations have run (key " +
                         e.key + "), so it cannot continue; fork it instead");
  r.at = detail::now_iso8601(clock);
  const bool in_doubt = rec->status == EffectStatus::started;
  // A reconciliation recorded since the run failed (one cut off before its checkpoint) is
  // finished; an older one belongs to an earlier failure, and the key names nothing in doubt.
  const bool unfinished = rec->reconciliation && rec->reconciliation->at >= cp.created_at;
  if (!in_doubt && !unfinished)
    throw run_conflict("trellis: effect '" + rec->name + "' (key " + r.key + ") of " +
                       quoted(run_id) + " is not in doubt: it is " +
                       std::string(enumeration<EffectStatus>::name(rec->status)));
  if (in_doubt) {
    EffectRecord receipt = *rec;
    receipt.finished_at = r.at;
    if (r.happened) {
      receipt.status = EffectStatus::succeeded;
      receipt.result = r.result;
      receipt.error.clear();
    } else {
      receipt.status = EffectStatus::transient;
      receipt.result = nullptr;
      receipt.error = "reconciled: it did not happen" + (r.by.empty() ? "" : " (by " + r.by + ")");
    }
    receipt.reconciliation = r;
    seal(receipt, cp.hash);
    store.put_effect(receipt, lease.token());
    rec = std::move(receipt);
  } else {
    r = *rec->reconciliation;  // a reconciliation cut off between its two writes: finished
  }
  Checkpoint next = following(cp, clock);
  next.status = allowed(run_id, cp.status, RunEvent::Reconcile, "reconcile it");
  next.reconciliation = std::move(r);
  // Reopening the run answers the cancel requests made so far (they were for the failed run).
  if (const auto asked = store.cancel_requests(run_id, cp.cancel_handled); !asked.empty())
    next.cancel_handled = asked.back().id;
  // It names the record it replaced, so the chain holds its new receipt (chain.hpp).
  next.effects = {rec->key};
  next.receipts = {rec->hash};
  seal(next, cp.hash);
  store.commit(next, cp.seq, lease.token());
  log_event(store, next, EventKind::reconciled, *next.reconciliation);
  return next;
}

Checkpoint fork_run(Store& store, std::string_view from_id, std::uint64_t seq,
                    std::string_view new_id, Clock& clock) {
  return fork_run(store, from_id, seq, new_id, std::string(), std::string(), clock);
}

Checkpoint fork_run(Store& store, std::string_view from_id, std::uint64_t seq,
                    std::string_view new_id, std::string by, std::string reason, Clock& clock) {
  check_run_id(from_id);
  check_run_id(new_id);
  std::optional<Checkpoint> cp = store.checkpoint(from_id, seq);
  if (!cp)
    throw unknown_run("trellis: " + quoted(from_id) + " has no checkpoint " + std::to_string(seq));
  std::string entry;
  if (terminal(cp->status) && cp->next_node.empty()) {
    std::optional<Checkpoint> first = store.checkpoint(from_id, 0);
    if (!first)
      throw run_conflict("trellis: " + quoted(from_id) +
                         " lost its first checkpoint to "
                         "retention: fork it with its graph (Graph::fork), which knows the entry");
    entry = first->next_node;
  }
  return detail::fork_checkpoint(store, std::move(*cp), new_id, entry, clock,
                                 ForkOrigin{.by = std::move(by), .reason = std::move(reason)});
}

std::vector<PendingApproval> pending_approvals(Store& store) {
  std::vector<PendingApproval> out;
  for (RunSummary& s : store.list_runs(RunFilter{.status = RunStatus::WaitingApproval})) {
    std::optional<Checkpoint> cp = store.latest(s.run_id);
    if (!cp || cp->status != RunStatus::WaitingApproval) continue;  // decided meanwhile
    PendingApproval p{summarize(*cp, s.created_at), cp->interrupt.value_or(Interrupt{}),
                      cp->resume_node};
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace trellis::agent
