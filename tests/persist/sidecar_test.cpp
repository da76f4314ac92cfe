// SPDX-License-Identifier: MIT
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/sidecar.hpp>

#include <sys/stat.h>
#include <sys/types.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "persist_test_support.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace sidecar_test {

using nlohmann::json;
using persist_test::read_bytes;
using persist_test::ScratchDir;
using persist_test::write_bytes;
using reason = trellis::recovery_error::reason;

namespace {

trellis::SidecarRecord sample(std::uint64_t epoch = 7) {
  return {"doc-42", epoch, 3, json{{"phase", "Review"}, {"n", epoch}}, "2024-05-01T12:00:00.000Z"};
}

/// The JSON object of a valid sidecar, to damage one member at a time.
json sample_object() { return json::parse(trellis::encode_sidecar(sample())); }

/// Writes `bytes` to a fresh sidecar file, loads it and checks the typed refusal: reason,
/// the file and `detail` in the message, and the bytes untouched.
void check_refused(const std::string& bytes, reason why, const std::string& detail,
                   const std::string& machine = "doc-42") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  write_bytes(file, bytes);
  try {
    (void)trellis::load_sidecar(file, machine);
    FAIL("load_sidecar accepted a bad sidecar");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.path() == file);
    CHECK_MESSAGE(e.why() == why,
                  "got " << trellis::recovery_error::name(e.why()) << ": " << e.what());
    const std::string what = e.what();
    CHECK(what.find(file.string()) != std::string::npos);
    CHECK_MESSAGE(what.find(detail) != std::string::npos, what);
  }
  CHECK(read_bytes(file) == bytes);
  CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
}

}  // namespace

TEST_CASE("sidecar: encode then decode returns the record") {
  std::vector<trellis::SidecarRecord> records = {
      sample(),
      {"m", 0, 1, nullptr, "1970-01-01T00:00:00.000Z"},
      {"unicode-é-☃", UINT64_MAX, -5, json::array({1.5, -2, 1e300, "tab\t\"q\"", json::object()}),
       "2038-01-19T03:14:08.999Z"},
      {"m", 1, INT_MAX, json{{"z", 1}, {"a", {{"nested", {true, false, nullptr}}}}}, ""},
  };
  for (const auto& record : records) {
    const std::string bytes = trellis::encode_sidecar(record);
    CHECK(bytes.back() == '\n');
    CHECK(bytes.find('\n') == bytes.size() - 1);
    CHECK(trellis::decode_sidecar(bytes, record.machine) == record);
  }
}

TEST_CASE("sidecar: members are written in the documented order") {
  const std::string bytes = trellis::encode_sidecar(sample());
  std::size_t last = 0;
  for (const char* key :
       {"\"format\":\"trellis.sidecar\"", "\"version\":1", "\"machine\":", "\"schema\":",
        "\"epoch\":", "\"state\":", "\"updated_at\":", "\"checksum\":\"sha256:"}) {
    const std::size_t at = bytes.find(key);
    REQUIRE_MESSAGE(at != std::string::npos, key);
    CHECK(at >= last);
    last = at;
  }
}

TEST_CASE("sidecar: the checksum is SHA-256 of the canonical dump of the other members") {
  json object = sample_object();
  const std::string stated = object["checksum"];
  object.erase("checksum");
  CHECK(stated == persist_test::sha256_text(object.dump()));
}

TEST_CASE("sidecar: layout and whitespace do not matter, values do") {
  const json object = sample_object();
  CHECK(trellis::decode_sidecar(object.dump(2), "doc-42") == sample());

  json changed = object;
  changed["epoch"] = 8;
  CHECK_THROWS_AS(trellis::decode_sidecar(changed.dump(), "doc-42"), trellis::recovery_error);
}

TEST_CASE("sidecar: an empty expected name accepts any machine") {
  CHECK(trellis::decode_sidecar(trellis::encode_sidecar(sample()), "").machine == "doc-42");
}

