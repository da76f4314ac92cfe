#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "trellis/error.hpp"

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

namespace {
constexpr std::string_view kTempInfix = ".tmp-";
}  // namespace

std::pair<unique_fd, std::string> create_temp_file(const std::filesystem::path& path,
                                                   int extra_flags) {
  static std::atomic<unsigned> counter{0};
  const std::string stem =
      path.string() + std::string(kTempInfix) + std::to_string(::getpid()) + "-";
  for (int attempt = 0;; ++attempt) {
    std::string candidate = stem + std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    unique_fd fd(::open(candidate.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY | extra_flags,
                        S_IRUSR | S_IWUSR));
    if (fd) {
      return {std::move(fd), std::move(candidate)};
    }
    // EEXIST: a temporary file left by a dead process that had our pid; take the next name.
    if (errno != EEXIST || attempt >= 100) {
      throw persist_error(path, "create the temporary file '" + candidate + "'", errno_code(errno));
    }
  }
}

std::size_t remove_temp_files(const std::filesystem::path& path) {
  const std::string prefix = path.filename().string() + std::string(kTempInfix);
  std::error_code ec;
  std::filesystem::directory_iterator it(parent_directory(path), ec);
  if (ec) {
    throw persist_error(path, "list its directory for stale temporary files", ec);
  }
  std::size_t removed = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && std::filesystem::remove(it->path(), ec)) {
      ++removed;
    }
    if (ec) {
      throw persist_error(path, "remove the stale temporary file '" + it->path().string() + "'",
                          ec);
    }
  }
  if (ec) {
    throw persist_error(path, "list its directory for stale temporary files", ec);
  }
  return removed;
}

TempFileGuard::~TempFileGuard() {
  if (!path_.empty()) {
    ::unlink(path_.c_str());
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
