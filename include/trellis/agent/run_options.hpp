#pragma once
/// @file
/// `RunOptions`: the per-call settings of Graph::run() and Graph::resume().

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

#include "trellis/agent/clock.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

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
};

}  // namespace trellis::agent
