#pragma once
/// @file
/// `trellis::testing::check_golden`: compares generated text (a transition matrix in
/// Markdown, a diagram) with a file kept under version control, so that a change in a
/// machine's behaviour shows up as a reviewed diff of that file.
///
/// ```cpp
/// TEST_CASE("doc cycle: matrix matches the golden file") {
///   CHECK(trellis::testing::check_golden("golden/doc_cycle.md", to_markdown(matrix)));
/// }
/// ```
///
/// On a mismatch the result prints (through doctest's CHECK) a line diff of the golden file
/// against the output. With `TRELLIS_UPDATE_GOLDEN=1` in the environment the file is rewritten
/// with the output instead and the check passes: run the tests once that way after an
/// intended change, then review the diff of the golden file before committing it.

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "trellis/testing/detail/line_diff.hpp"

namespace trellis::testing {

/// The outcome of a golden comparison: true when the output matches (or the golden file was
/// rewritten on request); `message` says what happened, with the diff on a mismatch.
struct GoldenResult {
  bool ok = false;
  std::string message;

  explicit operator bool() const noexcept { return ok; }
  /// Prints `message`, which is what doctest shows for a failed `CHECK(result)`.
  friend std::ostream& operator<<(std::ostream& os, const GoldenResult& r) {
    return os << r.message;
  }
};

/// Whether `TRELLIS_UPDATE_GOLDEN` asks golden checks to rewrite their files (set, not "0").
inline bool update_golden_requested() {
  const char* v = std::getenv("TRELLIS_UPDATE_GOLDEN");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

/// Compares `actual` with the contents of the file at `path` (line endings normalized to
/// "\n"); rewrites the file instead when `update_golden_requested()`.
inline GoldenResult check_golden(const std::filesystem::path& path, std::string_view actual) {
  const std::string shown_path = "'" + path.string() + "'";
  if (update_golden_requested()) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(actual.data(), static_cast<std::streamsize>(actual.size()));
    out.close();
    if (!out) {
      return {false, "trellis::testing: cannot rewrite golden file " + shown_path + ": " +
                         std::strerror(errno)};
    }
    return {true, "trellis::testing: rewrote golden file " + shown_path +
                      " (TRELLIS_UPDATE_GOLDEN is set)"};
  }

  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    if (!exists) {
      return {false, "trellis::testing: golden file " + shown_path +
                         " does not exist (working directory '" +
                         std::filesystem::current_path(ec).string() +
                         "'); run with TRELLIS_UPDATE_GOLDEN=1 to create it from the output"};
    }
    return {false, "trellis::testing: cannot read golden file " + shown_path + ": " +
                       std::strerror(errno)};
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string expected = std::move(buffer).str();
  // A checkout with CRLF line endings must not fail every golden test.
  for (std::size_t at = expected.find("\r\n"); at != std::string::npos;
       at = expected.find("\r\n", at)) {
    expected.erase(at, 1);
  }

  if (expected == actual) return {true, "trellis::testing: golden file " + shown_path + " matches"};
  std::string diff = detail::line_diff(expected, actual);
  if (diff.empty()) {
    diff = "  (the lines are equal; the files differ in the final newline)\n";
  }
  return {false, "trellis::testing: golden file " + shown_path +
                     " differs from the output (- golden, + output; rerun with "
                     "TRELLIS_UPDATE_GOLDEN=1 to accept the output):\n" +
                     diff};
}

}  // namespace trellis::testing
