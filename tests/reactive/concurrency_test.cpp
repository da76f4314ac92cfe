// SPDX-License-Identifier: MIT
/// @file
/// Behaviour 18: ThreadSafeContext (and AsyncContext, which is one) shared by 2, 4 and 8
/// threads. Every loop is bounded both by a trial count (scaled down under sanitizers) and
/// by a wall-clock deadline; threads start together on a latch, never on a sleep. Run under
/// ThreadSanitizer in CI.
#include "test_support.hpp"

#include <trellis/signals2/subscribe.hpp>

#include <algorithm>
#include <chrono>
#include <latch>
#include <numeric>
#include <thread>
#include <vector>

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace concurrency_test {

using namespace std::chrono_literals;
using trellis_test::Counter;
using trellis_test::Deadline;
using trellis_test::scaled;
using trellis_test::settle;

namespace {

constexpr int thread_counts[] = {2, 4, 8};

/// Runs `body(t)` on `threads` threads released together.
template <class F>
void run_together(int threads, F body) {
  std::latch start(threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&start, &body, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (auto& thread : pool) {
    thread.join();
  }
}

/// A little work inside an evaluation, to widen the window in which threads overlap.
int spin(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) {
    x = x + 1;
  }
  return x;
}

}  // namespace

TEST_CASE_TEMPLATE("thread-safe: concurrent first reads of one computed evaluate it once", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  Ctx ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    const Deadline deadline(2s);
    const int rounds = scaled(100, 5);
    int rounds_run = 0;
    int extra_evaluations = 0;
    int wrong_values = 0;
    for (int r = 0; r < rounds && !deadline.passed(); ++r, ++rounds_run) {
      auto a = ctx.cell(r);
      Counter evaluations;
      auto c = ctx.computed([&] {
        evaluations.bump();
        spin(2000);
        return a.get() * 2;
      });
      std::vector<int> results(static_cast<std::size_t>(threads), -1);
      run_together(threads, [&](int t) { results[static_cast<std::size_t>(t)] = c.get(); });
      extra_evaluations += evaluations.value() - 1;
      wrong_values += static_cast<int>(
          std::count_if(results.begin(), results.end(), [r](int v) { return v != 2 * r; }));
      c.dispose();
      a.dispose();
    }
    CHECK(rounds_run >= 1);
    CHECK(extra_evaluations == 0);
    CHECK(wrong_values == 0);
  }
}

TEST_CASE_TEMPLATE("thread-safe: a write during an evaluation never leaves a stale cache", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  // The computed reads its input, then waits (boundedly) for another thread to write that
  // input. Whether the context lets the write through or holds it back, the value cached
  // afterwards must be the one computed from the input as it is now.
  Ctx ctx;
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    auto a = ctx.cell(1);
    std::atomic<bool> entered{false};
    std::atomic<bool> written{false};
    auto c = ctx.computed([&] {
      const int v = a.get();
      entered = true;
      const Deadline wait(20ms);
      while (!written && !wait.passed()) {
        std::this_thread::yield();
      }
      return v * 10;
    });
    std::thread reader([&] { (void)c.get(); });
    std::thread writer([&] {
      const Deadline wait(5s);
      while (!entered && !wait.passed()) {
        std::this_thread::yield();
      }
      a.set(2);
      written = true;
    });
    reader.join();
    writer.join();
    CHECK(a.get() == 2);
    CHECK(c.get() == 20);
  }
}

TEST_CASE_TEMPLATE("thread-safe: readers racing a writer never see a stale or torn value", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  Ctx ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    auto a = ctx.cell(0);
    auto doubled = ctx.computed([&] { return a.get() * 2; });
    auto plus_one = ctx.computed([&] { return doubled.get() + 1; });
    const int writes = scaled(5000, 100);
    const Deadline deadline(2s);
    std::atomic<int> last_written{0};
    std::atomic<int> violations{0};
    run_together(threads, [&](int t) {
      if (t == 0) {
        for (int k = 1; k <= writes && !deadline.passed(); ++k) {
          a.set(k);
          last_written = k;
        }
        return;
      }
      int previous = -1;
      while (last_written < writes && !deadline.passed()) {
        const int floor = last_written;
        const int v = plus_one.get();
        // odd (a consistent 2a+1), never going back, and at least the value written before
        if (v % 2 != 1 || v < previous || v < 2 * floor + 1) {
          ++violations;
        }
        previous = v;
      }
    });
    CHECK(violations.load() == 0);
    CHECK(plus_one.get() == 2 * last_written + 1);
    CHECK(doubled.get() == 2 * a.get());
  }
}

