// SPDX-License-Identifier: MIT
// Child runs (subgraph.hpp): the part of subgraph() that does not depend on the child's state
// type.

#include "trellis/agent/subgraph.hpp"

#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>

#include <trellis/io/checksum.hpp>

#include "trellis/agent/chain.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent {

namespace {

/// The effect that records a child run's id in the parent's step.
constexpr std::string_view link_effect = "trellis.subgraph";

bool id_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '-' || ch == '_' || ch == '.';
}

/// "YYYY-MM-DDTHH:MM:SS.mmmZ" (Checkpoint::wake_at) as a time; nullopt when it is not that.
std::optional<Clock::time_point> parse_utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &y, &mo, &d, &h, &mi, &s, &ms) < 6)
    return std::nullopt;
  using namespace std::chrono;
  const sys_days date =
      year{y} / month{static_cast<unsigned>(mo)} / std::chrono::day{static_cast<unsigned>(d)};
  return Clock::time_point(date) + hours(h) + minutes(mi) + seconds(s) + milliseconds(ms);
}

/// The parent's interrupt reason that stands for request `request` of child `child` (its
/// prefix: the child's own reason follows).
std::string surfaced(std::string_view child, std::string_view request) {
  return "subgraph " + std::string(child) + " request " + std::string(request) + ": ";
}

detail::ChildStatus status_of(const Checkpoint& cp) {
  detail::ChildStatus s;
  s.status = cp.status;
  s.reason = cp.reason;
  s.detail = cp.detail;
  if (cp.status == RunStatus::WaitingApproval) {
    s.interrupt = cp.interrupt;
    s.request_id = request_id(cp);
  }
  s.wake_at = cp.wake_at;
  return s;
}

/// The decision the parent's node reruns with, when the parent's pause it answers stood for
/// the child's pause in `cp` (the same request, or for a child cancelled at its pause the same
/// question); else nullptr (not the child's to take).
const Resume* forwarded(const RunContext& ctx, Store& store, const std::string& child,
                        const Checkpoint& cp) {
  if (!ctx.resume() || !cp.interrupt) return nullptr;
  const std::optional<Checkpoint> parent = store.latest(ctx.run_id());
  if (!parent || !parent->decision) return nullptr;
  const Interrupt& asked = parent->decision->request;
  if (cp.status == RunStatus::WaitingApproval)
    return asked.reason.starts_with(surfaced(child, request_id(cp))) ? &*ctx.resume() : nullptr;
  const bool same = asked.reason.starts_with("subgraph " + child + " request ") &&
                    asked.reason.ends_with(": " + cp.interrupt->reason) &&
                    asked.approval == cp.interrupt->approval;
  return same ? &*ctx.resume() : nullptr;
}

/// The child's run options: the parent's, with the parent node's stop token.
RunOptions child_options(const RunContext& ctx, const RunOptions& parent) {
  RunOptions o;
  o.mode = parent.mode;
  o.stop = ctx.stop_token();
  o.clock = &ctx.clock();
  o.worker = parent.worker;
  o.cancel_poll = parent.cancel_poll;
  o.durable_waits = parent.durable_waits;
  o.yield = parent.yield;
  o.fanout_pool = parent.fanout_pool;
  return o;
}

}  // namespace

std::string child_run_id(std::string_view parent, std::string_view node, std::uint64_t step,
                         std::uint32_t ordinal) {
  std::string id = std::string(parent) + "." + std::string(node) + "." + std::to_string(step);
  if (ordinal > 0) id += "." + std::to_string(ordinal);
  bool ok = id.size() <= 128;
  for (const char ch : node) ok = ok && id_char(ch);
  if (ok) return id;
  std::string hash;
  trellis::detail::sha256_hex_into(id, hash);
  return std::string(parent.substr(0, 128 - 1 - 32)) + "." + hash.substr(0, 32);
}

std::vector<std::string> child_runs(Store& store, std::string_view parent) {
  std::vector<std::string> out;
  for (const EffectRecord& r : store.effects(parent)) {
    if (r.name != link_effect || r.status != EffectStatus::succeeded) continue;
    if (!r.result.is_object() || !r.result.contains("child")) continue;
    const std::string child = r.result.at("child").get<std::string>();
    const std::optional<Checkpoint> cp = store.latest(child);
    if (cp && !terminal(cp->status)) out.push_back(child);
  }
  return out;
}

std::vector<std::string> surfacing_runs(Store& store, const std::string& child,
                                        const std::string& request) {
  std::vector<std::string> out;
  std::string run = child, asked = request;
  for (bool found = true; found;) {
    found = false;
    for (std::size_t dot = run.rfind('.'); dot != std::string::npos && dot > 0;
         dot = run.rfind('.', dot - 1)) {
      const std::string parent = run.substr(0, dot);
      const std::optional<Checkpoint> cp = store.latest(parent);
      if (!cp || cp->status != RunStatus::WaitingApproval || !cp->interrupt ||
          !cp->interrupt->reason.starts_with(surfaced(run, asked)))
        continue;
      out.push_back(parent);
      run = parent;
      asked = request_id(*cp);
      found = true;
      break;
    }
  }
  return out;
}

