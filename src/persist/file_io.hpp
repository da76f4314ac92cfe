#pragma once
// Private to src/persist: thin POSIX helpers shared by the sidecar, its lock and the journal.
// They report errno values instead of throwing, so each caller names the step that failed.

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

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

/// `errno` as a std::error_code.
std::error_code errno_code(int value) noexcept;

/// Writes every byte (retrying short writes and EINTR); 0 or an errno.
int write_all(int fd, std::string_view bytes) noexcept;

/// Reads from the current offset to the end into `out`; 0 or an errno.
int read_all(int fd, std::string& out);

/// The directory that holds `file` ("." for a bare file name).
std::filesystem::path parent_directory(const std::filesystem::path& file);

/// fsync(2) of a directory, so that a rename or a new entry in it survives power loss;
/// 0 or an errno.
int fsync_directory(const std::filesystem::path& directory) noexcept;

}  // namespace trellis::detail
