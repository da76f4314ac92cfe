#pragma once
/// @file
/// `AsyncContext`: a ThreadSafeContext whose effects run on a oneTBB executor.
///
/// Writes, reads, computeds and signals stay synchronous (a signal is fresh when the write
/// returns); every effect run, the first one at creation included, is handed to the executor
/// and happens later. Runs of one effect never overlap (effects run under the context's lock,
/// so they also never run concurrently with a write). `drain()` waits until every scheduled
/// run has finished and rethrows the first exception an effect threw since the last drain.
///
/// The executor is a `tbb::task_arena`: the user's, or one the context owns (no hidden global
/// pool). Never call drain() from inside an effect of the same context: it would wait for
/// itself.

#include <oneapi/tbb/task_arena.h>

#include <memory>

#include "trellis/reactive/context.hpp"

namespace trellis {

/// A thread-safe reactive graph whose effects run on a oneTBB task arena.
class AsyncContext : public ThreadSafeContext {
 public:
  /// Runs effects in an arena owned by the context (default concurrency, at least 2).
  AsyncContext();
  /// Runs effects in `arena`, which must outlive the context.
  explicit AsyncContext(tbb::task_arena& arena);
  /// Waits for scheduled effects (their errors are dropped), then disposes everything.
  ~AsyncContext();

  /// Returns when every scheduled effect run has finished; rethrows the first exception an
  /// effect threw (or the budget_error of a feedback loop) since the last drain().
  void drain();

 private:
  class Scheduler;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace trellis
