// AsyncContext: the executor policy. The graph calls schedule() under its lock; a task takes
// the lock again and runs the effect through the same algorithm as every other context.

#include "trellis/reactive/async_context.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace trellis {

class AsyncContext::Scheduler final : public detail::EffectScheduler {
 public:
  Scheduler(detail::Graph* g, tbb::task_arena* user) : graph_(g) {
    if (user != nullptr) {
      arena_ = user;
    } else {
      // No slot reserved for a joining thread: enqueued work must progress with none. TBB keeps
      // one core for the application's own threads, hence hardware_concurrency - 1 workers.
      const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
      own_.emplace(threads, 0);
      arena_ = &*own_;
    }
  }

  void schedule(detail::Node* n) override {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    arena_->enqueue([this, n] { run(n); });
  }

  void drain() {
    std::unique_lock lock(m_);
    idle_.wait(lock, [this] { return in_flight_.load(std::memory_order_acquire) == 0; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  void drain_quietly() noexcept {
    std::unique_lock lock(m_);
    idle_.wait(lock, [this] { return in_flight_.load(std::memory_order_acquire) == 0; });
    error_ = nullptr;
  }

 private:
  void run(detail::Node* n) noexcept {
    {
      detail::GraphLock lock(graph_);
      try {
        graph_->run_scheduled(n);
      } catch (...) {
        std::lock_guard guard(m_);
        if (!error_) error_ = std::current_exception();
      }
      // Schedules happen under the graph lock, so with it held this count is exact: when only
      // this run is left, the loop-detection window closes.
      if (in_flight_.load(std::memory_order_relaxed) == 1) graph_->reset_async_window();
    }
    std::lock_guard guard(m_);
    if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.notify_all();
  }

  detail::Graph* graph_;
  std::optional<tbb::task_arena> own_;
  tbb::task_arena* arena_ = nullptr;
  std::atomic<std::size_t> in_flight_{0};
  std::mutex m_;
  std::condition_variable idle_;
  std::exception_ptr error_;
};

AsyncContext::AsyncContext() : scheduler_(std::make_unique<Scheduler>(graph_, nullptr)) {
  detail::GraphLock lock(graph_);
  graph_->set_executor(scheduler_.get());
}

AsyncContext::AsyncContext(tbb::task_arena& arena)
    : scheduler_(std::make_unique<Scheduler>(graph_, &arena)) {
  detail::GraphLock lock(graph_);
  graph_->set_executor(scheduler_.get());
}

AsyncContext::~AsyncContext() {
  scheduler_->drain_quietly();
  detail::GraphLock lock(graph_);
  graph_->set_executor(nullptr);
}

void AsyncContext::drain() { scheduler_->drain(); }

}  // namespace trellis
