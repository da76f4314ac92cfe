#pragma once
/// @file
/// `FanoutPool`: threads that run a fan-out's items (fanout.hpp) for the run calls that share
/// it. A Worker (worker.hpp) has one: its idle pool threads run the items of the fan-outs of the
/// runs its busy threads advance, so a fan-out starts no thread of its own. A program that
/// makes its own run calls can give them one through RunOptions::fanout_pool, with helper
/// threads that serve() it:
///
/// ```cpp
/// trellis::agent::FanoutPool pool;
/// std::jthread helper([&](std::stop_token stop) { pool.serve(stop); });
/// graph.run("r", state, store, {.fanout_pool = &pool});
/// ```
///
/// A fan-out with concurrency c offers c - 1 places to the pool and runs items on its own
/// (the node's) thread too; a helper takes a place when it is free, and takes items one after
/// another until none is left. The items run in parallel up to c, as far as the pool's threads
/// are free: a pool whose threads are all busy (a Worker's threads advancing other runs) leaves
/// the node's thread to run the items alone. Places not taken once every item has been taken
/// (the node's thread finds none left) are withdrawn; the fan-out returns once every helper that
/// took one has finished its items.
/// Without a pool, a fan-out starts its c - 1 threads and joins them.
///
/// Thread-safe. A pool must outlive the run calls and helpers that use it.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>

namespace trellis::agent {

class FanoutPool {
 public:
  FanoutPool();
  ~FanoutPool();
  FanoutPool(const FanoutPool&) = delete;
  FanoutPool& operator=(const FanoutPool&) = delete;

  /// A helper thread's loop: runs offered work until `stop` is requested.
  void serve(std::stop_token stop);

  /// Runs one offered place if there is one (returns true), else returns false at once: for a
  /// thread with other work that helps while it is idle (a Worker's).
  bool help();

  /// Requested when work is offered: an idle thread that waits for other work (a store's
  /// wait_for_work) takes this token first, then calls help(), then waits on it too; an offer
  /// made after the token was taken wakes it.
  std::stop_token offered() const;

  /// Runs `job` on the calling thread and on up to `helpers` more threads of the pool (each
  /// place taken calls `job` once), then returns once every call of it has returned. `job`
  /// must be safe to call from several threads at once. An exception from the calling
  /// thread's call, else the first from a helper's, is rethrown.
  void run(const std::function<void()>& job, std::size_t helpers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trellis::agent
