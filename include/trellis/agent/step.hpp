#pragma once
/// @file
/// One node on its own: what `Graph<S>::step` (graph.hpp) takes and gives back, for debugging a
/// node against a stored run (`<program> step RUN --node N [--state JSON] [--commit]`).
///
/// ```cpp
/// auto r = graph.step("run-7", "refund", store,
///                     {.stubs = {{"refund", {{"id", "re_test"}}}}});  // dry: nothing written
/// // r.next, r.state, r.effects[0].source == EffectSource::stub
/// ```
///
/// A dry step (commit = false) writes nothing to the store and takes no lease (it can run while
/// a worker advances the run: it reads the run as it is at that moment). No effect runs: each
/// `ctx.effect` is answered from the effect's stored receipt (the key is the one a real step of
/// that node at the run's step number would use), else from `stubs[name]`, else it throws
/// effect_refused naming the effect, which step() lets out even if the node caught it. A stored
/// failure receipt replays as effect_failed, as in a real step.
///
/// A committed step (commit = true) is a real step of the run: it takes the run's lease
/// (run_busy when a worker holds it), runs the node at the run's position (its step number,
/// its stored decision) with real effects, and commits its result as the next checkpoint, with
/// the events of a step. Naming a node other than the run's next node is allowed: an
/// operator's override, logged in step_started's detail ("override": true). It refuses a
/// finished run (run_finished) and a run that waits for a decision or a timer (run_conflict);
/// stubs are refused (invalid_option): a committed step's effects are real.
///
/// Both: the state is StepOptions::state when given (in the graph's current schema), else the
/// run's stored state (migrated); the hooks run as in a real step (Modify, Deny, Replace,
/// after()). What the run loop would fail the run for after the step (a hook's Deny, a Goto to
/// an unknown node, an undeclared edge, an at_most_once effect to reconcile) is
/// StepResult::reason, with its detail; a committed step then commits the Failed checkpoint
/// the loop would (and runs the run's due compensations). An exception from the node (or a
/// store failure) leaves step(): nothing is committed, there is no retry and no node_error
/// failure (a committed step's effect records stay, so a resume replays their receipts).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/effect.hpp"
#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

/// Where the answer to one `ctx.effect` of a step came from.
enum class EffectSource {
  receipt,  ///< the effect's stored receipt (replayed; nothing called)
  stub,     ///< StepOptions::stubs (a dry step; nothing called)
  ran,      ///< the effect's function was called (a committed step)
};
TRELLIS_ENUM(EffectSource, receipt, stub, ran);

/// What one `ctx.effect` of a step did.
struct StepEffect {
  std::string name;
  std::string key;  ///< its idempotency key (as a real step would use)
  nlohmann::json args;
  EffectSource source = EffectSource::receipt;
  EffectStatus status = EffectStatus::succeeded;  ///< succeeded, failed or transient
  nlohmann::json result;                          ///< when succeeded
  std::string error;                              ///< when failed or transient

  friend bool operator==(const StepEffect&, const StepEffect&) = default;
};

struct StepOptions {
  /// The state the node starts from (in the graph's current schema); nullopt: the run's
  /// stored state, migrated.
  std::optional<nlohmann::json> state = std::nullopt;
  /// Commit the step (a real step, real effects); false: a dry step that writes nothing.
  bool commit = false;
  /// A dry step's answers for effects without a receipt, by effect name.
  std::map<std::string, nlohmann::json> stubs = {};
  Clock* clock = nullptr;       ///< nullptr: SystemClock::instance()
  std::string worker = "step";  ///< the lease's owner text (committed steps)
};

template <class S>
struct StepResult {
  NextStep next;  ///< what the node (and the hooks) returned; an empty Goto when reason is set
                  ///< before the node ran (a hook's Deny)
  S state;        ///< the state the node left (committed only when the step committed a
                  ///< non-failed checkpoint)
  std::vector<StepEffect> effects;  ///< each ctx.effect of the step, in call order
  bool committed = false;
  std::optional<Checkpoint> checkpoint;  ///< the checkpoint committed, when committed
  /// none, or why the run loop would fail the run after this step (denied, unknown_node,
  /// undeclared_edge, reconciliation_required); a committed step committed that failure.
  Reason reason = Reason::none;
  std::string detail;
};

}  // namespace trellis::agent
