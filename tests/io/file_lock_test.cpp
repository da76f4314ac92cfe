// The file lock of the durable-I/O toolkit: exclusive between open files (so between
// processes), and a refused taker can say who holds it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <trellis/io/directory.hpp>
#include <trellis/io/file_lock.hpp>

#include "../persist/persist_test_support.hpp"

namespace {

using trellis::detail::Directory;
using trellis::detail::Modes;
using trellis::detail::unique_fd;

unique_fd open_lock(const Directory& d) {
  unique_fd fd;
  REQUIRE(d.open_file("x.lock", O_RDWR | O_CREAT, 0600, fd) == 0);
  return fd;
}

}  // namespace

TEST_CASE("file lock: a second open file is refused while the first holds the lock") {
  persist_test::ScratchDir dir;
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd first = open_lock(d);
  unique_fd second = open_lock(d);
  REQUIRE(trellis::detail::try_lock_file(first.get()) == 0);
  CHECK(trellis::detail::try_lock_file(second.get()) == EWOULDBLOCK);
  first.close();  // closing the holder's only descriptor lets go
  CHECK(trellis::detail::try_lock_file(second.get()) == 0);
}

TEST_CASE("file lock: the refused taker reads the holder's pid") {
  persist_test::ScratchDir dir;
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd holder = open_lock(d);
  REQUIRE(trellis::detail::try_lock_file(holder.get()) == 0);
  REQUIRE(
      trellis::detail::write_lock_holder(holder.get(), std::to_string(::getpid()) + " worker-1\n"));
  unique_fd taker = open_lock(d);
  REQUIRE(trellis::detail::try_lock_file(taker.get()) == EWOULDBLOCK);
  const std::string text = trellis::detail::read_lock_holder(taker.get());
  CHECK(text == std::to_string(::getpid()) + " worker-1\n");
  CHECK(trellis::detail::live_holder_pid(text) == ::getpid());
}

TEST_CASE("file lock: a holder text naming a process that is gone reports no pid") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);  // reaped: the pid names no process now
  CHECK_FALSE(trellis::detail::live_holder_pid(std::to_string(child) + "\n").has_value());
  CHECK_FALSE(trellis::detail::live_holder_pid("not a pid").has_value());
  CHECK_FALSE(trellis::detail::live_holder_pid("").has_value());
}

TEST_CASE("file lock: a shorter holder text replaces a longer one whole") {
  persist_test::ScratchDir dir;
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd fd = open_lock(d);
  REQUIRE(trellis::detail::write_lock_holder(fd.get(), "123456 a long owner name\n"));
  REQUIRE(trellis::detail::write_lock_holder(fd.get(), "7\n"));
  CHECK(trellis::detail::read_lock_holder(fd.get()) == "7\n");
}
