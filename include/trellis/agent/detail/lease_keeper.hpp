#pragma once
/// @file
/// Internal: the heartbeat of the lease a run call holds (graph.hpp owns one per call).
///
/// While it lives, and only when the store's leases expire (Store::lease_ttl), a thread renews
/// the lease every lease_ttl/3, so a node or an effect call that runs longer than the TTL
/// keeps the run. A renewal that finds the lease lost (run_busy: it expired and another worker
/// took it) stops the heartbeat and raises stop_token(), which the run's nodes see as
/// RunContext::stop_requested(); the run loop then throws that run_busy at its next check, and
/// the store refuses the worker's commit and effect records anyway (they carry the token). A
/// renewal the store could not make (store_error, or anything else) is tried again at the next
/// beat: until the lease expires and someone takes it, it is still this worker's.

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stop_token>
#include <thread>

#include "trellis/agent/store.hpp"

namespace trellis::agent::detail {

class LeaseKeeper {
 public:
  /// Keeps `token` of `store` renewed; stop_token() also fires when `stop` does.
  LeaseKeeper(Store& store, LeaseToken token, std::stop_token stop);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  /// The lease's token (what the run call passes to commit and put_effect).
  const LeaseToken& token() const noexcept { return token_; }
  /// Requested when the caller's stop token is, or when the lease is lost.
  std::stop_token stop_token() const noexcept { return stop_.get_token(); }
  /// What raises stop_token() (the run loop's cancel watch requests stop on it too).
  std::stop_source stop_source() const noexcept { return stop_; }
  /// Throws the run_busy of the renewal that found the lease lost, if one did.
  void check() const;

 private:
  struct Forward {
    std::stop_source* to;
    void operator()() const noexcept { to->request_stop(); }
  };
  void beat(const std::stop_token& done, std::chrono::milliseconds period);

  Store& store_;
  LeaseToken token_;
  std::stop_source stop_;
  std::stop_callback<Forward> forward_;
  mutable std::mutex m_;
  std::condition_variable_any wake_;
  std::exception_ptr lost_;
  std::jthread thread_;  // last: stopped and joined first
};

}  // namespace trellis::agent::detail
