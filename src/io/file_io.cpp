// The descriptor and byte helpers of the durable-I/O toolkit.

#include <trellis/io/file_io.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <trellis/io/directory.hpp>
#include "trellis/persist/errors.hpp"

namespace trellis::detail {

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

unique_fd::~unique_fd() { close(); }

int unique_fd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

int unique_fd::close() noexcept {
  if (fd_ < 0) {
    return 0;
  }
  // Linux releases the descriptor even when close() fails, so it is never retried.
  const int result = ::close(release());
  return result == 0 ? 0 : errno;
}

std::error_code errno_code(int value) noexcept { return {value, std::generic_category()}; }

int write_all(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

int read_all(int fd, std::string& out) {
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    if (got == 0) {
      return 0;
    }
    out.append(buffer, static_cast<std::size_t>(got));
  }
}

std::filesystem::path parent_directory(const std::filesystem::path& file) {
  std::filesystem::path parent = file.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

TempFileGuard::~TempFileGuard() {
  if (!name_.empty()) {
    (void)dir_->unlink(name_);
  }
}

int fsync_directory(const std::filesystem::path& directory) noexcept {
  unique_fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    return errno;
  }
  if (::fsync(fd.get()) != 0) {
    return errno;
  }
  return fd.close();
}

}  // namespace trellis::detail
