#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "dir_io.hpp"
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

int open_parent(const std::filesystem::path& file, Directory& dir, std::string& name) {
  if (file.filename().empty()) {
    return EISDIR;
  }
  if (const int e = dir.open(parent_directory(file), false, Modes{})) {
    return e;
  }
  name = file.filename().string();
  return 0;
}

std::string step_text(std::string_view operation, const std::filesystem::path& file, int e) {
  std::string text(operation);
  if (e == ELOOP) {
    text += " (a symbolic link is at '" + file.string() +
            "'; trellis does not follow links inside its directory)";
  }
  return text;
}

Modes sidecar_modes(mode_t file_mode, const std::filesystem::path& sidecar) {
  return Modes::from_file_mode(file_mode, "sidecar '" + sidecar.string() + "'");
}

std::filesystem::path resolved_sidecar(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  // A link to a sidecar not yet written (a dangling link) names the file it will be: follow
  // it by hand (resolve_file only follows links to files that exist), a bounded number of hops.
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(file, ec) || std::filesystem::exists(file, ec)) {
      break;
    }
    const std::filesystem::path target = std::filesystem::read_symlink(file, ec);
    if (ec) {
      break;
    }
    file = target.is_absolute() ? target : parent_directory(file) / target;
  }
  std::filesystem::path resolved;
  return resolve_file(file, resolved) == 0 ? resolved : path;
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
