// AsyncContext: the executor policy. The graph calls schedule() under its lock; a task posted
// to the executor takes the lock again and runs the effect through the same algorithm as every
// other context. The oneTBB constructors live in src/tbb/arena_executor.cpp.

#include "trellis/reactive/async_context.hpp"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <utility>

#include "trellis/reactive/errors.hpp"

namespace trellis {

class AsyncContext::Scheduler final : public detail::EffectScheduler {
 public:
  Scheduler(detail::Graph* g, Executor* executor, std::unique_ptr<Executor> own)
      : graph_(g), own_(std::move(own)), executor_(own_ ? own_.get() : executor) {}

  // noexcept: the graph has handed the effect over (it stays queued until it runs), so a
  // task the executor refuses could neither run nor be reported; Executor says post() must
  // not throw, and one that does terminates the program here.
  void schedule(detail::Node* n) noexcept override {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    executor_->post([this, n] { run(n); });
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
    finished();
  }

  void finished() noexcept {
    std::lock_guard guard(m_);
    if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.notify_all();
  }

  detail::Graph* graph_;
  std::unique_ptr<Executor> own_;  // destroyed after drain_quietly(): no task of ours is left
  Executor* executor_;
  std::atomic<std::size_t> in_flight_{0};
  std::mutex m_;
  std::condition_variable idle_;
  std::exception_ptr error_;
};

AsyncContext::AsyncContext(Executor& executor)
    : scheduler_(std::make_unique<Scheduler>(graph_, &executor, nullptr)) {
  detail::GraphLock lock(graph_);
  graph_->set_executor(scheduler_.get());
}

AsyncContext::AsyncContext(std::unique_ptr<Executor> executor) {
  if (!executor) {
    throw invalid_option("trellis: AsyncContext: the executor is a null std::unique_ptr");
  }
  scheduler_ = std::make_unique<Scheduler>(graph_, nullptr, std::move(executor));
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
