// SPDX-License-Identifier: MIT
/// @file
/// Behaviour 16, memory half: creating and disposing 1,000,000 nodes does not grow memory.
/// Counts live heap allocations by replacing the global allocation functions, so it lives in
/// its own executable, which is not registered in sanitizer builds (AddressSanitizer
/// replaces these functions itself, and its quarantine would hide a leak from RSS anyway).
#include "test_support.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<long> live_allocations{0};

void* allocate(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  live_allocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void* allocate_aligned(std::size_t size, std::align_val_t align) {
  const auto alignment = static_cast<std::size_t>(align);
  const std::size_t rounded = ((size == 0 ? 1 : size) + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  live_allocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void release(void* p) noexcept {
  if (p != nullptr) {
    live_allocations.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);
  }
}

constexpr int nodes = 1'000'000;
constexpr long slack = 64;  // one-off lazy allocations (e.g. a free list's first block)

}  // namespace

// NOLINTBEGIN(misc-new-delete-overloads): the sized and aligned forms all route here
void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return allocate_aligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return allocate_aligned(size, align);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { release(p); }
void operator delete[](void* p, std::size_t /*size*/) noexcept { release(p); }
void operator delete(void* p, std::align_val_t /*align*/) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t /*align*/) noexcept { release(p); }
void operator delete(void* p, std::size_t /*size*/, std::align_val_t /*align*/) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t /*size*/, std::align_val_t /*align*/) noexcept {
  release(p);
}
// NOLINTEND(misc-new-delete-overloads)

TEST_CASE("memory: the allocation counter sees a leak") {
  const long before = live_allocations.load();
  void* leaked = ::operator new(16);  // a call, not a new-expression: cannot be elided
  CHECK(live_allocations.load() == before + 1);
  ::operator delete(leaked);
  CHECK(live_allocations.load() == before);
}

TEST_CASE_TEMPLATE("dispose: creating and disposing 1,000,000 cells does not grow memory", Ctx,
                   TRELLIS_ALL_CONTEXTS) {
  Ctx ctx;
  const auto nodes_before = ctx.node_count();
  auto churn = [&ctx](int n) {
    for (int i = 0; i < n; ++i) {
      auto c = ctx.cell(i);
      c.dispose();
    }
  };
  churn(1000);  // warm-up: free lists and pools reach their steady size
  const long before = live_allocations.load();
  churn(nodes);
  const long growth = live_allocations.load() - before;
  CHECK(growth <= slack);
  CHECK(ctx.node_count() == nodes_before);
}

TEST_CASE_TEMPLATE(
    "dispose: creating and disposing 1,000,000 computeds, signals and effects does not grow "
    "memory",
    Ctx, TRELLIS_SYNC_CONTEXTS) {
  Ctx ctx;
  auto input = ctx.cell(0);
  const auto nodes_before = ctx.node_count();
  long sink = 0;
  auto churn = [&](int n) {
    for (int i = 0; i < n; i += 3) {  // three nodes a round
      auto c = ctx.computed([input] { return input.get() + 1; });
      auto s = ctx.signal([c] { return c.get() * 2; });
      auto e = ctx.effect([&sink, s] { sink += s.get(); });
      e.dispose();
      s.dispose();
      c.dispose();
    }
  };
  churn(3000);
  const long before = live_allocations.load();
  churn(nodes);
  const long growth = live_allocations.load() - before;
  CHECK(growth <= slack);
  CHECK(ctx.node_count() == nodes_before);
  CHECK(sink == 2 * (3000 / 3 + (nodes + 2) / 3));
}
