// The sidecar codec and its atomic write protocol (see sidecar.hpp for the format).

#include "trellis/persist/sidecar.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <system_error>
#include <utility>
#include <vector>

#include <trellis/io/atomic_file.hpp>
#include <trellis/io/checksum.hpp>
#include <trellis/io/file_io.hpp>
#include <trellis/io/json_text.hpp>
#include <trellis/io/utc_time.hpp>

#include "dir_io.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/failpoint.hpp"

namespace trellis {

namespace {

using reason = recovery_error::reason;
using detail::errno_code;
using detail::Refusal;
using detail::unique_fd;

// How unwritable_value names the sidecar at `path`.
std::string sidecar_object(const std::filesystem::path& path) {
  return "sidecar '" + path.string() + "'";
}

[[noreturn]] void refuse(const std::filesystem::path& file, Refusal refusal) {
  throw recovery_error(file, refusal.why, std::move(refusal.detail));
}

}  // namespace

std::string iso8601_utc(std::chrono::system_clock::time_point time) {
  return detail::format_utc(time);
}

std::string encode_sidecar(const SidecarRecord& record) {
  // The other members are scalars written here; only the state can hold what JSON text
  // cannot carry back (a NaN, an infinity, nesting past the readers' limit).
  detail::check_writable_member(record.state, "state",
                                "the sidecar of machine " + nlohmann::json(record.machine).dump());
  // Each value is dumped once. The canonical text is assembled exactly as nlohmann::json::dump()
  // prints the object of these members (sorted keys, no spaces), which is what a reader
  // recomputes; sidecar_test checks the two agree.
  const std::string epoch = std::to_string(record.epoch);
  const std::string format = nlohmann::json(sidecar_format).dump();
  const std::string machine = nlohmann::json(record.machine).dump();
  const std::string schema = std::to_string(record.schema);
  const std::string state = record.state.dump();
  const std::string updated_at = nlohmann::json(record.updated_at).dump();
  // A flat machine's sidecar stays at version 1 (no "kind"), which older builds read; a
  // statechart's is version 2, which they refuse rather than misread.
  const bool chart = record.kind == SidecarKind::statechart;
  const std::string version = chart ? "2" : "1";
  const std::string kind = chart ? ",\"kind\":\"statechart\"" : "";

  const std::string canonical = "{\"epoch\":" + epoch + ",\"format\":" + format + kind +
                                ",\"machine\":" + machine + ",\"schema\":" + schema +
                                ",\"state\":" + state + ",\"updated_at\":" + updated_at +
                                ",\"version\":" + version + "}";
  const std::string checksum = detail::checksum_of(canonical);

  std::string out;
  out.reserve(canonical.size() + checksum.size() + 32);
  out += "{\"format\":" + format;
  out += ",\"version\":" + version;
  out += kind;
  out += ",\"machine\":" + machine;
  out += ",\"schema\":" + schema;
  out += ",\"epoch\":" + epoch;
  out += ",\"state\":" + state;
  out += ",\"updated_at\":" + updated_at;
  out += ",\"checksum\":\"" + checksum + "\"}\n";
  return out;
}

SidecarRecord decode_sidecar(std::string_view bytes, std::string_view expected_machine,
                             const std::filesystem::path& file) {
  nlohmann::json doc;
  if (auto bad = detail::parse_json(bytes, doc)) {
    refuse(file, std::move(*bad));
  }
  if (!doc.is_object()) {
    refuse(file, {reason::not_an_object,
                  std::string("a JSON ") + doc.type_name() + ", not a sidecar object"});
  }

  // Format and version come first: a file of another kind is named as such, not as a file
  // with a bad checksum.
  const auto format = doc.find("format");
  if (format == doc.end()) {
    refuse(file, {reason::foreign_format, "not a trellis sidecar (no \"format\" member)"});
  }
  if (!format->is_string() || format->get_ref<const std::string&>() != sidecar_format) {
    refuse(file,
           {reason::foreign_format, "another format: \"format\" is " + format->dump() +
                                        ", expected \"" + std::string(sidecar_format) + "\""});
  }
  if (auto bad = detail::check_unsigned(doc, "version")) {
    refuse(file, std::move(*bad));
  }
  const std::uint64_t version = doc["version"].get<std::uint64_t>();
  if (version > static_cast<std::uint64_t>(sidecar_version)) {
    refuse(file, {reason::future_version, "format version " + std::to_string(version) +
                                              " is newer than this build reads (" +
                                              std::to_string(sidecar_version) + ")"});
  }
  if (version < 1) {
    refuse(file, {reason::bad_field, "unsupported format version 0"});
  }

  if (auto bad = detail::take_and_verify_checksum(doc)) {
    refuse(file, std::move(*bad));
  }

  for (const char* key : {"machine", "updated_at"}) {
    if (auto bad = detail::check_string(doc, key)) {
      refuse(file, std::move(*bad));
    }
  }
  if (auto bad = detail::check_unsigned(doc, "epoch")) {
    refuse(file, std::move(*bad));
  }
  if (auto bad = detail::check_present(doc, "state")) {
    refuse(file, std::move(*bad));
  }
  const auto schema = doc.find("schema");
  if (schema == doc.end()) {
    refuse(file, {reason::bad_field, "\"schema\" is missing"});
  }
  const bool schema_is_int =
      schema->is_number_unsigned()
          ? schema->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT_MAX)
          : schema->is_number_integer() && schema->get<std::int64_t>() >= INT_MIN &&
                schema->get<std::int64_t>() <= INT_MAX;
  if (!schema_is_int) {
    refuse(file, {reason::bad_field, "\"schema\" is " + schema->dump() + ", expected an int"});
  }

