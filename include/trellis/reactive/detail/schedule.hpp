#pragma once
/// @file
/// When and where watchers run, under which lock: the execution policy a context gives its
/// graph. Propagation (graph.hpp) queues the watchers it reaches; GraphSchedule runs them at the
/// end of the outermost write or batch (the flush), counts effect runs against the effect
/// budget, hands effects to an executor when the context has one (AsyncContext), and holds the
/// lock of a thread-safe graph.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "trellis/reactive/detail/graph.hpp"

namespace trellis::detail {

/// Where effect runs go when they are not run inline (AsyncContext).
class EffectScheduler {
 public:
  virtual ~EffectScheduler() = default;
  /// Runs `n` later; called under the graph's lock with `n` marked kQueued.
  virtual void schedule(Node* n) = 0;
};

/// The lock of a thread-safe graph. Re-entrant at no cost: a thread that already holds it (a
/// callback reading its own context) passes straight through, without touching the mutex.
class GraphMutex {
 public:
  /// Takes the lock; false if this thread already held it (then do not unlock).
  bool lock() {
    if (owner_.load(std::memory_order_relaxed) == &self_) return false;
    m_.lock();
    owner_.store(&self_, std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(nullptr, std::memory_order_relaxed);
    m_.unlock();
  }
  /// Whether the calling thread holds the lock now.
  bool held_by_me() const noexcept { return owner_.load(std::memory_order_relaxed) == &self_; }

 private:
  // The address of a thread_local identifies the running thread; owner_ is cleared before
  // every unlock, so it never holds the address of a thread that has ended.
  static inline constinit thread_local char self_ = 0;
  std::mutex m_;
  std::atomic<const char*> owner_{nullptr};
};

/// The algorithm plus its execution policy. A context that shares the graph across threads
/// gives it a mutex, and every entry point from a handle takes it (GraphLock).
class GraphSchedule : public GraphCore {
 public:
  // ---- the lock
  /// Whether nodes and the graph may be shared between threads (a lock, atomic counts).
  bool shared() const noexcept { return mutex_ != nullptr; }
  /// Whether the calling thread holds the graph's lock now (false for a graph without one).
  bool locked_by_this_thread() const noexcept { return mutex_ != nullptr && mutex_->held_by_me(); }

  // ---- writes and batches
  /// A cell's value changed: mark downstream, and flush unless a batch or flush is open.
  void written(Node* cell) {
    if (cell->subs == nullptr) return;
    propagate(cell->subs, true);
    if (batch_depth_ == 0) flush();
  }

  /// Whether writes made now are held until a batch (or a watcher's run) ends; false when a
  /// write flushes at once.
  bool in_batch() const noexcept { return batch_depth_ != 0; }

  /// Opens a user batch (ctx.batch), or a nested one.
  void begin_batch() noexcept {
    if (user_batches_++ == 0) ++batch_seq_;
    ++batch_depth_;
  }
  /// The outermost user batch open now, or 0 outside any.
  std::uint64_t current_batch() const noexcept { return user_batches_ > 0 ? batch_seq_ : 0; }
  /// Ends a batch opened with begin_batch(); flushes at the outermost exit.
  void end_batch() {
    --user_batches_;
    if (--batch_depth_ == 0) flush();
  }
  /// Same, for a batch whose body threw: flush errors are dropped so the body's error wins.
  void end_batch_after_throw() noexcept;

  // ---- running watchers
  /// Queues watcher `n` to run at the next flush even though no dependency changed.
  void request_run(Node* n) {
    n->flags |= kDirty;
    if ((n->flags & (kQueued | kDisposed)) == 0) notify(n);
  }
  /// Runs watcher `n` at the end of the flush: when the outermost batch ends, or now outside
  /// any (on the executor with one), even though no dependency changed.
  void run_at_flush(Node* n) {
    request_run(n);
    if (batch_depth_ == 0) flush();
  }
  /// Runs queued watchers (or hands effects to the executor) until the queue is empty.
  void flush() {
    if (queue_head_ < queue_.size() && !flushing_) flush_queue();
  }

  /// Creates the first run of a new effect or signal: evaluates now, or schedules the effect.
  void start_watcher(Node* n);

  // ---- the executor (AsyncContext)
  /// Whether effects go to an executor instead of running on the writing thread.
  bool has_executor() const noexcept { return scheduler_ != nullptr; }
  /// Sets (or, with null, removes) the executor; call with the lock held.
  void set_executor(EffectScheduler* s) noexcept { scheduler_ = s; }
  /// Runs one scheduled effect (called by the executor, which must hold the lock).
  void run_scheduled(Node* n);
  /// Async budget window: runs counted since the executor was last idle.
  void reset_async_window() noexcept {
    async_runs_ = 0;
    ++async_epoch_;
  }

  // ---- the effect budget
  /// Effect runs allowed in one flush (or async window) before budget_error.
  std::size_t effect_budget() const noexcept { return effect_budget_; }
  void set_effect_budget(std::size_t runs) noexcept { effect_budget_ = runs; }

 protected:
  explicit GraphSchedule(bool thread_safe) : mutex_(thread_safe ? &mutex_storage_ : nullptr) {}
  ~GraphSchedule() = default;

  friend class GraphLock;

  GraphMutex* const mutex_;
  EffectScheduler* scheduler_ = nullptr;
  std::size_t queue_head_ = 0;

 private:
  void flush_queue();
  void abort_flush(Node* overran) noexcept;
  [[noreturn]] void throw_budget(std::size_t runs, const Node* last);
  void count_run(Node* n, std::uint32_t epoch) noexcept {
    if (n->flush_stamp != epoch) {
      n->flush_stamp = epoch;
      n->flush_runs = 0;
    }
    ++n->flush_runs;
  }

  GraphMutex mutex_storage_;
  int batch_depth_ = 0;          // open batches, user and internal (a watcher's first run)
  int user_batches_ = 0;         // open ctx.batch() calls
  std::uint64_t batch_seq_ = 0;  // counts outermost user batches (observers collapse per batch)
  std::size_t effect_budget_ = 1'000'000;
  bool flushing_ = false;
  std::uint32_t flush_epoch_ = 1;
  std::size_t async_runs_ = 0;
  std::uint32_t async_epoch_ = 1;
};

/// Takes the graph's lock if it has one (ThreadSafeContext, AsyncContext).
class GraphLock {
 public:
  explicit GraphLock(const GraphSchedule* g)
      : m_(g->mutex_ != nullptr && g->mutex_->lock() ? g->mutex_ : nullptr) {}
  GraphLock(const GraphLock&) = delete;
  GraphLock& operator=(const GraphLock&) = delete;
  ~GraphLock() {
    if (m_ != nullptr) m_->unlock();
  }

 private:
  GraphMutex* m_;
};

}  // namespace trellis::detail
