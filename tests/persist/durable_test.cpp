// SPDX-License-Identifier: MIT
/// @file
/// DurableStateMachine (issue 4, section 2 and the bad inputs of section 3), in process. The
/// machine is a counter: S = int, E = int (a negative event is rejected, 0 leaves the state
/// unchanged, n > 0 adds n), so the state and the epoch are easy to predict and to read back
/// from the files. Behaviours that every durability mode promises run over the four modes
/// with TEST_CASE_TEMPLATE; the rest name their mode. Crashes (SIGKILL at failpoints and at
/// random times) are in crash_test.cpp.
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/journal.hpp>
#include <trellis/persist/sidecar.hpp>
#include <trellis/reactive/context.hpp>
#include <trellis/signals2/persist_events.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "persist_test_support.hpp"
#include "test_support.hpp"

using nlohmann::json;
using persist_test::read_bytes;
using persist_test::ScratchDir;
using persist_test::write_bytes;
using trellis::Durability;
using trellis::DurableOptions;
using trellis::OnCorrupt;
using trellis::PersistEvent;
using trellis::SendResult;
using reason = trellis::recovery_error::reason;
namespace fs = std::filesystem;

namespace {

using Counter = trellis::DurableStateMachine<int, int>;

std::optional<int> step(const int& s, const int& e) {
  if (e < 0) return std::nullopt;  // rejected
  return s + e;                    // e == 0: unchanged
}

// The durability modes, as types for TEST_CASE_TEMPLATE: the context each needs and its options.
struct SyncMode {
  using Ctx = trellis::Context;
  static DurableOptions options() { return {.durability = Durability::sync}; }
};
struct GroupMode {
  using Ctx = trellis::ThreadSafeContext;
  static DurableOptions options() { return {.durability = Durability::group}; }
};
struct AsyncMode {
  using Ctx = trellis::Context;
  static DurableOptions options() { return {.durability = Durability::async}; }
};
struct JournalMode {
  using Ctx = trellis::Context;
  static DurableOptions options() { return {.durability = Durability::sync, .journal = true}; }
};

}  // namespace

TYPE_TO_STRING(SyncMode);
TYPE_TO_STRING(GroupMode);
TYPE_TO_STRING(AsyncMode);
TYPE_TO_STRING(JournalMode);

#define DURABLE_MODES SyncMode, GroupMode, AsyncMode, JournalMode

namespace {

/// The epoch on disk: the sidecar's, or the last journal line's when that is further.
std::uint64_t disk_epoch(const fs::path& file) {
  std::uint64_t epoch = 0;
  if (auto record = trellis::load_sidecar(file, "")) epoch = record->epoch;
  for (const auto& entry : trellis::read_journal(trellis::journal_path_for(file)).entries) {
    epoch = std::max(epoch, entry.epoch);
  }
  return epoch;
}

/// Identity and timestamps of a file, to prove that nothing wrote it.
struct FileStamp {
  bool exists = false;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string bytes;

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

FileStamp stamp(const fs::path& file) {
  FileStamp s;
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) return s;
  s.exists = true;
  s.inode = info.st_ino;
  s.size = info.st_size;
  s.mtime_ns = std::int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec;
  s.bytes = read_bytes(file);
  return s;
}

/// Runs `f` on a thread and fails the whole run if it does not return within `limit` (a
/// deadlock cannot be unwound, so the process stops with a message).
template <class F>
void run_bounded(F f, std::chrono::seconds limit, const char* what) {
  auto done = std::async(std::launch::async, std::move(f));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "durable_test: '%s' did not finish within %llds (deadlock?)\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  done.get();
}

const std::vector<std::string> sidecar_failpoints = {
    "sidecar.after_temp_write", "sidecar.after_temp_fsync", "sidecar.after_rename",
    "sidecar.before_dir_fsync"};

/// A failure before the rename leaves the old sidecar; after it the file already holds the
/// new record, unacknowledged (store_sidecar's documented contract).
bool fails_before_rename(const std::string& failpoint) {
  return failpoint == "sidecar.after_temp_write" || failpoint == "sidecar.after_temp_fsync";
}

}  // namespace

// ------------------------------------------------------------------------------ every mode

TEST_CASE_TEMPLATE("durable: with no file it starts from the initial state at epoch 0", Mode,
                   DURABLE_MODES) {
  ScratchDir dir;
  typename Mode::Ctx ctx;
  Counter m(ctx, dir / "doc.json", 7, step, Mode::options());
  CHECK(m.state() == 7);
  CHECK(m.epoch() == 0);
  CHECK(m.durable_through().get() == 0);
  CHECK_FALSE(m.recovery().from_sidecar);
  CHECK(m.recovery().epoch == 0);
  CHECK_FALSE(m.recovery().quarantined_to.has_value());
}

TEST_CASE_TEMPLATE("durable: reopening recovers the state and epoch; the sidecar beats the initial",
                   Mode, DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    typename Mode::Ctx ctx;
    Counter m(ctx, file, 10, step, Mode::options());
    for (int i = 0; i < 3; ++i) REQUIRE(m.send(5) == SendResult::Transitioned);
    m.flush();
  }
  typename Mode::Ctx ctx;
  Counter again(ctx, file, 999, step, Mode::options());
  CHECK(again.state() == 25);
  CHECK(again.epoch() == 3);
  CHECK(again.durable_through().get() == 3);
  CHECK(again.recovery().epoch == 3);
}

TEST_CASE_TEMPLATE("durable: every accepted transition bumps the epoch, on disk too", Mode,
                   DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  typename Mode::Ctx ctx;
  Counter m(ctx, file, 0, step, Mode::options());
  for (std::uint64_t i = 1; i <= 5; ++i) {
    REQUIRE(m.send(1) == SendResult::Transitioned);
    CHECK(m.epoch() == i);
    m.flush();
    CHECK(m.durable_through().get() == i);
    CHECK(disk_epoch(file) == i);
  }
}

TEST_CASE_TEMPLATE("durable: a rejected or unchanged event writes nothing", Mode, DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  typename Mode::Ctx ctx;
  Counter m(ctx, file, 0, step, Mode::options());
  REQUIRE(m.send(2) == SendResult::Transitioned);
  m.flush();
  const FileStamp sidecar_before = stamp(file);
  const FileStamp journal_before = stamp(journal);
  const auto names_before = dir.names();
  // The kernel's file timestamps are coarse (a few ms): let a write show in mtime.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));

  CHECK(m.send(-1) == SendResult::Rejected);
  CHECK(m.send(0) == SendResult::Unchanged);
  m.flush();

  CHECK(m.epoch() == 1);
  CHECK(m.state() == 2);
  CHECK(stamp(file) == sidecar_before);
  CHECK(stamp(journal) == journal_before);
  CHECK(dir.names() == names_before);
}

TEST_CASE_TEMPLATE("durable: persisted events name the file and the epoch", Mode, DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  typename Mode::Ctx ctx;
  Counter m(ctx, file, 0, step, Mode::options());
  trellis_test::Log<PersistEvent> events;
  boost::signals2::scoped_connection c =
      m.events().connect([&](const PersistEvent& e) { events.push(e); });
  REQUIRE(m.send(1) == SendResult::Transitioned);
  m.flush();
  const auto seen = events.items();
  REQUIRE_FALSE(seen.empty());
  CHECK(seen.back().kind == PersistEvent::Kind::persisted);
  CHECK(seen.back().file == file);
  CHECK(seen.back().epoch == 1);
}

TEST_CASE_TEMPLATE("durable: a second machine on the same file is refused, naming our pid", Mode,
                   DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  typename Mode::Ctx ctx;
  std::optional<Counter> first;
  first.emplace(ctx, file, 0, step, Mode::options());
  try {
    Counter second(ctx, file, 0, step, Mode::options());
    FAIL("a second owner was let in");
  } catch (const trellis::sidecar_locked& e) {
    CHECK(e.path() == file);
    CHECK(e.holder() == ::getpid());
    const std::string what = e.what();
    CHECK(what.find(file.string()) != std::string::npos);
    CHECK(what.find(std::to_string(::getpid())) != std::string::npos);
  }
  first.reset();
  CHECK_NOTHROW(Counter(ctx, file, 0, step, Mode::options()));
}

