#pragma once
// Private to the trellis library (the durable-I/O toolkit, never installed): thin POSIX helpers
// shared by persist/ and the agent's stores. They report errno values instead of throwing, so
// each caller names the step that failed in its own error type (persist_error, store_error).

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "trellis/persist/failpoint.hpp"

namespace trellis::detail {

/// An owned file descriptor, closed on destruction (errors from that close are ignored: call
/// `close()` where they matter).
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd();

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  /// Closes now; returns 0 or the errno of close(2).
  int close() noexcept;

 private:
  int fd_ = -1;
};

/// Makes the system call `call` (which returns 0 or an errno) unless the io failpoint `name`
/// injects an errno (see failpoint.hpp); returns 0 or the errno.
template <class Call>
int io_step(std::string_view name, Call&& call) {
  if (const int injected = io_failpoint(name); injected != 0) {
    return injected;
  }
  return call();
}

/// `errno` as a std::error_code.
std::error_code errno_code(int value) noexcept;

/// Writes every byte (retrying short writes and EINTR); 0 or an errno.
int write_all(int fd, std::string_view bytes) noexcept;

/// Reads from the current offset to the end into `out`; 0 or an errno.
int read_all(int fd, std::string& out);

/// The directory that holds `file` ("." for a bare file name).
std::filesystem::path parent_directory(const std::filesystem::path& file);

class Directory;

/// Removes a temporary file (by its name in `dir`) at scope exit unless the rename has
/// consumed it.
class TempFileGuard {
 public:
  TempFileGuard(const Directory& dir, std::string name) : dir_(&dir), name_(std::move(name)) {}
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  const std::string& name() const noexcept { return name_; }
  void renamed() noexcept { name_.clear(); }

 private:
  const Directory* dir_;
  std::string name_;
};

/// fsync(2) of a directory, so that a rename or a new entry in it survives power loss;
/// 0 or an errno.
int fsync_directory(const std::filesystem::path& directory) noexcept;

}  // namespace trellis::detail
