#pragma once
/// @file
/// `Reconciliation`: an operator's record of the outcome of an effect in doubt.

#include <string>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// An operator's record of the outcome of an effect in doubt (an at_most_once effect started
/// without a receipt, which failed its run with reconciliation_required): it happened, with
/// this result, or it did not happen. Kept in the effect's record (EffectRecord::reconciliation)
/// and in the checkpoint that reopens the run (Checkpoint::reconciliation). operations.hpp.
struct Reconciliation {
  std::string key;        ///< the effect's idempotency key
  bool happened = false;  ///< it happened (its receipt holds `result`), or it did not
  nlohmann::json result;  ///< what it returned, when it happened
  std::string by;         ///< who recorded it
  std::string reason;     ///< why they are sure ("ledger line 7", "no such payment")
  std::string at;         ///< ISO-8601 UTC, when it was recorded

  friend bool operator==(const Reconciliation&, const Reconciliation&) = default;
};

void to_json(nlohmann::json& j, const Reconciliation& r);
void from_json(const nlohmann::json& j, Reconciliation& r);

}  // namespace trellis::agent