// ------------------------------------------------------------------------------ sync

TEST_CASE("durable: sync: an injected write failure is refused and nothing is acknowledged") {
  for (const std::string& fp : sidecar_failpoints) {
    INFO("failpoint " << fp);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    trellis::Context ctx;
    Counter m(ctx, file, 0, step);
    REQUIRE(m.send(1) == SendResult::Transitioned);
    int told = 0;
    auto sub = m.on_transition([&](const int&, const int&) { ++told; });
    const std::string before = read_bytes(file);
    {
      trellis::ScopedFailpoint armed(fp, trellis::FailpointAction::error);
      CHECK_THROWS_AS(m.send(1), trellis::persist_error);
    }
    CHECK(m.state() == 1);
    CHECK(m.epoch() == 1);
    CHECK(m.durable_through().get() == 1);
    CHECK(told == 0);
    CHECK(dir.names() == std::set<std::string>{"doc.json", "doc.json.lock"});  // no temp left
    if (fails_before_rename(fp)) {
      CHECK(read_bytes(file) == before);
    } else {
      // Renamed but the directory fsync is unconfirmed: on disk, never acknowledged.
      CHECK(trellis::load_sidecar(file, "doc")->epoch == 2);
    }
  }
}

TEST_CASE("durable: sync: sends after an injected write failure before the rename work") {
  // After the rename the outcome is unknown, and the machine refuses later sends: see
  // "durable: an unknown write outcome makes the machine unusable until it is reopened".
  for (const std::string& fp : sidecar_failpoints) {
    if (!fails_before_rename(fp)) continue;
    INFO("failpoint " << fp);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    {
      trellis::Context ctx;
      Counter m(ctx, file, 0, step);
      REQUIRE(m.send(1) == SendResult::Transitioned);
      {
        trellis::ScopedFailpoint armed(fp, trellis::FailpointAction::error);
        CHECK_THROWS_AS(m.send(10), trellis::persist_error);
      }
      CHECK(m.send(2) == SendResult::Transitioned);
      CHECK(m.state() == 3);
      CHECK(m.epoch() == 2);
      const auto record = trellis::load_sidecar(file, "doc");
      REQUIRE(record.has_value());
      CHECK(record->epoch == 2);
      CHECK(record->state == json(3));
    }
    trellis::Context ctx;
    Counter again(ctx, file, 0, step);
    CHECK(again.state() == 3);
    CHECK(again.epoch() == 2);
  }
}

TEST_CASE("durable: sync: a failed write is reported as persist_failed") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step);
  std::vector<PersistEvent> events;
  boost::signals2::scoped_connection c =
      m.events().connect([&](const PersistEvent& e) { events.push_back(e); });
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_fsync", trellis::FailpointAction::error);
    CHECK_THROWS_AS(m.send(1), trellis::persist_error);
  }
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == PersistEvent::Kind::persist_failed);
  CHECK(events[0].file == file);
  CHECK(events[0].epoch == 1);
  CHECK(events[0].detail.find("sidecar.after_temp_fsync") != std::string::npos);
}

TEST_CASE("durable: a missing parent directory is a persist_error naming the file") {
  ScratchDir dir;
  const fs::path file = dir / "no-such-dir" / "doc.json";
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step);
    FAIL("opened a machine in a missing directory");
  } catch (const trellis::persist_error& e) {
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  CHECK(dir.names().empty());
}

TEST_CASE("durable: a read-only directory refuses the write with a persist_error") {
  if (persist_test::running_as_root()) {
    MESSAGE("skipped: root ignores directory permissions");
    return;
  }
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step);
  REQUIRE(m.send(1) == SendResult::Transitioned);
  const std::string before = read_bytes(file);
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
  CHECK_THROWS_AS(m.send(1), trellis::persist_error);
  fs::permissions(dir.path(), fs::perms::owner_all);
  CHECK(m.epoch() == 1);
  CHECK(read_bytes(file) == before);
}

// ------------------------------------------------------------------------------ group

TEST_CASE("durable: group needs a ThreadSafeContext") {
  ScratchDir dir;
  trellis::Context ctx;
  CHECK_THROWS_AS(Counter(ctx, dir / "doc.json", 0, step, {.durability = Durability::group}),
                  trellis::error);
  CHECK(dir.names().empty());
}

TEST_CASE("durable: group: concurrent sends each return durable and reach the exact total") {
  const int per_thread = trellis_test::scaled(40, 4);
  for (const int threads : {1, 2, 8}) {
    INFO(threads << " threads x " << per_thread << " sends");
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    trellis::ThreadSafeContext ctx;
    Counter m(ctx, file, 0, step, {.durability = Durability::group});
    std::mutex seen_mutex;
    std::vector<std::pair<int, int>> seen;
    auto sub = m.on_transition([&](const int& from, const int& to) {
      std::lock_guard lock(seen_mutex);
      seen.emplace_back(from, to);
    });
    std::atomic<int> not_durable{0};
    std::atomic<int> not_transitioned{0};
    run_bounded(
        [&] {
          std::vector<std::thread> senders;
          for (int t = 0; t < threads; ++t) {
            senders.emplace_back([&] {
              for (int i = 0; i < per_thread; ++i) {
                if (m.send(1) != SendResult::Transitioned) ++not_transitioned;
                // Our transition is at or before the epoch the machine shows now, and that
                // must already be on disk.
                const std::uint64_t reached = m.epoch();
                if (trellis::load_sidecar(file, "doc")->epoch < reached) ++not_durable;
              }
            });
          }
          for (auto& s : senders) s.join();
        },
        std::chrono::seconds(120), "group senders");
    const int total = threads * per_thread;
    CHECK(not_transitioned.load() == 0);
    CHECK(not_durable.load() == 0);
    CHECK(m.state() == total);
    CHECK(m.epoch() == static_cast<std::uint64_t>(total));
    CHECK(trellis::load_sidecar(file, "doc")->epoch == static_cast<std::uint64_t>(total));
    std::lock_guard lock(seen_mutex);
    REQUIRE(seen.size() == static_cast<std::size_t>(total));
    for (std::size_t i = 0; i < seen.size(); ++i) {
      INFO("transition " << i);
      CHECK(seen[i].first == static_cast<int>(i));
      CHECK(seen[i].second == static_cast<int>(i) + 1);
    }
  }
}

TEST_CASE("durable: group: a send inside ctx.batch does not deadlock with other senders") {
  const int rounds = trellis_test::scaled(20, 3);
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::ThreadSafeContext ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::group});
  run_bounded(
      [&] {
        std::thread other([&] {
          for (int i = 0; i < rounds * 2; ++i) (void)m.send(1);
        });
        for (int i = 0; i < rounds; ++i) {
          ctx.batch([&] {
            CHECK(m.send(1) == SendResult::Transitioned);
            CHECK(m.send(1) == SendResult::Transitioned);
          });
        }
        other.join();
      },
      std::chrono::seconds(60), "group send inside a batch");
  CHECK(m.state() == rounds * 4);
  CHECK(trellis::load_sidecar(file, "doc")->epoch == static_cast<std::uint64_t>(rounds * 4));
}

TEST_CASE("durable: group: a failed write refuses the pending sends and later sends work") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::ThreadSafeContext ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::group});
  REQUIRE(m.send(1) == SendResult::Transitioned);
  int told = 0;
  auto sub = m.on_transition([&](const int&, const int&) { ++told; });
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    CHECK_THROWS_AS(m.send(1), trellis::persist_error);
  }
  CHECK(m.state() == 1);
  CHECK(m.epoch() == 1);
  CHECK(told == 0);
  CHECK(trellis::load_sidecar(file, "doc")->epoch == 1);
  CHECK(m.send(5) == SendResult::Transitioned);
  CHECK(m.state() == 6);
  CHECK(m.epoch() == 2);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(6));
}

