#pragma once
/// @file
/// The oneTBB adapter (target `trellis::tbb`): `ArenaExecutor` runs an AsyncContext's effects
/// in a `tbb::task_arena`, and this adapter's library defines `AsyncContext()` and
/// `AsyncContext(tbb::task_arena&)` (declared in <trellis/reactive/async_context.hpp>), which
/// build one. Including this header is needed only to name `ArenaExecutor`; linking
/// trellis::tbb is what those two constructors need.

#include <oneapi/tbb/task_arena.h>

#include <functional>
#include <optional>

#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/executor.hpp"

namespace trellis {

/// An Executor over a oneTBB task arena: `post()` enqueues the task in the arena, whose worker
/// threads run it. No thread joins the arena to help, so tasks progress with none.
class ArenaExecutor final : public Executor {
 public:
  /// Owns an arena of hardware_concurrency - 1 workers (at least 1) with no slot reserved for
  /// the application's threads (TBB keeps a core for them).
  ArenaExecutor();
  /// Enqueues into `arena`, which must outlive the executor.
  explicit ArenaExecutor(tbb::task_arena& arena) noexcept;
  ArenaExecutor(const ArenaExecutor&) = delete;
  ArenaExecutor& operator=(const ArenaExecutor&) = delete;
  ~ArenaExecutor() override;

  void post(std::function<void()> task) override;

  /// The arena tasks are enqueued into.
  tbb::task_arena& arena() const noexcept { return *arena_; }

 private:
  std::optional<tbb::task_arena> own_;
  tbb::task_arena* arena_;
};

}  // namespace trellis