TEST_CASE_TEMPLATE("thread-safe: threads writing and reading keep every invariant", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  Ctx ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    std::vector<trellis::Cell<int>> cells;
    for (int t = 0; t < threads; ++t) {
      cells.push_back(ctx.cell(0));
    }
    auto sum = ctx.computed([&] {
      int total = 0;
      for (const auto& cell : cells) {
        total += cell.get();
      }
      return total;
    });
    auto eager_sum = ctx.signal([&] { return sum.get(); });
    std::atomic<int> effect_seen{-1};
    auto watch = ctx.effect([&] { effect_seen = eager_sum.get(); });
    const int writes = scaled(2000, 50);
    const Deadline deadline(2s);
    std::vector<int> done(static_cast<std::size_t>(threads), 0);
    std::atomic<int> violations{0};
    run_together(threads, [&](int t) {
      const auto& mine = cells[static_cast<std::size_t>(t)];
      int k = 0;
      while (k < writes && !deadline.passed()) {
        mine.update([](int v) { return v + 1; });  // only this thread writes this cell
        ++k;
        const int seen = sum.get();
        const int eager = eager_sum.get();
        if (seen < k || seen > threads * writes || eager < k) {
          ++violations;
        }
      }
      done[static_cast<std::size_t>(t)] = k;
    });
    settle(ctx);
    const int expected = std::accumulate(done.begin(), done.end(), 0);
    CHECK(violations.load() == 0);
    CHECK(sum.get() == expected);
    CHECK(eager_sum.get() == expected);
    CHECK(effect_seen.load() == expected);
    for (int t = 0; t < threads; ++t) {
      CHECK(cells[static_cast<std::size_t>(t)].get() == done[static_cast<std::size_t>(t)]);
    }
  }
}

TEST_CASE_TEMPLATE("thread-safe: a batch is atomic for other threads", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  Ctx ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    auto x = ctx.cell(0);
    auto y = ctx.cell(0);
    auto gap = ctx.computed([&] { return x.get() - y.get(); });
    const int batches = scaled(1000, 20);
    const Deadline deadline(2s);
    std::atomic<int> total_batches{0};
    std::atomic<int> violations{0};
    run_together(threads, [&](int /*t*/) {
      for (int k = 0; k < batches && !deadline.passed(); ++k) {
        ctx.batch([&] {
          x.set(x.get() + 1);
          y.set(y.get() + 1);
        });
        ++total_batches;
        if (gap.get() != 0) {
          ++violations;
        }
      }
    });
    CHECK(violations.load() == 0);
    CHECK(x.get() == total_batches.load());
    CHECK(y.get() == total_batches.load());
  }
}

TEST_CASE("thread-safe: effects run on the writing thread before set returns") {
  trellis::ThreadSafeContext ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    std::vector<trellis::Cell<int>> cells;
    std::vector<trellis::Effect> effects;
    std::vector<std::atomic<int>> last(static_cast<std::size_t>(threads));
    std::vector<std::thread::id> ran_on(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      cells.push_back(ctx.cell(0));
      effects.push_back(ctx.effect([&, t] {
        const auto i = static_cast<std::size_t>(t);
        last[i] = cells[i].get();
        ran_on[i] = std::this_thread::get_id();
      }));
    }
    const int writes = scaled(500, 20);
    std::atomic<int> violations{0};
    run_together(threads, [&](int t) {
      const auto i = static_cast<std::size_t>(t);
      for (int k = 1; k <= writes; ++k) {
        cells[i].set(k);
        if (last[i] != k || ran_on[i] != std::this_thread::get_id()) {
          ++violations;
        }
      }
    });
    CHECK(violations.load() == 0);
  }
}

TEST_CASE_TEMPLATE("thread-safe: callbacks that read and write the same context do not deadlock",
                   Ctx, trellis::ThreadSafeContext, trellis::AsyncContext) {
  Ctx ctx;
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    std::vector<trellis::Cell<int>> sources;
    std::vector<trellis::Cell<int>> mirrors;
    for (int t = 0; t < threads; ++t) {
      sources.push_back(ctx.cell(0));
      mirrors.push_back(ctx.cell(0));
    }
    auto total = ctx.computed([&] {
      int sum = 0;
      for (const auto& m : mirrors) {
        sum += m.get();
      }
      return sum;
    });
    auto last_total = ctx.cell(0);
    std::vector<trellis::Effect> effects;
    for (int t = 0; t < threads; ++t) {
      // an effect that reads one cell and writes another of the same context
      effects.push_back(ctx.effect([&, t] {
        const auto i = static_cast<std::size_t>(t);
        mirrors[i].set(sources[i].get() * 2);
      }));
    }
    // a subscriber that writes the same context from inside a notification
    auto connection = trellis::subscribe(total, [&](const int& v) { last_total.set(v); });
    settle(ctx);
    const int writes = scaled(500, 20);
    const Deadline deadline(3s);
    std::vector<int> done(static_cast<std::size_t>(threads), 0);
    run_together(threads, [&](int t) {
      const auto i = static_cast<std::size_t>(t);
      int k = 0;
      while (k < writes && !deadline.passed()) {
        ++k;
        sources[i].set(k);
        (void)total.get();
        (void)last_total.get();
      }
      done[i] = k;
    });
    settle(ctx);
    int expected = 0;
    for (int t = 0; t < threads; ++t) {
      const auto i = static_cast<std::size_t>(t);
      CHECK(mirrors[i].get() == 2 * done[i]);
      expected += 2 * done[i];
    }
    CHECK(total.get() == expected);
    CHECK(last_total.get() == expected);
  }
}

}  // namespace concurrency_test
