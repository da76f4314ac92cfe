#pragma once
/// @file
/// `RunOptions`: the per-call settings of Graph::run() and Graph::resume().

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "trellis/agent/clock.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

class FanoutPool;  // fanout_pool.hpp
class RunMonitor;  // run_monitor.hpp

/// Per-call settings of run() and resume().
struct RunOptions {
  const ModeSwitch* mode = nullptr;     ///< the permission mode (nullptr: Default)
  std::stop_token stop = {};            ///< cancellation, checked between steps
  Clock* clock = nullptr;               ///< nullptr: SystemClock
  std::function<double()> random = {};  ///< uniform [0, 1) for jitter; empty: a seeded engine
  std::string worker = "worker";        ///< the lease owner's name (in run_busy messages)
  /// How often a node's stop_token looks for a cancel request (Store::request_cancel, `trellis
  /// cancel`) while the node runs; zero: only between steps (where it is always looked for).
  std::chrono::milliseconds cancel_poll = std::chrono::milliseconds(200);
  /// Called on every status change of the run (from, to), on the calling thread.
  std::function<void(RunStatus, RunStatus)> on_status = {};
  /// Follows the run's status as reactive state (state_is); set at the start of the call.
  /// Include <trellis/agent/run_monitor.hpp> to make one.
  RunMonitor* monitor = nullptr;
  /// Waits become timers: a retry backoff commits the run Waiting until the backoff ends and
  /// the call returns (Outcome::waiting()), instead of sleeping in the call. A Worker sets it,
  /// so no thread of its pool sleeps on a run. (A Sleep is always a timer.)
  bool durable_waits = false;
  /// Gives the run back between steps when requested: the step in flight commits, then the call
  /// returns with the run as it is (Outcome status Running or Queued: runnable, its lease
  /// released, so another worker continues it). A Worker's stop() uses it; unlike `stop`, it
  /// does not cancel the run.
  std::stop_token yield = {};
  /// The threads that run the items of the run's fan-outs (fanout_pool.hpp; nullptr: each
  /// fan-out starts its own). A Worker gives its own pool unless one is set here.
  FanoutPool* fanout_pool = nullptr;
};

/// How Graph::enqueue starts a run in the background.
struct EnqueueOptions {
  int priority = 0;  ///< workers claim higher first (Checkpoint::priority)
  /// Not before this time (nullopt: at once).
  std::optional<std::chrono::system_clock::time_point> at = std::nullopt;
  Clock* clock = nullptr;  ///< for created_at (nullptr: SystemClock)
};

}  // namespace trellis::agent