namespace {

/// Polls `ready` every millisecond until it holds; false if `limit` passes first (the caller
/// then fails a check instead of waiting forever).
template <class Ready>
bool wait_until(Ready ready, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// 1 for Transitioned, 0 for a persist_error, 2 for anything else: one atomic per sender.
int send_outcome(Counter& m, int e) {
  try {
    return m.send(e) == SendResult::Transitioned ? 1 : 2;
  } catch (const trellis::persist_error&) {
    return 0;
  }
}

}  // namespace

TEST_CASE(
    "durable: group: an observer's send is published after the transitions queued before it") {
  // Three senders: the first one's observer holds the publish of 0 -> 1 until the two others
  // are accepted behind it (epochs 2 and 3, written together); the observer of 1 -> 2 sends
  // 100, which must be published after 2 -> 3, so the state and the epoch never go back.
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::ThreadSafeContext ctx;
  std::atomic<int> steps{0};
  const auto counting = [&steps](const int& s, const int& e) {
    ++steps;
    return step(s, e);
  };
  Counter m(ctx, file, 0, counting, {.durability = Durability::group});
  trellis_test::Log<std::pair<int, int>> seen;
  std::atomic<bool> others_accepted{true};
  std::atomic<int> observer_send{-1};
  auto sub = m.on_transition([&](const int& from, const int& to) {
    seen.push({from, to});
    if (to == 1) {
      others_accepted = wait_until([&] { return steps.load() >= 3; });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past their accept()
    }
    if (to == 2) observer_send = send_outcome(m, 100);  // from inside the publish of 1 -> 2
  });
  std::atomic<int> first{-1};
  std::atomic<int> second{-1};
  std::atomic<int> third{-1};
  run_bounded(
      [&] {
        std::thread t1([&] { first = send_outcome(m, 1); });
        const bool started = wait_until([&] { return steps.load() >= 1; });
        std::thread t2([&] { second = send_outcome(m, 1); });
        std::thread t3([&] { third = send_outcome(m, 1); });
        t1.join();
        t2.join();
        t3.join();
        CHECK(started);
      },
      std::chrono::seconds(60), "group senders and an observer that sends");
  CHECK(others_accepted.load());
  CHECK(first.load() == 1);
  CHECK(second.load() == 1);
  CHECK(third.load() == 1);
  CHECK(observer_send.load() == 1);
  std::string moves;
  for (const auto& [from, to] : seen.items()) {
    moves += (moves.empty() ? "" : ", ") + std::to_string(from) + "->" + std::to_string(to);
  }
  CHECK(moves == "0->1, 1->2, 2->3, 3->103");
  CHECK(m.state() == 103);
  CHECK(m.epoch() == 4);
  CHECK(m.durable_through().get() == 4);  // never behind what an observer's send published
  auto record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->state == json(103));
  CHECK(record->epoch == 4);

  CHECK(m.send(1) == SendResult::Transitioned);
  CHECK(m.state() == 104);
  CHECK(m.epoch() == 5);
  record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->state == json(104));
  CHECK(record->epoch == 5);
}

TEST_CASE("durable: group: a persisted listener may read the machine while a batch sends") {
  // The first sender's `persisted` listener reads the machine (which takes the graph's lock)
  // while a batch on another thread, holding that lock, sends and writes: events are emitted
  // with no lock of the machine held, so neither waits for the other. A deadlock ends the run
  // after 20 s with a message (run_bounded).
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::ThreadSafeContext ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::group});
  std::atomic<bool> in_listener{false};
  std::atomic<bool> batch_sending{false};
  std::atomic<bool> listener_saw_batch{true};
  std::atomic<std::uint64_t> listener_epoch{0};
  std::atomic<int> listener_state{-1};
  boost::signals2::scoped_connection c = m.events().connect([&](const PersistEvent& e) {
    if (e.kind != PersistEvent::Kind::persisted || e.epoch != 1) return;
    in_listener = true;
    listener_saw_batch = wait_until([&] { return batch_sending.load(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the batch's send is writing
    listener_epoch = m.epoch();
    listener_state = m.state();
  });
  std::atomic<int> plain{-1};
  std::atomic<int> batched{-1};
  run_bounded(
      [&] {
        std::thread writer([&] { plain = send_outcome(m, 1); });
        const bool listening = wait_until([&] { return in_listener.load(); });
        std::thread batcher([&] {
          ctx.batch([&] {
            batch_sending = true;
            batched = send_outcome(m, 1);
          });
        });
        writer.join();
        batcher.join();
        CHECK(listening);
      },
      std::chrono::seconds(20), "a persisted listener reading the machine while a batch sends");
  CHECK(listener_saw_batch.load());
  CHECK(plain.load() == 1);
  CHECK(batched.load() == 1);
  CHECK(listener_epoch.load() == 2);  // it waited for the batch, which published both
  CHECK(listener_state.load() == 2);
  CHECK(m.state() == 2);
  CHECK(m.epoch() == 2);
  const auto record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->state == json(2));
  CHECK(record->epoch == 2);
}

TEST_CASE("durable: group: a transition refused by a failed write never reaches the disk") {
  // A send inside a batch (which writes alone) fails its write; its persist_failed listener
  // holds on while an ordinary sender is accepted. The failure refused everything not on
  // disk, so that sender starts from the state on disk, and no snapshot taken before the
  // failure is written afterwards: the disk and the machine agree, and every later
  // acknowledged send is on disk.
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  std::optional<trellis::ThreadSafeContext> ctx;
  ctx.emplace();
  std::atomic<int> steps{0};
  const auto counting = [&steps](const int& s, const int& e) {
    ++steps;
    return step(s, e);
  };
  std::optional<Counter> m;
  m.emplace(*ctx, file, 0, counting, DurableOptions{.durability = Durability::group});
  std::atomic<bool> in_listener{false};
  std::atomic<bool> other_accepted{true};
  boost::signals2::scoped_connection c = m->events().connect([&](const PersistEvent& e) {
    if (e.kind != PersistEvent::Kind::persist_failed) return;
    trellis::disarm_failpoint("sidecar.after_temp_write");  // only the first write fails
    in_listener = true;
    other_accepted = wait_until([&] { return steps.load() >= 2; });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // it has taken its snapshot
  });
  std::atomic<int> batched{-1};
  std::atomic<int> other{-1};
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    run_bounded(
        [&] {
          std::thread batcher([&] { ctx->batch([&] { batched = send_outcome(*m, 1); }); });
          const bool failed = wait_until([&] { return in_listener.load(); });
          std::thread sender([&] { other = send_outcome(*m, 1); });
          batcher.join();
          sender.join();
          CHECK(failed);
        },
        std::chrono::seconds(20), "a failed group write and a concurrent sender");
  }
  CHECK(other_accepted.load());
  CHECK(batched.load() == 0);  // its write failed: refused
  CHECK(other.load() == 1);    // accepted after the failure, from the state on disk
  CHECK(m->state() == 1);
  CHECK(m->epoch() == 1);
  auto record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->state == json(1));
  CHECK(record->epoch == 1);

  CHECK(m->send(10) == SendResult::Transitioned);
  CHECK(m->state() == 11);
  CHECK(m->epoch() == 2);
  CHECK(m->durable_through().get() == 2);
  record = trellis::load_sidecar(file, "doc");
  REQUIRE(record.has_value());
  CHECK(record->state == json(11));
  CHECK(record->epoch == 2);

  c.disconnect();
  m.reset();
  ctx.emplace();
  Counter again(*ctx, file, 0, step, {.durability = Durability::group});
  CHECK(again.state() == 11);
  CHECK(again.epoch() == 2);
}

