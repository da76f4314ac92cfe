#pragma once
// Private to src/persist: how the sidecar, its lock and its journal use the durable-I/O toolkit
// (<trellis/io/directory.hpp>). Every file is opened relative to its directory's descriptor, with
// O_NOFOLLOW: the user's path may go through links, the names trellis derives from it may not.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include <trellis/io/directory.hpp>

namespace trellis::detail {

/// Opens the directory of `file` (resolving its links once) and names `file` inside it;
/// 0 or an errno.
int open_parent(const std::filesystem::path& file, Directory& dir, std::string& name);

/// The step `operation` on `file` as a persist_error's operation text; for ELOOP, says that a
/// link is at `file` and is not followed.
std::string step_text(std::string_view operation, const std::filesystem::path& file, int e);

/// The modes for the `file_mode` of the sidecar at `sidecar` (throws invalid_option).
Modes sidecar_modes(mode_t file_mode, const std::filesystem::path& sidecar);

/// The sidecar path to work on for the user's `path`: every alias of one file gives the same
/// (resolve_file), a link to a sidecar not yet written included; `path` itself when its directory
/// cannot be resolved (the caller's open then reports the error).
std::filesystem::path resolved_sidecar(const std::filesystem::path& path);

}  // namespace trellis::detail
