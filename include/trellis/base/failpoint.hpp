#pragma once
/// @file
/// Named failpoints, for crash and I/O-failure tests: one registry and one syntax for every
/// layer, each layer registering its own names (persist: trellis/persist/failpoint.hpp; agent:
/// trellis/agent/failpoint.hpp).
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
/// a fatal error (a misspelt failpoint must not silently test nothing); in-process, an unknown
/// name throws `trellis::unknown_failpoint`.
///
/// Two kinds of names, one registry and one syntax:
/// - boundaries between the steps of a protocol, checked with `failpoint(name, object)`: an
///   injected error throws the registering layer's error (persist and agent: `persist_error`
///   naming the object, with that errno).
/// - system calls, checked with `io_failpoint(name)`: an injected error makes the call fail
///   with that errno without making it, as the kernel would have; the caller then takes its
///   own failure path.
///
/// Registration: a layer describes its names in a `FailpointSet` of static storage and
/// registers it once with `register_failpoints`. Each layer's failpoint header does so at
/// static initialization of every translation unit that includes it, and the layer's code that
/// checks its failpoints includes it, so the names are known before `main` wherever they can
/// be reached, also from static archives (no registration lives in an object file that
/// nothing references).
///
/// Cost when nothing is armed: one relaxed atomic load per check.

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
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

/// The failpoints of one layer. Its names (and the set itself) must have static storage
/// duration: the registry keeps views of them.
struct FailpointSet {
  /// The layer that owns the names ("persist"), for messages.
  std::string_view layer;
  /// The boundaries, checked with `failpoint(name, object)`, in protocol order.
  std::span<const std::string_view> boundaries;
  /// The system calls, checked with `io_failpoint(name)`, in protocol order.
  std::span<const std::string_view> system_calls;
  /// Throws the layer's error for an injected error at boundary `name` on `object` (a file,
  /// a run id) with errno `error_number`. When it is null or returns, a `trellis::error`
  /// naming the failpoint is thrown instead.
  void (*raise)(std::string_view name, int error_number,
                const std::filesystem::path& object) = nullptr;
};

/// Adds `set`'s names to the registry; registering the same set again does nothing. Throws
/// trellis::invalid_option for a name another set registered already. The environment is read
/// when the first failpoint is checked or armed: a set registered later cannot be armed from
/// it (the layers' headers register theirs at static initialization, before that).
void register_failpoints(const FailpointSet& set);

/// Every registered name, set by set (boundaries, then system calls), comma-separated.
std::string known_failpoints();

/// Arms `name` in this process (replacing its previous arming); fires from the `from_hit`-th
/// hit on. Throws trellis::unknown_failpoint for a name no set registered.
void arm_failpoint(std::string_view name, FailpointAction action, unsigned from_hit = 1);

/// Arms `name` as `arming` says (replacing its previous arming). Throws
/// trellis::unknown_failpoint for an unknown name, and trellis::invalid_option for an `error`
/// arming whose errno is not positive.
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
/// Performs `hit` (SIGKILL, or throw the registering layer's error naming `object`).
void failpoint_fire(std::string_view name, FailpointHit hit, const std::filesystem::path& object);
/// SIGKILL for a kill; the errno to inject for an error.
int failpoint_errno_of(FailpointHit hit);

}  // namespace detail

/// The boundary `name` of an operation on `object`: kills the process or throws the layer's
/// error when armed and due, does nothing otherwise.
inline void failpoint(std::string_view name, const std::filesystem::path& object) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return;
  }
  if (const detail::FailpointHit hit = detail::failpoint_take_hit(name);
      hit.action != FailpointAction::none) {
    detail::failpoint_fire(name, hit, object);
  }
}

/// As above, but calls `before_firing()` first when the failpoint fires: it prepares the damage
/// the failpoint stands for (the journal writes half a line).
template <class BeforeFiring>
void failpoint(std::string_view name, const std::filesystem::path& object,
               BeforeFiring&& before_firing) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return;
  }
  if (const detail::FailpointHit hit = detail::failpoint_take_hit(name);
      hit.action != FailpointAction::none) {
    before_firing();
    detail::failpoint_fire(name, hit, object);
  }
}

/// The system call `name`: returns the errno to fail it with when armed with an error and due
/// (the caller then skips the call and takes its failure path), kills the process when armed
/// with kill and due, returns 0 otherwise.
inline int io_failpoint(std::string_view name) {
  if (detail::failpoint_state.load(std::memory_order_relaxed) == detail::failpoints_none)
      [[likely]] {
    return 0;
  }
  return detail::failpoint_errno_of(detail::failpoint_take_hit(name));
}

}  // namespace trellis
