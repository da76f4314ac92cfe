// SPDX-License-Identifier: MIT
/// @file
/// Behaviour 19: AsyncContext keeps writes, reads and signals synchronous and runs every
/// effect later on its oneTBB executor, one run of an effect at a time; drain() waits.
#include "test_support.hpp"

#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <latch>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using trellis_test::Counter;
using trellis_test::Deadline;
using trellis_test::scaled;
using trellis_test::test_failure;

namespace {

constexpr int thread_counts[] = {2, 4, 8};

int spin(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) {
    x = x + 1;
  }
  return x;
}

}  // namespace

TEST_CASE("async: writes, reads and signals are synchronous") {
  trellis::AsyncContext ctx;
  auto a = ctx.cell(1);
  auto doubled = ctx.computed([&] { return a.get() * 2; });
  Counter evaluations;
  auto eager = ctx.signal([&] {
    evaluations.bump();
    return a.get() + 100;
  });
  CHECK(evaluations.value() == 1);
  a.set(5);
  CHECK(a.get() == 5);
  CHECK(evaluations.value() == 2);
  CHECK(doubled.get() == 10);
  CHECK(eager.get() == 105);
  const int in_batch = ctx.batch([&] {
    a.set(6);
    return doubled.get();
  });
  CHECK(in_batch == 12);
  CHECK(eager.get() == 106);
}

TEST_CASE("async: no effect runs inside effect() or set() on the calling thread") {
  trellis::AsyncContext ctx;
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> inside_call{false};
  std::atomic<int> synchronous_runs{0};
  Counter runs;
  auto a = ctx.cell(0);
  inside_call = true;
  auto e = ctx.effect([&] {
    if (inside_call && std::this_thread::get_id() == caller) {
      ++synchronous_runs;
    }
    (void)a.get();
    runs.bump();
  });
  inside_call = false;
  ctx.drain();
  CHECK(runs.value() == 1);
  for (int v = 1; v <= 20; ++v) {
    inside_call = true;
    a.set(v);
    inside_call = false;
    ctx.drain();
  }
  CHECK(runs.value() == 21);
  CHECK(synchronous_runs.load() == 0);
}

TEST_CASE("async: effects run in the task arena given by the user") {
  tbb::task_arena arena(3);  // a concurrency the default arena on this machine need not have
  trellis::AsyncContext ctx(arena);
  std::atomic<int> concurrency{-1};
  auto a = ctx.cell(0);
  auto e = ctx.effect([&] {
    (void)a.get();
    concurrency = tbb::this_task_arena::max_concurrency();
  });
  ctx.drain();
  CHECK(concurrency.load() == 3);
}

TEST_CASE("async: drain waits for every scheduled run, including runs scheduled by effects") {
  trellis::AsyncContext ctx;
  auto a = ctx.cell(0);
  auto b = ctx.cell(0);
  std::atomic<int> seen_a{-1};
  std::atomic<int> seen_b{-1};
  auto forward = ctx.effect([&] {
    const int v = a.get();
    spin(20000);
    seen_a = v;
    b.set(v * 10);
  });
  auto watch = ctx.effect([&] {
    const int v = b.get();
    spin(20000);
    seen_b = v;
  });
  for (int v = 1; v <= 50; ++v) {
    a.set(v);
  }
  ctx.drain();
  CHECK(seen_a.load() == 50);
  CHECK(b.get() == 500);
  CHECK(seen_b.load() == 500);
}

TEST_CASE("async: runs of one effect never overlap") {
  trellis::AsyncContext ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    auto x = ctx.cell(0);
    std::atomic<int> active{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> seen{-1};
    Counter runs;
    auto e = ctx.effect([&] {
      if (active.fetch_add(1) != 0) {
        ++overlaps;
      }
      const int v = x.get();
      spin(5000);
      seen = v;
      runs.bump();
      active.fetch_sub(1);
    });
    ctx.drain();  // the first run is done: the writes below cause at least one more
    const int writes = scaled(500, 20);
    const Deadline deadline(2s);
    std::latch start(threads);
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int k = 1; k <= writes && !deadline.passed(); ++k) {
          x.set(t * 1'000'000 + k);
        }
      });
    }
    for (auto& w : writers) {
      w.join();
    }
    ctx.drain();
    CHECK(overlaps.load() == 0);
    CHECK(runs.value() >= 2);
    CHECK(seen.load() == x.get());
  }
}

TEST_CASE("async: drain rethrows an effect's exception once and the graph stays usable") {
  trellis::AsyncContext ctx;
  auto a = ctx.cell(0);
  Counter runs;
  std::atomic<int> seen{-1};
  auto e = ctx.effect([&] {
    const int v = a.get();
    runs.bump();
    if (v == 1) {
      throw test_failure("async effect failed");
    }
    seen = v;
  });
  ctx.drain();
  a.set(1);  // the write itself does not throw: the effect has not run yet
  CHECK_THROWS_WITH_AS(ctx.drain(), "async effect failed", test_failure);
  CHECK_NOTHROW(ctx.drain());
  a.set(2);
  ctx.drain();
  CHECK(runs.value() == 3);
  CHECK(seen.load() == 2);
}

TEST_CASE("async: disposing an effect with a run pending is safe") {
  std::atomic<int> seen{-1};
  {
    trellis::AsyncContext ctx;
    auto a = ctx.cell(0);
    auto e = ctx.effect([&] {
      const int v = a.get();
      spin(20000);
      seen = v;
    });
    ctx.drain();
    a.set(7);
    // No drain: whether disposing cancels the pending run or waits for it, the run must not
    // outlive the effect (sanitizer builds catch a use after free) and the context's
    // destructor must not hang.
    e.dispose();
  }
  const int after = seen;
  CHECK((after == 0 || after == 7));
}
