#pragma once
/// @file
/// Internal: one thread per process that looks for cancel requests (Store::cancel_requests) of
/// every run call in progress, so a node doing long work sees RunContext::stop_requested() soon
/// after `trellis cancel`. A run call registers (watch) for the time it runs; every `poll` the
/// thread reads the run's requests newer than the one it answered last and, when there is one,
/// requests stop on the call's stop_source. The run loop commits the cancellation at its next
/// check between steps. One shared thread, not one per call: a run call costs a registration
/// (a lock and a list insert), not a thread start and join. The stop_source's callbacks (the
/// node's std::stop_callbacks) run on that thread: keep them short. A child of fork() starts
/// with a watcher of its own (the parent's registrations are not polled there).

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

namespace trellis::agent {
class Store;
}  // namespace trellis::agent

namespace trellis::agent::detail {

class CancelWatcher {
 public:
  struct Entry;
  /// Ends the watch (RAII); waits for a poll of this entry that is under way, so the store and
  /// the stop_source may go once it is destroyed.
  class Watch {
   public:
    Watch() = default;
    explicit Watch(std::shared_ptr<Entry> entry) : entry_(std::move(entry)) {}
    Watch(Watch&&) noexcept = default;
    Watch& operator=(Watch&& other) noexcept;
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    void reset();
    std::shared_ptr<Entry> entry_;
  };

  /// Watches run `run_id` of `store` for a cancel request newer than `handled`, every `poll`,
  /// requesting stop on `stop` when one is found. A zero `poll` watches nothing.
  static Watch watch(Store& store, std::string run_id, std::uint64_t handled,
                     std::chrono::milliseconds poll, std::stop_source stop);
};

}  // namespace trellis::agent::detail