namespace detail {

ChildStep advance_child(RunContext& ctx, ChildGraph& child) {
  Store* store = ctx.store();
  const RunOptions* parent = ctx.options();
  if (store == nullptr || parent == nullptr)
    throw graph_error("trellis: node '" + std::string(ctx.node()) +
                      "' ran a subgraph outside a run call (its RunContext has no store)");
  const std::string fingerprint = child.fingerprint();
  // The link, an effect of the parent's step: its receipt names the child, so every rerun of
  // the step (keyed alike) finds the same one.
  const nlohmann::json link = ctx.effect(
      link_effect, {{"graph", fingerprint}}, EffectPolicy::idempotent, [](const EffectCall& call) {
        return nlohmann::json{
            {"child", child_run_id(call.run_id, call.node, call.step, call.ordinal)}};
      });
  ChildStep out;
  out.run_id = link.at("child").get<std::string>();
  const std::string& id = out.run_id;
  const RunOptions options = child_options(ctx, *parent);

  ChildStatus st;
  try {
    if (std::optional<Checkpoint> cp = store->latest(id); !cp) {
      st = child.start(id, *store, options);
    } else if (cp->fingerprint != fingerprint) {
      throw graph_mismatch("trellis: child run '" + id + "' was stored by graph [" +
                           cp->fingerprint + "], the subgraph is [" + fingerprint + "]");
    } else if (cp->status == RunStatus::Succeeded) {
      child.succeeded(*cp);
      st = status_of(*cp);
    } else if (cp->status == RunStatus::Failed) {
      st = status_of(*cp);
    } else if (cp->status == RunStatus::WaitingApproval) {
      const std::optional<ApprovalRequest>& request =
          cp->interrupt ? cp->interrupt->approval : std::nullopt;
      const bool expired =
          request && request->expires_at && ctx.clock().now() > *request->expires_at;
      if (const Resume* d = forwarded(ctx, *store, id, *cp))
        st = child.resume(id, *store, d, options);
      else if (expired)
        st = child.resume(id, *store, nullptr, options);  // fails it: approval_expired
      else
        st = status_of(*cp);
    } else {  // Queued, Running (a crash), Waiting (not due: nothing written), Cancelled
      // A child cancelled at its pause waits again when resumed; the parent's decision on it
      // (asked before the cancellation) is its answer.
      const Resume* d =
          cp->status == RunStatus::Cancelled ? forwarded(ctx, *store, id, *cp) : nullptr;
      st = child.resume(id, *store, d, options);
    }
  } catch (const run_busy&) {
    // Another process advances the child (a worker that has the child graph, or an operator's
    // resume): the parent waits a moment, durably, and looks again.
    out.status = RunStatus::Running;
    out.wait = Sleep{.duration = std::chrono::seconds(1), .replay = true};
    return out;
  }
  out.status = st.status;

  switch (st.status) {
    case RunStatus::Succeeded:
      break;
    case RunStatus::Failed:
      throw subgraph_failed(id, "trellis: child run '" + id + "' failed (" +
                                    std::string(enumeration<Reason>::name(st.reason)) + ")" +
                                    (st.detail.empty() ? "" : ": " + st.detail));
    case RunStatus::WaitingApproval: {
      Interrupt pause = st.interrupt.value_or(Interrupt{});
      pause.reason = surfaced(id, st.request_id) + pause.reason;
      pause.then.clear();  // the parent's node reruns (and forwards the decision)
      out.wait = std::move(pause);
      break;
    }
    case RunStatus::Waiting: {
      Sleep wait{.replay = true};
      if (std::optional<Clock::time_point> at = parse_utc(st.wake_at)) wait.until = *at;
      out.wait = wait;
      break;
    }
    case RunStatus::Cancelled:
      if (!ctx.stop_requested()) {
        // The child alone was cancelled while the parent ran it: the parent is cancelled too
        // (the loop answers this request when the node throws).
        store->request_cancel(CancelRequest{std::string(ctx.run_id()), 0, "child run " + id,
                                            "its child run was cancelled",
                                            now_iso8601(ctx.clock())});
      }
      throw subgraph_failed(id, "trellis: child run '" + id + "' was cancelled", true);
    default:  // Queued, Running: the child gave its run back (yield); look again at once
      out.wait = Sleep{.replay = true};
      break;
  }
  return out;
}

void wake_parents(Store& store, const std::string& child, const std::string& request,
                  Clock& clock) {
  for (std::size_t dot = child.rfind('.'); dot != std::string::npos && dot > 0;
       dot = child.rfind('.', dot - 1)) {
    const std::string parent = child.substr(0, dot);
    const std::string asked = surfaced(child, request);
    const auto waits = [&](const std::optional<Checkpoint>& cp) {
      return cp && cp->status == RunStatus::WaitingApproval && cp->interrupt &&
             cp->interrupt->reason.starts_with(asked);
    };
    if (!waits(store.latest(parent))) continue;
    // A process that holds the parent (a resume of it, a worker) is in its node, looking at
    // this child: if it read the child before the decision it is about to commit its pause
    // again. So the parent is asked for again a while (its step is short: it only looks at the
    // child) and woken once it is paused; after 5 s it is left to its process.
    std::optional<Lease> lease;
    for (int tries = 0; !lease; ++tries) {
      try {
        lease.emplace(store.lease(parent, "a decision on its child run " + child));
      } catch (const run_busy&) {
        if (tries == 50) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    std::optional<Checkpoint> cp = store.latest(parent);
    if (!waits(cp)) return;
    Checkpoint next = *cp;
    next.seq = cp->seq + 1;
    next.created_at = now_iso8601(clock);
    next.status = RunStatus::Queued;  // its node reruns (resume_node kept: the same child)
    next.interrupt.reset();
    next.effects.clear();
    next.receipts.clear();
    next.wake_at.clear();
    next.forked_from.reset();  // only in a fork's first checkpoint
    seal(next, cp->hash);      // a copy carries the hash of the checkpoint it was copied from
    store.commit(next, cp->seq, lease->token());
    lease.reset();
    wake_parents(store, parent, request_id(*cp), clock);  // a grandparent surfacing it
    return;
  }
}

}  // namespace detail

}  // namespace trellis::agent
