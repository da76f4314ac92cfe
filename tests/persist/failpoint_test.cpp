// SPDX-License-Identifier: MIT
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/sidecar.hpp>

#include <sys/wait.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <string>
#include <string_view>
#include <system_error>

#include "persist_test_support.hpp"

using persist_test::ScratchDir;

TEST_CASE("failpoint: an unarmed failpoint does nothing") {
  trellis::disarm_failpoints();
  CHECK_NOTHROW(trellis::failpoint("sidecar.after_temp_write", "x.json"));
}

TEST_CASE("failpoint: an armed error throws persist_error naming the file and the failpoint") {
  trellis::ScopedFailpoint armed("sidecar.after_rename", trellis::FailpointAction::error);
  try {
    trellis::failpoint("sidecar.after_rename", "state/x.json");
    FAIL("not fired");
  } catch (const trellis::persist_error& e) {
    CHECK(e.path() == "state/x.json");
    CHECK(e.code() == std::errc::io_error);
    CHECK(std::string(e.what()).find("failpoint sidecar.after_rename") != std::string::npos);
  }
  CHECK_NOTHROW(trellis::failpoint("sidecar.after_temp_write", "state/x.json"));
}

TEST_CASE("failpoint: a scoped arming ends with its scope") {
  { trellis::ScopedFailpoint armed("journal.after_append", trellis::FailpointAction::error); }
  CHECK_NOTHROW(trellis::failpoint("journal.after_append", "x"));
}

TEST_CASE("failpoint: from_hit lets the first hits pass") {
  trellis::ScopedFailpoint armed("sidecar.after_temp_fsync", trellis::FailpointAction::error, 3);
  CHECK_NOTHROW(trellis::failpoint("sidecar.after_temp_fsync", "x"));
  CHECK_NOTHROW(trellis::failpoint("sidecar.after_temp_fsync", "x"));
  CHECK_THROWS_AS(trellis::failpoint("sidecar.after_temp_fsync", "x"), trellis::persist_error);
  CHECK_THROWS_AS(trellis::failpoint("sidecar.after_temp_fsync", "x"), trellis::persist_error);
}

TEST_CASE("failpoint: the damage callback runs only when the failpoint fires") {
  int prepared = 0;
  trellis::failpoint("journal.mid_append", "x", [&] { ++prepared; });
  CHECK(prepared == 0);
  trellis::ScopedFailpoint armed("journal.mid_append", trellis::FailpointAction::error);
  CHECK_THROWS_AS(trellis::failpoint("journal.mid_append", "x", [&] { ++prepared; }),
                  trellis::persist_error);
  CHECK(prepared == 1);
}

TEST_CASE("failpoint: an unknown name is refused") {
  CHECK_THROWS_WITH_AS(
      trellis::arm_failpoint("sidecar.no_such_point", trellis::FailpointAction::kill),
      doctest::Contains("unknown failpoint 'sidecar.no_such_point'"), trellis::error);
}

TEST_CASE("failpoint: disarm_failpoints disarms everything") {
  trellis::arm_failpoint("sidecar.after_temp_write", trellis::FailpointAction::error);
  trellis::arm_failpoint("journal.after_append", trellis::FailpointAction::error);
  trellis::disarm_failpoints();
  CHECK_NOTHROW(trellis::failpoint("sidecar.after_temp_write", "x"));
  CHECK_NOTHROW(trellis::failpoint("journal.after_append", "x"));
}

TEST_CASE("failpoint: an io failpoint returns the armed errno, only within its hit range") {
  trellis::ScopedFailpoint armed("sidecar.fsync", {.action = trellis::FailpointAction::error,
                                                   .error_number = ENOSPC,
                                                   .from_hit = 2,
                                                   .times = 2});
  CHECK(trellis::io_failpoint("sidecar.fsync") == 0);
  CHECK(trellis::io_failpoint("sidecar.fsync") == ENOSPC);
  CHECK(trellis::io_failpoint("sidecar.fsync") == ENOSPC);
  CHECK(trellis::io_failpoint("sidecar.fsync") == 0);
  CHECK(trellis::io_failpoint("sidecar.write") == 0);  // another call: not armed
}