// ------------------------------------------------------------------------------ async

TEST_CASE("durable: async: durable_through lags behind the epoch until flush") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::async});
  // A listener on the writer's thread holds the writer until we let it go.
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  boost::signals2::scoped_connection c =
      m.events().connect([go](const PersistEvent&) { go.wait(); });
  // CHECK, not REQUIRE: the writer must be released before the machine is destroyed.
  for (int i = 0; i < 5; ++i) CHECK(m.send(1) == SendResult::Transitioned);
  CHECK(m.epoch() == 5);
  CHECK(m.state() == 5);
  CHECK(m.durable_through().get() < m.epoch());
  release.set_value();
  m.flush();
  CHECK(m.durable_through().get() == 5);
  CHECK(disk_epoch(file) == 5);
}

TEST_CASE("durable: async: destruction flushes the last state") {
  const int sends = trellis_test::scaled(200, 10);
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.durability = Durability::async});
    for (int i = 0; i < sends; ++i) REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.durability = Durability::async});
  CHECK(again.state() == sends);
  CHECK(again.epoch() == static_cast<std::uint64_t>(sends));
}

TEST_CASE("durable: async: a write failure surfaces at flush and as persist_failed") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::async});
  trellis_test::Log<PersistEvent::Kind> kinds;
  boost::signals2::scoped_connection c =
      m.events().connect([&](const PersistEvent& e) { kinds.push(e.kind); });
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_fsync", trellis::FailpointAction::error);
    REQUIRE(m.send(1) == SendResult::Transitioned);  // committed in memory only
    CHECK_THROWS_AS(m.flush(), trellis::persist_error);
    // Every attempt so far failed (the writer retries by itself, so there may be several).
    const auto failed = kinds.items();
    CHECK_FALSE(failed.empty());
    CHECK(std::all_of(failed.begin(), failed.end(), [](PersistEvent::Kind k) {
      return k == PersistEvent::Kind::persist_failed;
    }));
  }
  CHECK(m.durable_through().get() == 0);
  REQUIRE(m.send(1) == SendResult::Transitioned);
  m.flush();
  CHECK(m.durable_through().get() == 2);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(2));
}

namespace {

/// Whether `events` holds one of `kind` for `epoch`.
bool seen_event(const trellis_test::Log<PersistEvent>& events, PersistEvent::Kind kind,
                std::uint64_t epoch) {
  const auto items = events.items();
  return std::any_of(items.begin(), items.end(),
                     [&](const PersistEvent& e) { return e.kind == kind && e.epoch == epoch; });
}

trellis::FailpointArming inject(int error_number, unsigned from_hit = 1, unsigned times = 0) {
  return {.action = trellis::FailpointAction::error,
          .error_number = error_number,
          .from_hit = from_hit,
          .times = times};
}

}  // namespace

TEST_CASE(
    "durable: async: a failed background write is retried until the newest state is on disk") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::async});
  trellis_test::Log<PersistEvent> events;
  boost::signals2::scoped_connection c =
      m.events().connect([&](const PersistEvent& e) { events.push(e); });
  {
    trellis::ScopedFailpoint failing("sidecar.write", inject(EIO));  // every attempt fails
    for (int i = 0; i < 3; ++i) REQUIRE(m.send(1) == SendResult::Transitioned);
    // The newest state's own write has failed at least once before the disk recovers.
    REQUIRE(wait_until([&] { return seen_event(events, PersistEvent::Kind::persist_failed, 3); }));
  }
  // No flush, no send: the writer tries again by itself.
  CHECK(wait_until([&] { return seen_event(events, PersistEvent::Kind::persisted, 3); }));
  CHECK_NOTHROW(m.flush());  // nothing pending, and the earlier failure was made good
  CHECK(m.durable_through().get() == 3);
  CHECK(disk_epoch(file) == 3);
}

TEST_CASE("durable: async: a failed directory fsync is retried; memory, disk and a reopen agree") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.durability = Durability::async});
    trellis_test::Log<PersistEvent> events;
    boost::signals2::scoped_connection c =
        m.events().connect([&](const PersistEvent& e) { events.push(e); });
    trellis::ScopedFailpoint failing("sidecar.dir_fsync", inject(EIO, 1, 1));
    REQUIRE(m.send(100) == SendResult::Transitioned);
    CHECK(wait_until([&] { return seen_event(events, PersistEvent::Kind::persisted, 1); }));
    m.flush();
    CHECK(m.state() == 100);
    CHECK(m.durable_through().get() == 1);
  }
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.durability = Durability::async});
  CHECK(again.state() == 100);
  CHECK(again.epoch() == 1);
}

TEST_CASE("durable: async: destruction right after a send writes the newest state, retrying") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    // Armed for the machine's whole life: its second write (epoch 2) fails once.
    trellis::ScopedFailpoint once("sidecar.write", inject(EIO, 2, 1));
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.durability = Durability::async});
    REQUIRE(m.send(1) == SendResult::Transitioned);
    m.flush();
    REQUIRE(m.send(41) == SendResult::Transitioned);
  }  // destroyed at once: the failed write is retried before the machine goes
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.durability = Durability::async});
  CHECK(again.state() == 42);
  CHECK(again.epoch() == 2);
}

TEST_CASE("durable: async: destruction gives up after a bounded number of attempts, and says so") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.durability = Durability::async});
    REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  trellis_test::Log<PersistEvent> events;
  {
    trellis::ScopedFailpoint failing("sidecar.write", inject(ENOSPC));  // the disk stays full
    run_bounded(
        [&] {
          trellis::Context ctx;
          Counter m(ctx, file, 0, step, {.durability = Durability::async});
          m.events().connect([&](const PersistEvent& e) { events.push(e); });
          REQUIRE(m.send(1) == SendResult::Transitioned);
        },
        std::chrono::seconds(20), "destroying an async machine whose writes keep failing");
  }
  const auto items = events.items();
  REQUIRE_FALSE(items.empty());
  CHECK(items.back().kind == PersistEvent::Kind::persist_failed);
  CHECK(items.back().epoch == 2);
  CHECK(items.back().detail.find("epoch 2 is not on disk") != std::string::npos);
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.durability = Durability::async});
  CHECK(again.state() == 1);  // what was on disk; the lost state was never durable
  CHECK(again.epoch() == 1);
}

TEST_CASE("durable: async: flush while a batch on another thread sends") {
  // flush() passes its wait while nothing is pending, then waits for the graph's lock, held
  // by a batch that sends; meanwhile the writer thread writes that send. What flush reports
  // was read under the writer's lock (the ThreadSanitizer job checks that), and a flush
  // after the batch covers the send.
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::ThreadSafeContext ctx;
  Counter m(ctx, file, 0, step, {.durability = Durability::async});
  std::atomic<bool> written{false};
  boost::signals2::scoped_connection c = m.events().connect([&](const PersistEvent& e) {
    if (e.kind == PersistEvent::Kind::persisted && e.epoch == 1) written = true;
  });
  std::atomic<bool> batch_open{false};
  std::atomic<bool> saw_write{true};
  run_bounded(
      [&] {
        std::thread sender([&] {
          ctx.batch([&] {
            batch_open = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // flush is waiting
            CHECK(m.send(1) == SendResult::Transitioned);
            saw_write = wait_until([&] { return written.load(); });
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // writer is done
          });
        });
        const bool opened = wait_until([&] { return batch_open.load(); });
        m.flush();  // nothing pending yet: returns once the batch lets go of the graph
        sender.join();
        CHECK(opened);
      },
      std::chrono::seconds(20), "async flush racing a send in a batch");
  CHECK(saw_write.load());
  CHECK(m.durable_through().get() <= 1);
  m.flush();
  CHECK(m.state() == 1);
  CHECK(m.epoch() == 1);
  CHECK(m.durable_through().get() == 1);
  CHECK(disk_epoch(file) == 1);
}

// ------------------------------------------------------------------------------ journal

