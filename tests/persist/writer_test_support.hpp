// SPDX-License-Identifier: MIT
/// @file
/// Shared doubles for the writer suites (sync_writer_test.cpp, group_writer_test.cpp,
/// async_writer_test.cpp): the events a writer reported, the sidecar as a reader sees it, and
/// a bound on code that could deadlock.
#pragma once

#include <trellis/persist/detail/persist_event_hub.hpp>
#include <trellis/persist/detail/snapshot_writer.hpp>
#include <trellis/persist/durability.hpp>
#include <trellis/persist/sidecar.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace writer_test {

namespace fs = std::filesystem;
using trellis::PersistEvent;

/// A hub and every event it heard, for a writer's config.
class EventLog {
 public:
  EventLog() {
    sub_ = hub_.subscribe([this](const PersistEvent& e) {
      std::lock_guard lock(mutex_);
      events_.push_back(e);
    });
  }

  /// The config of a writer of `file` ("doc" in it, schema 1) that reports here.
  trellis::detail::WriterConfig config(const fs::path& file) {
    return trellis::detail::WriterConfig{file, "doc", 1, 0600, &hub_};
  }

  trellis::detail::PersistEventHub& hub() { return hub_; }

  std::vector<PersistEvent> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

  std::vector<PersistEvent::Kind> kinds() const {
    std::vector<PersistEvent::Kind> out;
    for (const PersistEvent& e : events()) out.push_back(e.kind);
    return out;
  }

  /// The epochs of the `persisted` events, in order.
  std::vector<std::uint64_t> persisted() const {
    std::vector<std::uint64_t> out;
    for (const PersistEvent& e : events()) {
      if (e.kind == PersistEvent::Kind::persisted) out.push_back(e.epoch);
    }
    return out;
  }

 private:
  trellis::detail::PersistEventHub hub_;
  mutable std::mutex mutex_;
  std::vector<PersistEvent> events_;
  trellis::Subscription sub_;
};

/// The sidecar's epoch as a reader sees it now (nullopt: no file).
inline std::optional<std::uint64_t> disk_epoch(const fs::path& file) {
  if (auto record = trellis::load_sidecar(file, "doc")) return record->epoch;
  return std::nullopt;
}

/// A gate a thread waits at until it is opened.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

/// Runs `f` on a thread and stops the whole run if it does not return within `limit` (a
/// deadlock cannot be unwound, so the process exits with a message).
template <class F>
void run_bounded(F f, std::chrono::seconds limit, const char* what) {
  auto done = std::async(std::launch::async, std::move(f));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "writer test: '%s' did not finish within %llds (deadlock?)\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  done.get();
}

}  // namespace writer_test
