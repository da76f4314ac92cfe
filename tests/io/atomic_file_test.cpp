// replace_file: the one atomic replace of the durable-I/O toolkit. Whatever step fails, the
// target holds its old bytes or its new ones, never a mix, and no temporary is left behind.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>
#include <string_view>

#include <trellis/io/atomic_file.hpp>

#include "../persist/persist_test_support.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/failpoint.hpp"

namespace {

namespace fs = std::filesystem;
using trellis::detail::Directory;
using trellis::detail::Modes;
using trellis::detail::ReplaceFailpoints;
using trellis::detail::ReplaceOptions;
using trellis::detail::ReplaceProgress;
using trellis::detail::ReplaceStep;

// The sidecar's failpoint names: replace_file reaches whichever names its caller gives.
constexpr ReplaceFailpoints kNames{
    .write = "sidecar.write",
    .sync = "sidecar.fsync",
    .rename = "sidecar.rename",
    .sync_directory = "sidecar.dir_fsync",
    .after_write = "sidecar.after_temp_write",
    .after_sync = "sidecar.after_temp_fsync",
    .after_rename = "sidecar.after_rename",
    .before_sync_dir = "sidecar.before_dir_fsync",
};

// Replaces "target" in `dir` by `bytes`; returns the errno (or EIO when a failpoint threw).
int replace(const persist_test::ScratchDir& dir, std::string_view bytes,
            ReplaceProgress& progress) {
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  const ReplaceOptions options{.failpoints = &kNames, .failpoint_file = dir / "target"};
  try {
    return trellis::detail::replace_file(d, "target", bytes, options, progress);
  } catch (const trellis::persist_error& injected) {
    return injected.code().value();
  }
}

}  // namespace

TEST_CASE("atomic replace: the target holds the new bytes with the mode asked for, no temporary") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "target", "old");
  ReplaceProgress progress;
  CHECK(replace(dir, "new content", progress) == 0);
  CHECK(progress.step == ReplaceStep::done);
  CHECK(persist_test::read_bytes(dir / "target") == "new content");
  CHECK(persist_test::mode_of(dir / "target") == 0600);
  CHECK(dir.names() == std::set<std::string>{"target"});
}

TEST_CASE("atomic replace: a failure at any step leaves the old file or the new one, never a mix") {
  for (const std::string_view name :
       {kNames.write, kNames.after_write, kNames.sync, kNames.after_sync, kNames.rename,
        kNames.after_rename, kNames.before_sync_dir, kNames.sync_directory}) {
    CAPTURE(name);
    persist_test::ScratchDir dir;
    persist_test::write_bytes(dir / "target", "the old record\n");
    trellis::ScopedFailpoint armed(
        name, {.action = trellis::FailpointAction::error, .error_number = ENOSPC});
    ReplaceProgress progress;
    CHECK(replace(dir, "the new record, longer than the old one\n", progress) == ENOSPC);
    const std::string now = persist_test::read_bytes(dir / "target");
    // Before the rename the old file is untouched; from it on the new one is whole.
    CHECK(now ==
          (progress.renamed() ? "the new record, longer than the old one\n" : "the old record\n"));
    CHECK(dir.names() == std::set<std::string>{"target"});
  }
}

TEST_CASE("atomic replace: a failure before the rename reports its step, after it the rename") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "target", "old");
  {
    trellis::ScopedFailpoint armed("sidecar.fsync", trellis::FailpointAction::error);
    ReplaceProgress progress;
    CHECK(replace(dir, "new", progress) == EIO);
    CHECK(progress.step == ReplaceStep::sync);
    CHECK_FALSE(progress.renamed());
  }
  {
    trellis::ScopedFailpoint armed("sidecar.dir_fsync", trellis::FailpointAction::error);
    ReplaceProgress progress;
    CHECK(replace(dir, "new", progress) == EIO);
    CHECK(progress.step == ReplaceStep::sync_directory);
    CHECK(progress.renamed());
  }
}

TEST_CASE("atomic replace: keep_open hands over the new file, open for appending") {
  persist_test::ScratchDir dir;
  persist_test::write_bytes(dir / "target", "old and long");
  Directory d;
  REQUIRE(d.open(dir.path(), false, Modes{}) == 0);
  ReplaceProgress progress;
  trellis::detail::unique_fd kept;
  CHECK(trellis::detail::replace_file(d, "target", "a\n", ReplaceOptions{.keep_open = true},
                                      progress, &kept) == 0);
  REQUIRE(kept);
  CHECK(trellis::detail::write_all(kept.get(), "b\n") == 0);
  CHECK(persist_test::read_bytes(dir / "target") == "a\nb\n");
}
