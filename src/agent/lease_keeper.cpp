// The heartbeat of a run call's lease, and its watch for cancel requests
// (detail/lease_keeper.hpp).

#include "trellis/agent/detail/lease_keeper.hpp"

#include <algorithm>
#include <utility>

#include "trellis/agent/errors.hpp"

namespace trellis::agent::detail {

LeaseKeeper::LeaseKeeper(Store& store, LeaseToken token, std::stop_token stop)
    : store_(store), token_(std::move(token)), forward_(std::move(stop), Forward{&stop_}) {
  if (token_.empty()) return;  // a store without tokens: nothing to renew
  const std::optional<std::chrono::milliseconds> ttl = store_.lease_ttl();
  if (!ttl) return;
  renew_every_ = std::max(*ttl / 3, std::chrono::milliseconds(1));
  start_thread();
}

LeaseKeeper::~LeaseKeeper() = default;

void LeaseKeeper::watch_cancels(std::string run_id, std::uint64_t handled,
                                std::chrono::milliseconds poll) {
  if (poll <= std::chrono::milliseconds(0)) return;
  {
    std::lock_guard lock(m_);
    watched_run_ = std::move(run_id);
    handled_ = handled;
    poll_ = poll;
    reconfigured_ = true;
  }
  if (thread_.joinable())
    wake_.notify_all();
  else
    start_thread();
}

void LeaseKeeper::start_thread() {
  thread_ = std::jthread([this](std::stop_token done) { beat(done); });
}

void LeaseKeeper::check() const {
  std::lock_guard lock(m_);
  if (lost_) std::rethrow_exception(lost_);
}

void LeaseKeeper::beat(const std::stop_token& done) {
  using clock = std::chrono::steady_clock;
  clock::time_point next_renew = clock::now() + renew_every_.value_or(std::chrono::milliseconds(0));
  clock::time_point next_poll = clock::now();
  for (;;) {
    std::string run;
    std::uint64_t handled = 0;
    {
      std::unique_lock lock(m_);
      const auto due = [&] {
        clock::time_point at = clock::time_point::max();
        if (renew_every_) at = std::min(at, next_renew);
        if (!watched_run_.empty() && !cancel_seen_.load()) at = std::min(at, next_poll);
        // Nothing due (the watch found its request, no renewals): look again now and then.
        return at == clock::time_point::max() ? clock::now() + std::chrono::hours(1) : at;
      };
      wake_.wait_until(lock, done, due(), [this] { return reconfigured_; });
      reconfigured_ = false;
      if (done.stop_requested()) return;
      if (!watched_run_.empty() && !cancel_seen_.load() && clock::now() >= next_poll) {
        run = watched_run_;
        handled = handled_;
        next_poll = clock::now() + poll_;
      }
    }
    if (!run.empty()) {
      try {
        if (!store_.cancel_requests(run, handled).empty()) {
          cancel_seen_.store(true, std::memory_order_release);
          stop_.request_stop();
        }
      } catch (...) {
        // Not known (a store error): looked for again at the next poll.
      }
    }
    if (renew_every_ && clock::now() >= next_renew) {
      next_renew = clock::now() + *renew_every_;
      try {
        store_.renew(token_);
      } catch (const run_busy&) {
        {
          std::lock_guard lock(m_);
          lost_ = std::current_exception();
        }
        stop_.request_stop();
        return;
      } catch (...) {
        // Not known to be lost (a store error): tried again at the next beat.
      }
    }
  }
}

}  // namespace trellis::agent::detail
