#pragma once
/// @file
/// `Reason`: why a run failed (Outcome::reason, Checkpoint::reason), or on a Succeeded run
/// completed_with_errors. A stable name to branch on.

#include "trellis/base/enumeration.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

/// Why a run failed (or none; or, on a Succeeded run, completed_with_errors).
enum class Reason {
  none,
  approval_rejected,        ///< a person said no (a business failure)
  approval_expired,         ///< nobody decided before the request's expires_at
  denied,                   ///< a hook (the ModeGate) refused a node and nothing routed elsewhere
  max_steps,                ///< the step bound was reached (a loop that does not end)
  unknown_node,             ///< a node named a next node the graph does not have
  node_error,               ///< a node threw a non-transient exception
  retries_exhausted,        ///< a transient error outlived the retry policy
  reconciliation_required,  ///< an at_most_once effect was cut off by a crash (effect.hpp)
  undeclared_edge,          ///< a node went where its declared edges do not lead (graph.hpp)
  /// On a Succeeded run, not a failure: it completed, and some of its parts failed (a fan-out
  /// that goes on after an item fails). Set by a Halt that says so (next_step.hpp),
  /// e.g. by a graph file with `on_error: continue` whose run suppressed errors.
  completed_with_errors,
};
TRELLIS_ENUM(Reason, none, approval_rejected, approval_expired, denied, max_steps, unknown_node,
             node_error, retries_exhausted, reconciliation_required, undeclared_edge,
             completed_with_errors);

}  // namespace trellis::agent
