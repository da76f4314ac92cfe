#pragma once
/// @file
/// `RunMonitor`: a run's lifecycle status as reactive state in the caller's context, so that
/// computeds, effects and `state_is` signals follow a run while the graph drives it.
///
/// ```cpp
/// trellis::Context ctx;
/// trellis::agent::RunMonitor monitor{ctx};
/// auto waiting = monitor.state_is(trellis::agent::RunStatus::WaitingApproval);  // Signal<bool>
/// graph.run("run-7", Doc{}, store, {.monitor = &monitor});
/// ```
///
/// The graph writes the status from the thread that runs the graph: give the monitor a
/// ThreadSafeContext (or an AsyncContext) when that is not the thread that owns the context.

#include "trellis/agent/run_status.hpp"
#include "trellis/reactive/cell_view.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/reactive/signal.hpp"

namespace trellis::agent {

class RunMonitor {
 public:
  template <class Ctx>
  requires std::derived_from<Ctx, trellis::detail::BasicContext>
  explicit RunMonitor(Ctx& ctx, RunStatus initial = RunStatus::Queued)
      : ctx_(&ctx), status_(ctx.cell(initial)) {}

  /// The status, readable and tracked inside computeds and effects.
  CellView<RunStatus> status() const { return CellView<RunStatus>(status_); }
  /// An eager signal: true exactly while the run is in `s`.
  Signal<bool> state_is(RunStatus s) const {
    return ctx_->signal([cell = status_, s] { return cell.get() == s; });
  }
  /// Called by the graph on every status change of the run it drives.
  void set(RunStatus s) const { status_.set(s); }

 private:
  trellis::detail::BasicContext* ctx_;
  Cell<RunStatus> status_;
};

}  // namespace trellis::agent
