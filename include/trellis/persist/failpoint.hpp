#pragma once
/// @file
/// Named failpoints at the boundaries of the persist/ write protocols, for crash and
/// I/O-failure tests.
///
/// A failpoint is armed either from the environment, before the first failpoint is reached:
///
///     TRELLIS_FAILPOINT=<name>[:kill|:error][@N][,<name>...]
///
/// or in-process with `arm_failpoint`. `kill` (the default) raises SIGKILL, as a crash or a
/// power cut would stop the process at that boundary; `error` throws `trellis::persist_error`
/// (errno EIO) as an injected I/O failure. `@N` lets the first N-1 hits pass and fires from the
/// N-th on (default 1). An unknown name in the environment is a fatal error (a misspelt
/// failpoint must not silently test nothing).
///
/// Cost when nothing is armed: one relaxed atomic load per boundary.

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace trellis {

/// What an armed failpoint does when it is reached.
enum class FailpointAction : std::uint8_t {
  none,   ///< not armed
  kill,   ///< raise(SIGKILL)
  error,  ///< throw persist_error (EIO) naming the file being written
};

/// Every failpoint name, in protocol order.
/// The agent layer's run boundaries are named here too (one registry, one environment
/// variable); they are plain names, so this layer knows nothing of the agent's types.
inline constexpr std::array<std::string_view, 14> failpoint_names = {
    "sidecar.after_temp_write",  // temp file written, not yet fsync'd
    "sidecar.after_temp_fsync",  // temp file durable, not yet renamed
    "sidecar.after_rename",      // target replaced, directory not yet fsync'd
    "sidecar.before_dir_fsync",  // directory opened, about to be fsync'd
    "journal.mid_append",        // half of a journal line written (a torn line)
    "journal.after_append",      // journal line written and fdatasync'd, append not returned
    "effect.before_started",     // an effect is about to commit its started record
    "effect.after_started",      // started record committed, the call not yet made
    "effect.after_call",         // the call returned, its receipt not yet committed
    "effect.after_receipt",      // receipt committed, the step not yet committed
    "step.after_commit",         // a step's checkpoint committed, the next step not begun
    "approval.waiting",          // the run's pause committed: it waits for a decision
    "resume.started",            // a resume read the run and holds its lease, no step run yet
    "compensation.after_call",   // a compensation returned, its receipt not yet committed
};

/// Arms `name` in this process (replacing its previous arming); fires from the `from_hit`-th
/// hit on. Throws trellis::error for a name not in `failpoint_names`.
void arm_failpoint(std::string_view name, FailpointAction action, unsigned from_hit = 1);

/// Disarms `name`.
void disarm_failpoint(std::string_view name);

/// Disarms every failpoint (including those armed from the environment).
void disarm_failpoints() noexcept;

/// RAII arming for a test scope: arms on construction, disarms on destruction.
class ScopedFailpoint {
 public:
  ScopedFailpoint(std::string_view name, FailpointAction action, unsigned from_hit = 1);
  ~ScopedFailpoint();
  ScopedFailpoint(const ScopedFailpoint&) = delete;
  ScopedFailpoint& operator=(const ScopedFailpoint&) = delete;

 private:
  std::string_view name_;
};

namespace detail {

enum : std::uint8_t { failpoints_unknown = 0, failpoints_none = 1, failpoints_some = 2 };

/// failpoints_unknown until the environment has been read; then none or some.
extern std::atomic<std::uint8_t> failpoint_state;

/// Counts a hit of `name`; returns the action when this hit fires, none otherwise.
FailpointAction failpoint_take_hit(std::string_view name) noexcept;
/// Performs `action` (SIGKILL or throw persist_error naming `file`).
void failpoint_fire(std::string_view name, FailpointAction action,
                    const std::filesystem::path& file);

}  // namespace detail

/// The boundary `name` of a write to `file`: kills the process or throws persist_error when
/// armed and due, does nothing otherwise.
inline void failpoint(std::string_view name, const std::filesystem::path& file) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return;
  }
  if (const FailpointAction action = detail::failpoint_take_hit(name);
      action != FailpointAction::none) {
    detail::failpoint_fire(name, action, file);
  }
}

/// As above, but calls `before_firing()` first when the failpoint fires: it prepares the damage
/// the failpoint stands for (the journal writes half a line).
template <class BeforeFiring>
void failpoint(std::string_view name, const std::filesystem::path& file,
               BeforeFiring&& before_firing) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return;
  }
  if (const FailpointAction action = detail::failpoint_take_hit(name);
      action != FailpointAction::none) {
    before_firing();
    detail::failpoint_fire(name, action, file);
  }
}

}  // namespace trellis
