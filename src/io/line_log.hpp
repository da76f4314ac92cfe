#pragma once
// Private to the trellis library: the reading rule of every checksummed line log trellis keeps
// (the sidecar's journal, FileStore's journal.jsonl, effects.jsonl and events.jsonl), part of
// the durable-I/O toolkit shared by persist/ and the agent's FileStore.
//
// A line is written with one write(2) that ends with its newline, and acknowledged only after
// that write (and its sync) returned. So only an unterminated tail can be a write that never
// returned: a torn write, which readers ignore and the next writer cuts. A complete line that
// does not decode (a bad checksum, not JSON, a wrong field) was acknowledged once and is now
// damaged: corruption, wherever it is, the last line included. Readers report it with a typed
// error and never cut or rewrite it.

#include <cstddef>
#include <cstdint>
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

}  // namespace trellis::detail
