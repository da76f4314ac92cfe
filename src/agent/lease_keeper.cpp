// The heartbeat of a run call's lease (detail/lease_keeper.hpp).

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
  const std::chrono::milliseconds period = std::max(*ttl / 3, std::chrono::milliseconds(1));
  thread_ = std::jthread([this, period](std::stop_token done) { beat(done, period); });
}

LeaseKeeper::~LeaseKeeper() = default;

void LeaseKeeper::check() const {
  std::lock_guard lock(m_);
  if (lost_) std::rethrow_exception(lost_);
}

void LeaseKeeper::beat(const std::stop_token& done, std::chrono::milliseconds period) {
  for (;;) {
    {
      std::unique_lock lock(m_);
      wake_.wait_for(lock, done, period, [] { return false; });
    }
    if (done.stop_requested()) return;
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

}  // namespace trellis::agent::detail
