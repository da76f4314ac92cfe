// SPDX-License-Identifier: MIT
/// @file
/// AsyncWriter (persist/detail/async_writer.hpp) on its own: submit() does not wait for the
/// disk, flush() does; only the newest pending state is written and the disk's epoch never
/// goes back; failures surface at flush() and are retried; destruction writes the newest
/// state, or gives up after a bounded number of attempts and says so.
#include <trellis/persist/detail/async_writer.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/sidecar.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "persist_test_support.hpp"
#include "writer_test_support.hpp"

using nlohmann::json;
using persist_test::ScratchDir;
using trellis::PersistEvent;
using trellis::detail::AsyncWriter;
using writer_test::disk_epoch;
using writer_test::EventLog;
using writer_test::Gate;
using Kind = PersistEvent::Kind;

namespace {

/// Submits `value` after `epoch` and advances `epoch`.
void submit(AsyncWriter& writer, std::uint64_t& epoch, int value) {
  epoch = writer.submit(epoch, [value] { return json(value); });
}

}  // namespace

TEST_CASE("async writer: submit does not wait for the disk; flush does") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Gate release;
  std::atomic<bool> first{true};
  // The writer's thread stops in its first `persisted` report until the gate opens.
  auto hold = log.hub().subscribe([&](const PersistEvent&) {
    if (first.exchange(false)) release.wait();
  });
  writer_test::run_bounded(
      [&] {
        AsyncWriter writer(log.config(file), 0);
        std::uint64_t epoch = 0;
        submit(writer, epoch, 1);
        CHECK(epoch == 1);
        submit(writer, epoch, 2);  // returns while the writer is held
        CHECK(epoch == 2);
        CHECK(writer.durable_epoch() < 2);
        release.open();
        writer.flush();
        CHECK(writer.durable_epoch() == 2);
        CHECK(disk_epoch(file) == 2);
        CHECK(trellis::load_sidecar(file, "doc")->state == json(2));
      },
      std::chrono::seconds(60), "async submit and flush");
}

TEST_CASE("async writer: only the newest pending state is written; the disk never goes back") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Gate release;
  std::atomic<bool> first{true};
  auto hold = log.hub().subscribe([&](const PersistEvent&) {
    if (first.exchange(false)) release.wait();
  });
  writer_test::run_bounded(
      [&] {
        AsyncWriter writer(log.config(file), 0);
        std::uint64_t epoch = 0;
        submit(writer, epoch, 10);
        // Wait until the first write is through (and held in its report).
        while (disk_epoch(file) != std::optional<std::uint64_t>(1))
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int v = 20; v <= 90; v += 10) submit(writer, epoch, v);
        release.open();
        writer.flush();
      },
      std::chrono::seconds(60), "async superseded states");
  CHECK(log.persisted() == std::vector<std::uint64_t>{1, 9});
  CHECK(disk_epoch(file) == 9);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(90));
}

TEST_CASE("async writer: a failed write surfaces at flush and is retried until it succeeds") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  AsyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    submit(writer, epoch, 1);
    CHECK_THROWS_AS(writer.flush(), trellis::persist_error);
    CHECK(writer.durable_epoch() == 0);
    CHECK_FALSE(disk_epoch(file).has_value());
  }
  writer.flush();  // an attempt at once, which now succeeds
  CHECK(writer.durable_epoch() == 1);
  CHECK(disk_epoch(file) == 1);
  const auto events = log.events();
  REQUIRE(events.size() >= 2);
  CHECK(events.front().kind == Kind::persist_failed);
  CHECK(events.front().detail.find("retrying in") != std::string::npos);
  CHECK(events.back().kind == Kind::persisted);
  CHECK(events.back().epoch == 1);
}

TEST_CASE("async writer: an unknown outcome is retried; later submits are accepted") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  AsyncWriter writer(log.config(file), 0);
  std::uint64_t epoch = 0;
  {
    trellis::ScopedFailpoint armed("sidecar.before_dir_fsync", trellis::FailpointAction::error);
    submit(writer, epoch, 1);
    CHECK_THROWS_AS(writer.flush(), trellis::persist_outcome_unknown);
  }
  CHECK_FALSE(writer.unusable());
  submit(writer, epoch, 2);
  writer.flush();
  CHECK(disk_epoch(file) == 2);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(2));
}

TEST_CASE("async writer: a state JSON cannot carry back is refused at submit, not queued") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  AsyncWriter writer(log.config(file), 0);
  CHECK_THROWS_AS(writer.submit(0, [] { return json(std::numeric_limits<double>::quiet_NaN()); }),
                  trellis::unwritable_value);
  writer.flush();
  CHECK(writer.durable_epoch() == 0);
  CHECK_FALSE(disk_epoch(file).has_value());
  CHECK(log.kinds() == std::vector<Kind>{Kind::persist_failed});
  CHECK(log.events()[0].epoch == 1);
}

TEST_CASE("async writer: at epoch 2^64-1 a submit is refused and nothing is encoded") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  AsyncWriter writer(log.config(file), max);
  bool encoded = false;
  CHECK_THROWS_AS(writer.submit(max,
                                [&] {
                                  encoded = true;
                                  return json(1);
                                }),
                  trellis::persist_error);
  CHECK_FALSE(encoded);
  writer.flush();
  CHECK_FALSE(disk_epoch(file).has_value());
  REQUIRE(log.events().size() == 1);
  CHECK(log.events()[0].epoch == max);
}

TEST_CASE("async writer: destruction writes the newest state") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  {
    AsyncWriter writer(log.config(file), 0);
    std::uint64_t epoch = 0;
    for (int v = 1; v <= 5; ++v) submit(writer, epoch, v);
  }
  CHECK(disk_epoch(file) == 5);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(5));
}

TEST_CASE("async writer: destruction gives up after a bounded number of attempts, saying so") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
  writer_test::run_bounded(
      [&] {
        AsyncWriter writer(log.config(file), 0);
        std::uint64_t epoch = 0;
        submit(writer, epoch, 1);
      },
      std::chrono::seconds(60), "async destruction with a failing disk");
  CHECK_FALSE(disk_epoch(file).has_value());
  const auto events = log.events();
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().kind == Kind::persist_failed);
  CHECK(events.back().epoch == 1);
  CHECK(events.back().detail.find("epoch 1 is not on disk") != std::string::npos);
  // The attempts made once destruction began (kStopAttempts failures), then the final report.
  int failures = 0;
  for (const PersistEvent& e : events) failures += e.kind == Kind::persist_failed ? 1 : 0;
  CHECK(failures >= 1 + AsyncWriter::kStopAttempts);
}
