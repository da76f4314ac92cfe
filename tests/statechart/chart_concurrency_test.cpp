// SPDX-License-Identifier: MIT
/// @file
/// The chart runners under threads: ThreadSafeStateChart shared by 2, 4 and 8 threads (no
/// event lost, one unbroken chain of macrosteps, observers that never overlap, no half
/// macrostep seen from another thread, errors thrown to the sender that caused them, due
/// sends in due order) and AsyncStateChart (synchronous send, observers on the executor one
/// at a time in commit order, drain). Loops are bounded by a count scaled by
/// TRELLIS_TEST_SCALE and by a deadline; threads start together on a latch; a watchdog turns
/// a deadlock into a prompt failure. Labelled "concurrency": the TSan job runs it.
#include "chart_test_support.hpp"
#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

using namespace trellis;
using namespace std::chrono_literals;
using chart_test::Log;
using trellis_test::Deadline;
using trellis_test::scaled;

namespace {

constexpr int thread_counts[] = {2, 4, 8};

/// Runs `body(t)` on `threads` threads released together; aborts, naming the test, if they
/// have not all returned within two minutes (a deadlock).
template <class F>
void run_together(int threads, F body) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread dog([&] {
    std::unique_lock lock(mutex);
    if (!finished.wait_for(lock, 120s, [&] { return done; })) {
      std::fprintf(stderr, "chart concurrency: still running after 120 s, a deadlock?\n");
      std::abort();
    }
  });
  {
    std::latch start(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&start, &body, t] {
        start.arrive_and_wait();
        body(t);
      });
    }
    for (auto& thread : pool) thread.join();
  }
  {
    const std::lock_guard lock(mutex);
    done = true;
  }
  finished.notify_one();
  dog.join();
}

/// Counts entries into a section while another thread (or a nested call) was inside it.
class OverlapDetector {
 public:
  void enter() {
    if (inside_.fetch_add(1) != 0) overlaps_.fetch_add(1);
  }
  void leave() { inside_.fetch_sub(1); }
  int overlaps() const { return overlaps_.load(); }

 private:
  std::atomic<int> inside_{0};
  std::atomic<int> overlaps_{0};
};

/// A little work, to widen the window in which two observers could overlap.
void spin(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) x = x + 1;
}

/// s --inc--> s, targetless, counting in the data; every send is one macrostep.
ChartBuilder<Log> counter() {
  ChartBuilder<Log> b("counter");
  b.state("s", [](auto& s) { s.on("inc").call("count", [](Log& l) { ++l.count; }); });
  return b;
}

/// p {r1 {a1 <-flip-> a2}, r2 {b1 <-> b2 following r1, eventless}}: after every macrostep
/// a2 is active exactly when b2 is; between its two microsteps it is not.
ChartBuilder<Log> follower() {
  ChartBuilder<Log> b("follower");
  b.parallel("p", [](auto& p) {
    p.state("r1", [](auto& r) {
      r.state("a1", [](auto& s) { s.on("flip").to("a2"); });
      r.state("a2", [](auto& s) { s.on("flip").to("a1"); });
    });
    p.state("r2", [](auto& r) {
      r.state("b1", [](auto& s) {
        s.always().when_in("a2").to("b2").call("count", [](Log& l) { ++l.count; });
      });
      r.state("b2", [](auto& s) {
        s.always().when_in("a1").to("b1").call("count", [](Log& l) { ++l.count; });
      });
    });
  });
  return b;
}

bool whole(const ChartConfiguration& c) {
  const int a2 = c.definition().index_of("a2");
  const int b2 = c.definition().index_of("b2");
  return c.contains(a2) == c.contains(b2);
}

}  // namespace

TEST_CASE("thread-safe chart: due sends fired from several threads arrive in due order") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    // "arm" queues n sends 1 ms apart, each carrying its index; "fire" logs the index.
    const int n = scaled(2'000, 200);
    ChartBuilder<Log> b("c");
    b.state("s", [n](auto& s) {
      s.on("arm").call("arm", [n](ChartActions& ops) {
        for (int i = 0; i < n; ++i)
          ops.send(ChartEvent("fire", i), std::chrono::milliseconds(i), "");
      });
      s.on("fire").call("log", [](Log& l, const ChartEvent& e) {
        l.lines.push_back(std::to_string(*e.data_as<int>()));
      });
    });
    ManualChartClock clock;
    ChartOptions options;
    options.clock = &clock;
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, b.build(), Log{}, options);
    chart.send("arm");  // delivers the send due at once (index 0) itself
    clock.advance(std::chrono::milliseconds(n));
    std::atomic<std::size_t> fired{0};
    run_together(threads, [&](int) { fired += chart.fire_due(); });
    CHECK(fired.load() == static_cast<std::size_t>(n - 1));
    const chart_test::Lines lines = chart.data().lines;
    REQUIRE(lines.size() == static_cast<std::size_t>(n));
    int out_of_order = 0;
    for (int i = 0; i < n; ++i)
      if (lines[static_cast<std::size_t>(i)] != std::to_string(i)) ++out_of_order;
    CHECK(out_of_order == 0);
  }
}

