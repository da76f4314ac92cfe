// The journal's line codec, its reader (torn tail vs corruption) and its appending writer.

#include "trellis/persist/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string_view>
#include <utility>

#include <trellis/io/atomic_file.hpp>
#include <trellis/io/file_io.hpp>
#include <trellis/io/json_text.hpp>
#include <trellis/io/line_log.hpp>

#include "dir_io.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/failpoint.hpp"

namespace trellis {

namespace {

using reason = recovery_error::reason;
using detail::errno_code;
using detail::Refusal;

int sync_data(int fd) { return ::fdatasync(fd) == 0 ? 0 : errno; }

std::optional<Refusal> decode_line(std::string_view text, JournalEntry& out) {
  nlohmann::json doc;
  if (auto bad = detail::parse_json(text, doc)) {
    return bad;
  }
  if (!doc.is_object()) {
    return Refusal{reason::not_an_object,
                   std::string("a JSON ") + doc.type_name() + ", not a journal entry"};
  }
  if (auto bad = detail::take_and_verify_checksum(doc)) {
    return bad;
  }
  if (auto bad = detail::check_unsigned(doc, "epoch")) {
    return bad;
  }
  for (const char* key : {"event", "from", "to"}) {
    if (auto bad = detail::check_present(doc, key)) {
      return bad;
    }
  }
  out.epoch = doc["epoch"].get<std::uint64_t>();
  out.event = std::move(doc["event"]);
  out.from = std::move(doc["from"]);
  out.to = std::move(doc["to"]);
  return std::nullopt;
}

}  // namespace

std::filesystem::path journal_path_for(const std::filesystem::path& sidecar) {
  std::filesystem::path journal = sidecar;
  journal += ".journal";
  return journal;
}

std::string encode_journal_line(const JournalEntry& entry) {
  for (const auto& [key, value] :
       {std::pair<const char*, const nlohmann::json*>{"event", &entry.event},
        {"from", &entry.from},
        {"to", &entry.to}}) {
    detail::check_writable_member(*value, key,
                                  "the journal line of epoch " + std::to_string(entry.epoch));
  }
  // As in encode_sidecar: each value dumped once, the canonical text assembled exactly as
  // nlohmann::json::dump() prints the sorted object.
  const std::string epoch = std::to_string(entry.epoch);
  const std::string event = entry.event.dump();
  const std::string from = entry.from.dump();
  const std::string to = entry.to.dump();
  const std::string body =
      "\"epoch\":" + epoch + ",\"event\":" + event + ",\"from\":" + from + ",\"to\":" + to;
  return detail::checksummed_line("{" + body + "}");
}

JournalContents read_journal(const std::filesystem::path& path) {
  JournalContents contents;
  detail::Directory dir;
  std::string name;
  int e = detail::open_parent(path, dir, name);
  detail::unique_fd fd;
  if (e == 0) {
    e = dir.open_regular(name, fd);  // no link followed, no FIFO waited on
  }
  if (e == ENOENT) {
    return contents;
  }
  if (e == ELOOP) {
    throw recovery_error(path, reason::not_a_file,
                         "a symbolic link is at '" + path.string() +
                             "'; trellis does not follow links inside its directory");
  }
  if (e == EINVAL) {
    throw recovery_error(path, reason::not_a_file, "not a regular file");
  }
  if (e != 0) {
    throw recovery_error(path, reason::unreadable, "cannot open: " + errno_code(e).message());
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw recovery_error(path, reason::unreadable, "cannot stat: " + errno_code(errno).message());
  }
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(info.st_size));
  if (const int r = detail::read_all(fd.get(), bytes); r != 0) {
    throw recovery_error(path, reason::unreadable, "cannot read: " + errno_code(r).message());
  }

  // Only an unterminated tail is a torn write (the append never returned); a complete line
  // that does not decode was acknowledged once: corruption, the last line included.
  const detail::LineScan scan =
      detail::scan_lines(bytes, [&](std::string_view text, std::size_t line) {
        JournalEntry entry;
        if (auto bad = decode_line(text, entry)) {
          throw recovery_error(path, bad->why, "line " + std::to_string(line) + ": " + bad->detail);
        }
        if (!contents.entries.empty() && entry.epoch <= contents.entries.back().epoch) {
          throw recovery_error(path, reason::bad_sequence,
                               "line " + std::to_string(line) + ": epoch " +
                                   std::to_string(entry.epoch) + " does not follow epoch " +
                                   std::to_string(contents.entries.back().epoch));
        }
        contents.entries.push_back(std::move(entry));
        return true;
      });
  contents.valid_size = scan.valid_size;
  if (scan.torn) {
    contents.torn = TornTail{scan.torn_line, scan.valid_size, "no trailing newline"};
  }
  return contents;
}

