// The checksummed line log of the durable-I/O toolkit. scan_lines is the one reading rule:
// only an unterminated tail is a torn write; a complete line is passed on, so a damaged
// complete last line is corruption. append_line writes a line whole or cuts it back.
#include <doctest/doctest.h>

#include <fcntl.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <trellis/io/directory.hpp>
#include <trellis/io/json_text.hpp>
#include <trellis/io/line_log.hpp>

#include "../persist/persist_test_support.hpp"
#include "trellis/persist/failpoint.hpp"

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

namespace {

namespace fs = std::filesystem;

// The complete lines of `file`.
std::vector<std::string> lines_of(const fs::path& file) {
  trellis::detail::LineScan scan;
  return taken(persist_test::read_bytes(file), scan);
}

trellis::detail::unique_fd open_append(const persist_test::ScratchDir& dir) {
  trellis::detail::Directory d;
  REQUIRE(d.open(dir.path(), false, trellis::detail::Modes{}) == 0);
  trellis::detail::unique_fd fd;
  REQUIRE(d.open_file("log", O_WRONLY | O_APPEND | O_CREAT, 0600, fd) == 0);
  return fd;
}

}  // namespace

TEST_CASE("line log: a line is its object with the checksum of the object added last") {
  const std::string line = trellis::detail::checksummed_line(R"({"a":1})");
  CHECK(line == R"({"a":1,"checksum":")" + persist_test::sha256_text(R"({"a":1})") + "\"}\n");
  nlohmann::json record = nlohmann::json::parse(line);
  CHECK_FALSE(trellis::detail::take_and_verify_checksum(record).has_value());
  CHECK(record == nlohmann::json{{"a", 1}});
}

TEST_CASE("line log: a torn tail is cut back before the next append") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "log", "one\n{\"half");
  trellis::detail::LineScan scan;
  CHECK(taken(persist_test::read_bytes(dir / "log"), scan) == std::vector<std::string>{"one"});
  REQUIRE(scan.torn);
  trellis::detail::unique_fd fd = open_append(dir);
  REQUIRE(trellis::detail::cut_torn_tail(fd.get(), scan.valid_size, true) == 0);
  CHECK_FALSE(
      trellis::detail::append_line(fd.get(), "two\n", scan.valid_size, true, nullptr, dir / "log"));
  CHECK(persist_test::read_bytes(dir / "log") == "one\ntwo\n");
}

TEST_CASE("line log: a failed append is cut back, so the file is as it was") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "log", "one\n");
  trellis::detail::unique_fd fd = open_append(dir);
  const trellis::detail::AppendFailpoints names{.write = "journal.write",
                                                .sync = "journal.fdatasync",
                                                .truncate = "journal.ftruncate",
                                                .mid_append = "journal.mid_append",
                                                .after_append = "journal.after_append"};
  for (const char* name : {"journal.mid_append", "journal.fdatasync", "journal.after_append"}) {
    CAPTURE(name);
    trellis::ScopedFailpoint armed(
        name, {.action = trellis::FailpointAction::error, .error_number = ENOSPC, .times = 1});
    const auto failure =
        trellis::detail::append_line(fd.get(), "two\n", 4, true, &names, dir / "log");
    REQUIRE(failure.has_value());
    CHECK(failure->error == ENOSPC);
    CHECK(failure->cut_error == 0);
    CHECK(lines_of(dir / "log") == std::vector<std::string>{"one"});
    CHECK(persist_test::read_bytes(dir / "log") == "one\n");
  }
}

TEST_CASE("line log: when the cut-back fails too, the failure says the line may stay") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "log", "one\n");
  trellis::detail::unique_fd fd = open_append(dir);
  const trellis::detail::AppendFailpoints names{.truncate = "journal.ftruncate",
                                                .after_append = "journal.after_append"};
  trellis::ScopedFailpoint after("journal.after_append", trellis::FailpointAction::error);
  trellis::ScopedFailpoint cut("journal.ftruncate", trellis::FailpointAction::error);
  const auto failure =
      trellis::detail::append_line(fd.get(), "two\n", 4, true, &names, dir / "log");
  REQUIRE(failure.has_value());
  CHECK(failure->cut_error == EIO);
  CHECK(std::string(failure->cut_step) == "ftruncate");
}
