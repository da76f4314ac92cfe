#pragma once
/// @file
/// `SidecarLock`: exclusive ownership of a sidecar, held for as long as the object lives.
///
/// The lock is flock(2) on "<sidecar>.lock" (created with exactly the `file_mode` given, 0600
/// by default, whatever the umask; never deleted: deleting a lock file lets two processes lock
/// two different inodes). The lock is named after the resolved sidecar path (its directory's
/// links resolved, and a link at the sidecar itself followed to its target), so every alias of
/// one sidecar meets the same lock. The lock file is opened relative to that directory without
/// following a link: a symbolic link planted at "<sidecar>.lock" is refused (persist_error,
/// ELOOP), its target untouched. flock locks belong to an open file
/// description, so a second SidecarLock in the same process conflicts just like one in another
/// process, and the kernel releases the lock when the process dies, even by SIGKILL. The
/// descriptor is close-on-exec; a child made by a bare fork() (no exec) would share the lock,
/// which is one more reason trellis only starts children with fork + exec.
///
/// The owner writes its pid into the lock file, so a refused owner can say who holds it.

#include <sys/types.h>

#include <filesystem>

namespace trellis {

/// Owns the lock of one sidecar (RAII, move-only).
class SidecarLock {
 public:
  /// Takes the lock of the sidecar at `sidecar` without waiting. Throws sidecar_locked (with
  /// the holder's pid where known) when another owner holds it, persist_error when the lock
  /// file cannot be created or locked (e.g. a missing directory, a symbolic link at the lock
  /// file's name), invalid_option for an empty path or a `file_mode` that lets others write
  /// (see DurableOptions::file_mode), with nothing created.
  explicit SidecarLock(std::filesystem::path sidecar, mode_t file_mode = 0600);
  ~SidecarLock();

  SidecarLock(SidecarLock&& other) noexcept;
  SidecarLock& operator=(SidecarLock&& other) noexcept;
  SidecarLock(const SidecarLock&) = delete;
  SidecarLock& operator=(const SidecarLock&) = delete;

  /// The sidecar this lock owns, as given.
  const std::filesystem::path& sidecar_path() const noexcept { return sidecar_; }
  /// The sidecar this lock owns, resolved: the one path of every alias of the file, which the
  /// lock is named after ("<resolved>.lock").
  const std::filesystem::path& resolved_path() const noexcept { return resolved_; }
  /// The lock file of the (resolved) sidecar path `sidecar`: "<sidecar>.lock".
  static std::filesystem::path lock_path_for(const std::filesystem::path& sidecar);

  /// False only for a moved-from lock.
  bool owns() const noexcept { return fd_ >= 0; }

  /// Releases the lock now (the destructor does nothing afterwards).
  void unlock() noexcept;

 private:
  std::filesystem::path sidecar_;
  std::filesystem::path resolved_;
  int fd_ = -1;
};

}  // namespace trellis
