// Internal: who takes a lease. Every store names a lease's holder with a fresh random id; the
// stores that outlive a process (SqliteStore, and later PostgreSQL) also record the holder's
// process, so that a lease whose holder provably died on this machine is free at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trellis::agent::detail {

/// A new holder id: 128 random bits as 32 hex digits (unique to one taking of a lease).
std::string new_lease_holder();

/// The process taking a lease, as another process on the same machine can check it.
struct ProcessIdentity {
  std::string host;       ///< the host name (for messages only)
  std::string pid_space;  ///< the running kernel (boot id) and pid namespace; empty: unknown
  std::int64_t pid = 0;
  std::int64_t started = 0;  ///< start time in clock ticks after boot (/proc); 0: unknown
};

/// This process, now (computed on every call: a forked child is another process).
ProcessIdentity this_process();

/// True only when the process `pid` started at `started` in `pid_space` is certainly gone: the
/// pid space is this process's and the pid is free, or taken by a process started at another
/// time (a zombie counts as gone). False whenever that cannot be proven (another machine,
/// kernel or pid namespace, an unreadable /proc, an unknown start time with a live pid).
bool provably_dead(std::string_view pid_space, std::int64_t pid, std::int64_t started);

}  // namespace trellis::agent::detail
