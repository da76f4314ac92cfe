#pragma once
/// @file
/// `AsyncContext`: a ThreadSafeContext whose effects run on an executor.
///
/// Writes, reads, computeds and signals stay synchronous (a signal is fresh when the write
/// returns); every effect run, the first one at creation included, is handed to the executor
/// and happens later. Runs of one effect never overlap (effects run under the context's lock,
/// so they also never run concurrently with a write). `drain()` waits until every scheduled
/// run has finished and rethrows the first exception an effect threw since the last drain.
///
/// The executor is any `trellis::Executor` (reactive/executor.hpp says what it must honour):
/// one the user keeps (`AsyncContext(executor)`) or one the context owns
/// (`AsyncContext(std::make_unique<MyExecutor>())`). oneTBB is the default: `AsyncContext()`
/// runs effects in a `tbb::task_arena` the context owns (no hidden global pool), and
/// `AsyncContext(arena)` in the user's. Those two constructors are declared here, without
/// including oneTBB, and defined by the `tbb` adapter: a program that calls them links
/// `trellis::tbb` (the aggregate `trellis::trellis` includes it); see
/// <trellis/tbb/arena_executor.hpp>. Never call drain() from inside an effect of the same
/// context: it would wait for itself.

#include <memory>

#include "trellis/reactive/context.hpp"
#include "trellis/reactive/detail/tbb_fwd.hpp"
#include "trellis/reactive/executor.hpp"

namespace trellis {

/// A thread-safe reactive graph whose effects run on an executor.
class AsyncContext : public ThreadSafeContext {
 public:
  /// Runs effects on `executor`, which must outlive the context.
  explicit AsyncContext(Executor& executor);
  /// Runs effects on `executor`, which the context owns and destroys after its last effect
  /// run has finished. A null pointer throws trellis::invalid_option.
  explicit AsyncContext(std::unique_ptr<Executor> executor);
  /// Runs effects in a oneTBB arena owned by the context (default concurrency, at least 2).
  /// Defined by the `tbb` adapter: link trellis::tbb.
  AsyncContext();
  /// Runs effects in the oneTBB `arena`, which must outlive the context. Defined by the `tbb`
  /// adapter: link trellis::tbb.
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
