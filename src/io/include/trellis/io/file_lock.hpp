#pragma once
// Private to the trellis library (the durable-I/O toolkit): the exclusive file lock that says
// who holds it. The sidecar's lock, FileStore's run leases and its commit lock all use it.
//
// The lock is flock(2) on an open file: it is held exactly as long as that open file (its
// descriptor and every duplicate) stays open, and the kernel drops it when the holder dies,
// however it dies. The file's content is only a courtesy for messages: the holder writes who
// it is (its pid first), and a process refused the lock reads it. Racy by nature (the holder
// may not have written yet, or may have let go since), hence "where known" in messages.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace trellis::detail {

/// Locks `fd` exclusively without waiting (EINTR retried): 0, EWOULDBLOCK when another open
/// file holds the lock, or another errno.
int try_lock_file(int fd) noexcept;

/// Locks `fd` exclusively, waiting for the holder to let go (EINTR retried); 0 or an errno.
int lock_file(int fd) noexcept;

/// Replaces the lock file's content by `text`: written over the old from offset 0, then cut to
/// its length (a crash in between leaves the new text first). False on a failed write or cut.
bool write_lock_holder(int fd, std::string_view text) noexcept;

/// The lock file's content, at most `max` bytes of it; empty when there is none or it cannot
/// be read.
std::string read_lock_holder(int fd, std::size_t max = 511);

/// The pid `text` starts with ("<pid>" or "<pid> <anything>"), when it names a process that is
/// alive now; nullopt otherwise.
std::optional<pid_t> live_holder_pid(std::string_view text);

/// Holds the flock of a descriptor (taken by lock_file or try_lock_file) for a scope; the
/// descriptor itself stays open (its owner closes it).
class FileLockGuard {
 public:
  FileLockGuard() = default;
  explicit FileLockGuard(int fd) noexcept : fd_(fd) {}
  FileLockGuard(FileLockGuard&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileLockGuard& operator=(FileLockGuard&&) = delete;
  ~FileLockGuard();

 private:
  int fd_ = -1;
};

}  // namespace trellis::detail
