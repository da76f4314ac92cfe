#pragma once
// Private to the trellis library (the durable-I/O toolkit): every checksummed line log trellis
// keeps (the sidecar's journal, FileStore's journal.jsonl, effects.jsonl and events.jsonl) is
// encoded, read and appended by the functions here, shared by persist/ and the agent's
// FileStore.
//
// A line is written with one write(2) that ends with its newline, and acknowledged only after
// that write (and its sync) returned. So only an unterminated tail can be a write that never
// returned: a torn write, which readers ignore and the next writer cuts. A complete line that
// does not decode (a bad checksum, not JSON, a wrong field) was acknowledged once and is now
// damaged: corruption, wherever it is, the last line included. Readers report it with a typed
// error and never cut or rewrite it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace trellis::detail {

/// What scan_lines found.
struct LineScan {
  std::size_t lines = 0;         ///< complete lines passed to `take`
  std::uint64_t valid_size = 0;  ///< bytes up to the end of the last line taken
  bool torn = false;             ///< an unterminated tail follows the lines taken
  std::size_t torn_line = 0;     ///< its line number (1-based), when torn
};

/// Calls `take(line, number)` for each complete line of `bytes` (without its newline, numbered
/// from 1), in order, until `take` returns false. `take` throws to report a line that does not
/// decode (corruption); an unterminated tail is reported as `torn`, never passed to `take`.
template <class Take>
LineScan scan_lines(std::string_view bytes, Take&& take) {
  LineScan scan;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t end = bytes.find('\n', pos);
    if (end == std::string_view::npos) {
      scan.torn = true;
      scan.torn_line = scan.lines + 1;
      break;
    }
    const bool more = take(bytes.substr(pos, end - pos), scan.lines + 1);
    ++scan.lines;
    pos = end + 1;
    scan.valid_size = pos;
    if (!more) break;
  }
  return scan;
}

/// One line of a checksummed log: `object`, the text of a non-empty JSON object ("{...}"), with
/// the member "checksum": "sha256:<hex of `object`>" added last, and the newline. A reader
/// removes that member and recomputes the checksum of the rest (take_and_verify_checksum).
std::string checksummed_line(std::string_view object);

/// The failpoints of an appender (failpoint.hpp); an empty name is never reached.
struct AppendFailpoints {
  std::string_view write = {};         ///< io: the write(2) of the line
  std::string_view sync = {};          ///< io: fdatasync(2) after the line, or after a cut-back
  std::string_view truncate = {};      ///< io: ftruncate(2) of a cut-back
  std::string_view mid_append = {};    ///< boundary: half of the line written (a torn line)
  std::string_view after_append = {};  ///< boundary: the line written and synced, not acknowledged
};

/// Why append_line failed: the step (or the injected failure) and its errno, and, when the
/// cut-back failed too, its errno and step: then the file may hold the line.
struct AppendFailure {
  std::string operation;
  int error = 0;
  int cut_error = 0;
  const char* cut_step = "";
};

/// Appends `line` (newline-terminated) to `fd`, a file opened with O_APPEND whose valid content
/// is its first `size` bytes, with one write(2) (a short write is a failure, never completed by
/// a second write that a crash could separate from the first) and, when `sync`, fdatasync(2).
/// On failure cuts the file back to `size` (fdatasync'd when `sync`), so that no torn line is
/// ever buried under the next one; nullopt on success. `failpoints` (may be null) are reached
/// with `file` as the file's name; an injected boundary failure is reported like a real one.
std::optional<AppendFailure> append_line(int fd, std::string_view line, std::uint64_t size,
                                         bool sync, const AppendFailpoints* failpoints,
                                         const std::filesystem::path& file);

/// Cuts a torn tail found by scan_lines: truncates `fd` to `valid_size` and, when `sync`,
/// fdatasyncs it. 0 or an errno.
int cut_torn_tail(int fd, std::uint64_t valid_size, bool sync) noexcept;

}  // namespace trellis::detail