TEST_CASE("sidecar: no file loads as nullopt, even with a missing parent directory") {
  ScratchDir dir;
  CHECK_FALSE(trellis::load_sidecar(dir / "absent.json", "absent").has_value());
  CHECK_FALSE(trellis::load_sidecar(dir / "no-such-dir" / "x.json", "x").has_value());
  CHECK(dir.names().empty());
}

TEST_CASE("sidecar: an empty file is refused") { check_refused("", reason::empty, "empty file"); }

TEST_CASE("sidecar: a file of whitespace is refused as empty") {
  check_refused(" \n\t\n", reason::empty, "only whitespace");
}

TEST_CASE("sidecar: a truncated file is refused") {
  const std::string full = trellis::encode_sidecar(sample());
  check_refused(full.substr(0, full.size() / 2), reason::truncated, "truncated");
}

TEST_CASE("sidecar: bytes that are not JSON are refused") {
  check_refused("hello, world\n", reason::not_json, "not JSON");
  check_refused(std::string(64, '\0'), reason::not_json, "not JSON");
  check_refused(trellis::encode_sidecar(sample()) + "garbage", reason::not_json, "not JSON");
}

TEST_CASE("sidecar: a number beyond a double's range is refused as not JSON") {
  // Found by fuzz_loaders: nlohmann's parser raises out_of_range (406), not parse_error.
  check_refused("{\"epoch\":1e400}\n", reason::not_json, "not JSON");
  check_refused("[744e81261166749785]\n", reason::not_json, "not JSON");
}

TEST_CASE("sidecar: a JSON array is refused") {
  check_refused("[1, 2, 3]\n", reason::not_an_object, "a JSON array");
  check_refused("\"text\"\n", reason::not_an_object, "a JSON string");
}

TEST_CASE("sidecar: a bad checksum is refused") {
  json object = sample_object();
  object["state"]["phase"] = "Done";  // a changed value under the old checksum
  check_refused(object.dump(), reason::bad_checksum, "bad checksum");

  object = sample_object();
  object["checksum"] = "md5:1234";
  check_refused(object.dump(), reason::bad_checksum, "malformed checksum");
}

TEST_CASE("sidecar: another format is refused") {
  json object = sample_object();
  object["format"] = "acme.state";
  check_refused(persist_test::with_valid_checksum(object), reason::foreign_format,
                "another format");
  check_refused("{\"hello\": 1}\n", reason::foreign_format, "no \"format\" member");
}

TEST_CASE("sidecar: a future format version is refused") {
  json object = sample_object();
  object["version"] = 3;
  check_refused(persist_test::with_valid_checksum(object), reason::future_version,
                "format version 3 is newer");
}

TEST_CASE("sidecar: a statechart's record is version 2 with its kind, and reads back") {
  trellis::SidecarRecord chart = sample();
  chart.kind = trellis::SidecarKind::statechart;
  const std::string bytes = trellis::encode_sidecar(chart);
  CHECK(bytes.find("\"version\":2,\"kind\":\"statechart\",") != std::string::npos);
  CHECK(trellis::decode_sidecar(bytes, "doc-42") == chart);
  CHECK(trellis::encode_sidecar(sample()).find("\"kind\"") == std::string::npos);
}

TEST_CASE("sidecar: a version 2 file without a known kind is refused") {
  json object = sample_object();
  object["version"] = 2;
  check_refused(persist_test::with_valid_checksum(object), reason::bad_field,
                "\"kind\" is missing");
  object["kind"] = "spreadsheet";
  check_refused(persist_test::with_valid_checksum(object), reason::bad_field,
                "expected \"machine\" or \"statechart\"");
  object["kind"] = "machine";
  CHECK(trellis::decode_sidecar(persist_test::with_valid_checksum(object), "doc-42").kind ==
        trellis::SidecarKind::machine);
}

TEST_CASE("sidecar: another machine's sidecar is refused") {
  trellis::SidecarRecord other = sample();
  other.machine = "doc-43";
  check_refused(trellis::encode_sidecar(other), reason::foreign_machine,
                "machine \"doc-43\", not \"doc-42\"");
}