Journal::Journal(std::filesystem::path path, mode_t file_mode)
    : path_(std::move(path)),
      mode_(detail::Modes::from_file_mode(file_mode, "journal '" + path_.string() + "'").file),
      dir_(std::make_unique<detail::Directory>()) {
  std::string name;
  int e = detail::open_parent(path_, *dir_, name);
  detail::unique_fd fd;
  if (e == 0) {
    e = dir_->open_file(name, O_WRONLY | O_APPEND | O_CREAT, mode_, fd);
  }
  if (e != 0) {
    throw persist_error(path_, detail::step_text("open the journal for appending", path_, e),
                        errno_code(e));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw persist_error(path_, "stat the journal", errno_code(errno));
  }
  if (const int r = detail::io_step("journal.dir_fsync", [&] { return dir_->sync(); }); r != 0) {
    throw persist_error(path_, "fsync the journal's directory", errno_code(r));
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  fd_ = fd.release();
}

Journal::~Journal() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)),
      mode_(other.mode_),
      dir_(std::move(other.dir_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      broken_(other.broken_),
      directory_unconfirmed_(other.directory_unconfirmed_) {}

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    path_ = std::move(other.path_);
    mode_ = other.mode_;
    dir_ = std::move(other.dir_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    broken_ = other.broken_;
    directory_unconfirmed_ = other.directory_unconfirmed_;
  }
  return *this;
}

void Journal::append(const JournalEntry& entry) {
  if (fd_ < 0 || broken_) {
    throw persist_error(path_, fd_ < 0 ? "append to a moved-from journal"
                                       : "append after a failed append could not be undone");
  }
  std::string line;
  try {
    line = encode_journal_line(entry);
  } catch (const unwritable_value& e) {
    throw unwritable_value(
        "journal '" + path_.string() + "' (epoch " + std::to_string(entry.epoch) + ")", e.member(),
        e.reason());
  } catch (const nlohmann::json::exception& e) {
    throw persist_error(path_, std::string("cannot encode the entry: ") + e.what());
  }

  if (directory_unconfirmed_) {
    // reset()'s rename is not known to be durable: a line written into the new file now could
    // vanish with it in a crash. Nothing is written until the directory is synced.
    if (const int e = detail::io_step("journal.dir_fsync", [&] { return dir_->sync(); }); e != 0) {
      throw persist_error(path_, "fsync its directory after the compaction's rename",
                          errno_code(e));
    }
    directory_unconfirmed_ = false;
  }

  // A failed line is cut back, so that the next append does not bury a torn line in the middle
  // of the file (which read_journal would then refuse). If the cut fails, the line may stay
  // (and be replayed): the outcome is unknown, and every later append is refused.
  static constexpr detail::AppendFailpoints failpoints{
      .write = "journal.write",
      .sync = "journal.fdatasync",
      .truncate = "journal.ftruncate",
      .mid_append = "journal.mid_append",
      .after_append = "journal.after_append",
  };
  if (auto failure = detail::append_line(fd_, line, size_, true, &failpoints, path_)) {
    if (failure->cut_error != 0) {
      broken_ = true;
      throw persist_outcome_unknown(
          path_,
          failure->operation + " (" + errno_code(failure->error).message() +
              "), then cut the line back (" + failure->cut_step + ": " +
              errno_code(failure->cut_error).message() + "): the journal may hold the line",
          errno_code(failure->error));
    }
    throw persist_error(path_, failure->operation, errno_code(failure->error));
  }
  size_ += line.size();
}

void Journal::truncate(std::uint64_t size) {
  if (fd_ < 0) {
    throw persist_error(path_, "truncate a moved-from journal");
  }
  if (const int e = detail::io_step(
          "journal.ftruncate",
          [&] { return ::ftruncate(fd_, static_cast<off_t>(size)) == 0 ? 0 : errno; });
      e != 0) {
    throw persist_error(path_, "truncate to " + std::to_string(size) + " bytes", errno_code(e));
  }
  // The file is `size` bytes long now, durable or not: a later cut-back must not go past it
  // (ftruncate to a larger size would fill the gap with zeros).
  size_ = size;
  if (const int e = detail::io_step("journal.fdatasync", [&] { return sync_data(fd_); }); e != 0) {
    broken_ = true;  // the cut may not be on disk: appending after it could bury the old tail
    throw persist_error(path_, "fdatasync after truncating", errno_code(e));
  }
  broken_ = false;
}

void Journal::reset() {
  if (fd_ < 0) {
    throw persist_error(path_, "reset a moved-from journal");
  }
  const std::string name = path_.filename().string();
  static constexpr detail::ReplaceFailpoints failpoints{
      .sync = "journal.fsync", .rename = "journal.rename", .sync_directory = "journal.dir_fsync"};
  const detail::ReplaceOptions options{
      .mode = mode_, .sync = true, .keep_open = true, .failpoints = &failpoints};
  detail::ReplaceProgress progress;
  detail::unique_fd fd;
  const int e = detail::replace_file(*dir_, name, {}, options, progress, &fd);
  if (progress.renamed()) {
    // The path names the new file now: append there, whatever the directory fsync says.
    ::close(std::exchange(fd_, fd.release()));
    size_ = 0;
    broken_ = false;
    directory_unconfirmed_ = e != 0;
  }
  if (e == 0) return;
  const std::string temp_path = (*dir_ / progress.temporary).string();
  switch (progress.step) {
    case detail::ReplaceStep::create_temporary:
    case detail::ReplaceStep::write: {
      const std::filesystem::path pattern = *dir_ / (name + ".tmp-trellis-*");
      throw persist_error(
          path_,
          detail::step_text("create the empty journal '" + pattern.string() + "'", pattern, e),
          errno_code(e));
    }
    case detail::ReplaceStep::sync:
    case detail::ReplaceStep::close:
      throw persist_error(path_, "fsync the empty journal '" + temp_path + "'", errno_code(e));
    case detail::ReplaceStep::rename:
      throw persist_error(path_, "rename the empty journal '" + temp_path + "' over it",
                          errno_code(e));
    default:
      throw persist_error(path_, "fsync its directory after replacing it by an empty journal",
                          errno_code(e));
  }
}

std::size_t remove_journal_temps(const std::filesystem::path& journal) {
  detail::Directory dir;
  std::string name;
  std::size_t removed = 0;
  int e = detail::open_parent(journal, dir, name);
  if (e == 0) {
    e = dir.remove_temporaries(name, removed);
  }
  if (e != 0) {
    throw persist_error(journal, "remove the stale temporary files in its directory",
                        errno_code(e));
  }
  return removed;
}

}  // namespace trellis
