#pragma once
/// @file
/// What a node returns: where the run goes next. `Goto{"review"}` names the next node (an
/// unknown name fails the run with reason unknown_node), `Halt{}` ends it successfully, and
/// `Interrupt{...}` pauses it until a resume (optionally asking for an approval).

#include <chrono>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// Continue at the named node.
struct Goto {
  std::string node;
};

/// End the run: it succeeded.
struct Halt {};

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

using NextStep = std::variant<Goto, Halt, Interrupt>;

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