TEST_CASE("sidecar: a missing or wrong-typed member is refused") {
  struct Case {
    const char* key;
    json value;  // null: remove the member
    const char* detail;
  };
  const std::vector<Case> cases = {
      {"epoch", nullptr, "\"epoch\" is missing"},
      {"epoch", "7", "\"epoch\" is a string, expected an unsigned integer"},
      {"epoch", -1, "\"epoch\" is negative"},
      {"machine", 42, "\"machine\" is a number, expected a string"},
      {"state", nullptr, "\"state\" is missing"},
      {"schema", 1.5, "\"schema\" is 1.5, expected an int"},
      {"schema", 1LL << 40, "expected an int"},
      {"updated_at", nullptr, "\"updated_at\" is missing"},
      {"checksum", nullptr, "\"checksum\" is missing"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.key);
    json object = sample_object();
    if (c.value.is_null()) {
      object.erase(c.key);
    } else {
      object[c.key] = c.value;
    }
    const std::string bytes = std::string(c.key) == "checksum"
                                  ? object.dump()
                                  : persist_test::with_valid_checksum(object);
    check_refused(bytes, reason::bad_field, c.detail);
  }
}

TEST_CASE("sidecar: JSON nested too deep is refused without recursing over it") {
  check_refused(std::string(100000, '[') + std::string(100000, ']'), reason::not_json,
                "nested deeper");
}

TEST_CASE("sidecar: a directory at the path is refused") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  std::filesystem::create_directory(file);
  try {
    (void)trellis::load_sidecar(file, "doc-42");
    FAIL("a directory was loaded");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::not_a_file);
    CHECK(std::string(e.what()).find(file.string() + "': a directory") != std::string::npos);
  }
  CHECK(std::filesystem::is_directory(file));
}

TEST_CASE("sidecar: a FIFO at the path is refused without blocking") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS((void)trellis::load_sidecar(file, "doc-42"),
                       doctest::Contains("a FIFO is at the path"), trellis::recovery_error);
}

TEST_CASE("sidecar: an unreadable file is refused") {
  ScratchDir dir;
  // A path under a regular file cannot be opened (ENOTDIR) whoever we are.
  write_bytes(dir / "plain", "x");
  const auto under_file = dir / "plain" / "doc-42.json";
  try {
    (void)trellis::load_sidecar(under_file, "doc-42");
    FAIL("a path under a file was loaded");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::unreadable);
    CHECK(std::string(e.what()).find("cannot open: Not a directory") != std::string::npos);
  }

  if (persist_test::running_as_root()) {
    MESSAGE(
        "running as root, which reads files whatever their mode: the mode-000 case is "
        "covered by the ENOTDIR path above instead");
    return;
  }
  const auto file = dir / "doc-42.json";
  const std::string bytes = trellis::encode_sidecar(sample());
  write_bytes(file, bytes);
  std::filesystem::permissions(file, std::filesystem::perms::none);
  CHECK_THROWS_WITH_AS((void)trellis::load_sidecar(file, "doc-42"),
                       doctest::Contains("Permission denied"), trellis::recovery_error);
  std::filesystem::permissions(file, std::filesystem::perms::owner_read);
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("sidecar: store then load returns the record, in a 0600 file, with no debris") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  trellis::store_sidecar(file, sample(1));
  CHECK(trellis::load_sidecar(file, "doc-42") == sample(1));
  CHECK(persist_test::mode_of(file) == 0600);

  trellis::store_sidecar(file, sample(2));
  CHECK(trellis::load_sidecar(file, "doc-42") == sample(2));
  CHECK(read_bytes(file) == trellis::encode_sidecar(sample(2)));
  CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
}

