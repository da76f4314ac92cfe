#pragma once
// Private to the trellis library (the durable-I/O toolkit): atomic replacement of a file, the
// write protocol of the sidecar, of a journal put in place by compaction and of FileStore's
// journal at create and retention.
//
// A new temporary beside the target (Directory::create_temporary: O_EXCL, no link followed,
// exactly the mode asked for) is written, fsync'd, closed and renamed over the target, then the
// directory is fsync'd. A crash at any point leaves the target with its old content or its new
// one, never a mix, and at most a temporary that Directory::remove_temporaries sweeps.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <trellis/io/directory.hpp>
#include <trellis/io/file_io.hpp>

namespace trellis::detail {

/// The steps of replace_file, in order.
enum class ReplaceStep : std::uint8_t {
  create_temporary,
  write,
  sync,            ///< fsync(2) of the temporary
  close,           ///< close(2) of the temporary (skipped when it is kept open)
  rename,          ///< rename(2) over the target: from here on the target has the new content
  sync_directory,  ///< fsync(2) of the directory, so that the rename survives a power cut
  done,
};

/// The failpoints of one replacement (failpoint.hpp); an empty name is never reached.
struct ReplaceFailpoints {
  std::string_view write = {};            ///< io: write(2) of the temporary
  std::string_view sync = {};             ///< io: fsync(2) of the temporary
  std::string_view rename = {};           ///< io: rename(2) over the target
  std::string_view sync_directory = {};   ///< io: fsync(2) of the directory
  std::string_view after_write = {};      ///< boundary: written, not yet fsync'd
  std::string_view after_sync = {};       ///< boundary: durable, not yet renamed
  std::string_view after_rename = {};     ///< boundary: renamed, the directory not yet fsync'd
  std::string_view before_sync_dir = {};  ///< boundary: about to fsync the directory
};

/// How to replace.
struct ReplaceOptions {
  mode_t mode = 0600;      ///< of the new file, exactly
  bool sync = true;        ///< false: neither fsync (for stores configured without durability)
  bool keep_open = false;  ///< keep the new file open for appending (O_APPEND) in `kept`
  const ReplaceFailpoints* failpoints = nullptr;
  std::filesystem::path failpoint_file = {};  ///< the name boundary failpoints report
};

/// Where a replacement got to: after a failure (a nonzero return, or a boundary failpoint that
/// threw) the step that failed, and the temporary's name (removed again unless renamed).
struct ReplaceProgress {
  ReplaceStep step = ReplaceStep::create_temporary;
  std::string temporary;
  /// True once the target holds the new content (the rename was made).
  bool renamed() const noexcept { return step > ReplaceStep::rename; }
};

/// Replaces the file `name` of `dir` by one holding `bytes` (see the file comment). 0 or the
/// errno of the step `progress.step`. With `options.keep_open`, `kept` receives the new file,
/// open for appending, once it is renamed (even if the directory's fsync then fails).
int replace_file(const Directory& dir, std::string_view name, std::string_view bytes,
                 const ReplaceOptions& options, ReplaceProgress& progress,
                 unique_fd* kept = nullptr);

}  // namespace trellis::detail