// --- AsyncStateChart ---------------------------------------------------------------------------

// --- ThreadSafeStateChart ----------------------------------------------------------------------

TEST_CASE("thread-safe chart: concurrent sends lose no event") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, counter().build());
    const int sends = scaled(20'000, 500);
    const Deadline deadline(20s);
    std::atomic<int> sent{0};
    std::atomic<int> not_transitioned{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        if (chart.send("inc") != SendResult::Transitioned) ++not_transitioned;
        ++sent;
      }
    });
    CHECK(not_transitioned.load() == 0);
    CHECK(chart.read([](const Log& l) { return l.count; }) == sent.load());
    CHECK(chart.snapshot().step() == static_cast<std::uint64_t>(sent.load()));
  }
}

TEST_CASE("thread-safe chart: an observer sees every macrostep once, in commit order") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, counter().build());
    std::vector<std::uint64_t> steps;  // observers run under the chart's lock
    int broken = 0;
    const auto seen =
        chart.on_transition([&](const ChartConfiguration& before, const ChartConfiguration& after) {
          if (after.step() != before.step() + 1) ++broken;
          steps.push_back(after.step());
        });
    const int sends = scaled(20'000, 500);
    const Deadline deadline(20s);
    std::atomic<int> sent{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        (void)chart.send("inc");
        ++sent;
      }
    });
    CHECK(broken == 0);
    REQUIRE(steps.size() == static_cast<std::size_t>(sent.load()));
    int out_of_order = 0;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i] != i + 1) ++out_of_order;
    CHECK(out_of_order == 0);
  }
}

TEST_CASE("thread-safe chart: observers of one chart never overlap") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, follower().build());
    OverlapDetector detector;
    std::atomic<int> calls{0};
    const auto observe = [&] {
      detector.enter();
      ++calls;
      spin(200);
      detector.leave();
    };
    const auto a = chart.on_transition(
        [&](const ChartConfiguration&, const ChartConfiguration&) { observe(); });
    const auto b = chart.on_enter("a2", [&] { observe(); });
    const auto c = chart.on_exit("a2", [&] { observe(); });
    const int sends = scaled(5'000, 200);
    const Deadline deadline(10s);
    std::atomic<int> sent{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        (void)chart.send("flip");
        ++sent;
      }
    });
    CHECK(detector.overlaps() == 0);
    CHECK(calls.load() == 2 * sent.load());  // on_transition, and a2 entered or exited
  }
}

TEST_CASE("thread-safe chart: no thread sees half a macrostep") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, follower().build());
    const Signal<bool> a2 = chart.in("a2");
    const Signal<bool> b2 = chart.state_is("b2");
    std::atomic<int> torn{0};
    const Effect effect = ctx.effect([&] {
      if (a2.get() != b2.get()) ++torn;
    });
    const auto observer =
        chart.on_transition([&](const ChartConfiguration& before, const ChartConfiguration& after) {
          if (!whole(before) || !whole(after)) ++torn;
        });
    const int sends = scaled(5'000, 200);
    const Deadline deadline(10s);
    std::atomic<int> senders_left{threads - 1};
    run_together(threads, [&](int t) {
      if (t == 0) {
        // A reader: one snapshot is one read; two signals are read together inside a batch
        // (which holds the chart's lock), as a computed over both would be.
        while (senders_left.load() > 0 && !deadline.passed()) {
          if (!whole(chart.snapshot())) ++torn;
          ctx.batch([&] {
            if (a2.get() != b2.get()) ++torn;
          });
        }
        return;
      }
      for (int k = 0; k < sends && !deadline.passed(); ++k) (void)chart.send("flip");
      --senders_left;
    });
    CHECK(torn.load() == 0);
    CHECK(whole(chart.snapshot()));
  }
}