TEST_CASE("sidecar: storing into a missing directory fails naming the file") {
  ScratchDir dir;
  const auto file = dir / "missing" / "doc-42.json";
  try {
    trellis::store_sidecar(file, sample());
    FAIL("stored into a missing directory");
  } catch (const trellis::persist_error& e) {
    CHECK(e.path() == file);
    CHECK(e.code() == std::errc::no_such_file_or_directory);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  CHECK(dir.names().empty());
}

TEST_CASE("sidecar: storing into a read-only directory fails and keeps the old file") {
  if (persist_test::running_as_root()) {
    MESSAGE("skipped: running as root, which writes into read-only directories");
    return;
  }
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  trellis::store_sidecar(file, sample(1));
  const std::string before = read_bytes(file);
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    trellis::store_sidecar(file, sample(2));
    FAIL("stored into a read-only directory");
  } catch (const trellis::persist_error& e) {
    CHECK(e.code() == std::errc::permission_denied);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
  CHECK(read_bytes(file) == before);
  CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
}

TEST_CASE("sidecar: an injected write failure keeps the old sidecar and leaves no temp file") {
  for (const char* point : {"sidecar.after_temp_write", "sidecar.after_temp_fsync"}) {
    CAPTURE(point);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    trellis::store_sidecar(file, sample(1));
    const std::string before = read_bytes(file);
    {
      trellis::ScopedFailpoint armed(point, trellis::FailpointAction::error);
      try {
        trellis::store_sidecar(file, sample(2));
        FAIL("the injected failure was not raised");
      } catch (const trellis::persist_error& e) {
        CHECK(e.path() == file);
        CHECK(e.code() == std::errc::io_error);
        CHECK(std::string(e.what()).find(point) != std::string::npos);
      }
    }
    CHECK(read_bytes(file) == before);
    CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
    trellis::store_sidecar(file, sample(3));  // disarmed: writes again
    CHECK(trellis::load_sidecar(file, "doc-42")->epoch == 3);
  }
}

TEST_CASE("sidecar: a failure after the rename reports that durability is unconfirmed") {
  for (const char* point : {"sidecar.after_rename", "sidecar.before_dir_fsync"}) {
    CAPTURE(point);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    trellis::store_sidecar(file, sample(1));
    trellis::ScopedFailpoint armed(point, trellis::FailpointAction::error);
    CHECK_THROWS_AS(trellis::store_sidecar(file, sample(2)), trellis::persist_outcome_unknown);
    // The rename happened: the file is whole and new, but the caller was told it failed.
    CHECK(trellis::load_sidecar(file, "doc-42") == sample(2));
    CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
  }
}

TEST_CASE("sidecar: an errno injected at each system call fails the store, naming the step") {
  for (const char* point : {"sidecar.write", "sidecar.fsync", "sidecar.rename"}) {
    for (const int error_number : {EIO, ENOSPC}) {
      CAPTURE(point);
      CAPTURE(error_number);
      ScratchDir dir;
      const auto file = dir / "doc-42.json";
      trellis::store_sidecar(file, sample(1));
      const std::string before = read_bytes(file);
      {
        trellis::ScopedFailpoint armed(
            point, {.action = trellis::FailpointAction::error, .error_number = error_number});
        try {
          trellis::store_sidecar(file, sample(2));
          FAIL("the injected failure was not raised");
        } catch (const trellis::persist_outcome_unknown&) {
          FAIL("a failure before the rename was reported as an unknown outcome");
        } catch (const trellis::persist_error& e) {
          CHECK(e.path() == file);
          CHECK(e.code() == std::error_code(error_number, std::generic_category()));
          const std::string what = e.what();
          const std::string_view step = std::string_view(point).substr(8);  // "write", ...
          CHECK_MESSAGE(what.find(std::string(step)) != std::string::npos, what);
        }
      }
      CHECK(read_bytes(file) == before);
      CHECK(dir.names() == std::set<std::string>{"doc-42.json"});  // no temporary file left
    }
  }
}

TEST_CASE("sidecar: a failed directory fsync after the rename is an unknown outcome") {
  for (const int error_number : {EIO, ENOSPC}) {
    CAPTURE(error_number);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    trellis::store_sidecar(file, sample(1));
    trellis::ScopedFailpoint armed("sidecar.dir_fsync", {.action = trellis::FailpointAction::error,
                                                         .error_number = error_number});
    try {
      trellis::store_sidecar(file, sample(2));
      FAIL("the injected failure was not raised");
    } catch (const trellis::persist_outcome_unknown& e) {
      CHECK(e.code() == std::error_code(error_number, std::generic_category()));
      CHECK(std::string(e.what()).find("unknown") != std::string::npos);
    }
    CHECK(trellis::load_sidecar(file, "doc-42") == sample(2));
  }
}

TEST_CASE("sidecar: a state holding NaN, an infinity or nesting past 512 is never written") {
  const double inf = std::numeric_limits<double>::infinity();
  json deep = 1;
  for (int i = 0; i <= trellis::max_json_depth; ++i) deep = json::array({std::move(deep)});
  const std::vector<std::pair<json, std::string>> bads = {
      {json{{"x", {0.5, std::nan("")}}}, "is NaN"},
      {json{{"x", inf}}, "is +Inf"},
      {json{{"x", -inf}}, "is -Inf"},
      {deep, "is nested deeper than 512 levels"},  // 513 levels below the file's top
  };
  for (const auto& [state, why] : bads) {
    CAPTURE(why);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    trellis::store_sidecar(file, sample(1));
    const std::string before = read_bytes(file);
    auto record = sample(2);
    record.state = state;
    try {
      trellis::store_sidecar(file, record);
      FAIL("the state was written");
    } catch (const trellis::unwritable_value& e) {
      CHECK(e.reason() == why);
      CHECK(e.member().starts_with("/state"));
      CHECK(e.object() == "sidecar '" + file.string() + "'");
    }
    CHECK_THROWS_AS((void)trellis::encode_sidecar(record), trellis::unwritable_value);
    CHECK_THROWS_AS(trellis::check_sidecar_state(file, state), trellis::unwritable_value);
    CHECK(read_bytes(file) == before);
    CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
  }
}

TEST_CASE("sidecar: a kill at any system call leaves the old or the new sidecar, whole") {
  for (std::string_view point : trellis::io_failpoint_names) {
    if (!point.starts_with("sidecar.")) {
      continue;
    }
    CAPTURE(point);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    auto old_record = sample(1);
    old_record.machine = "m";
    trellis::store_sidecar(file, old_record);

    auto child = persist_test::spawn_helper({"store", file.string(), "2"},
                                            {"TRELLIS_FAILPOINT=" + std::string(point) + ":kill"});
    CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(child)));
    const auto loaded = trellis::load_sidecar(file, "m");
    REQUIRE(loaded.has_value());
    CHECK(loaded->epoch == (point == "sidecar.dir_fsync" ? 2U : 1U));
    trellis::remove_sidecar_temps(file);
    CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
  }
}