namespace {

std::string journal_lines(std::uint64_t first, std::uint64_t last) {
  std::string out;
  for (std::uint64_t e = first; e <= last; ++e) {
    out += trellis::encode_journal_line({e, json(1), json(e - 1), json(e)});
  }
  return out;
}

}  // namespace

TEST_CASE("durable: journal: transitions are appended to the journal, not the sidecar") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.journal = true});
  for (int i = 0; i < 4; ++i) REQUIRE(m.send(3) == SendResult::Transitioned);
  CHECK_FALSE(trellis::load_sidecar(file, "doc").has_value());
  const auto contents = trellis::read_journal(trellis::journal_path_for(file));
  REQUIRE(contents.entries.size() == 4);
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto& entry = contents.entries[i];
    CHECK(entry.epoch == i + 1);
    CHECK(entry.event == json(3));
    CHECK(entry.from == json(3 * i));
    CHECK(entry.to == json(3 * (i + 1)));
  }
}

TEST_CASE("durable: journal: recovery is the sidecar plus a replay of the later lines") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.journal = true, .compact_every = 3});
    for (int i = 0; i < 5; ++i) REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  CHECK(trellis::load_sidecar(file, "doc")->epoch == 3);
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.journal = true, .compact_every = 3});
  CHECK(again.state() == 5);
  CHECK(again.epoch() == 5);
  CHECK(again.recovery().from_sidecar);
  CHECK(again.recovery().journal_replayed == 2);
}

TEST_CASE("durable: journal: compaction every N transitions keeps the journal short") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.journal = true, .compact_every = 4});
  for (int i = 1; i <= 22; ++i) {
    REQUIRE(m.send(1) == SendResult::Transitioned);
    CHECK(trellis::read_journal(journal).entries.size() == static_cast<std::size_t>(i % 4));
  }
  CHECK(trellis::load_sidecar(file, "doc")->epoch == 20);
  CHECK(disk_epoch(file) == 22);
}

TEST_CASE("durable: journal: a torn last line is ignored, reported and cut") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  const std::string intact = journal_lines(1, 2);
  const std::string third = journal_lines(3, 3);
  write_bytes(journal, intact + third.substr(0, third.size() / 2));
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.journal = true});
    CHECK(m.state() == 2);
    CHECK(m.epoch() == 2);
    REQUIRE(m.recovery().torn_tail.has_value());
    CHECK(m.recovery().torn_tail->find("line 3") != std::string::npos);
    CHECK(read_bytes(journal) == intact);
    REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.journal = true});
  CHECK(again.epoch() == 3);
  CHECK_FALSE(again.recovery().torn_tail.has_value());
}

TEST_CASE("durable: journal: a corrupt line in the middle is a recovery_error") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  const std::string bytes = journal_lines(1, 1) + "{\"epoch\":2,\"garbage\n" + journal_lines(3, 3);
  write_bytes(journal, bytes);
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step, {.journal = true});
    FAIL("a journal with a corrupt middle line was accepted");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.path() == journal);
    CHECK(std::string(e.what()).find(journal.string()) != std::string::npos);
  }
  CHECK(read_bytes(journal) == bytes);
}

TEST_CASE("durable: journal: an injected append failure is refused and later sends work") {
  for (const std::string fp : {"journal.mid_append", "journal.after_append"}) {
    INFO("failpoint " << fp);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    const fs::path journal = trellis::journal_path_for(file);
    {
      trellis::Context ctx;
      Counter m(ctx, file, 0, step, {.journal = true});
      REQUIRE(m.send(1) == SendResult::Transitioned);
      const std::string before = read_bytes(journal);
      {
        trellis::ScopedFailpoint armed(fp, trellis::FailpointAction::error);
        CHECK_THROWS_AS(m.send(1), trellis::persist_error);
      }
      CHECK(m.epoch() == 1);
      CHECK(read_bytes(journal) == before);
      CHECK(m.send(2) == SendResult::Transitioned);
    }
    trellis::Context ctx;
    std::optional<Counter> again;
    REQUIRE_NOTHROW(again.emplace(ctx, file, 0, step, DurableOptions{.journal = true}));
    CHECK(again->state() == 3);
    CHECK(again->epoch() == 2);
  }
}

namespace {

/// An event type with no to_json: the journal still holds every transition (the state).
struct Bump {
  friend bool operator==(const Bump&, const Bump&) = default;
};

}  // namespace

TEST_CASE("durable: journal: an event type without to_json still journals every transition") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const auto bump = [](const int& s, const Bump&) -> std::optional<int> { return s + 1; };
  {
    trellis::Context ctx;
    trellis::DurableStateMachine<int, Bump> m(ctx, file, 0, bump, {.journal = true});
    for (int i = 0; i < 3; ++i) REQUIRE(m.send(Bump{}) == SendResult::Transitioned);
  }
  CHECK(trellis::read_journal(trellis::journal_path_for(file)).entries.size() == 3);
  trellis::Context ctx;
  trellis::DurableStateMachine<int, Bump> again(ctx, file, 0, bump, {.journal = true});
  CHECK(again.epoch() == 3);
  CHECK(again.state() == 3);
}

TEST_CASE("durable: journal: a failed step of compaction loses no acknowledged transition") {
  // Every system call of the journal machine's writes fails once, with EIO and with ENOSPC,
  // at each of its hits in a run of sends that compacts three times. In the second variant
  // the disk then fills up: the next append fails with ENOSPC and so does every later
  // sidecar write, so the journal is not compacted again (the sequence that used to leave a
  // zero-filled journal behind). A reopen must find exactly the acknowledged transitions, or
  // one more when a send was told its outcome is unknown.
  const int sends = 7;  // compact_every 2: compactions at the 2nd, 4th and 6th send
  for (const std::string_view point : trellis::io_failpoint_names) {
    for (const int error_number : {EIO, ENOSPC}) {
      for (const bool then_full : {false, true}) {
        // Hits 1, 2, ... until a run in which the point was not reached as often.
        for (unsigned hit = 1;; ++hit) {
          CAPTURE(point);
          CAPTURE(error_number);
          CAPTURE(then_full);
          CAPTURE(hit);
          ScratchDir dir;
          const fs::path file = dir / "doc.json";
          const DurableOptions options{.journal = true, .compact_every = 2};
          std::uint64_t acknowledged = 0;
          std::uint64_t unknown = 0;
          bool failed = false;
          {
            trellis::Context ctx;
            Counter m(ctx, file, 0, step, options);
            std::optional<trellis::ScopedFailpoint> full_append;
            std::optional<trellis::ScopedFailpoint> full_sidecar;
            boost::signals2::scoped_connection c = m.events().connect([&](const PersistEvent& e) {
              if (e.kind != PersistEvent::Kind::persist_failed) return;
              failed = true;
              if (then_full && !full_append) {
                full_append.emplace("journal.write", inject(ENOSPC, 1, 1));
                full_sidecar.emplace("sidecar.write", inject(ENOSPC));
              }
            });
            trellis::ScopedFailpoint fault(point, inject(error_number, hit, 1));
            for (int i = 0; i < sends; ++i) {
              try {
                const SendResult result = m.send(1);
                REQUIRE(result == SendResult::Transitioned);
                ++acknowledged;
              } catch (const trellis::persist_outcome_unknown&) {
                ++unknown;
              } catch (const trellis::persist_error&) {
              }
              // Whatever failed, what is on disk stays readable.
              REQUIRE_NOTHROW(disk_epoch(file));
            }
            CHECK(m.epoch() == acknowledged);
            CHECK(m.state() == static_cast<int>(acknowledged));
          }
          trellis::Context ctx;
          std::optional<Counter> again;
          REQUIRE_NOTHROW(again.emplace(ctx, file, 0, step, options));
          CHECK(again->epoch() >= acknowledged);
          CHECK(again->epoch() <= acknowledged + unknown);
          CHECK(again->state() == static_cast<int>(again->epoch()));
          for (const std::string& name : dir.names()) {
            CHECK_MESSAGE(name.find(".tmp-") == std::string::npos, "debris: " << name);
          }
          if (!failed) {
            // journal.ftruncate is reached only on a failure path (another test's business).
            CHECK((hit > 1 || point == "journal.ftruncate"));
            break;
          }
        }
      }
    }
  }
}

