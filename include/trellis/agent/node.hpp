#pragma once
/// @file
/// `Node<S>`: one step of an agent graph over the typed state S.

#include <string_view>

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
};

}  // namespace trellis::agent
