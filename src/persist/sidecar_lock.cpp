#include "trellis/persist/sidecar_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <utility>

#include <trellis/io/file_io.hpp>
#include <trellis/io/file_lock.hpp>

#include "dir_io.hpp"
#include "trellis/persist/errors.hpp"

namespace trellis {

namespace {

// The pid recorded in the lock file, if it names a live process. Racy by nature (the holder
// may not have written it yet, or may be a newer owner), hence "where known".
std::optional<pid_t> recorded_holder(int fd) {
  return detail::live_holder_pid(detail::read_lock_holder(fd, 31));
}

}  // namespace

std::filesystem::path SidecarLock::lock_path_for(const std::filesystem::path& sidecar) {
  std::filesystem::path lock = sidecar;
  lock += ".lock";
  return lock;
}

SidecarLock::SidecarLock(std::filesystem::path sidecar, mode_t file_mode)
    : sidecar_(std::move(sidecar)) {
  if (sidecar_.empty()) {
    throw invalid_option("trellis: SidecarLock: the sidecar path is empty");
  }
  const detail::Modes modes = detail::sidecar_modes(file_mode, sidecar_);
  resolved_ = detail::resolved_sidecar(sidecar_);
  const std::filesystem::path lock_path = lock_path_for(resolved_);
  detail::Directory dir;
  std::string name;
  int e = detail::open_parent(resolved_, dir, name);
  detail::unique_fd fd;
  if (e == 0) {
    e = dir.open_file(name + ".lock", O_RDWR | O_CREAT, modes.file, fd);
  }
  if (e != 0) {
    throw persist_error(
        sidecar_,
        detail::step_text("create the lock file '" + lock_path.string() + "'", lock_path, e),
        detail::errno_code(e));
  }
  if (const int locked = detail::try_lock_file(fd.get()); locked != 0) {
    if (locked == EWOULDBLOCK) {
      throw sidecar_locked(sidecar_, recorded_holder(fd.get()));
    }
    throw persist_error(sidecar_, "flock the lock file '" + lock_path.string() + "'",
                        detail::errno_code(locked));
  }
  // Best effort: the pid is a courtesy for error messages, not part of the lock.
  (void)detail::write_lock_holder(fd.get(), std::to_string(::getpid()) + "\n");
  fd_ = fd.release();
}

SidecarLock::~SidecarLock() { unlock(); }

SidecarLock::SidecarLock(SidecarLock&& other) noexcept
    : sidecar_(std::move(other.sidecar_)),
      resolved_(std::move(other.resolved_)),
      fd_(std::exchange(other.fd_, -1)) {}

SidecarLock& SidecarLock::operator=(SidecarLock&& other) noexcept {
  if (this != &other) {
    unlock();
    sidecar_ = std::move(other.sidecar_);
    resolved_ = std::move(other.resolved_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void SidecarLock::unlock() noexcept {
  if (fd_ < 0) {
    return;
  }
  // Clear our pid first, so that a later refusal never names a process that has let go.
  (void)!::ftruncate(fd_, 0);
  ::close(std::exchange(fd_, -1));  // closing the only descriptor releases the flock
}

}  // namespace trellis
