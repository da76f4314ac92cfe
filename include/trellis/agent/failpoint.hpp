#pragma once
/// @file
/// The agent layer's failpoints: the boundaries of a run (effects, commits, pauses, resumes),
/// registered with the base facility (trellis/base/failpoint.hpp, included here; the syntax
/// of TRELLIS_FAILPOINT is there). An injected error at one of them throws
/// `trellis::persist_error` naming the run id, as a failed store write would; the run treats
/// it as infrastructure, not as the node's failure.

#include <array>
#include <string_view>

#include "trellis/base/failpoint.hpp"

namespace trellis::agent {

/// The agent layer's boundaries, in the order a run reaches them.
inline constexpr std::array<std::string_view, 8> failpoint_names = {
    "effect.before_started",    // an effect is about to commit its started record
    "effect.after_started",     // started record committed, the call not yet made
    "effect.after_call",        // the call returned, its receipt not yet committed
    "effect.after_receipt",     // receipt committed, the step not yet committed
    "step.after_commit",        // a step's checkpoint committed, the next step not begun
    "approval.waiting",         // the run's pause committed: it waits for a decision
    "resume.started",           // a resume read the run and holds its lease, no step run yet
    "compensation.after_call",  // a compensation returned, its receipt not yet committed
};

/// Registers the names above with the failpoint registry (once; later calls do nothing). Runs
/// at static initialization wherever this header is included; call it yourself only from
/// code that runs earlier than that.
void register_failpoints();

namespace detail {
inline const bool failpoints_registered = (register_failpoints(), true);
}  // namespace detail

}  // namespace trellis::agent
