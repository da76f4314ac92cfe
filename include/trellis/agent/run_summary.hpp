#pragma once
/// @file
/// `RunSummary`: one line of a run listing (Store::list_runs, `trellis runs ls`), made from the
/// run's newest checkpoint and its creation time; `RunFilter`: which runs a listing keeps.
/// Stores keep an index of them, so listing 100,000 runs does not read 100,000 journals.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

/// The due time of a Running run: the earliest there is (1970-01-01T00:00:00.000Z).
inline constexpr std::string_view kDueAtOnce = "1970-01-01T00:00:00.000Z";

/// When a Worker may advance the run whose newest checkpoint is `cp` (ISO-8601 UTC text, which
/// sorts as time does), or nullopt when no worker should: Queued at its wake_at, else at its
/// created_at (first in, first out); Running at kDueAtOnce (a run whose worker died: claimable
/// as soon as its lease is free, whatever the clock of the worker that wrote it); Waiting at its
/// wake_at; WaitingApproval at its approval request's expires_at (the expiry timer: the worker
/// fails it with approval_expired), nullopt without one; Succeeded, Failed and Cancelled:
/// nullopt. (Times other than kDueAtOnce were written by the clock of the process that
/// committed the checkpoint: a clock that runs ahead delays them; leases never depend on them.)
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
  /// Only runs whose graph fingerprint starts with this text. Empty: any.
  std::string graph = {};
  /// Only runs whose id sorts after this one, byte by byte (the last id of a page: the next
  /// page). Empty: from the first run.
  std::string after = {};
  /// At most this many runs, the first ones by run id (the stores stop reading there: a page of
  /// 50 out of 100,000 runs reads 50 rows in SqliteStore and PostgresStore). 0: every one.
  /// Store::count_runs ignores it.
  std::size_t limit = 0;

  /// Whether `s` passes every condition above but `limit`.
  bool matches(const RunSummary& s) const;
};

void to_json(nlohmann::json& j, const RunSummary& s);
void from_json(const nlohmann::json& j, RunSummary& s);

}  // namespace trellis::agent
