// When watchers run (see include/trellis/reactive/detail/schedule.hpp): the flush, the effect
// budget, batches and the executor hand-off.

#include "trellis/reactive/detail/schedule.hpp"

#include <exception>
#include <string>

#include "trellis/reactive/detail/lifetime.hpp"
#include "trellis/reactive/errors.hpp"

namespace trellis::detail {

void GraphSchedule::throw_budget(std::size_t runs, const Node* last) {
  // The effect that overran the budget is the one that keeps being re-queued: report it.
  const std::uint32_t busiest = last->flush_runs;
  throw budget_error("trellis: effect budget exceeded: " + std::to_string(runs) +
                     " effect runs without settling (budget " + std::to_string(effect_budget_) +
                     "); the busiest effect ran " + std::to_string(busiest) +
                     " times. An effect that writes what it reads loops; raise the budget with "
                     "set_effect_budget() if the work is legitimate");
}

void GraphSchedule::abort_flush(Node* overran) noexcept {
  // The watchers not run yet stay queued: the next flush (the next write) runs them. The
  // effect that overran the budget is marked to run again when next reached.
  overran->flags = (overran->flags & ~(kDirty | kPending)) | kFailed;
  flushing_ = false;
}

void GraphSchedule::flush_queue() {
  flushing_ = true;
  ++flush_epoch_;
  std::size_t runs = 0;
  std::exception_ptr first;
  // With an executor (AsyncContext) effects are handed over and stay queued until they run.
  const std::uint32_t handed_over = scheduler_ != nullptr ? std::uint32_t{kEffect} : 0u;
  while (queue_head_ < queue_.size()) {
    Node* n = queue_[queue_head_++];
    if ((n->flags & (kDisposed | handed_over)) != 0) [[unlikely]] {
      if ((n->flags & kDisposed) != 0) {
        n->flags &= ~kQueued;
        n->release();
      } else {
        scheduler_->schedule(n);
      }
      continue;
    }
    n->flags &= ~kQueued;
    try {
      if (!needs_run(n) || (n->flags & kDisposed) != 0) continue;
      if ((n->flags & kEffect) != 0) {
        if (++runs > effect_budget_) {
          count_run(n, flush_epoch_);
          abort_flush(n);
          throw_budget(runs, n);
        }
        count_run(n, flush_epoch_);
        evaluate(n);
      } else if (evaluate(n)) {
        shallow_propagate(n);
      }
    } catch (const budget_error&) {
      throw;
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  queue_.clear();
  queue_head_ = 0;
  flushing_ = false;
  if (first) std::rethrow_exception(first);
}

void GraphSchedule::end_batch_after_throw() noexcept {
  --user_batches_;
  if (--batch_depth_ != 0) return;
  try {
    flush();
  } catch (...) {  // the body's exception is the one the caller sees
  }
}

void GraphSchedule::start_watcher(Node* n) {
  if ((n->flags & kEffect) != 0 && scheduler_ != nullptr) {
    n->flags |= kQueued;
    scheduler_->schedule(n);
    return;
  }
  if ((n->flags & kEffect) != 0) count_run(n, flush_epoch_);
  // Writes made by the first run are queued, not re-entered: flush once it has returned.
  ++batch_depth_;
  try {
    evaluate(n);
  } catch (...) {
    --batch_depth_;
    throw;
  }
  if (--batch_depth_ == 0) flush();
}

void GraphSchedule::run_scheduled(Node* n) {
  n->flags &= ~kQueued;
  if ((n->flags & kDisposed) != 0) {
    n->release();
    return;
  }
  // The run's own writes flush once, after it (like a batch, but not a user batch).
  ++batch_depth_;
  try {
    if (needs_run(n) && (n->flags & kDisposed) == 0) {
      if (++async_runs_ > effect_budget_) {
        count_run(n, async_epoch_);
        throw_budget(async_runs_, n);
      }
      count_run(n, async_epoch_);
      evaluate(n);
    }
  } catch (...) {
    if (--batch_depth_ == 0) {
      try {
        flush();
      } catch (...) {  // the run's own error is the one reported
      }
    }
    throw;
  }
  if (--batch_depth_ == 0) flush();
}

}  // namespace trellis::detail
