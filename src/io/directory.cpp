#include <trellis/io/directory.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "trellis/base/error.hpp"

namespace trellis::detail {

namespace {

constexpr std::string_view kTemporaryInfix = ".tmp-trellis-";
constexpr std::size_t kTemporaryDigits = 16;

std::string c_name(std::string_view name) { return std::string(name); }

int open_retrying(int dirfd, const std::string& name, int flags, mode_t mode) {
  int fd = -1;
  do {
    fd = ::openat(dirfd, name.c_str(), flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

std::string random_hex() {
  static thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t v = engine();
  std::string out(kTemporaryDigits, '0');
  for (std::size_t i = 0; i < kTemporaryDigits; ++i, v >>= 4) out[i] = kHex[v & 0xF];
  return out;
}

// realpath(3) into a std::filesystem::path; 0 or an errno.
int real_path(const std::filesystem::path& path, std::filesystem::path& out) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return errno;
  out = resolved;
  std::free(resolved);
  return 0;
}

}  // namespace

Modes Modes::from_file_mode(mode_t file_mode, std::string_view object) {
  const auto octal = [](mode_t m) {
    char text[8];
    std::snprintf(text, sizeof text, "0%o", static_cast<unsigned>(m));
    return std::string(text);
  };
  const std::string prefix = "trellis: " + std::string(object) + ": file_mode " + octal(file_mode);
  if ((file_mode & ~static_cast<mode_t>(0777)) != 0)
    throw invalid_option(prefix + " has bits outside 0777 (no setuid, setgid or sticky bits)");
  if ((file_mode & S_IWOTH) != 0)
    throw invalid_option(prefix + " lets others write; share with a group instead (0660)");
  if ((file_mode & (S_IRUSR | S_IWUSR)) != (S_IRUSR | S_IWUSR))
    throw invalid_option(prefix + " does not let the owner read and write");
  Modes modes;
  modes.file = file_mode;
  modes.directory = file_mode | ((file_mode & 0444) >> 2);
  return modes;
}

int Directory::open(const std::filesystem::path& path, bool create, const Modes& modes) {
  const std::filesystem::path given = path.empty() ? std::filesystem::path(".") : path;
  if (create) {
    // Make the missing ancestors first, outermost first, each fsync'd into its parent.
    std::vector<std::filesystem::path> missing;
    for (std::filesystem::path p = std::filesystem::absolute(given).lexically_normal();
         !p.empty() && p != p.root_path(); p = p.parent_path()) {
      struct stat st {};
      if (::stat(p.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return ENOTDIR;
        break;
      }
      if (errno != ENOENT) return errno;
      if (p.filename().empty()) continue;  // a trailing separator
      missing.push_back(p);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      Directory parent;
      if (const int e = parent.open(it->parent_path(), false, modes)) return e;
      const int e = parent.make_directory(it->filename().string(), modes.directory);
      if (e != 0 && e != EEXIST) return e;
      if (e == 0) {
        if (const int s = parent.sync()) return s;
      }
    }
  }
  std::filesystem::path resolved;
  if (const int e = real_path(given, resolved)) return e;
  int fd = -1;
  do {
    fd = ::open(resolved.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  fd_ = unique_fd(fd);
  path_ = std::move(resolved);
  return 0;
}

int Directory::open_file(std::string_view name, int flags, mode_t mode, unique_fd& out) const {
  const std::string n = c_name(name);
  const int all = flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
  int fd = -1;
  bool created = false;
  if ((flags & O_CREAT) != 0 && (flags & O_EXCL) == 0) {
    // Create exclusively first, so that only a file this call made gets its mode set.
    fd = open_retrying(fd_.get(), n, all | O_EXCL, mode);
    if (fd >= 0) {
      created = true;
    } else if (errno == EEXIST) {
      fd = open_retrying(fd_.get(), n, all & ~O_CREAT, 0);
    }
  } else {
    fd = open_retrying(fd_.get(), n, all, mode);
    created = fd >= 0 && (flags & O_CREAT) != 0;
  }
  if (fd < 0) return errno;
  unique_fd owned(fd);
  if (created && ::fchmod(fd, mode) != 0) return errno;
  out = std::move(owned);
  return 0;
}

int Directory::open_regular(std::string_view name, unique_fd& out) const {
  unique_fd fd;
  if (const int e = open_file(name, O_RDONLY | O_NONBLOCK, 0, fd)) return e;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EINVAL;
  // Reads of a regular file never block; clear the flag so later code sees a plain descriptor.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  out = std::move(fd);
  return 0;
}

int Directory::create_temporary(std::string_view base, mode_t mode, unique_fd& out,
                                std::string& name) const {
  for (int attempt = 0;; ++attempt) {
    std::string candidate = std::string(base) + std::string(kTemporaryInfix) + random_hex();
    const int e = open_file(candidate, O_WRONLY | O_CREAT | O_EXCL, mode, out);
    if (e == 0) {
      name = std::move(candidate);
      return 0;
    }
    if (e != EEXIST || attempt >= 100) return e;
  }
}

bool Directory::is_temporary_of(std::string_view base, std::string_view name) noexcept {
  if (!name.starts_with(base)) return false;
  name.remove_prefix(base.size());
  if (!name.starts_with(kTemporaryInfix)) return false;
  name.remove_prefix(kTemporaryInfix.size());
  if (name.size() != kTemporaryDigits) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int Directory::remove_temporaries(std::string_view base, std::size_t& removed) const {
  removed = 0;
  const int dup = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return errno;
  DIR* listing = ::fdopendir(dup);
  if (listing == nullptr) {
    const int e = errno;
    ::close(dup);
    return e;
  }
  ::rewinddir(listing);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(listing)) {
    if (is_temporary_of(base, entry->d_name)) names.emplace_back(entry->d_name);
  }
  const int read_error = errno;
  ::closedir(listing);
  if (read_error != 0) return read_error;
  for (const std::string& n : names) {
    struct stat st {};
    if (::fstatat(fd_.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return errno;
    }
    if (!S_ISREG(st.st_mode)) continue;  // not something trellis made: left alone
    if (::unlinkat(fd_.get(), n.c_str(), 0) != 0) {
      if (errno == ENOENT) continue;
      return errno;
    }
    ++removed;
  }
  return 0;
}

int Directory::rename(std::string_view from, std::string_view to) const {
  return ::renameat(fd_.get(), c_name(from).c_str(), fd_.get(), c_name(to).c_str()) == 0 ? 0
                                                                                         : errno;
}

int Directory::unlink(std::string_view name) const {
  if (::unlinkat(fd_.get(), c_name(name).c_str(), 0) == 0 || errno == ENOENT) return 0;
  return errno;
}

int Directory::make_directory(std::string_view name, mode_t mode) const {
  const std::string n = c_name(name);
  if (::mkdirat(fd_.get(), n.c_str(), mode) != 0) return errno;
  // mkdir's mode is narrowed by the umask; set it exactly, through a descriptor that cannot
  // have followed a link put in the new entry's place meanwhile.
  const int fd = open_retrying(fd_.get(), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return errno;
  unique_fd owned(fd);
  if (::fchmod(fd, mode) != 0) return errno;
  return 0;
}

int Directory::open_directory(std::string_view name, Directory& out) const {
  const int fd =
      open_retrying(fd_.get(), c_name(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return errno;
  out.fd_ = unique_fd(fd);
  out.path_ = path_ / name;
  return 0;
}

int Directory::sync() const noexcept { return ::fsync(fd_.get()) == 0 ? 0 : errno; }

int resolve_file(const std::filesystem::path& file, std::filesystem::path& out) {
  std::filesystem::path target;
  // A link at the file itself: its target is the file (every alias names the same path).
  if (real_path(file, target) == 0) {
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      out = std::move(target);
      return 0;
    }
  }
  std::filesystem::path directory;
  const std::filesystem::path parent = parent_directory(file);
  if (const int e = real_path(parent, directory)) return e;
  out = directory / file.filename();
  return 0;
}

}  // namespace trellis::detail
