#pragma once
/// @file
/// The persist layer's failpoints: the boundaries of the sidecar's and the journal's write
/// protocols and the system calls of their writers. The registry, the arming functions and
/// the TRELLIS_FAILPOINT syntax are the base facility (trellis/base/failpoint.hpp, included
/// here); this header registers persist's names with it.
///
/// An injected error at a boundary throws `trellis::persist_error` naming the file, with the
/// armed errno; at a system call, the call fails with that errno without being made, and the
/// writer takes its own failure path (some calls are reached only on a failure path: the
/// journal's ftruncate).

#include <array>
#include <string_view>

#include "trellis/base/failpoint.hpp"

namespace trellis {

/// The persist layer's boundaries, in protocol order. (The agent layer's are
/// `trellis::agent::failpoint_names`, trellis/agent/failpoint.hpp.)
inline constexpr std::array<std::string_view, 6> failpoint_names = {
    "sidecar.after_temp_write",  // temp file written, not yet fsync'd
    "sidecar.after_temp_fsync",  // temp file durable, not yet renamed
    "sidecar.after_rename",      // target replaced, directory not yet fsync'd
    "sidecar.before_dir_fsync",  // directory opened, about to be fsync'd
    "journal.mid_append",        // half of a journal line written (a torn line)
    "journal.after_append",      // journal line written and fdatasync'd, append not returned
};

/// The system calls of the persist/ writers where an errno can be injected, in protocol order.
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

/// Registers the names above with the failpoint registry (once; later calls do nothing). Runs
/// at static initialization wherever this header is included; call it yourself only from
/// code that runs earlier than that.
void register_persist_failpoints();

namespace detail {
inline const bool persist_failpoints_registered = (register_persist_failpoints(), true);
}  // namespace detail

}  // namespace trellis
