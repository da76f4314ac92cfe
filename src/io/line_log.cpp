// The checksummed line log of the durable-I/O toolkit: encoding and appending (the reading rule
// is scan_lines, in the header).

#include <trellis/io/line_log.hpp>

#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <trellis/io/checksum.hpp>
#include <trellis/io/file_io.hpp>

#include "trellis/persist/errors.hpp"
#include "trellis/persist/failpoint.hpp"

namespace trellis::detail {

namespace {

int sync_data(int fd) noexcept { return ::fdatasync(fd) == 0 ? 0 : errno; }

// io_step for a failpoint name that may be empty (never reached).
template <class Call>
int step(std::string_view name, Call&& call) {
  return name.empty() ? call() : io_step(name, std::forward<Call>(call));
}

}  // namespace

std::string checksummed_line(std::string_view object) {
  std::string line;
  line.reserve(object.size() + 90);
  line.append(object.substr(0, object.size() - 1));  // without the closing brace
  line += ",\"checksum\":\"";
  line += "sha256:";
  sha256_hex_into(object, line);
  line += "\"}\n";
  return line;
}

std::optional<AppendFailure> append_line(int fd, std::string_view line, std::uint64_t size,
                                         bool sync, const AppendFailpoints* failpoints,
                                         const std::filesystem::path& file) {
  static const AppendFailpoints none{};
  const AppendFailpoints& fp = failpoints != nullptr ? *failpoints : none;
  // Undoes a partial or unsynced line; reports whether that worked.
  const auto failed = [&](std::string operation, int e) {
    AppendFailure failure{std::move(operation), e, 0, ""};
    failure.cut_error = step(
        fp.truncate, [&] { return ::ftruncate(fd, static_cast<off_t>(size)) == 0 ? 0 : errno; });
    if (failure.cut_error != 0) {
      failure.cut_step = "ftruncate";
    } else if (sync) {
      failure.cut_error = step(fp.sync, [&] { return sync_data(fd); });
      if (failure.cut_error != 0) failure.cut_step = "fdatasync";
    }
    return failure;
  };
  try {
    // Stands for a crash (or an I/O error) halfway through the write below.
    if (!fp.mid_append.empty()) {
      failpoint(fp.mid_append, file, [&] { (void)write_all(fd, line.substr(0, line.size() / 2)); });
    }
  } catch (const persist_error& injected) {
    return failed(injected.operation(), injected.code().value());
  }
  ssize_t written = 0;
  if (const int e = step(fp.write,
                         [&] {
                           do {
                             written = ::write(fd, line.data(), line.size());
                           } while (written < 0 && errno == EINTR);
                           return written < 0 ? errno : 0;
                         });
      e != 0) {
    return failed("append a line", e);
  }
  if (static_cast<std::size_t>(written) != line.size()) {
    return failed("append a line (short write)", ENOSPC);
  }
  if (sync) {
    if (const int e = step(fp.sync, [&] { return sync_data(fd); }); e != 0) {
      return failed("fdatasync after appending a line", e);
    }
  }
  try {
    // Stands for an error reported after the line reached the disk: the caller will not
    // acknowledge it, so the line must go.
    if (!fp.after_append.empty()) failpoint(fp.after_append, file);
  } catch (const persist_error& injected) {
    return failed(injected.operation(), injected.code().value());
  }
  return std::nullopt;
}

int cut_torn_tail(int fd, std::uint64_t valid_size, bool sync) noexcept {
  if (::ftruncate(fd, static_cast<off_t>(valid_size)) != 0) return errno;
  return sync ? sync_data(fd) : 0;
}

}  // namespace trellis::detail
