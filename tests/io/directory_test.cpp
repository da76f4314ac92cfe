// The directory half of the durable-I/O toolkit (<trellis/io/directory.hpp>) that persist/ and the
// agent's FileStore share: no link followed inside trellis's directory, exact modes whatever
// the umask, temporaries trellis can prove are its own, one path for every alias of a file.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <trellis/io/directory.hpp>
#include "../persist/persist_test_support.hpp"
#include "trellis/persist/errors.hpp"

namespace {

namespace fs = std::filesystem;
using trellis::detail::Directory;
using trellis::detail::Modes;
using trellis::detail::unique_fd;

using persist_test::mode_of;
using Umask = persist_test::UmaskScope;

}  // namespace

TEST_CASE("directory: a link planted at a name trellis opens is refused, its target untouched") {
  persist_test::ScratchDir dir;
  const fs::path victim = dir / "victim.txt";
  persist_test::write_bytes(victim, "precious");
  fs::create_symlink(victim, dir / "journal.jsonl");
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd fd;
  CHECK(d.open_file("journal.jsonl", O_WRONLY | O_CREAT | O_TRUNC, 0600, fd) == ELOOP);
  CHECK(d.open_file("journal.jsonl", O_WRONLY | O_APPEND, 0600, fd) == ELOOP);
  CHECK(d.open_regular("journal.jsonl", fd) == ELOOP);
  CHECK(persist_test::read_bytes(victim) == "precious");
}

TEST_CASE("directory: files and directories get exactly the mode asked for, whatever the umask") {
  persist_test::ScratchDir dir;
  {
    Umask open_mask(0);
    Directory d;
    REQUIRE(d.open(dir / "a" / "b", true, Modes{}) == 0);
    CHECK(mode_of(dir / "a") == 0700);
    CHECK(mode_of(dir / "a" / "b") == 0700);
    unique_fd fd;
    REQUIRE(d.open_file("f", O_WRONLY | O_CREAT, 0600, fd) == 0);
    CHECK(mode_of(dir / "a" / "b" / "f") == 0600);
  }
  {
    Umask strict_mask(077);
    const Modes group = Modes::from_file_mode(0640, "test store");
    Directory d;
    REQUIRE(d.open(dir / "shared", true, group) == 0);
    CHECK(mode_of(dir / "shared") == 0750);
    unique_fd fd;
    REQUIRE(d.open_file("f", O_WRONLY | O_CREAT, group.file, fd) == 0);
    CHECK(mode_of(dir / "shared" / "f") == 0640);
    std::string name;
    REQUIRE(d.create_temporary("s.json", group.file, fd, name) == 0);
    CHECK(mode_of(dir / "shared" / name) == 0640);
  }
}

TEST_CASE("directory: an existing file keeps its mode when opened with O_CREAT") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "mine", "x");
  fs::permissions(dir / "mine", fs::perms(0604));
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd fd;
  REQUIRE(d.open_file("mine", O_WRONLY | O_CREAT | O_APPEND, 0600, fd) == 0);
  CHECK(mode_of(dir / "mine") == 0604);
}

TEST_CASE("directory: file modes that let others write, or lock the owner out, are refused") {
  CHECK(Modes::from_file_mode(0600, "x").directory == 0700);
  CHECK(Modes::from_file_mode(0660, "x").directory == 0770);
  CHECK_THROWS_WITH_AS(Modes::from_file_mode(0666, "store '/r'"),
                       doctest::Contains("store '/r': file_mode 0666 lets others write"),
                       trellis::invalid_option);
  CHECK_THROWS_AS(Modes::from_file_mode(0602, "x"), trellis::invalid_option);
  CHECK_THROWS_AS(Modes::from_file_mode(04600, "x"), trellis::invalid_option);
  CHECK_THROWS_AS(Modes::from_file_mode(0400, "x"), trellis::invalid_option);
}

TEST_CASE("directory: only temporaries trellis made are swept; a user's look-alike stays") {
  persist_test::ScratchDir dir;
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd fd;
  std::string made;
  REQUIRE(d.create_temporary("state.json", 0600, fd, made) == 0);
  CHECK(Directory::is_temporary_of("state.json", made));
  persist_test::write_bytes(dir / "state.json.tmp-backup", "user's");
  persist_test::write_bytes(dir / "state.json.tmp-trellis-123", "too short to be ours");
  std::size_t removed = 0;
  REQUIRE(d.remove_temporaries("state.json", removed) == 0);
  CHECK(removed == 1);
  CHECK_FALSE(fs::exists(dir / made));
  CHECK(persist_test::read_bytes(dir / "state.json.tmp-backup") == "user's");
  CHECK(fs::exists(dir / "state.json.tmp-trellis-123"));
}

TEST_CASE("directory: a FIFO is refused by open_regular at once, not waited on") {
  persist_test::ScratchDir dir;
  REQUIRE(::mkfifo((dir / "journal.jsonl").c_str(), 0600) == 0);
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  unique_fd fd;
  CHECK(d.open_regular("journal.jsonl", fd) == EINVAL);
  CHECK(d.open_regular("missing", fd) == ENOENT);
}

TEST_CASE("directory: every alias of a file resolves to one path") {
  persist_test::ScratchDir dir;
  fs::create_directory(dir / "real");
  persist_test::write_bytes(dir / "real" / "s.json", "{}");
  fs::create_directory_symlink(dir / "real", dir / "alias-dir");
  fs::create_symlink(dir / "real" / "s.json", dir / "alias.json");
  fs::path a, b, c, missing;
  REQUIRE(trellis::detail::resolve_file(dir / "real" / "s.json", a) == 0);
  REQUIRE(trellis::detail::resolve_file(dir / "alias-dir" / "s.json", b) == 0);
  REQUIRE(trellis::detail::resolve_file(dir / "alias.json", c) == 0);
  CHECK(a == b);
  CHECK(a == c);
  // A file not yet created resolves through its directory.
  REQUIRE(trellis::detail::resolve_file(dir / "alias-dir" / "new.json", missing) == 0);
  CHECK(missing == a.parent_path() / "new.json");
}
