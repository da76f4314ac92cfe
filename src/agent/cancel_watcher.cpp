// The process's watcher of cancel requests (detail/cancel_watcher.hpp).

#include "trellis/agent/detail/cancel_watcher.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <utility>

#include "trellis/agent/store.hpp"

namespace trellis::agent::detail {

struct CancelWatcher::Entry {
  Store* store;
  std::string run_id;
  std::uint64_t handled;
  std::chrono::milliseconds poll;
  std::stop_source stop;
  std::chrono::steady_clock::time_point due;
  bool polling = false;  // the thread reads its requests now (outside the lock)
  bool ended = false;    // its Watch is gone: skip it
};

namespace {

using clock = std::chrono::steady_clock;

class Watcher {
 public:
  static Watcher& instance() {
    static const bool forks_handled = [] {
      // A child of fork() gets no thread and a copy of the lock as it was: it starts afresh.
      ::pthread_atfork(nullptr, nullptr, [] { current_.store(new Watcher); });
      return true;
    }();
    (void)forks_handled;
    Watcher* w = current_.load();
    if (w == nullptr) {
      Watcher* fresh = new Watcher;  // never destroyed: no join at exit while a run still runs
      if (!current_.compare_exchange_strong(w, fresh))
        delete fresh;
      else
        w = fresh;
    }
    return *w;
  }

  void add(const std::shared_ptr<CancelWatcher::Entry>& e) {
    std::lock_guard lock(m_);
    if (!started_) {
      std::thread([this] { loop(); }).detach();  // first: if it throws, nothing is half done
      started_ = true;
      next_wake_ = clock::time_point::max();
    }
    entries_.push_back(e);
    // Wake the thread only when it would look too late: while run calls come and go it ticks
    // on its own, so a run call costs no wake-up (and no context switch).
    if (e->due < next_wake_) wake_.notify_all();
  }

  void remove(const std::shared_ptr<CancelWatcher::Entry>& e) {
    std::unique_lock lock(m_);
    e->ended = true;
    // An entry this watcher does not hold (registered before a fork, in the parent's) is not
    // polled by it.
    if (std::find(entries_.begin(), entries_.end(), e) == entries_.end()) return;
    done_.wait(lock, [&] { return !e->polling; });
    entries_.remove(e);
  }

 private:
  void loop() {
    std::unique_lock lock(m_);
    clock::time_point idle_since = clock::now();
    for (;;) {
      // With nothing to watch it keeps a short tick for a while (a run call may come soon and
      // need no wake-up), then sleeps until one comes.
      const clock::time_point now = clock::now();
      if (!entries_.empty()) idle_since = now;
      clock::time_point next =
          now - idle_since < kIdleTicking ? now + kIdleTick : clock::time_point::max();
      // The entry due first (every entry gets its turn, however long each poll takes).
      std::shared_ptr<CancelWatcher::Entry> due;
      for (const auto& e : entries_) {
        if (e->ended) continue;
        if (e->due <= now && (!due || e->due < due->due)) due = e;
        if (e->due < next) next = e->due;
      }
      if (!due) {
        next_wake_ = next;
        if (next == clock::time_point::max())
          wake_.wait(lock);
        else
          wake_.wait_until(lock, next);
        next_wake_ = clock::time_point::min();  // awake: it looks at every entry before sleeping
        continue;
      }
      due->polling = true;
      due->due = clock::now() + due->poll;
      lock.unlock();
      bool found = false;
      try {
        found = !due->store->cancel_requests(due->run_id, due->handled).empty();
      } catch (...) {
        // Not known (a store error): looked for again at the next poll.
      }
      if (found) due->stop.request_stop();
      lock.lock();
      due->polling = false;
      if (found) due->ended = true;  // seen: the run loop takes it from here
      done_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::list<std::shared_ptr<CancelWatcher::Entry>> entries_;
  bool started_ = false;
  static inline std::atomic<Watcher*> current_{nullptr};
  clock::time_point next_wake_ = clock::time_point::max();  // when the sleeping thread wakes
  static constexpr std::chrono::milliseconds kIdleTick{50};
  static constexpr std::chrono::seconds kIdleTicking{10};
};

}  // namespace

CancelWatcher::Watch CancelWatcher::watch(Store& store, std::string run_id, std::uint64_t handled,
                                          std::chrono::milliseconds poll, std::stop_source stop) {
  if (poll <= std::chrono::milliseconds(0)) return Watch();
  auto e = std::make_shared<Entry>(Entry{&store, std::move(run_id), handled, poll, std::move(stop),
                                         clock::now() + poll, false, false});
  Watcher::instance().add(e);
  return Watch(std::move(e));
}

CancelWatcher::Watch& CancelWatcher::Watch::operator=(Watch&& other) noexcept {
  if (this != &other) {
    reset();
    entry_ = std::move(other.entry_);
  }
  return *this;
}

CancelWatcher::Watch::~Watch() { reset(); }

void CancelWatcher::Watch::reset() {
  if (entry_) Watcher::instance().remove(entry_);
  entry_.reset();
}

}  // namespace trellis::agent::detail