TEST_CASE("durable: journal: a line that cannot be cut back makes the machine unusable") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  {
    trellis::Context ctx;
    Counter m(ctx, file, 0, step, {.journal = true});
    REQUIRE(m.send(1) == SendResult::Transitioned);
    int told = 0;
    auto sub = m.on_transition([&](const int&, const int&) { ++told; });
    {
      // The line's fdatasync fails, and so does the ftruncate that should take the line out.
      trellis::ScopedFailpoint sync("journal.fdatasync", inject(EIO, 1, 1));
      trellis::ScopedFailpoint cut("journal.ftruncate", inject(EIO, 1, 1));
      CHECK_THROWS_AS(m.send(100), trellis::persist_outcome_unknown);
    }
    CHECK(told == 0);
    CHECK(m.state() == 1);
    CHECK(m.epoch() == 1);
    CHECK_THROWS_WITH_AS(m.send(1), doctest::Contains("reopen"), trellis::persist_error);
    CHECK(m.state() == 1);
  }
  // The line stayed: the reopened machine has it, as a reopen is promised to.
  trellis::Context ctx;
  Counter again(ctx, file, 0, step, {.journal = true});
  CHECK(again.state() == 101);
  CHECK(again.epoch() == 2);
  CHECK(again.send(1) == SendResult::Transitioned);
}

// ------------------------------------------------------------------------------ bad sidecars

namespace {

/// One bad file at the sidecar's path, and the reason it must be refused with.
struct BadSidecar {
  const char* what;
  reason why;
  void (*make)(const fs::path& file);
  bool directory = false;
};

std::string good_bytes(std::uint64_t epoch = 4, json state = json(40), std::string machine = "doc",
                       int schema = 1) {
  return trellis::encode_sidecar(
      {std::move(machine), epoch, schema, std::move(state), "2024-05-01T12:00:00.000Z"});
}

json good_object() { return json::parse(good_bytes()); }

const std::vector<BadSidecar>& bad_sidecars() {
  static const std::vector<BadSidecar> cases = {
      {"empty", reason::empty, [](const fs::path& f) { write_bytes(f, ""); }},
      {"truncated", reason::truncated,
       [](const fs::path& f) { write_bytes(f, good_bytes().substr(0, good_bytes().size() / 2)); }},
      {"not JSON", reason::not_json,
       [](const fs::path& f) { write_bytes(f, "not json at all\n"); }},
      {"a JSON array", reason::not_an_object, [](const fs::path& f) { write_bytes(f, "[1,2]\n"); }},
      {"a bad checksum", reason::bad_checksum,
       [](const fs::path& f) {
         json o = good_object();
         o["state"] = 41;
         write_bytes(f, o.dump() + "\n");
       }},
      {"another format", reason::foreign_format,
       [](const fs::path& f) {
         json o = good_object();
         o["format"] = "something.else";
         write_bytes(f, persist_test::with_valid_checksum(o));
       }},
      {"a future version", reason::future_version,
       [](const fs::path& f) {
         json o = good_object();
         o["version"] = trellis::sidecar_version + 1;
         write_bytes(f, persist_test::with_valid_checksum(o));
       }},
      {"another machine's name", reason::foreign_machine,
       [](const fs::path& f) { write_bytes(f, good_bytes(4, json(40), "someone-else")); }},
      {"a state that does not decode", reason::bad_state,
       [](const fs::path& f) { write_bytes(f, good_bytes(4, json("forty"))); }},
      {"a directory at the path", reason::not_a_file,
       [](const fs::path& f) { fs::create_directory(f); }, true},
  };
  return cases;
}

}  // namespace

TEST_CASE("durable: every bad sidecar is a recovery_error naming the file, left untouched") {
  for (const BadSidecar& bad : bad_sidecars()) {
    INFO("sidecar: " << bad.what);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    bad.make(file);
    const std::string bytes = bad.directory ? "" : read_bytes(file);
    trellis::Context ctx;
    try {
      Counter m(ctx, file, 0, step);
      FAIL("a bad sidecar was accepted");
    } catch (const trellis::recovery_error& e) {
      CHECK(e.path() == file);
      CHECK_MESSAGE(e.why() == bad.why, "got " << trellis::recovery_error::name(e.why()));
      CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
      CHECK_FALSE(e.detail().empty());
    }
    if (bad.directory) {
      CHECK(fs::is_directory(file));
    } else {
      CHECK(read_bytes(file) == bytes);
    }
    for (const std::string& name : dir.names()) CHECK(name.find("corrupt") == std::string::npos);
  }
}

TEST_CASE("durable: quarantine renames a bad sidecar aside and starts from the initial state") {
  for (const BadSidecar& bad : bad_sidecars()) {
    INFO("sidecar: " << bad.what);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    bad.make(file);
    const std::string bytes = bad.directory ? "" : read_bytes(file);
    trellis::Context ctx;
    Counter m(ctx, file, 7, step, {.on_corrupt = OnCorrupt::quarantine});
    CHECK(m.state() == 7);
    CHECK(m.epoch() == 0);
    const auto& report = m.recovery();
    CHECK_FALSE(report.from_sidecar);
    REQUIRE(report.quarantined_to.has_value());
    const fs::path aside = *report.quarantined_to;
    CHECK(aside.parent_path() == file.parent_path());
    CHECK(aside.filename().string().starts_with("doc.json.corrupt-"));
    CHECK_FALSE(report.quarantine_reason.empty());
    if (bad.directory) {
      CHECK(fs::is_directory(aside));
    } else {
      CHECK(read_bytes(aside) == bytes);
    }
    CHECK_FALSE(fs::exists(file));
    REQUIRE(m.send(1) == SendResult::Transitioned);  // a fresh sidecar beside the quarantined
    CHECK(trellis::load_sidecar(file, "doc")->state == json(8));
    CHECK(fs::exists(aside));
  }
}

TEST_CASE("durable: an unreadable sidecar is a recovery_error") {
  if (persist_test::running_as_root()) {
    MESSAGE("skipped: root reads files whatever their permissions");
    return;
  }
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  write_bytes(file, good_bytes());
  fs::permissions(file, fs::perms::none);
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step);
    FAIL("an unreadable sidecar was accepted");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::unreadable);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  CHECK(read_bytes(file) == good_bytes());
}

// ------------------------------------------------------------------------------ schema, name

TEST_CASE("durable: a sidecar of a newer state schema is refused") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const std::string bytes = good_bytes(4, json(40), "doc", 3);
  write_bytes(file, bytes);
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step, {.schema_version = 2});
    FAIL("a future schema was accepted");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::future_schema);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable: an older state schema goes through migrate") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  write_bytes(file, good_bytes(4, json{{"count", 40}}, "doc", 1));
  std::vector<int> migrated_from;
  trellis::Context ctx;
  Counter m(ctx, file, 0, step, {.schema_version = 2, .migrate = [&](json state, int from) {
                                   migrated_from.push_back(from);
                                   return state.at("count");
                                 }});
  CHECK(migrated_from == std::vector<int>{1});
  CHECK(m.state() == 40);
  CHECK(m.epoch() == 4);
  REQUIRE(m.send(1) == SendResult::Transitioned);
  const auto record = trellis::load_sidecar(file, "doc");
  CHECK(record->schema == 2);
  CHECK(record->state == json(41));
}

