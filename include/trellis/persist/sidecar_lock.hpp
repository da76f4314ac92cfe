#pragma once
/// @file
/// `SidecarLock`: exclusive ownership of a sidecar, held for as long as the object lives.
///
/// The lock is flock(2) on "<sidecar>.lock" (created 0600, never deleted: deleting a lock
/// file lets two processes lock two different inodes). flock locks belong to an open file
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
  /// file cannot be created or locked (e.g. a missing directory).
  explicit SidecarLock(std::filesystem::path sidecar);
  ~SidecarLock();

  SidecarLock(SidecarLock&& other) noexcept;
  SidecarLock& operator=(SidecarLock&& other) noexcept;
  SidecarLock(const SidecarLock&) = delete;
  SidecarLock& operator=(const SidecarLock&) = delete;

  /// The sidecar this lock owns.
  const std::filesystem::path& sidecar_path() const noexcept { return sidecar_; }
  /// The lock file: "<sidecar>.lock".
  static std::filesystem::path lock_path_for(const std::filesystem::path& sidecar);

  /// False only for a moved-from lock.
  bool owns() const noexcept { return fd_ >= 0; }

  /// Releases the lock now (the destructor does nothing afterwards).
  void unlock() noexcept;

 private:
  std::filesystem::path sidecar_;
  int fd_ = -1;
};

}  // namespace trellis
