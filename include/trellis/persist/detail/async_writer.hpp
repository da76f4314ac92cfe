#pragma once
/// @file
/// `AsyncWriter`: the background writer of Durability::async. The core commits a transition
/// in memory and hands its encoded state to submit(); a thread of the writer's own writes the
/// newest state handed over (a state superseded before its turn is never written), so the disk
/// lags behind memory by design and durable_epoch() tells how far it has caught up.
///
/// Acknowledgement: submit() returns once the state is counted, checked (persist_error at
/// epoch 2^64-1, unwritable_value for JSON that cannot carry it back; both reported as
/// persist_failed and thrown, so nothing is accepted that the writer could only fail on) and
/// queued; nothing is on disk yet. flush() waits until it is. Each write emits `persisted` or
/// `persist_failed` on the writer's thread.
///
/// Retries: a failed write is retried (the newest state by then) after a pause that starts at
/// 5 ms and doubles up to 1 s; flush() asks for an attempt at once. An unknown outcome is
/// retried like any failure (memory is ahead of the disk anyway). Destruction asks for one
/// more attempt and then, if the disk keeps failing, makes at most kStopAttempts more, 20 ms
/// apart, before it gives up and reports persist_failed naming the epoch that is not on disk.
///
/// Threads: submit(), flush() and durable_epoch() may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "trellis/persist/detail/function_ref.hpp"
#include "trellis/persist/detail/snapshot_writer.hpp"

namespace trellis::detail {

class AsyncWriter final : public SnapshotWriter {
 public:
  static constexpr std::chrono::milliseconds kFirstRetry{5};
  static constexpr std::chrono::milliseconds kLongestRetry{1000};
  static constexpr std::chrono::milliseconds kStopRetry{20};
  static constexpr int kStopAttempts = 3;

  /// Starts the writer's thread; `epoch` is the epoch on disk at the start.
  AsyncWriter(WriterConfig config, std::uint64_t epoch);
  /// Writes the newest state still pending (a bounded number of attempts) and stops the thread.
  ~AsyncWriter() override;

  /// Counts the transition after epoch `current`, calls `encode` for its state, checks it and
  /// hands it to the writer's thread; returns its epoch (see the file comment).
  std::uint64_t submit(std::uint64_t current, FunctionRef<nlohmann::json()> encode);

  /// Asks for an attempt now and waits until every state submitted so far is on disk, or until
  /// an attempt fails: that failure is rethrown (the writer keeps retrying).
  void flush() override;

  /// The epoch of the last state written (lock-free: read on every async send).
  std::uint64_t durable_epoch() const override {
    return written_epoch_.load(std::memory_order_acquire);
  }

 private:
  struct Snapshot {
    nlohmann::json state;
    std::uint64_t epoch = 0;
  };

  nlohmann::json accept(std::uint64_t current, std::uint64_t& epoch,
                        FunctionRef<nlohmann::json()> encode);
  void run();

  std::mutex am_;
  std::condition_variable acv_;
  std::condition_variable done_cv_;
  std::optional<Snapshot> latest_;  // the newest state not yet on disk (a failed one waits here)
  bool writing_ = false;
  std::atomic<std::uint64_t> written_epoch_;  // only grows; stored under am_
  std::uint64_t failures_ = 0;                // failed attempts so far
  std::exception_ptr last_error_;             // of the last attempt, if it failed
  std::optional<std::chrono::steady_clock::time_point> retry_at_;
  bool kick_ = false;  // flush() or the destructor wants an attempt now
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace trellis::detail
