#pragma once
/// @file
/// Named failpoints at the boundaries of the persist/ write protocols, for crash and
/// I/O-failure tests.
///
/// A failpoint is armed either from the environment, before the first failpoint is reached:
///
///     TRELLIS_FAILPOINT=<name>[:kill|:error|:<ERRNO>][@N[-M]][,<name>...]
///
/// or in-process with `arm_failpoint`. `kill` (the default) raises SIGKILL, as a crash or a
/// power cut would stop the process at that point; `error` injects an I/O failure with errno
/// EIO, and `EIO`, `ENOSPC`, `EDQUOT`, `EROFS` or `EFBIG` one with that errno. `@N` lets the
/// first N-1 hits pass and fires from the N-th on (default 1); `@N-M` fires at hits N to M
/// only (`@3-3`: the third hit alone). An unknown name, action or errno in the environment is
/// a fatal error (a misspelt failpoint must not silently test nothing).
///
/// Two kinds of names, one registry and one syntax:
/// - `failpoint_names`: boundaries between the steps of a write protocol. An injected error
///   throws `trellis::persist_error` with that errno; the crash tests SIGKILL at each of them.
/// - `io_failpoint_names`: the system calls of the sidecar's and the journal's writers
///   (write, fsync/fdatasync, ftruncate, rename). An injected error makes the call fail with
///   that errno without making it, as the kernel would have; the writer then takes its own
///   failure path. Some are reached only on a failure path (the journal's ftruncate).
///
/// Cost when nothing is armed: one relaxed atomic load per boundary.

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace trellis {

/// What an armed failpoint does when it is reached.
enum class FailpointAction : std::uint8_t {
  none,   ///< not armed
  kill,   ///< raise(SIGKILL)
  error,  ///< an I/O failure with an errno (EIO unless armed with another)
};

/// How an armed failpoint fires (designated initializers welcome).
struct FailpointArming {
  FailpointAction action = FailpointAction::kill;
  int error_number = EIO;  ///< `error`: the errno injected (EIO, ENOSPC, ...)
  unsigned from_hit = 1;   ///< the first hit that fires (1: the first)
  unsigned times = 0;      ///< how many hits fire from there; 0: every later hit
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

/// The system calls of the persist/ writers where an errno can be injected (see the file
/// comment), in protocol order.
inline constexpr std::array<std::string_view, 10> io_failpoint_names = {
    "sidecar.write",      // write(2) of the temporary file
    "sidecar.fsync",      // fsync(2) of the temporary file
    "sidecar.rename",     // rename(2) of the temporary file over the sidecar
    "sidecar.dir_fsync",  // fsync(2) of the directory after the rename
    "journal.write",      // write(2) of a line
    "journal.fdatasync",  // fdatasync(2) after a line, or after cutting a line back
    "journal.ftruncate",  // ftruncate(2) cutting back a failed line or a torn tail
    "journal.fsync",      // fsync(2) of the fresh, empty journal that compaction puts in place
    "journal.rename",     // rename(2) of the fresh journal over the compacted one
    "journal.dir_fsync",  // fsync(2) of the directory: at open, after that rename, before an append
};

/// Arms `name` in this process (replacing its previous arming); fires from the `from_hit`-th
/// hit on. Throws trellis::error for a name in neither `failpoint_names` nor
/// `io_failpoint_names`.
void arm_failpoint(std::string_view name, FailpointAction action, unsigned from_hit = 1);

/// Arms `name` as `arming` says (replacing its previous arming). Throws trellis::error for an
/// unknown name, or an `error` arming whose errno is not positive.
void arm_failpoint(std::string_view name, FailpointArming arming);

/// Disarms `name`.
void disarm_failpoint(std::string_view name);

/// Disarms every failpoint (including those armed from the environment).
void disarm_failpoints() noexcept;

/// RAII arming for a test scope: arms on construction, disarms on destruction.
class ScopedFailpoint {
 public:
  ScopedFailpoint(std::string_view name, FailpointAction action, unsigned from_hit = 1);
  ScopedFailpoint(std::string_view name, FailpointArming arming);
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

/// What a hit does: the action (none when it does not fire) and the errno of an error.
struct FailpointHit {
  FailpointAction action = FailpointAction::none;
  int error_number = 0;
};

/// Counts a hit of `name`; says what this hit does.
FailpointHit failpoint_take_hit(std::string_view name) noexcept;
/// Performs `hit` (SIGKILL, or throw persist_error naming `file` with the hit's errno).
void failpoint_fire(std::string_view name, FailpointHit hit, const std::filesystem::path& file);
/// SIGKILL for a kill; the errno to inject for an error.
int failpoint_errno_of(FailpointHit hit);

}  // namespace detail

/// The boundary `name` of a write to `file`: kills the process or throws persist_error when
/// armed and due, does nothing otherwise.
inline void failpoint(std::string_view name, const std::filesystem::path& file) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return;
  }
  if (const detail::FailpointHit hit = detail::failpoint_take_hit(name);
      hit.action != FailpointAction::none) {
    detail::failpoint_fire(name, hit, file);
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
  if (const detail::FailpointHit hit = detail::failpoint_take_hit(name);
      hit.action != FailpointAction::none) {
    before_firing();
    detail::failpoint_fire(name, hit, file);
  }
}

/// The system call `name` (one of `io_failpoint_names`): returns the errno to fail it with
/// when armed with an error and due (the caller then skips the call and takes its failure
/// path), kills the process when armed with kill and due, returns 0 otherwise.
inline int io_failpoint(std::string_view name) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return 0;
  }
  return detail::failpoint_errno_of(detail::failpoint_take_hit(name));
}

}  // namespace trellis
