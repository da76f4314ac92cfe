#pragma once
/// @file
/// What a node returns: where the run goes next. `Goto{"review"}` names the next node (an
/// unknown name fails the run with reason unknown_node), `Halt{}` ends it successfully,
/// `Interrupt{...}` pauses it until a resume (optionally asking for an approval), and
/// `Sleep{...}` pauses it on a durable timer (the run is Waiting until the time comes).

#include <chrono>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "trellis/agent/reason.hpp"

namespace trellis::agent {

/// Continue at the named node.
struct Goto {
  std::string node;
};

/// End the run: it succeeded. `Halt{.reason = Reason::completed_with_errors, .detail = "..."}`
/// ends it Succeeded with that reason (some of its parts failed and were let go: the detail
/// says which; a detail without a reason is not kept); any other reason fails the run with
/// Reason::node_error, naming the node.
struct Halt {
  Reason reason = Reason::none;
  std::string detail = {};

  friend bool operator==(const Halt&, const Halt&) = default;
};

/// A request for a human decision, stored with the paused run.
struct ApprovalRequest {
  std::string action;             ///< what will happen if approved ("apply the revision")
  nlohmann::json proposed_input;  ///< the exact proposed action's input
  std::string risk_reason;        ///< why a person must look
  std::optional<std::chrono::system_clock::time_point> expires_at;  ///< after it: approval_expired
};

/// Pause the run. On resume it continues at `then` (empty: the interrupting node runs again,
/// and RunContext::resume() tells it the decision or the input).
struct Interrupt {
  std::string reason;
  std::optional<ApprovalRequest> approval = std::nullopt;
  std::string then = {};
};

/// Pause the run on a durable timer: the step commits (its state, one more step) with the run
/// Waiting until `until` (when set) or `duration` after the commit, by the run call's clock;
/// then it continues at `then` (empty: the sleeping node runs again). The timer lives in the
/// store: it survives restarts and fires once, when a Worker (worker.hpp) claims the due run,
/// or when resume() is called at or after the time (before it, resume() returns the run
/// Waiting and writes nothing). `Sleep{.duration = 10min, .then = "poll"}`. A time past year
/// 2200 (a sleep "forever": the clock's nanoseconds end in 2262) wakes on 2200-01-01.
///
/// `replay`: the sleeping node's rerun (`then` empty or the node itself) keys its effects by
/// this step's, as the rerun after an Interrupt does, so what the node did before sleeping
/// replays instead of running again (a node that started something and waits for it:
/// subgraph.hpp waits for a child run so). Without it the rerun is a new step with new keys.
struct Sleep {
  std::chrono::system_clock::duration duration{};
  std::optional<std::chrono::system_clock::time_point> until = std::nullopt;
  std::string then = {};
  bool replay = false;
};

using NextStep = std::variant<Goto, Halt, Interrupt, Sleep>;

inline bool operator==(const ApprovalRequest& a, const ApprovalRequest& b) {
  return a.action == b.action && a.proposed_input == b.proposed_input &&
         a.risk_reason == b.risk_reason && a.expires_at == b.expires_at;
}
inline bool operator==(const Interrupt& a, const Interrupt& b) {
  return a.reason == b.reason && a.approval == b.approval && a.then == b.then;
}

void to_json(nlohmann::json& j, const ApprovalRequest& a);
void from_json(const nlohmann::json& j, ApprovalRequest& a);

}  // namespace trellis::agent
