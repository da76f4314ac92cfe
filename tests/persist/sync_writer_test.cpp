// SPDX-License-Identifier: MIT
/// @file
/// SyncWriter (persist/detail/sync_writer.hpp) on its own: what is on disk when write()
/// returns, the order of writes, the journal and its compaction, and what a failure leaves
/// (the caller's epoch, the file, the events, and the refusal after an unknown outcome).
#include <trellis/persist/detail/sync_writer.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/journal.hpp>
#include <trellis/persist/sidecar.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "persist_test_support.hpp"
#include "writer_test_support.hpp"

using nlohmann::json;
using persist_test::read_bytes;
using persist_test::ScratchDir;
using trellis::PersistEvent;
using trellis::detail::EncodedTransition;
using trellis::detail::SyncWriter;
using writer_test::disk_epoch;
using writer_test::EventLog;
using Kind = PersistEvent::Kind;

namespace {

/// An encoder for a sidecar write of `to`.
auto state(int to) {
  return [to](bool) { return EncodedTransition{json(to)}; };
}

}  // namespace

TEST_CASE("sync writer: the state is on disk at the next epoch when write returns") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  writer.write(epoch, [](bool journaled) {
    CHECK_FALSE(journaled);
    return EncodedTransition{json(7)};
  });
  CHECK(epoch == 1);
  CHECK(writer.durable_epoch() == 1);
  const auto record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->epoch == 1);
  CHECK(record->state == json(7));
  CHECK(record->schema == 1);
  CHECK(log.kinds() == std::vector<Kind>{Kind::persisted});
  CHECK(log.events().front().file == file);
}

TEST_CASE("sync writer: writes reach the disk in order, one epoch each") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  for (int i = 1; i <= 5; ++i) {
    writer.write(epoch, state(i * 10));
    CHECK(epoch == static_cast<std::uint64_t>(i));
    CHECK(disk_epoch(file) == epoch);
    CHECK(trellis::load_sidecar(file, "doc")->state == json(i * 10));
  }
  CHECK(log.persisted() == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
}

TEST_CASE("sync writer: persisted is reported once the caller's epoch counts the transition") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 4);
  std::uint64_t epoch = 4;
  std::optional<std::uint64_t> seen;
  auto sub = log.hub().subscribe([&](const PersistEvent&) { seen = epoch; });
  writer.write(epoch, state(1));
  CHECK(seen == std::optional<std::uint64_t>(5));
}

TEST_CASE("sync writer: a failed write throws and changes neither the epoch nor the file") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  writer.write(epoch, state(1));
  const std::string before = read_bytes(file);
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    CHECK_THROWS_AS(writer.write(epoch, state(2)), trellis::persist_error);
  }
  CHECK(epoch == 1);
  CHECK(writer.durable_epoch() == 1);
  CHECK(read_bytes(file) == before);
  const auto events = log.events();
  REQUIRE(events.size() == 2);
  CHECK(events[1].kind == Kind::persist_failed);
  CHECK(events[1].epoch == 2);
  CHECK(events[1].detail.find("sidecar.after_temp_write") != std::string::npos);
}

TEST_CASE("sync writer: after a failed write before the rename the next write works") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_fsync", trellis::FailpointAction::error);
    CHECK_THROWS_AS(writer.write(epoch, state(1)), trellis::persist_error);
  }
  CHECK_FALSE(writer.unusable());
  CHECK_NOTHROW(writer.refuse_if_unusable());
  writer.write(epoch, state(2));
  CHECK(epoch == 1);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(2));
}

TEST_CASE("sync writer: an unknown outcome is thrown as such and refuses every later send") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  {
    trellis::ScopedFailpoint armed("sidecar.before_dir_fsync", trellis::FailpointAction::error);
    CHECK_THROWS_AS(writer.write(epoch, state(1)), trellis::persist_outcome_unknown);
  }
  CHECK(epoch == 0);
  CHECK(disk_epoch(file) == 1);  // renamed into place, never acknowledged
  CHECK(writer.unusable());
  CHECK_THROWS_WITH_AS(writer.refuse_if_unusable(), doctest::Contains("reopen the machine"),
                       trellis::persist_error);
  CHECK(log.kinds() == std::vector<Kind>{Kind::persist_failed});
}

