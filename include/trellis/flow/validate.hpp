#pragma once
/// @file
/// `validate()`: what a graph file means, checked before anything runs and without side effects
/// (`trellis validate graph.yaml`). Errors (the graph cannot run): an unknown node (an edge's
/// `to`, `on_error`, `start`), a missing `start`, no `permissions`, an action the registry does
/// not have, an action a literal call of which `permissions` do not grant, a type error in a
/// condition or a template (against the types known: `inputs`, the initial `state`, each
/// action's result schema), a `cache: true` on an action that is not idempotent, a `foreach`
/// without `over`, an edge list whose last branch has a `when` (no default) on a node that is
/// not `return`, a cycle when `max_steps` is not given, a `subgraph` file that does not load.
/// Warnings (it can run): an unreachable node, a state key read but never assigned (nor in the
/// initial state), a key assigned but never read, no `return` node.
///
/// Scope of a node's conditions and templates: `inputs`, `state`, and where they exist
/// `result` (an action's, in its assign and edges), `decision` (an approval's, in its assign
/// and edges: {kind: "approve"|"input", reviewer, comment, input}), `item` and `index` (a
/// foreach's params), `error` (none yet), and `_now`.

#include <string>
#include <vector>

#include "trellis/flow/action.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/graph_file.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow {

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  SourcePos at;
  std::string message;
  /// A stable name for programs: "unknown_node", "missing_start", "no_permissions",
  /// "unknown_action", "capability_denied", "type_error", "cache_not_idempotent",
  /// "cache_not_cacheable",
  /// "foreach_without_over", "no_default_edge", "unbounded_cycle", "subgraph",
  /// "unreachable_node", "read_never_assigned", "assigned_never_read", "no_return".
  std::string code;

  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

struct Validation {
  std::vector<Diagnostic> diagnostics;  ///< errors and warnings, in file order

  bool ok() const noexcept;  ///< no error (warnings allowed)
  /// The errors as a graph_file_error's problems (empty when ok()).
  std::vector<Problem> errors() const;
};

/// Checks `file` against `actions`. Reads subgraph files (relative to file.path), nothing else.
Validation validate(const GraphFile& file, const ActionRegistry& actions);

/// validate(), throwing graph_file_error with every error when there is one.
void check(const GraphFile& file, const ActionRegistry& actions);

/// The scope type of node `node`'s conditions and templates after its action (see above): an
/// object type, closed, one member per root.
Type scope_type(const GraphFile& file, const NodeSpec& node, const ActionRegistry& actions);

}  // namespace trellis::flow
