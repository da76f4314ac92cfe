// The file lock of the durable-I/O toolkit (see file_lock.hpp).

#include <trellis/io/file_lock.hpp>

#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace trellis::detail {

namespace {

int flock_retrying(int fd, int operation) noexcept {
  int result = 0;
  do {
    result = ::flock(fd, operation);
  } while (result != 0 && errno == EINTR);
  return result == 0 ? 0 : errno;
}

}  // namespace

int try_lock_file(int fd) noexcept {
  const int e = flock_retrying(fd, LOCK_EX | LOCK_NB);
  return e == EAGAIN ? EWOULDBLOCK : e;
}

int lock_file(int fd) noexcept { return flock_retrying(fd, LOCK_EX); }

bool write_lock_holder(int fd, std::string_view text) noexcept {
  return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
         ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string read_lock_holder(int fd, std::size_t max) {
  std::string text(max, '\0');
  ssize_t got = 0;
  do {
    got = ::pread(fd, text.data(), text.size(), 0);
  } while (got < 0 && errno == EINTR);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

std::optional<pid_t> live_holder_pid(std::string_view text) {
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc{} || end == text.data() || pid <= 0) return std::nullopt;
  if (end != text.data() + text.size() && *end != ' ' && *end != '\n') return std::nullopt;
  if (::kill(pid, 0) != 0 && errno != EPERM) return std::nullopt;
  return pid;
}

FileLockGuard::~FileLockGuard() {
  if (fd_ >= 0) (void)::flock(fd_, LOCK_UN);
}

}  // namespace trellis::detail