TEST_CASE("sync writer: an encoding failure is reported as persist_failed and rethrown") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  CHECK_THROWS_AS(writer.write(epoch,
                               [&](bool) -> EncodedTransition {
                                 throw trellis::persist_error(file, "encoding the state");
                               }),
                  trellis::persist_error);
  CHECK(epoch == 0);
  CHECK_FALSE(disk_epoch(file).has_value());
  REQUIRE(log.events().size() == 1);
  CHECK(log.events()[0].kind == Kind::persist_failed);
  CHECK(log.events()[0].epoch == 1);
}

TEST_CASE("sync writer: a state JSON cannot carry back is refused with nothing written") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  CHECK_THROWS_AS(
      writer.write(
          epoch,
          [](bool) { return EncodedTransition{json(std::numeric_limits<double>::quiet_NaN())}; }),
      trellis::unwritable_value);
  CHECK(epoch == 0);
  CHECK_FALSE(disk_epoch(file).has_value());
  CHECK(log.kinds() == std::vector<Kind>{Kind::persist_failed});
}

TEST_CASE("sync writer: at epoch 2^64-1 nothing is encoded or written") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  SyncWriter writer(log.config(file), max);
  std::uint64_t epoch = max;
  bool encoded = false;
  CHECK_THROWS_AS(writer.write(epoch,
                               [&](bool) {
                                 encoded = true;
                                 return EncodedTransition{json(1)};
                               }),
                  trellis::persist_error);
  CHECK_FALSE(encoded);
  CHECK(epoch == max);
  CHECK_FALSE(disk_epoch(file).has_value());
  REQUIRE(log.events().size() == 1);
  CHECK(log.events()[0].epoch == max);  // the refused transition's epoch, not wrapped to 0
}

TEST_CASE("sync writer: with a journal each write is one journal line and the sidecar waits") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0, trellis::Journal(trellis::journal_path_for(file)), 100);
  CHECK(writer.journaled());
  std::uint64_t epoch = 0;
  for (int i = 1; i <= 3; ++i) {
    writer.write(epoch, [i](bool journaled) {
      CHECK(journaled);
      return EncodedTransition{json(i), json(i - 1), json("add")};
    });
  }
  const auto contents = trellis::read_journal(trellis::journal_path_for(file));
  REQUIRE(contents.entries.size() == 3);
  for (int i = 1; i <= 3; ++i) {
    const auto& entry = contents.entries[static_cast<std::size_t>(i - 1)];
    CHECK(entry.epoch == static_cast<std::uint64_t>(i));
    CHECK(entry.to == json(i));
    CHECK(entry.from == json(i - 1));
    CHECK(entry.event == json("add"));
  }
  CHECK_FALSE(disk_epoch(file).has_value());
  CHECK(log.persisted() == std::vector<std::uint64_t>{1, 2, 3});
}

TEST_CASE("sync writer: with a journal every Nth write compacts it into the sidecar") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0, trellis::Journal(trellis::journal_path_for(file)), 2);
  std::uint64_t epoch = 0;
  const auto line = [](int i) {
    return [i](bool) { return EncodedTransition{json(i), json(i - 1), nullptr}; };
  };
  writer.write(epoch, line(1));
  CHECK_FALSE(disk_epoch(file).has_value());
  writer.write(epoch, line(2));
  CHECK(disk_epoch(file) == 2);
  CHECK(trellis::read_journal(trellis::journal_path_for(file)).entries.empty());
  writer.write(epoch, line(3));
  CHECK(trellis::read_journal(trellis::journal_path_for(file)).entries.size() == 1);
}

TEST_CASE("sync writer: a failed compaction keeps the transition acknowledged and says so") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  SyncWriter writer(log.config(file), 0, trellis::Journal(trellis::journal_path_for(file)), 1);
  std::uint64_t epoch = 0;
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    writer.write(epoch, [](bool) { return EncodedTransition{json(1), json(0), nullptr}; });
  }
  CHECK(epoch == 1);
  CHECK(trellis::read_journal(trellis::journal_path_for(file)).entries.size() == 1);
  const auto events = log.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == Kind::persist_failed);
  CHECK(events[0].detail.find("compaction into the sidecar") != std::string::npos);
  CHECK(events[1].kind == Kind::persisted);
  CHECK(events[1].epoch == 1);
}
