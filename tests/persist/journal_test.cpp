// SPDX-License-Identifier: MIT
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/journal.hpp>

#include <sys/stat.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "persist_test_support.hpp"

using nlohmann::json;
using persist_test::read_bytes;
using persist_test::ScratchDir;
using persist_test::write_bytes;
using reason = trellis::recovery_error::reason;
namespace fs = std::filesystem;

namespace {

trellis::JournalEntry entry(std::uint64_t epoch) {
  return {epoch, json{{"step", epoch}}, json(epoch - 1), json(epoch)};
}

std::string lines(std::initializer_list<std::uint64_t> epochs) {
  std::string out;
  for (auto e : epochs) {
    out += trellis::encode_journal_line(entry(e));
  }
  return out;
}

/// Reads a journal that must be refused; checks the reason, the file and `detail` in the
/// message, and that the bytes are untouched.
void check_refused(const std::string& bytes, reason why, const std::string& detail) {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  write_bytes(file, bytes);
  try {
    (void)trellis::read_journal(file);
    FAIL("read_journal accepted a corrupt journal");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.path() == file);
    CHECK_MESSAGE(e.why() == why, e.what());
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    CHECK_MESSAGE(std::string(e.what()).find(detail) != std::string::npos, e.what());
  }
  CHECK(read_bytes(file) == bytes);
}

}  // namespace

TEST_CASE("journal: the path sits beside the sidecar") {
  CHECK(trellis::journal_path_for("state/doc-42.json") == "state/doc-42.json.journal");
}

TEST_CASE("journal: a line is one JSON object with its checksum, and a newline") {
  const std::string line = trellis::encode_journal_line(entry(5));
  CHECK(line.back() == '\n');
  json object = json::parse(line);
  CHECK(object["epoch"] == 5);
  CHECK(object["event"] == json{{"step", 5}});
  const std::string stated = object["checksum"];
  object.erase("checksum");
  CHECK(stated == persist_test::sha256_text(object.dump()));
}

TEST_CASE("journal: appended entries read back in order, in a 0600 file") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  {
    trellis::Journal journal(file);
    for (std::uint64_t e = 1; e <= 5; ++e) {
      journal.append(entry(e));
    }
    CHECK(journal.size() == std::filesystem::file_size(file));
  }
  const auto contents = trellis::read_journal(file);
  REQUIRE(contents.entries.size() == 5);
  for (std::uint64_t e = 1; e <= 5; ++e) {
    CHECK(contents.entries[e - 1] == entry(e));
  }
  CHECK_FALSE(contents.torn.has_value());
  CHECK(contents.valid_size == std::filesystem::file_size(file));
  CHECK(persist_test::mode_of(file) == 0600);
}

TEST_CASE("journal: reopening appends after the existing lines") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal(file).append(entry(1));
  trellis::Journal(file).append(entry(2));
  CHECK(trellis::read_journal(file).entries.size() == 2);
}

TEST_CASE("journal: no file reads as no entries") {
  ScratchDir dir;
  const auto contents = trellis::read_journal(dir / "m.json.journal");
  CHECK(contents.entries.empty());
  CHECK_FALSE(contents.torn.has_value());
  CHECK(dir.names().empty());
}

TEST_CASE("journal: a last line without its newline is ignored and reported") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  const std::string good = lines({1, 2});
  const std::string third = trellis::encode_journal_line(entry(3));
  const std::string bytes = good + third.substr(0, third.size() / 2);
  write_bytes(file, bytes);

  const auto contents = trellis::read_journal(file);
  CHECK(contents.entries.size() == 2);
  REQUIRE(contents.torn.has_value());
  CHECK(contents.torn->line == 3);
  CHECK(contents.torn->offset == good.size());
  CHECK(contents.torn->reason == "no trailing newline");
  CHECK(contents.valid_size == good.size());
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("journal: a complete last line with a bad checksum is corruption, bytes unchanged") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  std::string third = trellis::encode_journal_line(entry(3));
  third.replace(third.find("\"step\":3"), 8, "\"step\":4");
  const std::string bytes = lines({1, 2}) + third;
  write_bytes(file, bytes);

  try {
    (void)trellis::read_journal(file);
    FAIL("a complete line with a bad checksum was taken for a torn write");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::bad_checksum);
    CHECK(std::string(e.what()).find("line 3: bad checksum") != std::string::npos);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("journal: a symbolic link at the journal's name is refused, its target untouched") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  const auto victim = dir / "victim.txt";
  persist_test::plant_link(file, victim);
  CHECK_THROWS_WITH_AS((void)trellis::read_journal(file), doctest::Contains("symbolic link"),
                       trellis::recovery_error);
  CHECK_THROWS_WITH_AS(trellis::Journal{file}, doctest::Contains("symbolic link"),
                       trellis::persist_error);
  CHECK(read_bytes(victim) == "precious");
  CHECK(fs::is_symlink(file));
}

