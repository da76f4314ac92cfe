#pragma once
/// @file
/// `Node<S>`: one step of an agent graph over the typed state S.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/agent/next_step.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/run_context.hpp"

namespace trellis::agent {

/// A step: reads and changes the state, and says where the run goes next. A node runs on a
/// copy of the state; its changes count only if it returns (an exception discards them).
template <class S>
class Node {
 public:
  virtual ~Node() = default;
  /// The node's unique name in its graph (what Goto names).
  virtual std::string_view name() const = 0;
  virtual NextStep run(S& state, RunContext& ctx) = 0;
  /// The permission mode the node needs: Plan (read-only) unless it says otherwise; AcceptEdits
  /// or more makes it destructive (see ModeGate).
  virtual PermissionMode required_mode() const { return PermissionMode::Plan; }

  // Declarations (see graph.hpp, "Declared edges"), read once, when the node is added to a
  // graph; the graph's own declarations of the node (Graph::edges, effects) replace them.

  /// Where the node may go: node names, and end_node (graph_shape.hpp) when it may Halt. A
  /// step that goes elsewhere fails the run with Reason::undeclared_edge. nullopt (the
  /// default): undeclared, anywhere.
  virtual std::optional<std::vector<std::string>> successors() const { return std::nullopt; }
  /// Whether the node may pause for an approval (drawn as a gate; not enforced).
  virtual bool approval_gate() const { return false; }
  /// The names of the effects the node may make (drawn with it; not enforced).
  virtual std::vector<std::string> effect_names() const { return {}; }
};

}  // namespace trellis::agent
