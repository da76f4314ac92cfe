#pragma once
// Private to the trellis library (the durable-I/O toolkit, never installed): the directory half
// that persist/ and the agent's FileStore share (the rule of issue 10, items 8-11).
//
// The rule: the path a user gives, and its directory, may go through symbolic links. trellis
// resolves the directory once (realpath), opens it as a directory descriptor, and opens every
// file it creates or rewrites inside (lock, journal, temporaries, lease, events) relative to
// that descriptor with O_NOFOLLOW (and O_EXCL for temporaries). A link planted at one of those
// names is refused (ELOOP), never followed. What trellis creates gets exactly the mode asked
// for, whatever the umask (0600 for files, 0700 for directories by default). Temporaries are
// named "<base>.tmp-trellis-<16 hex digits>", so a sweep removes only names trellis made, never
// a user's "<base>.tmp-backup".
//
// Like file_io.hpp, the functions return 0 or an errno value, so each caller names the step
// that failed in its own error type (persist_error, store_error).

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include <trellis/io/file_io.hpp>

namespace trellis::detail {

/// The permissions of what trellis creates, applied exactly (the umask does not narrow them).
struct Modes {
  mode_t file = 0600;
  mode_t directory = 0700;

  /// The modes for a user's `file_mode` option: files get it as given, directories add search
  /// (x) wherever the file mode grants read (0640 gives 0750). Throws invalid_option, naming
  /// `object`, for bits outside 0777, a mode that lets others write, or one the owner cannot
  /// read and write.
  static Modes from_file_mode(mode_t file_mode, std::string_view object);
};

/// An open directory that trellis works in.
class Directory {
 public:
  Directory() = default;

  /// Opens the directory `path` (following symbolic links in it, once, here). With `create`,
  /// a missing directory and its missing parents are made with `modes.directory`, each new
  /// entry fsync'd into its parent. 0 or an errno (ENOTDIR when something else is there).
  int open(const std::filesystem::path& path, bool create, const Modes& modes);

  /// The resolved path (no symbolic links, absolute).
  const std::filesystem::path& path() const noexcept { return path_; }
  int fd() const noexcept { return fd_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(fd_); }
  /// `name` inside this directory, for messages.
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

  /// openat(name) with O_NOFOLLOW | O_CLOEXEC | O_NOCTTY added to `flags`. A file this call
  /// creates gets exactly `mode`. ELOOP: a symbolic link is at `name`.
  int open_file(std::string_view name, int flags, mode_t mode, unique_fd& out) const;

  /// Opens `name` for reading without blocking on a FIFO and without following a link;
  /// ENOENT when missing, EINVAL when what is there is not a regular file (a FIFO, socket,
  /// device or directory), ELOOP for a symbolic link.
  int open_regular(std::string_view name, unique_fd& out) const;

  /// Creates a new temporary "<base>.tmp-trellis-<16 hex>" (O_EXCL, O_NOFOLLOW, exactly
  /// `mode`), open for writing; its name goes to `name`.
  int create_temporary(std::string_view base, mode_t mode, unique_fd& out, std::string& name) const;
  /// True when `name` is a temporary that create_temporary(base, ...) could have made.
  static bool is_temporary_of(std::string_view base, std::string_view name) noexcept;
  /// Removes the temporaries of `base` (is_temporary_of) that are regular files; the count
  /// removed goes to `removed`.
  int remove_temporaries(std::string_view base, std::size_t& removed) const;

  /// renameat within this directory (over an existing `to`).
  int rename(std::string_view from, std::string_view to) const;
  /// unlinkat of a file; ENOENT is not an error.
  int unlink(std::string_view name) const;
  /// mkdirat with exactly `mode`; EEXIST when something is there already.
  int make_directory(std::string_view name, mode_t mode) const;
  /// Opens the subdirectory `name` without following a link at it.
  int open_directory(std::string_view name, Directory& out) const;
  /// fsync(2) of the directory itself, so renames and new entries survive a power cut.
  int sync() const noexcept;

 private:
  std::filesystem::path path_;
  unique_fd fd_;
};

/// The canonical path of `file` for locks and identity: its directory resolved (realpath) and,
/// when `file` itself is a symbolic link, the file it points to, so that every alias of one
/// file names the same path. 0 or an errno (of the directory's resolution).
int resolve_file(const std::filesystem::path& file, std::filesystem::path& out);

}  // namespace trellis::detail