TEST_CASE("journal: files are created with exactly the file mode, whatever the umask") {
  ScratchDir dir;
  {
    persist_test::UmaskScope open_mask(0);
    trellis::Journal journal(dir / "a.json.journal");
    CHECK(persist_test::mode_of(dir / "a.json.journal") == 0600);
  }
  persist_test::UmaskScope strict_mask(077);
  trellis::Journal journal(dir / "b.json.journal", 0640);
  CHECK(persist_test::mode_of(dir / "b.json.journal") == 0640);
  journal.append(entry(1));
  journal.reset();  // the fresh empty file too
  CHECK(persist_test::mode_of(dir / "b.json.journal") == 0640);
  CHECK_THROWS_AS(trellis::Journal(dir / "c.json.journal", 0666), trellis::invalid_option);
  CHECK_FALSE(fs::exists(dir / "c.json.journal"));
}

TEST_CASE("journal: remove_journal_temps removes only trellis's own temporaries") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  write_bytes(dir / "m.json.journal.tmp-trellis-0123456789abcdef", "");
  write_bytes(dir / "m.json.journal.tmp-backup", "user's");
  write_bytes(dir / "m.json.journal.tmp-123-0", "an earlier version's: left alone");
  CHECK(trellis::remove_journal_temps(file) == 1);
  CHECK(dir.names() ==
        std::set<std::string>{"m.json.journal.tmp-backup", "m.json.journal.tmp-123-0"});
}

TEST_CASE("journal: a corrupt line in the middle is an error naming the line") {
  std::string second = trellis::encode_journal_line(entry(2));
  second.replace(second.find("\"step\":2"), 8, "\"step\":9");
  check_refused(lines({1}) + second + lines({3}), reason::bad_checksum, "line 2: bad checksum");
  check_refused(lines({1}) + "not json\n" + lines({3}), reason::not_json, "line 2: not JSON");
  check_refused(lines({1}) + "\n" + lines({3}), reason::empty, "line 2: empty");
  check_refused(lines({1}) + "[1]\n" + lines({3}), reason::not_an_object, "line 2: a JSON array");
}

TEST_CASE("journal: a line with a number beyond a double's range is refused as not JSON") {
  // Found by fuzz_loaders: nlohmann's parser raises out_of_range (406), not parse_error.
  check_refused(lines({1}) + "{\"epoch\":1e400}\n" + lines({3}), reason::not_json,
                "line 2: not JSON");
}

TEST_CASE("journal: a torn line followed by another line is corruption, not a torn tail") {
  const std::string second = trellis::encode_journal_line(entry(2));
  check_refused(lines({1}) + second.substr(0, 20) + "\n" + lines({3}), reason::truncated,
                "line 2: truncated");
}

TEST_CASE("journal: epochs that do not strictly increase are an error") {
  check_refused(lines({1, 2, 2}), reason::bad_sequence, "line 3: epoch 2 does not follow epoch 2");
  check_refused(lines({5, 4}), reason::bad_sequence, "line 2: epoch 4 does not follow epoch 5");
}

TEST_CASE("journal: a directory at the path is refused") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  std::filesystem::create_directory(file);
  CHECK_THROWS_WITH_AS((void)trellis::read_journal(file), doctest::Contains(file.c_str()),
                       trellis::recovery_error);
}

TEST_CASE("journal: truncate drops a torn tail so appends continue cleanly") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  const std::string third = trellis::encode_journal_line(entry(3));
  write_bytes(file, lines({1, 2}) + third.substr(0, 10));

  const auto before = trellis::read_journal(file);
  REQUIRE(before.torn.has_value());
  trellis::Journal journal(file);
  journal.truncate(before.valid_size);
  journal.append(entry(3));
  const auto after = trellis::read_journal(file);
  CHECK(after.entries.size() == 3);
  CHECK_FALSE(after.torn.has_value());
}

TEST_CASE("journal: reset empties the journal after compaction") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal journal(file);
  journal.append(entry(1));
  journal.append(entry(2));
  journal.reset();
  CHECK(journal.size() == 0);
  CHECK(std::filesystem::file_size(file) == 0);
  journal.append(entry(3));
  const auto contents = trellis::read_journal(file);
  REQUIRE(contents.entries.size() == 1);
  CHECK(contents.entries[0].epoch == 3);
}

