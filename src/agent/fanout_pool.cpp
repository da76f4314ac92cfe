// A pool of threads that run fan-out items (fanout_pool.hpp).

#include "trellis/agent/fanout_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace trellis::agent {

struct FanoutPool::Impl {
  struct Offer {
    const std::function<void()>* job;
    std::size_t places;        // not taken yet
    std::size_t running = 0;   // taken, not returned
    std::exception_ptr error;  // the first a helper's call threw
  };
  mutable std::mutex m;
  std::condition_variable_any changed;  // an offer made, or a helper's call returned
  std::vector<Offer*> open;             // offers with places left, oldest first
  std::stop_source wake;                // requested (then replaced) by each offer

  // Takes a place of the oldest open offer (under m).
  Offer* take() {
    if (open.empty()) return nullptr;
    Offer* o = open.front();
    --o->places;
    ++o->running;
    if (o->places == 0) open.erase(open.begin());
    return o;
  }
};

FanoutPool::FanoutPool() : impl_(std::make_unique<Impl>()) {}

FanoutPool::~FanoutPool() = default;

std::stop_token FanoutPool::offered() const {
  std::lock_guard lock(impl_->m);
  return impl_->wake.get_token();
}

bool FanoutPool::help() {
  Impl& p = *impl_;
  Impl::Offer* o = nullptr;
  {
    std::lock_guard lock(p.m);
    o = p.take();
  }
  if (o == nullptr) return false;
  std::exception_ptr error;
  try {
    (*o->job)();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard lock(p.m);
    if (error && !o->error) o->error = error;
    --o->running;  // from here on the offer's owner may return (and `o` be gone)
  }
  p.changed.notify_all();
  return true;
}

void FanoutPool::serve(std::stop_token stop) {
  Impl& p = *impl_;
  while (!stop.stop_requested()) {
    if (help()) continue;
    std::unique_lock lock(p.m);
    p.changed.wait(lock, stop, [&] { return !p.open.empty(); });
  }
}

void FanoutPool::run(const std::function<void()>& job, std::size_t helpers) {
  if (helpers == 0) {
    job();
    return;
  }
  Impl& p = *impl_;
  Impl::Offer offer{&job, helpers, 0, nullptr};
  std::stop_source woken;
  {
    std::lock_guard lock(p.m);
    p.open.push_back(&offer);
    woken = std::exchange(p.wake, std::stop_source());
  }
  woken.request_stop();  // outside the lock: it runs the waiters' callbacks
  p.changed.notify_all();
  std::exception_ptr mine;
  try {
    job();
  } catch (...) {
    mine = std::current_exception();
  }
  {
    std::unique_lock lock(p.m);
    std::erase(p.open, &offer);  // the places not taken
    p.changed.wait(lock, [&] { return offer.running == 0; });
  }
  if (mine) std::rethrow_exception(mine);
  if (offer.error) std::rethrow_exception(offer.error);
}

}  // namespace trellis::agent
