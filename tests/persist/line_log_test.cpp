// scan_lines: the one reading rule of trellis's line logs. Only an unterminated tail is a torn
// write; a complete line is passed on, so a damaged complete last line is corruption.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "io/line_log.hpp"

namespace {

std::vector<std::string> taken(std::string_view bytes, trellis::detail::LineScan& scan) {
  std::vector<std::string> out;
  scan = trellis::detail::scan_lines(bytes, [&](std::string_view line, std::size_t number) {
    CHECK(number == out.size() + 1);
    out.emplace_back(line);
    return true;
  });
  return out;
}

}  // namespace

TEST_CASE("line log: complete lines are taken in order and the valid size ends after the last") {
  trellis::detail::LineScan scan;
  CHECK(taken("a\nbb\n", scan) == std::vector<std::string>{"a", "bb"});
  CHECK(scan.lines == 2);
  CHECK(scan.valid_size == 5);
  CHECK_FALSE(scan.torn);
}

TEST_CASE("line log: only an unterminated tail is torn, and it is never taken") {
  trellis::detail::LineScan scan;
  CHECK(taken("a\n{\"half", scan) == std::vector<std::string>{"a"});
  CHECK(scan.torn);
  CHECK(scan.torn_line == 2);
  CHECK(scan.valid_size == 2);
}

TEST_CASE("line log: a complete last line is taken, so a bad one is the reader's corruption") {
  // The reader's decode throws for a bad line; a newline-terminated bad last line must reach it.
  const auto scan_bad_last = [] {
    (void)trellis::detail::scan_lines("good\nbad\n", [](std::string_view line, std::size_t) {
      if (line == "bad") throw std::runtime_error("line 2 is corrupt");
      return true;
    });
  };
  CHECK_THROWS_WITH(scan_bad_last(), "line 2 is corrupt");
}

TEST_CASE("line log: take may stop the scan early") {
  const auto scan = trellis::detail::scan_lines(
      "1\n2\n3\n", [](std::string_view line, std::size_t) { return line != "2"; });
  CHECK(scan.lines == 2);
  CHECK(scan.valid_size == 4);
}
