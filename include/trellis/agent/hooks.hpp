#pragma once
/// @file
/// Hooks around every node, and the built-in ModeGate. Hooks belong to the graph, so a node
/// added later goes through the same chain.
///
/// before(node, state, ctx) -> Proceed | Modify{state} | Deny{reason} | Replace{next step}:
///   the first hook that does not Proceed decides (Modify changes the state and goes on to the
///   next hook). Deny fails the run with reason `denied`; Replace skips the node and continues
///   with the given step (for instance an Interrupt asking for approval).
/// after(node, state, next, ctx) -> the next step (each hook may change it).

#include <string>
#include <string_view>
#include <variant>

#include "trellis/agent/next_step.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/run_context.hpp"

namespace trellis::agent {

struct Proceed {};
template <class S>
struct Modify {
  S state;
};
struct Deny {
  std::string reason;
};
struct Replace {
  NextStep step;
};

template <class S>
using BeforeDecision = std::variant<Proceed, Modify<S>, Deny, Replace>;

/// What a hook knows of the node it surrounds.
struct NodeInfo {
  std::string_view name;
  PermissionMode required;
};

template <class S>
class Hook {
 public:
  virtual ~Hook() = default;
  virtual BeforeDecision<S> before(const NodeInfo&, const S&, const RunContext&) {
    return Proceed{};
  }
  virtual NextStep after(const NodeInfo&, const S&, NextStep next, const RunContext&) {
    return next;
  }
};

/// Refuses a node whose required mode exceeds the run's current mode, except in Default mode,
/// where a destructive node becomes an approval interrupt (approved: the node runs).
template <class S>
class ModeGate final : public Hook<S> {
 public:
  BeforeDecision<S> before(const NodeInfo& node, const S&, const RunContext& ctx) override {
    const PermissionMode mode = ctx.mode();
    if (node.required <= mode) return Proceed{};
    if (mode == PermissionMode::Default && destructive(node.required)) {
      if (ctx.approved()) return Proceed{};
      ApprovalRequest request{std::string("run node '") + std::string(node.name) + "'",
                              nlohmann::json::object(),
                              std::string("node '") + std::string(node.name) + "' requires " +
                                  std::string(enumeration<PermissionMode>::name(node.required)) +
                                  " and the run is in Default mode",
                              std::nullopt};
      return Replace{Interrupt{"approval required", std::move(request), std::string{}}};
    }
    return Deny{std::string("node '") + std::string(node.name) + "' requires " +
                std::string(enumeration<PermissionMode>::name(node.required)) +
                ", the run's mode is " + std::string(enumeration<PermissionMode>::name(mode))};
  }
};

}  // namespace trellis::agent