TEST_CASE("sidecar: a kill at any write boundary leaves the old or the new sidecar, whole") {
  for (std::string_view point : trellis::failpoint_names) {
    if (!point.starts_with("sidecar.")) {
      continue;
    }
    CAPTURE(point);
    ScratchDir dir;
    const auto file = dir / "doc-42.json";
    auto old_record = sample(1);
    old_record.machine = "m";
    trellis::store_sidecar(file, old_record);

    auto child = persist_test::spawn_helper({"store", file.string(), "2"},
                                            {"TRELLIS_FAILPOINT=" + std::string(point) + ":kill"});
    const int status = persist_test::wait_child(child);
    CHECK(persist_test::killed_by_sigkill(status));

    const auto loaded = trellis::load_sidecar(file, "m");
    REQUIRE(loaded.has_value());
    const bool renamed = point == "sidecar.after_rename" || point == "sidecar.before_dir_fsync";
    CHECK(loaded->epoch == (renamed ? 2U : 1U));
    // A killed writer may leave its temporary file; the next owner sweeps it.
    CHECK(trellis::remove_sidecar_temps(file) == (renamed ? 0U : 1U));
    CHECK(dir.names() == std::set<std::string>{"doc-42.json"});
  }
}

TEST_CASE("sidecar: remove_sidecar_temps removes only this sidecar's temporary files") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  write_bytes(dir / "doc-42.json.tmp-trellis-0123456789abcdef", "partial");
  write_bytes(dir / "doc-42.json.tmp-trellis-fedcba9876543210", "");
  write_bytes(dir / "doc-43.json.tmp-trellis-0123456789abcdef", "someone else's");
  write_bytes(dir / "doc-42.json.tmp-backup", "the user's");
  write_bytes(dir / "doc-42.json.tmp-123-0", "an earlier version's: left alone");
  write_bytes(file, "x");
  CHECK(trellis::remove_sidecar_temps(file) == 2);
  CHECK(dir.names() == std::set<std::string>{"doc-42.json", "doc-42.json.tmp-123-0",
                                             "doc-42.json.tmp-backup",
                                             "doc-43.json.tmp-trellis-0123456789abcdef"});
  CHECK(read_bytes(dir / "doc-42.json.tmp-backup") == "the user's");
}