TEST_CASE("thread-safe chart: the data and the configuration change together") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ThreadSafeContext ctx;
    ThreadSafeStateChart<Log> chart(ctx, follower().build());
    std::atomic<int> torn{0};
    const int sends = scaled(5'000, 200);
    const Deadline deadline(10s);
    std::atomic<int> senders_left{threads - 1};
    run_together(threads, [&](int t) {
      if (t == 0) {
        while (senders_left.load() > 0 && !deadline.passed()) {
          // Under the chart's lock: r2's eventless move counts, so an odd count is b2.
          ctx.batch([&] {
            const ChartConfiguration c = chart.snapshot();
            const int count = chart.read([](const Log& l) { return l.count; });
            if (!whole(c) || (count % 2 == 1) != c.contains("b2")) ++torn;
          });
        }
        return;
      }
      for (int k = 0; k < sends && !deadline.passed(); ++k) (void)chart.send("flip");
      --senders_left;
    });
    CHECK(torn.load() == 0);
  }
}

TEST_CASE("thread-safe chart: a livelock is thrown to the send that caused it") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    ChartBuilder<Log> b("c");
    b.state("s", [](auto& s) {
      s.on("loop").raise("ping");
      s.on("ping").raise("ping");
      s.on("inc").call("count", [](Log& l) { ++l.count; });
    });
    ThreadSafeContext ctx;
    ChartOptions options;
    options.microstep_budget = 20;
    ThreadSafeStateChart<Log> chart(ctx, b.build(), Log{}, options);
    const int sends = scaled(5'000, 200);
    const Deadline deadline(10s);
    std::atomic<int> wrong{0};
    run_together(threads, [&](int t) {
      const bool looper = t % 2 == 0;
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        bool threw = false;
        try {
          (void)chart.send(looper ? "loop" : "inc");
        } catch (const chart_livelock&) {
          threw = true;
        }
        if (threw != looper) ++wrong;
      }
    });
    CHECK(wrong.load() == 0);
  }
}

// --- AsyncStateChart ---------------------------------------------------------------------------

TEST_CASE("async chart: send is synchronous; observers run later, in commit order") {
  AsyncContext ctx;
  AsyncStateChart<Log> chart(ctx, counter().build());
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> inside_send{false};
  std::atomic<int> ran_inside_send{0};
  trellis_test::Log<std::uint64_t> steps;
  const auto seen =
      chart.on_transition([&](const ChartConfiguration&, const ChartConfiguration& after) {
        if (inside_send && std::this_thread::get_id() == caller) ++ran_inside_send;
        steps.push(after.step());
      });
  for (int k = 1; k <= 50; ++k) {
    inside_send = true;
    CHECK(chart.send("inc") == SendResult::Transitioned);
    inside_send = false;
    CHECK(chart.snapshot().step() == static_cast<std::uint64_t>(k));  // no drain needed
  }
  chart.drain();
  CHECK(ran_inside_send.load() == 0);
  std::vector<std::uint64_t> expected;
  for (std::uint64_t k = 1; k <= 50; ++k) expected.push_back(k);
  CHECK(steps.items() == expected);
}

TEST_CASE("async chart: observers run one at a time, every macrostep in commit order") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    AsyncContext ctx;
    AsyncStateChart<Log> chart(ctx, follower().build());
    OverlapDetector detector;
    trellis_test::Log<std::uint64_t> steps;
    std::atomic<int> torn{0};
    const auto first =
        chart.on_transition([&](const ChartConfiguration& before, const ChartConfiguration& after) {
          detector.enter();
          if (!whole(before) || !whole(after) || after.step() != before.step() + 1) ++torn;
          steps.push(after.step());
          spin(100);
          detector.leave();
        });
    const auto second = chart.on_enter("b2", [&] {
      detector.enter();
      spin(100);
      detector.leave();
    });
    const int sends = scaled(5'000, 200);
    const Deadline deadline(10s);
    std::atomic<int> sent{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        (void)chart.send("flip");
        ++sent;
      }
    });
    chart.drain();
    CHECK(detector.overlaps() == 0);
    CHECK(torn.load() == 0);
    const std::vector<std::uint64_t> seen = steps.items();
    REQUIRE(seen.size() == static_cast<std::size_t>(sent.load()));
    int out_of_order = 0;
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] != i + 1) ++out_of_order;
    CHECK(out_of_order == 0);
  }
}

TEST_CASE("async chart: drain waits for every scheduled observer") {
  AsyncContext ctx;
  AsyncStateChart<Log> chart(ctx, counter().build());
  std::atomic<int> finished{0};
  const auto slow = chart.on_transition([&](const ChartConfiguration&, const ChartConfiguration&) {
    spin(2'000);
    ++finished;
  });
  const int sends = scaled(500, 50);
  for (int k = 0; k < sends; ++k) (void)chart.send("inc");
  chart.drain();
  CHECK(finished.load() == sends);
}