TEST_CASE("durable: an older state schema without migrate is refused") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const std::string bytes = good_bytes(4, json(40), "doc", 1);
  write_bytes(file, bytes);
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step, {.schema_version = 2});
    FAIL("an old schema was accepted without a migration");
  } catch (const trellis::recovery_error& e) {
    CHECK(std::string(e.what()).find("migrate") != std::string::npos);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable: the sidecar's machine name is the file's stem unless the name option says") {
  ScratchDir dir;
  trellis::Context ctx;
  {
    Counter by_stem(ctx, dir / "doc-42.json", 0, step);
    REQUIRE(by_stem.send(1) == SendResult::Transitioned);
    CHECK(trellis::load_sidecar(dir / "doc-42.json", "")->machine == "doc-42");
    Counter named(ctx, dir / "other.json", 0, step, {.name = "custom"});
    REQUIRE(named.send(1) == SendResult::Transitioned);
    CHECK(trellis::load_sidecar(dir / "other.json", "")->machine == "custom");
  }
  // The file of "custom" is refused by a machine that expects its stem, "other".
  try {
    Counter wrong(ctx, dir / "other.json", 0, step);
    FAIL("another machine's sidecar was accepted");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::foreign_machine);
  }
  Counter right(ctx, dir / "other.json", 0, step, {.name = "custom"});
  CHECK(right.state() == 1);
}

// ------------------------------------------------------------------------------ limits, unknowns

