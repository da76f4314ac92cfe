#pragma once
/// @file
/// `Executor`: where an `AsyncContext` runs its effects. The reactive layer needs nothing more
/// from a thread pool than "run this task later", so any pool plugs in by implementing one
/// function; oneTBB's is the default (`ArenaExecutor`, <trellis/tbb/arena_executor.hpp>).
///
/// ```cpp
/// struct OneThread final : trellis::Executor {   // a user-written executor
///   void post(std::function<void()> task) override { queue.push(std::move(task)); }
///   ...                                          // a thread pops and runs the tasks
/// };
/// OneThread pool;
/// trellis::AsyncContext ctx(pool);               // pool must outlive ctx
/// ```

#include <functional>

namespace trellis {

/// Runs tasks later, on threads of its own. An implementation must honour every point below;
/// AsyncContext relies on them.
///
/// - `post()` may be called from any thread, concurrently, and while the caller holds the
///   context's lock: it must not run the task before it returns (an executor that runs tasks
///   inline would deadlock or reorder effects), nor wait for other tasks.
/// - Every posted task runs exactly once, on any thread, possibly concurrently with other
///   tasks; a task that is never run makes `AsyncContext::drain()` and its destructor wait
///   forever. Tasks are not expected to throw (AsyncContext's tasks catch everything).
/// - `post()` accepts every task and does not throw: the effect it carries has been handed
///   over and could neither run nor be reported, so AsyncContext calls std::terminate if it
///   throws. An executor that is shutting down must still run (or have run) what it took.
/// - Ownership: the executor owns a task from `post()` until it has run; whoever creates the
///   executor owns it, and it must outlive every AsyncContext that uses it (or be given to
///   the context, which then destroys it after its last task has finished).
class Executor {
 public:
  virtual ~Executor() = default;

  /// Queues `task` to run once, later, on one of the executor's threads.
  virtual void post(std::function<void()> task) = 0;

 protected:
  Executor() = default;
  Executor(const Executor&) = default;
  Executor& operator=(const Executor&) = default;
};

}  // namespace trellis
