// The oneTBB adapter: ArenaExecutor, and AsyncContext's oneTBB constructors (declared in
// reactive/async_context.hpp over a forward declaration of tbb::task_arena).

#include "trellis/tbb/arena_executor.hpp"

#include <algorithm>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

// The forward declaration in reactive/detail/tbb_fwd.hpp must name oneTBB's own class: had it
// declared another, the real header would have clashed with it above, or this would fail.
static_assert(std::is_same_v<tbb::task_arena, oneapi::tbb::task_arena> &&
                  std::is_same_v<tbb::detail::d1::task_arena, oneapi::tbb::task_arena>,
              "trellis: reactive/detail/tbb_fwd.hpp no longer matches oneTBB's tbb::task_arena");

namespace trellis {

ArenaExecutor::ArenaExecutor()
    : own_(std::in_place, std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1),
           0),
      arena_(&*own_) {}

ArenaExecutor::ArenaExecutor(tbb::task_arena& arena) noexcept : arena_(&arena) {}

ArenaExecutor::~ArenaExecutor() = default;

#if defined(__SANITIZE_THREAD__)
namespace {
// Debian's libtbb is not instrumented, so ThreadSanitizer cannot see that enqueue happens
// before the task runs. Under TSan the task is built completely before a release on this
// address, the TBB task carries only a pointer to it, and the worker acquires before it
// touches the task: every write the poster made before posting happens before the run, as
// it does for real. (tests/support/tsan.supp covers TBB's own task object.)
char handoff;
struct Handoff {
  std::function<void()>* task;
  void operator()() const {
    __tsan_acquire(&handoff);
    const std::unique_ptr<std::function<void()>> owned(task);
    (*owned)();
  }
};
}  // namespace

void ArenaExecutor::post(std::function<void()> task) {
  auto* boxed = new std::function<void()>(std::move(task));
  __tsan_release(&handoff);
  arena_->enqueue(Handoff{boxed});
}
#else
void ArenaExecutor::post(std::function<void()> task) { arena_->enqueue(std::move(task)); }
#endif

AsyncContext::AsyncContext() : AsyncContext(std::make_unique<ArenaExecutor>()) {}

AsyncContext::AsyncContext(tbb::task_arena& arena)
    : AsyncContext(std::make_unique<ArenaExecutor>(arena)) {}

}  // namespace trellis