TEST_CASE("journal: an injected append failure leaves the file as it was") {
  for (const char* point : {"journal.mid_append", "journal.after_append"}) {
    CAPTURE(point);
    ScratchDir dir;
    const auto file = dir / "m.json.journal";
    trellis::Journal journal(file);
    journal.append(entry(1));
    const std::string before = read_bytes(file);
    {
      trellis::ScopedFailpoint armed(point, trellis::FailpointAction::error);
      try {
        journal.append(entry(2));
        FAIL("the injected failure was not raised");
      } catch (const trellis::persist_error& e) {
        CHECK(e.path() == file);
        CHECK(std::string(e.what()).find(point) != std::string::npos);
      }
    }
    // mid_append: the half line was cut back; after_append: the durable line too, since the
    // caller was told the append failed (a later append must not repeat its epoch).
    CHECK(read_bytes(file) == before);
    journal.append(entry(2));
    const auto contents = trellis::read_journal(file);
    CHECK(contents.entries.size() == 2);
    CHECK_FALSE(contents.torn.has_value());
  }
}

namespace {

trellis::FailpointArming inject(int error_number, unsigned from_hit = 1, unsigned times = 1) {
  return {.action = trellis::FailpointAction::error,
          .error_number = error_number,
          .from_hit = from_hit,
          .times = times};
}

}  // namespace

TEST_CASE("journal: reset replaces the file by a new empty one, never truncating in place") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal journal(file);
  journal.append(entry(1));
  struct stat old_file {};
  REQUIRE(::stat(file.c_str(), &old_file) == 0);
  std::ifstream old_reader(file);  // a reader of the old file keeps reading the old file
  journal.reset();
  struct stat new_file {};
  REQUIRE(::stat(file.c_str(), &new_file) == 0);
  CHECK(new_file.st_ino != old_file.st_ino);
  CHECK(new_file.st_size == 0);
  std::string old_line;
  std::getline(old_reader, old_line);
  CHECK(old_line + "\n" == trellis::encode_journal_line(entry(1)));
  CHECK(persist_test::mode_of(file) == 0600);
  CHECK(dir.names() == std::set<std::string>{"m.json.journal"});
}

TEST_CASE("journal: a failed step of reset leaves the journal as it was, and appendable") {
  for (const char* point : {"journal.fsync", "journal.rename"}) {
    for (const int error_number : {EIO, ENOSPC}) {
      CAPTURE(point);
      CAPTURE(error_number);
      ScratchDir dir;
      const auto file = dir / "m.json.journal";
      trellis::Journal journal(file);
      journal.append(entry(1));
      journal.append(entry(2));
      const std::string before = read_bytes(file);
      {
        trellis::ScopedFailpoint armed(point, inject(error_number));
        CHECK_THROWS_AS(journal.reset(), trellis::persist_error);
      }
      CHECK(read_bytes(file) == before);
      CHECK(dir.names() == std::set<std::string>{"m.json.journal"});  // no temporary file left
      journal.append(entry(3));
      CHECK(trellis::read_journal(file).entries.size() == 3);
    }
  }
}

TEST_CASE("journal: after reset's directory fsync fails, the next append syncs it first") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal journal(file);
  journal.append(entry(1));
  {
    trellis::ScopedFailpoint armed("journal.dir_fsync", inject(EIO));
    CHECK_THROWS_AS(journal.reset(), trellis::persist_error);
  }
  CHECK(std::filesystem::file_size(file) == 0);  // the new file is in place
  {
    // Until the rename is known durable, nothing is appended: a crash could bring back the
    // old journal without the new line.
    trellis::ScopedFailpoint armed("journal.dir_fsync", inject(EIO));
    CHECK_THROWS_AS(journal.append(entry(2)), trellis::persist_error);
  }
  CHECK(std::filesystem::file_size(file) == 0);
  journal.append(entry(2));
  const auto contents = trellis::read_journal(file);
  REQUIRE(contents.entries.size() == 1);
  CHECK(contents.entries[0].epoch == 2);
}

TEST_CASE("journal: a cut that was not synced is never followed by a zero-filled append") {
  // The cut is made but its fdatasync fails; then an append finds the disk full and is cut
  // back. The file must never grow back with zeros to the size it had before the cut.
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  write_bytes(file, lines({1, 2, 3}));
  const std::uint64_t one_line = lines({1}).size();
  trellis::Journal journal(file);
  {
    trellis::ScopedFailpoint sync("journal.fdatasync", inject(EIO));
    CHECK_THROWS_AS(journal.truncate(one_line), trellis::persist_error);
  }
  {
    trellis::ScopedFailpoint full("journal.write", inject(ENOSPC));
    CHECK_THROWS_AS(journal.append(entry(2)), trellis::persist_error);
  }
  const std::string bytes = read_bytes(file);
  CHECK(bytes.find('\0') == std::string::npos);
  CHECK(bytes.size() <= lines({1, 2, 3}).size());
  CHECK_NOTHROW((void)trellis::read_journal(file));
}

