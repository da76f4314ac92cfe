#pragma once
/// @file
/// `RunSummary`: one line of a run listing (Store::list_runs, `trellis runs ls`), made from the
/// run's newest checkpoint and its creation time; `RunFilter`: which runs a listing keeps.
/// Stores keep an index of them, so listing 100,000 runs does not read 100,000 journals.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

struct RunSummary {
  std::string run_id;
  RunStatus status = RunStatus::Queued;
  Reason reason = Reason::none;
  std::string node;         ///< the node to run next (empty once Succeeded)
  std::uint64_t step = 0;   ///< steps committed
  std::uint64_t seq = 0;    ///< the newest checkpoint
  std::string created_at;   ///< ISO-8601 UTC: when the run was created
  std::string updated_at;   ///< ISO-8601 UTC: when its newest checkpoint was committed
  std::string fingerprint;  ///< the graph that wrote it
  std::string request;      ///< while WaitingApproval: the pending request's id; else empty
  /// When a Worker may advance the run (due_at(newest)); empty when nothing but a person makes
  /// it runnable (ended, cancelled, waiting for a decision without an expiry).
  std::string due;
  int priority = 0;  ///< Checkpoint::priority

  friend bool operator==(const RunSummary&, const RunSummary&) = default;
};

/// When a Worker may advance the run whose newest checkpoint is `cp` (ISO-8601 UTC text, which
/// sorts as time does), or nullopt when no worker should: Queued at its wake_at, else at once
/// (its created_at); Running at once (a run whose worker died: claimable when its lease is
/// free); Waiting at its wake_at; WaitingApproval at its approval request's expires_at (the
/// expiry timer: the worker fails it with approval_expired), nullopt without one; Succeeded,
/// Failed and Cancelled: nullopt.
std::optional<std::string> due_at(const Checkpoint& cp);

/// The summary of a run whose newest checkpoint is `newest`, created at `created_at`.
RunSummary summarize(const Checkpoint& newest, std::string created_at);

/// Which runs a listing keeps (every set member must match).
struct RunFilter {
  std::optional<RunStatus> status = std::nullopt;
  /// ISO-8601 UTC: only runs whose newest checkpoint was committed at or after it (a run
  /// touched since then). Empty: any.
  std::string since = {};
  /// Only runs whose next node is this one. Empty: any.
  std::string node = {};

  bool matches(const RunSummary& s) const;
};

void to_json(nlohmann::json& j, const RunSummary& s);
void from_json(const nlohmann::json& j, RunSummary& s);

}  // namespace trellis::agent
