// SPDX-License-Identifier: MIT
#include <trellis/persist/errors.hpp>
#include <trellis/persist/sidecar_lock.hpp>

#include <signal.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "persist_test_support.hpp"

using persist_test::ScratchDir;

TEST_CASE("sidecar_lock: creates a 0600 lock file beside the sidecar holding our pid") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  trellis::SidecarLock lock(file);
  const auto lock_file = trellis::SidecarLock::lock_path_for(file);
  CHECK(lock_file == dir / "doc-42.json.lock");
  CHECK(persist_test::mode_of(lock_file) == 0600);
  CHECK(persist_test::read_bytes(lock_file) == std::to_string(::getpid()) + "\n");
  CHECK(lock.owns());
  CHECK(lock.sidecar_path() == file);
}

TEST_CASE("sidecar_lock: a second owner in the same process is refused") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  trellis::SidecarLock first(file);
  try {
    trellis::SidecarLock second(file);
    FAIL("two owners of one sidecar");
  } catch (const trellis::sidecar_locked& e) {
    CHECK(e.path() == file);
    CHECK(e.holder() == ::getpid());
    const std::string what = e.what();
    CHECK(what.find(file.string()) != std::string::npos);
    CHECK(what.find("pid " + std::to_string(::getpid())) != std::string::npos);
  }
}

TEST_CASE("sidecar_lock: destruction, unlock and move release or transfer ownership") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  { trellis::SidecarLock lock(file); }
  trellis::SidecarLock again(file);
  trellis::SidecarLock moved(std::move(again));
  CHECK(moved.owns());
  CHECK_FALSE(again.owns());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK_THROWS_AS(trellis::SidecarLock{file}, trellis::sidecar_locked);
  moved.unlock();
  CHECK_FALSE(moved.owns());
  CHECK_NOTHROW(trellis::SidecarLock{file});
}

TEST_CASE("sidecar_lock: locks of different sidecars are independent") {
  ScratchDir dir;
  trellis::SidecarLock a(dir / "a.json");
  CHECK_NOTHROW(trellis::SidecarLock{dir / "b.json"});
}

TEST_CASE("sidecar_lock: another process's lock refuses us until it is SIGKILLed") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  auto child = persist_test::spawn_helper({"lock", file.string()});
  const std::string line = persist_test::read_line(child);
  REQUIRE_MESSAGE(line == "locked " + std::to_string(child.pid) + "\n", "helper said: " << line);

  try {
    trellis::SidecarLock lock(file);
    FAIL("took a lock another process holds");
  } catch (const trellis::sidecar_locked& e) {
    CHECK(e.path() == file);
    CHECK(e.holder() == child.pid);
  }

  REQUIRE(::kill(child.pid, SIGKILL) == 0);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  CHECK_NOTHROW(trellis::SidecarLock{file});
}

TEST_CASE("sidecar_lock: a missing directory is a persist_error naming the sidecar") {
  ScratchDir dir;
  const auto file = dir / "missing" / "doc-42.json";
  CHECK_THROWS_WITH_AS(trellis::SidecarLock{file}, doctest::Contains(file.c_str()),
                       trellis::persist_error);
}

TEST_CASE(
    "sidecar_lock: a symbolic link at the lock file's name is refused, its target untouched") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  persist_test::plant_link(dir / "doc-42.json.lock", dir / "victim.txt");
  CHECK_THROWS_WITH_AS(trellis::SidecarLock{file}, doctest::Contains("symbolic link"),
                       trellis::persist_error);
  CHECK(persist_test::read_bytes(dir / "victim.txt") == "precious");
}

TEST_CASE("sidecar_lock: every alias of one sidecar meets the same lock") {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "real");
  const auto file = dir / "real" / "doc-42.json";
  persist_test::write_bytes(file, "{}");
  std::filesystem::create_directory_symlink(dir / "real", dir / "alias-dir");
  std::filesystem::create_symlink(file, dir / "alias.json");
  trellis::SidecarLock first(file);
  CHECK_THROWS_AS(trellis::SidecarLock{dir / "alias-dir" / "doc-42.json"}, trellis::sidecar_locked);
  CHECK_THROWS_AS(trellis::SidecarLock{dir / "alias.json"}, trellis::sidecar_locked);
  CHECK_FALSE(std::filesystem::exists(dir / "alias.json.lock"));
}

TEST_CASE("sidecar_lock: an empty path is refused, creating nothing") {
  ScratchDir dir;
  persist_test::CwdScope cwd(dir.path());
  CHECK_THROWS_AS(trellis::SidecarLock{std::filesystem::path()}, trellis::invalid_option);
  CHECK(dir.names().empty());
}

TEST_CASE("sidecar_lock: the lock file gets exactly the file mode, whatever the umask") {
  ScratchDir dir;
  {
    persist_test::UmaskScope open_mask(0);
    trellis::SidecarLock lock(dir / "a.json");
    CHECK(persist_test::mode_of(dir / "a.json.lock") == 0600);
  }
  persist_test::UmaskScope strict_mask(077);
  trellis::SidecarLock lock(dir / "b.json", 0640);
  CHECK(persist_test::mode_of(dir / "b.json.lock") == 0640);
  CHECK_THROWS_AS(trellis::SidecarLock(dir / "c.json", 0666), trellis::invalid_option);
  CHECK_FALSE(std::filesystem::exists(dir / "c.json.lock"));
}