namespace {

/// A machine whose state is any JSON: each event sets it. The event has no to_json, so a
/// journal line's "event" is null and only the state can be refused.
struct Set {
  json value;
};
using JsonMachine = trellis::DurableStateMachine<json, Set>;

std::optional<json> set_to(const json&, const Set& e) { return e.value; }

/// `levels` arrays nested inside each other around a 1.
json nested(int levels) {
  json v = 1;
  for (int i = 0; i < levels; ++i) v = json::array({std::move(v)});
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("durable: a state JSON cannot carry back is refused before it is acknowledged",
                   Mode, DURABLE_MODES) {
  const double inf = std::numeric_limits<double>::infinity();
  std::string deepest;  // inside the state, the path to the container at depth 513 of the file
  for (int i = 0; i < trellis::max_json_depth; ++i) deepest += "/0";
  struct Bad {
    const char* what;
    json state;
    std::string member;  // within the state
    std::string reason;
  };
  const std::vector<Bad> bads = {
      {"NaN", json{{"scores", {1.5, std::nan("")}}}, "/scores/1", "is NaN"},
      {"+Inf", json{{"limit", inf}}, "/limit", "is +Inf"},
      {"-Inf", json{{"limit", -inf}}, "/limit", "is -Inf"},
      {"513 levels", nested(trellis::max_json_depth + 1), deepest,
       "is nested deeper than 512 levels"},
  };
  // Where the state sits in the file the mode writes: a sidecar's "state", a journal's "to".
  const std::string at = Mode::options().journal ? "/to" : "/state";
  for (const Bad& bad : bads) {
    INFO(bad.what);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    const fs::path journal = trellis::journal_path_for(file);
    {
      typename Mode::Ctx ctx;
      JsonMachine m(ctx, file, json{{"n", 0}}, set_to, Mode::options());
      REQUIRE(m.send(Set{json{{"n", 1}}}) == SendResult::Transitioned);
      m.flush();
      const FileStamp sidecar_before = stamp(file);
      const FileStamp journal_before = stamp(journal);
      int told = 0;
      auto sub = m.on_transition([&](const json&, const json&) { ++told; });
      try {
        (void)m.send(Set{bad.state});
        FAIL("the state was acknowledged");
      } catch (const trellis::unwritable_value& e) {
        CHECK(e.member() == at + bad.member);
        CHECK(e.reason() == bad.reason);
        CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
      }
      CHECK(told == 0);
      CHECK(m.state() == json{{"n", 1}});
      CHECK(m.epoch() == 1);
      m.flush();
      CHECK(m.durable_through().get() == 1);
      CHECK(stamp(file) == sidecar_before);
      CHECK(stamp(journal) == journal_before);
    }
    typename Mode::Ctx ctx;
    JsonMachine again(ctx, file, json(nullptr), set_to, Mode::options());
    CHECK(again.state() == json{{"n", 1}});
    CHECK(again.epoch() == 1);
    CHECK(again.send(Set{json{{"n", 2}}}) == SendResult::Transitioned);
  }
}

TEST_CASE_TEMPLATE("durable: a state nested as deep as the readers allow is written and read back",
                   Mode, DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const json deepest = nested(trellis::max_json_depth);  // containers at depths 1..512
  {
    typename Mode::Ctx ctx;
    JsonMachine m(ctx, file, json(nullptr), set_to, Mode::options());
    REQUIRE(m.send(Set{deepest}) == SendResult::Transitioned);
    m.flush();
  }
  typename Mode::Ctx ctx;
  JsonMachine again(ctx, file, json(nullptr), set_to, Mode::options());
  CHECK(again.state() == deepest);
  CHECK(again.epoch() == 1);
}

TEST_CASE_TEMPLATE("durable: at epoch 2^64-1 a transition is refused, not wrapped to 0", Mode,
                   DURABLE_MODES) {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
  write_bytes(file, good_bytes(last, json(40)));
  const std::string before = read_bytes(file);
  {
    typename Mode::Ctx ctx;
    Counter m(ctx, file, 0, step, Mode::options());
    REQUIRE(m.epoch() == last);
    CHECK_THROWS_WITH_AS(m.send(1), doctest::Contains("the epoch is at its maximum"),
                         trellis::persist_error);
    CHECK(m.state() == 40);
    CHECK(m.epoch() == last);
    m.flush();
    CHECK(m.durable_through().get() == last);
    CHECK(m.send(-1) == SendResult::Rejected);  // deciding still works; only counting cannot
  }
  CHECK(read_bytes(file) == before);
  CHECK(trellis::read_journal(journal).entries.empty());
  typename Mode::Ctx ctx;
  Counter again(ctx, file, 0, step, Mode::options());
  CHECK(again.state() == 40);
  CHECK(again.epoch() == last);
}

TEST_CASE_TEMPLATE("durable: an unknown write outcome makes the machine unusable until reopened",
                   Mode, SyncMode, GroupMode) {
  // The sidecar is renamed into place, then the directory fsync fails: the file may or may not
  // keep the transition through a crash. The send says so (persist_outcome_unknown), the
  // machine publishes nothing and refuses every later send, and a reopen starts from the file.
  for (const std::string point : {"sidecar.dir_fsync", "sidecar.before_dir_fsync"}) {
    INFO("failpoint " << point);
    ScratchDir dir;
    const fs::path file = dir / "doc.json";
    {
      typename Mode::Ctx ctx;
      Counter m(ctx, file, 0, step, Mode::options());
      REQUIRE(m.send(1) == SendResult::Transitioned);
      int told = 0;
      auto sub = m.on_transition([&](const int&, const int&) { ++told; });
      {
        trellis::ScopedFailpoint fault(point, inject(EIO, 1, 1));
        CHECK_THROWS_AS(m.send(100), trellis::persist_outcome_unknown);
      }
      CHECK(told == 0);
      CHECK(m.state() == 1);
      CHECK(m.epoch() == 1);
      CHECK(m.durable_through().get() == 1);
      CHECK(trellis::load_sidecar(file, "doc")->epoch == 2);  // the file holds it
      try {
        (void)m.send(5);
        FAIL("a send was accepted after an unknown outcome");
      } catch (const trellis::persist_error& e) {
        CHECK(dynamic_cast<const trellis::persist_outcome_unknown*>(&e) == nullptr);
        CHECK(std::string(e.what()).find("reopen") != std::string::npos);
      }
      CHECK(told == 0);
      CHECK(m.state() == 1);
      const auto record = trellis::load_sidecar(file, "doc");
      CHECK(record->epoch == 2);  // nothing written after
      CHECK(record->state == json(101));
    }
    typename Mode::Ctx ctx;
    Counter again(ctx, file, 0, step, Mode::options());
    CHECK(again.state() == 101);
    CHECK(again.epoch() == 2);
    CHECK(again.send(1) == SendResult::Transitioned);
    CHECK(again.epoch() == 3);
  }
}

TEST_CASE("durable: links planted at the lock or journal names are refused, targets untouched") {
  for (const char* planted : {"doc.json.lock", "doc.json.journal"}) {
    INFO("link at " << planted);
    ScratchDir dir;
    persist_test::plant_link(dir / planted, dir / "victim.txt");
    trellis::Context ctx;
    try {
      Counter m(ctx, dir / "doc.json", 0, step, {.journal = true});
      FAIL("a link inside the directory was followed");
    } catch (const trellis::error& e) {
      const bool typed = dynamic_cast<const trellis::persist_error*>(&e) != nullptr ||
                         dynamic_cast<const trellis::recovery_error*>(&e) != nullptr;
      CHECK(typed);
      CHECK(std::string(e.what()).find("symbolic link") != std::string::npos);
    }
    CHECK(read_bytes(dir / "victim.txt") == "precious");
    CHECK(fs::is_symlink(dir / planted));
  }
}

TEST_CASE("durable: the same sidecar through a symlinked directory or file name has one owner") {
  ScratchDir dir;
  fs::create_directory(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "alias-dir");
  trellis::Context ctx;
  Counter owner(ctx, dir / "real" / "doc.json", 0, step);
  REQUIRE(owner.send(1) == SendResult::Transitioned);
  fs::create_symlink(dir / "real" / "doc.json", dir / "alias.json");
  CHECK_THROWS_AS(Counter(ctx, dir / "alias-dir" / "doc.json", 0, step), trellis::sidecar_locked);
  CHECK_THROWS_AS(Counter(ctx, dir / "alias.json", 0, step, {.name = "doc"}),
                  trellis::sidecar_locked);
}

TEST_CASE("durable: a sidecar opened through a symlinked file name keeps the link") {
  ScratchDir dir;
  fs::create_directory(dir / "real");
  write_bytes(dir / "real" / "doc.json", "");
  fs::remove(dir / "real" / "doc.json");
  fs::create_symlink(dir / "real" / "doc.json", dir / "alias.json");
  trellis::Context ctx;
  {
    Counter m(ctx, dir / "alias.json", 0, step,
              {.name = "doc", .journal = true, .compact_every = 1});
    REQUIRE(m.send(2) == SendResult::Transitioned);
  }
  CHECK(fs::is_symlink(dir / "alias.json"));
  CHECK(trellis::load_sidecar(dir / "real" / "doc.json", "doc")->state == json(2));
  CHECK(fs::exists(dir / "real" / "doc.json.lock"));
  CHECK_FALSE(fs::exists(dir / "alias.json.lock"));
  CHECK_FALSE(fs::exists(dir / "alias.json.journal"));
}

TEST_CASE("durable: a user's file named like a temporary survives opening") {
  ScratchDir dir;
  write_bytes(dir / "state.json.tmp-backup", "the user's");
  write_bytes(dir / "state.json.journal.tmp-backup", "the user's too");
  trellis::Context ctx;
  Counter m(ctx, dir / "state.json", 0, step, {.journal = true});
  CHECK(m.recovery().temps_removed == 0);
  CHECK(read_bytes(dir / "state.json.tmp-backup") == "the user's");
  CHECK(read_bytes(dir / "state.json.journal.tmp-backup") == "the user's too");
}

TEST_CASE("durable: an empty path is refused and creates nothing") {
  ScratchDir dir;
  persist_test::CwdScope cwd(dir.path());
  trellis::Context ctx;
  CHECK_THROWS_AS(Counter(ctx, fs::path(), 0, step), trellis::invalid_option);
  CHECK_THROWS_AS(Counter(ctx, "", 0, step, {.journal = true}), trellis::invalid_option);
  CHECK(dir.names().empty());
}

TEST_CASE("durable: file_mode is applied exactly to every file, whatever the umask") {
  ScratchDir dir;
  trellis::Context ctx;
  {
    persist_test::UmaskScope open_mask(0);
    Counter m(ctx, dir / "a.json", 0, step, {.journal = true, .compact_every = 1});
    REQUIRE(m.send(1) == SendResult::Transitioned);
    for (const char* name : {"a.json", "a.json.lock", "a.json.journal"}) {
      INFO(name);
      CHECK(persist_test::mode_of(dir / name) == 0600);
    }
  }
  {
    persist_test::UmaskScope strict_mask(077);
    Counter m(ctx, dir / "b.json", 0, step,
              {.journal = true, .compact_every = 1, .file_mode = 0640});
    REQUIRE(m.send(1) == SendResult::Transitioned);
    for (const char* name : {"b.json", "b.json.lock", "b.json.journal"}) {
      INFO(name);
      CHECK(persist_test::mode_of(dir / name) == 0640);
    }
  }
  CHECK_THROWS_AS(Counter(ctx, dir / "c.json", 0, step, {.file_mode = 0666}),
                  trellis::invalid_option);
  for (const std::string& name : dir.names()) CHECK(!name.starts_with("c.json"));
}

TEST_CASE("durable: a complete journal line with a bad checksum is refused, bytes unchanged") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  trellis::Context ctx;
  {
    Counter m(ctx, file, 0, step, {.journal = true});
    REQUIRE(m.send(1) == SendResult::Transitioned);
    REQUIRE(m.send(2) == SendResult::Transitioned);
  }
  std::string bytes = read_bytes(journal);
  const std::size_t last = bytes.rfind("\"to\":3");
  REQUIRE(last != std::string::npos);
  bytes.replace(last, 6, "\"to\":9");
  write_bytes(journal, bytes);
  CHECK_THROWS_AS(Counter(ctx, file, 0, step, {.journal = true}), trellis::recovery_error);
  CHECK(read_bytes(journal) == bytes);

  // An unterminated last line is still a torn write, and cut.
  const std::string torn = bytes.substr(0, bytes.rfind('\n', bytes.size() - 2) + 1) + "{\"epo";
  write_bytes(journal, torn);
  Counter m(ctx, file, 0, step, {.journal = true});
  CHECK(m.state() == 1);
  CHECK(m.recovery().torn_tail.has_value());
  CHECK(read_bytes(journal) == torn.substr(0, torn.size() - 5));
}

TEST_CASE("durable: quarantine moves the sidecar and its journal aside together") {
  ScratchDir dir;
  const fs::path file = dir / "doc.json";
  const fs::path journal = trellis::journal_path_for(file);
  trellis::Context ctx;
  {
    Counter m(ctx, file, 0, step, {.journal = true, .compact_every = 2});
    for (int i = 0; i < 3; ++i) REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  // The sidecar is fine, the journal is corrupt (a line in the middle).
  const std::string sidecar_bytes = read_bytes(file);
  const std::string journal_bytes = "not json\n" + read_bytes(journal);
  write_bytes(journal, journal_bytes);
  {
    Counter m(ctx, file, 7, step, {.on_corrupt = OnCorrupt::quarantine, .journal = true});
    CHECK(m.state() == 7);
    CHECK(m.epoch() == 0);
    const auto& report = m.recovery();
    REQUIRE(report.quarantined_to.has_value());
    REQUIRE(report.journal_quarantined_to.has_value());
    CHECK(read_bytes(*report.quarantined_to) == sidecar_bytes);
    CHECK(read_bytes(*report.journal_quarantined_to) == journal_bytes);
    const std::string suffix =
        report.quarantined_to->filename().string().substr(std::string("doc.json").size());
    CHECK(suffix.starts_with(".corrupt-"));
    CHECK(report.journal_quarantined_to->filename().string() == "doc.json.journal" + suffix);
    REQUIRE(m.send(1) == SendResult::Transitioned);
  }
  Counter again(ctx, file, 0, step, {.journal = true});
  CHECK(again.state() == 8);
}
