// SPDX-License-Identifier: MIT
/// @file
/// AsyncContext over a user-written Executor: the reactive layer alone, no oneTBB (this file
/// includes neither oneTBB nor the umbrella header, and calls no oneTBB constructor).
#include <trellis/reactive/async_context.hpp>
#include <trellis/reactive/executor.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "trellis/reactive/errors.hpp"

namespace {

/// One worker thread and a queue: the smallest executor a user might write. A held one runs
/// nothing until release().
class OneThread final : public trellis::Executor {
 public:
  explicit OneThread(bool held = false) : held_(held), worker_([this] { work(); }) {}
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;
  ~OneThread() override {
    {
      std::lock_guard lock(m_);
      stopping_ = true;
    }
    ready_.notify_one();
    worker_.join();  // runs what is queued first: every posted task runs once
  }

  void post(std::function<void()> task) override {
    {
      std::lock_guard lock(m_);
      queue_.push_back(std::move(task));
      ++posted_;
    }
    ready_.notify_one();
  }

  void release() {
    {
      std::lock_guard lock(m_);
      held_ = false;
    }
    ready_.notify_one();
  }

  std::thread::id thread() const noexcept { return worker_.get_id(); }
  int posted() const {
    std::lock_guard lock(m_);
    return posted_;
  }
  int started() const {
    std::lock_guard lock(m_);
    return started_;
  }

 private:
  void work() {
    std::unique_lock lock(m_);
    for (;;) {
      ready_.wait(lock, [this] { return stopping_ || (!held_ && !queue_.empty()); });
      if (queue_.empty()) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      ++started_;
      lock.unlock();
      task();
      lock.lock();
    }
  }

  mutable std::mutex m_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  int posted_ = 0;
  int started_ = 0;
  bool held_;
  bool stopping_ = false;
  std::thread worker_;  // last: started once the queue exists
};

/// Holds its tasks until release(), and reports from its destructor how many it had posted
/// and how many of those had not started by then.
class Recording final : public trellis::Executor {
 public:
  Recording(std::atomic<int>& posted, std::atomic<int>& unstarted)
      : posted_(posted), unstarted_(unstarted) {}
  ~Recording() override {
    posted_ = inner_.posted();
    unstarted_ = inner_.posted() - inner_.started();
  }
  void post(std::function<void()> task) override { inner_.post(std::move(task)); }
  void release() { inner_.release(); }

 private:
  std::atomic<int>& posted_;
  std::atomic<int>& unstarted_;
  OneThread inner_{/*held=*/true};
};

}  // namespace

TEST_CASE("executor: AsyncContext runs every effect run on a user-written executor") {
  OneThread pool;
  trellis::AsyncContext ctx(pool);
  auto a = ctx.cell(0);
  std::atomic<int> seen{-1};
  std::atomic<int> runs_elsewhere{0};
  auto e = ctx.effect([&] {
    seen = a.get();
    if (std::this_thread::get_id() != pool.thread()) ++runs_elsewhere;
  });
  for (int v = 1; v <= 20; ++v) a.set(v);
  ctx.drain();
  CHECK(seen.load() == 20);
  CHECK(runs_elsewhere.load() == 0);
  CHECK(pool.posted() >= 1);
}

TEST_CASE("executor: drain rethrows an effect's exception from a user-written executor") {
  OneThread pool;
  trellis::AsyncContext ctx(pool);
  auto a = ctx.cell(0);
  auto e = ctx.effect([&] {
    if (a.get() == 1) throw std::runtime_error("boom");
  });
  ctx.drain();
  a.set(1);
  CHECK_THROWS_WITH_AS(ctx.drain(), "boom", std::runtime_error);
  a.set(2);
  CHECK_NOTHROW(ctx.drain());
}

TEST_CASE("executor: an executor given to AsyncContext is destroyed after its last task ran") {
  std::atomic<int> posted{-1};
  std::atomic<int> unstarted{-1};
  {
    auto owned = std::make_unique<Recording>(posted, unstarted);
    Recording& executor = *owned;
    trellis::AsyncContext ctx(std::move(owned));
    auto a = ctx.cell(0);
    auto e = ctx.effect([&] { (void)a.get(); });
    a.set(1);
    // Every run is still pending here. No drain(): the context's destructor must wait for
    // them before it destroys the executor.
    executor.release();
  }
  CHECK(posted.load() >= 1);
  CHECK(unstarted.load() == 0);
}

TEST_CASE("executor: a null executor is refused with invalid_option") {
  CHECK_THROWS_AS(trellis::AsyncContext(std::unique_ptr<trellis::Executor>{}),
                  trellis::invalid_option);
}
