#include "trellis/persist/sidecar_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <string>
#include <utility>

#include "dir_io.hpp"
#include "file_io.hpp"
#include "trellis/persist/errors.hpp"

namespace trellis {

namespace {

// The pid recorded in the lock file, if it names a live process. Racy by nature (the holder
// may not have written it yet, or may be a newer owner), hence "where known".
std::optional<pid_t> recorded_holder(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) {
    return std::nullopt;
  }
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(text, text + got, pid);
  if (ec != std::errc{} || end == text || pid <= 0) {
    return std::nullopt;
  }
  if (::kill(pid, 0) != 0 && errno != EPERM) {
    return std::nullopt;
  }
  return pid;
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
  int result = 0;
  do {
    result = ::flock(fd.get(), LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    if (errno == EWOULDBLOCK) {
      throw sidecar_locked(sidecar_, recorded_holder(fd.get()));
    }
    throw persist_error(sidecar_, "flock the lock file '" + lock_path.string() + "'",
                        detail::errno_code(errno));
  }
  // Best effort: the pid is a courtesy for error messages, not part of the lock.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) {
    (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  }
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