TEST_CASE("sidecar: a sidecar path through symbolic links writes the file they point at") {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "real");
  std::filesystem::create_directory_symlink(dir / "real", dir / "alias-dir");
  const trellis::SidecarRecord record{"m", 1, 1, nlohmann::json(5), "2024-05-01T12:00:00.000Z"};
  trellis::store_sidecar(dir / "alias-dir" / "m.json", record);
  std::filesystem::create_symlink(dir / "real" / "m.json", dir / "alias.json");
  trellis::store_sidecar(dir / "alias.json", record);
  CHECK(std::filesystem::is_symlink(dir / "alias.json"));  // still a link to the sidecar
  CHECK(trellis::load_sidecar(dir / "alias.json", "m") == record);
  CHECK(trellis::load_sidecar(dir / "real" / "m.json", "m") == record);
}

TEST_CASE("sidecar: store_sidecar creates exactly the file mode, whatever the umask") {
  ScratchDir dir;
  const trellis::SidecarRecord record{"m", 1, 1, nlohmann::json(5), "2024-05-01T12:00:00.000Z"};
  {
    persist_test::UmaskScope open_mask(0);
    trellis::store_sidecar(dir / "a.json", record);
    CHECK(persist_test::mode_of(dir / "a.json") == 0600);
  }
  persist_test::UmaskScope strict_mask(077);
  trellis::store_sidecar(dir / "b.json", record, 0640);
  CHECK(persist_test::mode_of(dir / "b.json") == 0640);
  CHECK_THROWS_AS(trellis::store_sidecar(dir / "c.json", record, 0666), trellis::invalid_option);
  CHECK(dir.names() == std::set<std::string>{"a.json", "b.json"});
}

TEST_CASE("sidecar: quarantine renames the file aside, uniquely, and never deletes") {
  ScratchDir dir;
  const auto file = dir / "doc-42.json";
  write_bytes(file, "corrupt one");
  const auto first = trellis::quarantine_sidecar(file);
  write_bytes(file, "corrupt two");
  const auto second = trellis::quarantine_sidecar(file);

  CHECK_FALSE(std::filesystem::exists(file));
  CHECK(first != second);
  CHECK(first.parent_path() == dir.path());
  CHECK(first.filename().string().starts_with("doc-42.json.corrupt-"));
  CHECK(second.filename().string().starts_with("doc-42.json.corrupt-"));
  CHECK(read_bytes(first) == "corrupt one");
  CHECK(read_bytes(second) == "corrupt two");
  CHECK(dir.names().size() == 2);
  // And the machine can start afresh at the path.
  CHECK_FALSE(trellis::load_sidecar(file, "doc-42").has_value());
}

TEST_CASE("sidecar: quarantine of a missing file fails naming it") {
  ScratchDir dir;
  CHECK_THROWS_WITH_AS((void)trellis::quarantine_sidecar(dir / "absent.json"),
                       doctest::Contains("absent.json"), trellis::persist_error);
}

TEST_CASE("sidecar: iso8601_utc prints UTC with milliseconds") {
  using namespace std::chrono;
  CHECK(trellis::iso8601_utc(system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
  CHECK(trellis::iso8601_utc(system_clock::time_point{seconds(1714564800) + milliseconds(7)}) ==
        "2024-05-01T12:00:00.007Z");
}

}  // namespace sidecar_test