TEST_CASE("failpoint: a boundary armed with an errno throws persist_error carrying it") {
  trellis::ScopedFailpoint armed(
      "sidecar.after_rename", {.action = trellis::FailpointAction::error, .error_number = EROFS});
  try {
    trellis::failpoint("sidecar.after_rename", "x.json");
    FAIL("not fired");
  } catch (const trellis::persist_error& e) {
    CHECK(e.code() == std::errc::read_only_file_system);
  }
}

TEST_CASE("failpoint: an error armed with a non-positive errno is refused") {
  CHECK_THROWS_AS(
      trellis::arm_failpoint("journal.write",
                             {.action = trellis::FailpointAction::error, .error_number = 0}),
      trellis::error);
}

TEST_CASE("failpoint: every io failpoint name is distinct from the boundaries' names") {
  for (std::string_view io : trellis::io_failpoint_names) {
    CAPTURE(io);
    CHECK(std::find(trellis::failpoint_names.begin(), trellis::failpoint_names.end(), io) ==
          trellis::failpoint_names.end());
    CHECK_NOTHROW(trellis::arm_failpoint(io, trellis::FailpointAction::error));
    trellis::disarm_failpoint(io);
  }
}

TEST_CASE("failpoint: TRELLIS_FAILPOINT arms an errno at a system call in a child") {
  ScratchDir dir;
  const auto file = dir / "m.json";
  auto child = persist_test::spawn_helper({"store", file.string(), "1"},
                                          {"TRELLIS_FAILPOINT=sidecar.fsync:ENOSPC@1-1"});
  const std::string output = persist_test::read_all_output(child);
  const int status = persist_test::wait_child(child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(output.find("fsync the temporary file") != std::string::npos);
  CHECK(output.find(std::error_code(ENOSPC, std::generic_category()).message()) !=
        std::string::npos);
  CHECK(dir.names().empty());
}

TEST_CASE("failpoint: TRELLIS_FAILPOINT with @N-M fires from the N-th to the M-th hit only") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  // One append makes one write: a range that starts at the 2nd hit lets it through.
  auto child = persist_test::spawn_helper({"append", file.string(), "1"},
                                          {"TRELLIS_FAILPOINT=journal.write:EIO@2-3"});
  const int status = persist_test::wait_child(child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE(
    "failpoint: an unknown errno or a reversed range in TRELLIS_FAILPOINT stops the process") {
  for (const char* value : {"sidecar.fsync:EWHAT", "sidecar.fsync:EIO@3-2"}) {
    CAPTURE(value);
    ScratchDir dir;
    auto child = persist_test::spawn_helper({"store", (dir / "m.json").string(), "1"},
                                            {std::string("TRELLIS_FAILPOINT=") + value});
    const std::string output = persist_test::read_all_output(child);
    const int status = persist_test::wait_child(child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK(output.find("TRELLIS_FAILPOINT") != std::string::npos);
  }
}

TEST_CASE("failpoint: TRELLIS_FAILPOINT arms an injected error in a child") {
  ScratchDir dir;
  const auto file = dir / "m.json";
  auto child = persist_test::spawn_helper({"store", file.string(), "1"},
                                          {"TRELLIS_FAILPOINT=sidecar.after_temp_fsync:error"});
  const std::string output = persist_test::read_all_output(child);
  const int status = persist_test::wait_child(child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(output.find("injected failure at failpoint sidecar.after_temp_fsync") != std::string::npos);
  CHECK(output.find(file.string()) != std::string::npos);
  CHECK(dir.names().empty());
}

TEST_CASE("failpoint: TRELLIS_FAILPOINT with @N fires at the N-th hit") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  // Each helper run appends once, so @1 would fire here and @2 must not.
  auto child = persist_test::spawn_helper({"append", file.string(), "1"},
                                          {"TRELLIS_FAILPOINT=journal.after_append:kill@2"});
  const int status = persist_test::wait_child(child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("failpoint: a misspelt TRELLIS_FAILPOINT stops the process with the known names") {
  ScratchDir dir;
  auto child = persist_test::spawn_helper({"store", (dir / "m.json").string(), "1"},
                                          {"TRELLIS_FAILPOINT=sidecar.after_tmp_write:kill"});
  const std::string output = persist_test::read_all_output(child);
  const int status = persist_test::wait_child(child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(output.find("unknown failpoint 'sidecar.after_tmp_write'") != std::string::npos);
  CHECK(output.find("sidecar.after_temp_write") != std::string::npos);
}