  SidecarRecord record;
  record.machine = std::move(doc["machine"].get_ref<std::string&>());
  if (!expected_machine.empty() && record.machine != expected_machine) {
    refuse(file,
           {reason::foreign_machine, "the sidecar of machine \"" + record.machine + "\", not \"" +
                                         std::string(expected_machine) + "\""});
  }
  record.epoch = doc["epoch"].get<std::uint64_t>();
  record.schema = schema->get<int>();
  record.state = std::move(doc["state"]);
  record.updated_at = std::move(doc["updated_at"].get_ref<std::string&>());
  if (version >= 2) {
    // Version 2 says what the state is; version 1 files are flat machines' (a "kind" member
    // there is an unknown extra member, ignored).
    const auto kind = doc.find("kind");
    if (kind == doc.end()) refuse(file, {reason::bad_field, "\"kind\" is missing"});
    if (*kind == "machine") {
      record.kind = SidecarKind::machine;
    } else if (*kind == "statechart") {
      record.kind = SidecarKind::statechart;
    } else {
      refuse(file, {reason::bad_field,
                    "\"kind\" is " + kind->dump() + ", expected \"machine\" or \"statechart\""});
    }
  }
  return record;
}

std::optional<SidecarRecord> load_sidecar(const std::filesystem::path& path,
                                          std::string_view expected_machine) {
  const std::filesystem::path resolved = detail::resolved_sidecar(path);
  detail::Directory dir;
  std::string name;
  int e = detail::open_parent(resolved, dir, name);
  unique_fd fd;
  if (e == 0) {
    // Never waits on a FIFO, never follows a link inside the directory.
    e = dir.open_regular(name, fd);
  }
  if (e == ENOENT) {
    return std::nullopt;
  }
  if (e == ELOOP) {
    throw recovery_error(path, reason::not_a_file,
                         "a symbolic link that points nowhere is at '" + resolved.string() +
                             "'; trellis does not follow links inside its directory");
  }
  if (e == EINVAL) {
    struct stat info {};
    const bool known = ::fstatat(dir.fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
    const char* kind = !known                   ? "something"
                       : S_ISDIR(info.st_mode)  ? "a directory"
                       : S_ISFIFO(info.st_mode) ? "a FIFO"
                       : S_ISSOCK(info.st_mode) ? "a socket"
                                                : "a device";
    throw recovery_error(path, reason::not_a_file,
                         std::string(kind) + " is at the path, not a regular file");
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
  return decode_sidecar(bytes, expected_machine, path);
}

void check_sidecar_state(const std::filesystem::path& path, const nlohmann::json& state) {
  detail::check_writable_member(state, "state", sidecar_object(path));
}

void store_sidecar(const std::filesystem::path& path, const SidecarRecord& record,
                   mode_t file_mode) {
  const detail::Modes modes = detail::sidecar_modes(file_mode, path);
  std::string bytes;
  try {
    bytes = encode_sidecar(record);
  } catch (const unwritable_value& e) {
    throw unwritable_value(sidecar_object(path), e.member(), e.reason());
  } catch (const nlohmann::json::exception& e) {
    throw persist_error(path, std::string("cannot encode the record: ") + e.what());
  }

  const std::filesystem::path resolved = detail::resolved_sidecar(path);
  detail::Directory dir;
  std::string name;
  if (const int e = detail::open_parent(resolved, dir, name); e != 0) {
    throw persist_error(path, "open its directory", errno_code(e));
  }
  static constexpr detail::ReplaceFailpoints failpoints{
      .write = "sidecar.write",
      .sync = "sidecar.fsync",
      .rename = "sidecar.rename",
      .sync_directory = "sidecar.dir_fsync",
      .after_write = "sidecar.after_temp_write",
      .after_sync = "sidecar.after_temp_fsync",
      .after_rename = "sidecar.after_rename",
      .before_sync_dir = "sidecar.before_dir_fsync",
  };
  const detail::ReplaceOptions options{.mode = modes.file,
                                       .sync = true,
                                       .keep_open = false,
                                       .failpoints = &failpoints,
                                       .failpoint_file = path};
  detail::ReplaceProgress progress;
  // From the rename on the file holds the new record: a failure leaves its durability unknown.
  const auto unknown = [&](const std::string& operation, std::error_code code) {
    return persist_outcome_unknown(
        path,
        operation + " (the file holds the new record; whether it survives a crash is unknown)",
        code);
  };
  int e = 0;
  try {
    e = detail::replace_file(dir, name, bytes, options, progress);
  } catch (const persist_error& injected) {
    if (progress.renamed()) throw unknown(injected.operation(), injected.code());
    throw;
  }
  if (e == 0) return;
  const std::string temp_path = (dir / progress.temporary).string();
  switch (progress.step) {
    case detail::ReplaceStep::create_temporary: {
      const std::filesystem::path pattern = dir / (name + ".tmp-trellis-*");
      throw persist_error(
          path, detail::step_text("create a temporary file '" + pattern.string() + "'", pattern, e),
          errno_code(e));
    }
    case detail::ReplaceStep::write:
      throw persist_error(path, "write the temporary file '" + temp_path + "'", errno_code(e));
    case detail::ReplaceStep::sync:
      throw persist_error(path, "fsync the temporary file '" + temp_path + "'", errno_code(e));
    case detail::ReplaceStep::close:
      throw persist_error(path, "close the temporary file '" + temp_path + "'", errno_code(e));
    case detail::ReplaceStep::rename:
      throw persist_error(path, "rename '" + temp_path + "' over it", errno_code(e));
    default:
      throw unknown("fsync its directory after the rename", errno_code(e));
  }
}

std::size_t remove_sidecar_temps(const std::filesystem::path& path) {
  const std::filesystem::path resolved = detail::resolved_sidecar(path);
  detail::Directory dir;
  std::string name;
  std::size_t removed = 0;
  int e = detail::open_parent(resolved, dir, name);
  if (e == 0) {
    e = dir.remove_temporaries(name, removed);
  }
  if (e != 0) {
    throw persist_error(path, "remove the stale temporary files in its directory", errno_code(e));
  }
  return removed;
}

namespace {

// Renames `from` to `to` in `dir` unless `to` exists; 0, EEXIST or another errno.
int rename_no_replace(const detail::Directory& dir, const std::string& from,
                      const std::string& to) {
  if (::renameat2(dir.fd(), from.c_str(), dir.fd(), to.c_str(), RENAME_NOREPLACE) == 0) {
    return 0;
  }
  if (errno != EINVAL && errno != ENOSYS) {
    return errno;
  }
  // A file system without RENAME_NOREPLACE: link() refuses an existing name just as well.
  if (::linkat(dir.fd(), from.c_str(), dir.fd(), to.c_str(), 0) != 0) {
    return errno;
  }
  if (::unlinkat(dir.fd(), from.c_str(), 0) != 0) {
    const int e = errno;
    ::unlinkat(dir.fd(), to.c_str(), 0);
    return e;
  }
  return 0;
}

bool exists_in(const detail::Directory& dir, const std::string& name) {
  struct stat info {};
  return ::fstatat(dir.fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

std::filesystem::path quarantine_sidecar(const std::filesystem::path& path) {
  std::optional<std::filesystem::path> moved = quarantine_sidecar_and_journal(path, false).sidecar;
  if (!moved) {
    throw persist_error(path, "move it aside", errno_code(ENOENT));
  }
  return *moved;
}

Quarantined quarantine_sidecar_and_journal(const std::filesystem::path& path, bool journal) {
  const std::filesystem::path resolved = detail::resolved_sidecar(path);
  detail::Directory dir;
  std::string name;
  if (const int e = detail::open_parent(resolved, dir, name); e != 0) {
    throw persist_error(path, "open its directory to move it aside", errno_code(e));
  }
  // The files to move: the sidecar and, when asked, its journal, each only if present.
  std::vector<std::string> names;
  for (const std::string& n : {name, name + ".journal"}) {
    if ((n == name || journal) && exists_in(dir, n)) names.push_back(n);
  }
  Quarantined out;
  if (names.empty()) {
    return out;
  }
  const std::string stamp =
      ".corrupt-" + detail::format_utc_compact(std::chrono::system_clock::now());
  for (int n = 1;; ++n) {
    const std::string suffix = n == 1 ? stamp : stamp + "-" + std::to_string(n);
    std::vector<std::pair<std::string, std::string>> done;
    int failed = 0;
    std::string failed_target;
    for (const std::string& from : names) {
      const std::string to = from + suffix;
      if (const int e = rename_no_replace(dir, from, to); e != 0) {
        failed = e;
        failed_target = to;
        break;
      }
      done.emplace_back(from, to);
    }
    if (failed != 0) {
      // Both or neither: put back what was moved under this suffix.
      for (const auto& [from, to] : done) {
        if (rename_no_replace(dir, to, from) != 0) {
          throw persist_error(path,
                              "move '" + (dir / from).string() + "' back from '" +
                                  (dir / to).string() + "' after failing to move '" +
                                  failed_target + "' aside",
                              errno_code(failed));
        }
      }
      if (failed == EEXIST && n < 10'000) {
        continue;
      }
      throw persist_error(path, "move it aside to '" + (dir / failed_target).string() + "'",
                          errno_code(failed));
    }
    if (const int e = dir.sync(); e != 0) {
      throw persist_error(path, "fsync its directory after moving it aside", errno_code(e));
    }
    for (const auto& [from, to] : done) {
      (from == name ? out.sidecar : out.journal) = dir / to;
    }
    return out;
  }
}

}  // namespace trellis