TEST_CASE("journal: a line that cannot be cut back is an unknown outcome; appends then stop") {
  for (const char* cut : {"journal.ftruncate", "journal.fdatasync"}) {
    CAPTURE(cut);
    ScratchDir dir;
    const auto file = dir / "m.json.journal";
    trellis::Journal journal(file);
    journal.append(entry(1));
    {
      // The line's own fdatasync fails, then so does the cut's first step (ftruncate) or,
      // with ftruncate done, the cut's fdatasync (the second fdatasync of the append).
      trellis::ScopedFailpoint first(
          "journal.fdatasync", inject(EIO, 1, cut == std::string("journal.fdatasync") ? 2 : 1));
      std::optional<trellis::ScopedFailpoint> second;
      if (cut == std::string("journal.ftruncate")) second.emplace(cut, inject(EIO));
      try {
        journal.append(entry(2));
        FAIL("the injected failure was not raised");
      } catch (const trellis::persist_outcome_unknown& e) {
        CHECK(std::string(e.what()).find("the journal may hold the line") != std::string::npos);
      }
    }
    CHECK_THROWS_AS(journal.append(entry(3)), trellis::persist_error);
    const auto entries = trellis::read_journal(file).entries;
    CHECK(entries.size() >= 1);
    CHECK(entries.size() <= 2);
  }
}

TEST_CASE("journal: an entry holding NaN, an infinity or nesting past 512 is never written") {
  const double inf = std::numeric_limits<double>::infinity();
  json deep = 1;
  for (int i = 0; i <= trellis::max_json_depth; ++i) deep = json::array({std::move(deep)});
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal journal(file);
  journal.append(entry(1));
  const std::string before = read_bytes(file);
  struct Bad {
    trellis::JournalEntry entry;
    std::string member;
  };
  const std::vector<Bad> bads = {
      {{2, json(std::nan("")), json(1), json(2)}, "/event"},
      {{2, json(1), json{{"a", inf}}, json(2)}, "/from/a"},
      {{2, json(1), json(1), json{{"b", {-inf}}}}, "/to/b/0"},
      {{2, json(1), json(1), deep}, "/to"},
  };
  for (const Bad& bad : bads) {
    CAPTURE(bad.member);
    try {
      journal.append(bad.entry);
      FAIL("the entry was written");
    } catch (const trellis::unwritable_value& e) {
      CHECK(e.member().starts_with(bad.member));
      CHECK(e.object().find(file.string()) != std::string::npos);
    }
    CHECK(read_bytes(file) == before);
  }
  journal.append(entry(2));  // a refusal is not a failure: the journal goes on
  CHECK(trellis::read_journal(file).entries.size() == 2);
}

TEST_CASE("journal: a kill mid-append leaves a torn tail that is reported, then cut") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal(file).append(entry(1));
  auto child = persist_test::spawn_helper({"append", file.string(), "2"},
                                          {"TRELLIS_FAILPOINT=journal.mid_append:kill"});
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));

  const auto contents = trellis::read_journal(file);
  CHECK(contents.entries.size() == 1);
  REQUIRE(contents.torn.has_value());
  CHECK(contents.torn->line == 2);
  trellis::Journal journal(file);
  journal.truncate(contents.valid_size);
  journal.append(entry(2));
  CHECK(trellis::read_journal(file).entries.size() == 2);
}

TEST_CASE("journal: a kill after the append keeps the entry") {
  ScratchDir dir;
  const auto file = dir / "m.json.journal";
  trellis::Journal(file).append(entry(1));
  auto child = persist_test::spawn_helper({"append", file.string(), "2"},
                                          {"TRELLIS_FAILPOINT=journal.after_append:kill"});
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
  const auto contents = trellis::read_journal(file);
  CHECK(contents.entries.size() == 2);
  CHECK_FALSE(contents.torn.has_value());
}

TEST_CASE("journal: opening in a missing directory fails naming the file") {
  ScratchDir dir;
  const auto file = dir / "missing" / "m.json.journal";
  CHECK_THROWS_WITH_AS(trellis::Journal{file}, doctest::Contains(file.c_str()),
                       trellis::persist_error);
}
