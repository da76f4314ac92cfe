#pragma once
/// @file
/// Permission modes: how much a run may do without asking. Ordered Plan < Default <
/// AcceptEdits < BypassPermissions. Each node declares the mode it requires (Plan, read-only,
/// by default); a node requiring AcceptEdits or more is "destructive". The mode of a running
/// graph lives in a ModeSwitch that anyone may flip at any time; the ModeGate hook reads it
/// before every node.

#include <atomic>

#include "trellis/json/enumeration.hpp"

namespace trellis::agent {

enum class PermissionMode { Plan, Default, AcceptEdits, BypassPermissions };
TRELLIS_ENUM(PermissionMode, Plan, Default, AcceptEdits, BypassPermissions);

/// Whether a node requiring `required` changes things (AcceptEdits or more).
constexpr bool destructive(PermissionMode required) noexcept {
  return required >= PermissionMode::AcceptEdits;
}

/// The current mode of one or more runs; thread-safe, changeable while a graph runs.
class ModeSwitch {
 public:
  explicit ModeSwitch(PermissionMode initial = PermissionMode::Default) noexcept : mode_(initial) {}
  PermissionMode get() const noexcept { return mode_.load(std::memory_order_acquire); }
  void set(PermissionMode m) noexcept { mode_.store(m, std::memory_order_release); }

 private:
  std::atomic<PermissionMode> mode_;
};

}  // namespace trellis::agent
