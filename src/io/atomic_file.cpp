// Atomic replacement of a file (see atomic_file.hpp).

#include <trellis/io/atomic_file.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "trellis/persist/failpoint.hpp"

namespace trellis::detail {

namespace {

template <class Call>
int step(std::string_view name, Call&& call) {
  return name.empty() ? call() : io_step(name, std::forward<Call>(call));
}

void boundary(std::string_view name, const std::filesystem::path& file) {
  if (!name.empty()) failpoint(name, file);
}

}  // namespace

int replace_file(const Directory& dir, std::string_view name, std::string_view bytes,
                 const ReplaceOptions& options, ReplaceProgress& progress, unique_fd* kept) {
  static const ReplaceFailpoints none{};
  const ReplaceFailpoints& fp = options.failpoints != nullptr ? *options.failpoints : none;
  const std::filesystem::path& shown = options.failpoint_file;
  progress = ReplaceProgress{};
  unique_fd fd;
  if (const int e = dir.create_temporary(name, options.mode, fd, progress.temporary)) return e;
  TempFileGuard temp(dir, progress.temporary);
  progress.step = ReplaceStep::write;
  if (options.keep_open && ::fcntl(fd.get(), F_SETFL, O_APPEND) != 0) return errno;
  if (const int e = step(fp.write, [&] { return write_all(fd.get(), bytes); })) return e;
  boundary(fp.after_write, shown);
  progress.step = ReplaceStep::sync;
  if (options.sync) {
    if (const int e = step(fp.sync, [&] { return ::fsync(fd.get()) == 0 ? 0 : errno; })) return e;
  }
  boundary(fp.after_sync, shown);
  progress.step = ReplaceStep::close;
  if (!options.keep_open) {
    if (const int e = fd.close()) return e;
  }
  progress.step = ReplaceStep::rename;
  if (const int e = step(fp.rename, [&] { return dir.rename(temp.name(), name); })) return e;
  temp.renamed();
  progress.step = ReplaceStep::sync_directory;
  if (options.keep_open && kept != nullptr) *kept = std::move(fd);
  boundary(fp.after_rename, shown);
  boundary(fp.before_sync_dir, shown);
  if (options.sync) {
    if (const int e = step(fp.sync_directory, [&] { return dir.sync(); })) return e;
  }
  progress.step = ReplaceStep::done;
  return 0;
}

}  // namespace trellis::detail
