// SPDX-License-Identifier: MIT
/// @file
/// Issue 3, behaviours 8-10 with threads: ThreadSafeStateMachine shared by 2, 4 and 8 threads
/// (no lost update, one unbroken chain of transitions, observers that never overlap, observers
/// that send to their own machine), AsyncStateMachine (synchronous send and state, observers on
/// the executor one at a time in commit order, drain), and batches that exclude other threads.
/// Every loop is bounded by a count (scaled down under sanitizers) and a wall-clock deadline;
/// threads start together on a latch, never on a sleep; a watchdog turns a deadlock into a
/// prompt failure. Run under ThreadSanitizer in CI.
#include "test_support.hpp"

#include <trellis/signals2/transitions.hpp>

#include <boost/signals2/connection.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using trellis::SendResult;
using trellis_test::Counter;
using trellis_test::Deadline;
using trellis_test::Log;
using trellis_test::scaled;

namespace {

constexpr int thread_counts[] = {2, 4, 8};

// A counter machine: every Increment is accepted, so the final state counts the sends.
struct Increment {};
std::optional<int> count_up(const int& n, const Increment&) { return n + 1; }

using Move = std::pair<int, int>;

/// Aborts the process, naming `what`, if `body()` has not returned within `limit`: a deadlock
/// then fails in seconds with a message rather than at the ctest timeout.
template <class F>
void within(std::chrono::seconds limit, const char* what, F&& body) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread dog([&] {
    std::unique_lock lock(mutex);
    if (!finished.wait_for(lock, limit, [&] { return done; })) {
      std::fprintf(stderr, "%s: still running after %llds, a deadlock?\n", what,
                   static_cast<long long>(limit.count()));
      std::abort();
    }
  });
  const auto stop_dog = [&] {
    {
      const std::lock_guard lock(mutex);
      done = true;
    }
    finished.notify_one();
    dog.join();
  };
  try {
    body();
  } catch (...) {
    stop_dog();
    throw;
  }
  stop_dog();
}

/// Runs `body(t)` on `threads` threads released together, under a watchdog.
template <class F>
void run_together(int threads, F body) {
  within(120s, "run_together", [&] {
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
  });
}

/// A little work inside an observer, to widen the window in which two of them could overlap.
int spin(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) {
    x = x + 1;
  }
  return x;
}

/// Counts the times a guarded section was entered while another thread (or a nested call)
/// was already inside it.
class OverlapDetector {
 public:
  class Guard {
   public:
    explicit Guard(OverlapDetector& d) : d_(d) {
      if (d_.inside_.fetch_add(1, std::memory_order_acq_rel) != 0) {
        d_.overlaps_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { d_.inside_.fetch_sub(1, std::memory_order_acq_rel); }

   private:
    OverlapDetector& d_;
  };

  Guard enter() { return Guard(*this); }
  int overlaps() const { return overlaps_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> inside_{0};
  std::atomic<int> overlaps_{0};
};

/// Checks that `moves` is one unbroken chain of increments from `first` to `last`.
void check_increment_chain(const std::vector<Move>& moves, int first, int last) {
  REQUIRE(moves.size() == static_cast<std::size_t>(last - first));
  int broken = 0;
  int expected = first;
  for (const auto& [from, to] : moves) {
    if (from != expected || to != from + 1) ++broken;
    expected = to;
  }
  CHECK(broken == 0);
  CHECK(expected == last);
}

}  // namespace

// --- 8. ThreadSafeStateMachine -----------------------------------------------------------------

TEST_CASE("thread-safe machine: concurrent increments end exactly at the total") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeStateMachine<int, Increment> m{ctx, 0, count_up};
    const int sends = scaled(100'000, 1'000);
    const Deadline deadline(20s);
    std::vector<int> done(static_cast<std::size_t>(threads), 0);
    std::atomic<int> not_transitioned{0};
    run_together(threads, [&](int t) {
      int k = 0;
      for (; k < sends && !deadline.passed(); ++k) {
        if (m.send(Increment{}) != SendResult::Transitioned) ++not_transitioned;
      }
      done[static_cast<std::size_t>(t)] = k;
    });
    int total = 0;
    for (const int d : done) total += d;
    CHECK(total > 0);
    CHECK(not_transitioned.load() == 0);
    CHECK(m.state() == total);  // no update lost
    if (total != threads * sends) MESSAGE("stopped at the deadline after ", total, " sends");
  }
}

TEST_CASE("thread-safe machine: one observer sees an unbroken chain of every transition") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeStateMachine<int, Increment> m{ctx, 0, count_up};
    std::vector<Move> moves;  // observers run under the machine's lock: no mutex of our own
    moves.reserve(static_cast<std::size_t>(threads) * 100'000);
    const auto observer =
        m.on_transition([&](const int& from, const int& to) { moves.emplace_back(from, to); });
    const int sends = scaled(100'000, 1'000);
    const Deadline deadline(20s);
    std::atomic<int> committed{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        if (m.send(Increment{}) == SendResult::Transitioned) ++committed;
      }
    });
    CHECK(m.state() == committed.load());
    check_increment_chain(moves, 0, committed.load());
  }
}

TEST_CASE("thread-safe machine: observers of one machine never overlap") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeStateMachine<int, Increment> m{ctx, 0, count_up};
    OverlapDetector detector;
    Counter calls;
    const auto observe = [&] {
      const auto guard = detector.enter();
      calls.bump();
      spin(200);
    };
    const auto a = m.on_transition([&](const int&, const int&) { observe(); });
    const auto b = m.on_transition([&](const int&, const int&) { observe(); });
    const auto c = m.on_enter(10, [&] { observe(); });
    const boost::signals2::scoped_connection d =
        m.transitions().connect([&](const int&, const int&) { observe(); });
    const int sends = scaled(20'000, 500);
    const Deadline deadline(10s);
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) (void)m.send(Increment{});
    });
    CHECK(detector.overlaps() == 0);
    CHECK(calls.value() == 3 * m.state() + 1);  // two on_transition, the slot, one on_enter
  }
}

TEST_CASE(
    "thread-safe machine: when send returns, state() reflects it and its observers have run") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeStateMachine<int, Increment> m{ctx, 0, count_up};
    // Observers run on the thread whose send committed: these say what that thread saw last.
    static thread_local int observed_here = 0;
    static thread_local int last_to_here = -1;
    const auto observer = m.on_transition([&](const int&, const int& to) {
      ++observed_here;
      last_to_here = to;
    });
    const int sends = scaled(20'000, 500);
    const Deadline deadline(10s);
    std::atomic<int> violations{0};
    run_together(threads, [&](int) {
      observed_here = 0;
      last_to_here = -1;
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        const int before = observed_here;
        const int previous_to = last_to_here;
        (void)m.send(Increment{});
        const int now = m.state();
        // Exactly one observer call, for this send, and the state is at least what it made.
        if (observed_here != before + 1 || last_to_here <= previous_to || now < last_to_here) {
          ++violations;
        }
      }
    });
    CHECK(violations.load() == 0);
  }
}

namespace {

// A tally whose Echo events are sent by an observer of the same machine.
struct Tally {
  int total = 0;
  int echoes = 0;
  friend bool operator==(const Tally&, const Tally&) = default;
};
enum class Op { Increment, Echo };
std::optional<Tally> tally(const Tally& t, const Op& op) {
  if (op == Op::Echo) return Tally{t.total + 1, t.echoes + 1};
  return Tally{t.total + 1, t.echoes};
}
/// The observer echoes every tenth increment.
bool echoes_after(const Tally& from, const Tally& to) {
  return to.echoes == from.echoes && to.total % 10 == 0;
}

}  // namespace

TEST_CASE(
    "thread-safe machine: an observer that sends to its own machine does not deadlock and "
    "its event is applied after the current one") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeStateMachine<Tally, Op> m{ctx, Tally{}, tally};
    std::vector<std::pair<Tally, Tally>> moves;  // written under the machine's lock only
    int depth = 0;
    int nested = 0;
    int inner_not_committed = 0;
    const auto echo = m.on_transition([&](const Tally& from, const Tally& to) {
      if (++depth != 1) ++nested;  // the inner send's observers must not run inside this one
      moves.emplace_back(from, to);
      if (echoes_after(from, to)) {
        const std::size_t told = moves.size();
        if (m.send(Op::Echo) != SendResult::Transitioned ||
            !(m.state() == Tally{to.total + 1, to.echoes + 1}) || moves.size() != told) {
          ++inner_not_committed;
        }
      }
      --depth;
    });
    const int sends = scaled(20'000, 500);
    const Deadline deadline(10s);
    std::atomic<int> committed{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        if (m.send(Op::Increment) == SendResult::Transitioned) ++committed;
      }
    });
    CHECK(nested == 0);
    CHECK(inner_not_committed == 0);
    const Tally final_state = m.state();
    CHECK(final_state.total == committed.load() + final_state.echoes);
    // One unbroken chain, in which every echoing transition is followed by its echo.
    REQUIRE(moves.size() == static_cast<std::size_t>(final_state.total));
    int broken = 0;
    int echoes_misplaced = 0;
    int expected_echoes = 0;
    Tally at{};
    for (std::size_t i = 0; i < moves.size(); ++i) {
      const auto& [from, to] = moves[i];
      if (!(from == at) || to.total != from.total + 1) ++broken;
      at = to;
      if (echoes_after(from, to)) {
        ++expected_echoes;
        if (i + 1 >= moves.size() || moves[i + 1].second.echoes != to.echoes + 1) {
          ++echoes_misplaced;
        }
      }
    }
    CHECK(broken == 0);
    CHECK(echoes_misplaced == 0);
    CHECK(final_state.echoes == expected_echoes);
    CHECK(at == final_state);
  }
}

// --- 9. AsyncStateMachine ----------------------------------------------------------------------

TEST_CASE("async machine: send and state are synchronous; observers run later on the executor") {
  trellis::AsyncContext ctx;
  trellis::AsyncStateMachine<int, Increment> m{ctx, 0, count_up};
  auto three = m.state_is(3);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> inside_send{false};
  std::atomic<int> ran_inside_send{0};
  Log<Move> seen;
  const auto observer = m.on_transition([&](const int& from, const int& to) {
    if (inside_send && std::this_thread::get_id() == caller) ++ran_inside_send;
    seen.push({from, to});
  });
  for (int k = 1; k <= 50; ++k) {
    inside_send = true;
    const SendResult r = m.send(Increment{});
    inside_send = false;
    CHECK(r == SendResult::Transitioned);
    CHECK(m.state() == k);  // synchronous, no drain
    CHECK(three.get() == (k == 3));
  }
  m.drain();
  CHECK(ran_inside_send.load() == 0);
  check_increment_chain(seen.items(), 0, 50);
}

TEST_CASE("async machine: observers run one at a time, every transition in commit order") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::AsyncContext ctx;
    trellis::AsyncStateMachine<int, Increment> m{ctx, 0, count_up};
    OverlapDetector detector;
    Log<Move> seen;
    Counter others;
    const auto first = m.on_transition([&](const int& from, const int& to) {
      const auto guard = detector.enter();
      seen.push({from, to});
      spin(100);
    });
    const auto second = m.on_transition([&](const int&, const int&) {
      const auto guard = detector.enter();
      others.bump();
      spin(100);
    });
    const boost::signals2::scoped_connection slot =
        m.transitions().connect([&](const int&, const int&) {
          const auto guard = detector.enter();
          others.bump();
        });
    const int sends = scaled(10'000, 300);
    const Deadline deadline(10s);
    std::atomic<int> committed{0};
    run_together(threads, [&](int) {
      for (int k = 0; k < sends && !deadline.passed(); ++k) {
        if (m.send(Increment{}) == SendResult::Transitioned) ++committed;
      }
    });
    m.drain();
    CHECK(detector.overlaps() == 0);
    CHECK(m.state() == committed.load());
    CHECK(others.value() == 2 * committed.load());
    check_increment_chain(seen.items(), 0, committed.load());
  }
}

TEST_CASE("async machine: a rejected event schedules nothing") {
  trellis::AsyncContext ctx;
  const auto only_below_three = [](const int& n, const Increment&) -> std::optional<int> {
    if (n >= 3) return std::nullopt;
    return n + 1;
  };
  trellis::AsyncStateMachine<int, Increment> m{ctx, 3, only_below_three};
  Counter calls;
  Counter state_reader_runs;  // runs again only if something wrote the state
  auto effect = ctx.effect([&, cell = m.state_cell()] {
    (void)cell.get();
    state_reader_runs.bump();
  });
  const auto observer = m.on_transition([&](const int&, const int&) { calls.bump(); });
  m.drain();
  REQUIRE(state_reader_runs.value() == 1);
  for (int k = 0; k < 100; ++k) CHECK(m.send(Increment{}) == SendResult::Rejected);
  m.drain();
  CHECK(calls.value() == 0);
  CHECK(state_reader_runs.value() == 1);
  CHECK(m.state() == 3);
}

TEST_CASE("async machine: drain waits for every scheduled observer") {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    trellis::AsyncContext ctx;
    trellis::AsyncStateMachine<int, Increment> m{ctx, 0, count_up};
    std::atomic<int> finished{0};
    const auto slow = m.on_transition([&](const int&, const int&) {
      spin(2'000);
      ++finished;
    });
    const int sends = scaled(2'000, 100);
    std::atomic<int> violations{0};
    run_together(threads, [&](int t) {
      for (int k = 0; k < sends; ++k) {
        (void)m.send(Increment{});
        if (t == 0 && k % 100 == 99) {
          // Everything committed before this drain has been observed when it returns.
          const int committed_before = m.state();
          m.drain();
          if (finished.load() < committed_before) ++violations;
        }
      }
    });
    m.drain();
    CHECK(violations.load() == 0);
    CHECK(finished.load() == threads * sends);
    CHECK(m.state() == threads * sends);
  }
}

// --- 10. batches with threads --------------------------------------------------------------------

namespace {

template <class Ctx>
using CounterMachine = trellis::BasicStateMachine<int, Increment, Ctx>;

}  // namespace

TEST_CASE_TEMPLATE("machine: a batch excludes other threads' sends until it exits", Ctx,
                   trellis::ThreadSafeContext, trellis::AsyncContext) {
  for (const int threads : thread_counts) {
    CAPTURE(threads);
    Ctx ctx;
    CounterMachine<Ctx> m{ctx, 0, count_up};
    Log<Move> seen;
    const auto observer = m.on_transition([&](const int& from, const int& to) {
      seen.push({from, to});
    });
    const int others = threads - 1;
    std::atomic<int> others_ready{0};
    std::atomic<int> others_returned{0};
    std::atomic<int> seen_inside{0};
    std::atomic<bool> batch_open{false};
    run_together(threads, [&](int t) {
      if (t == 0) {
        ctx.batch([&] {
          batch_open = true;
          (void)m.send(Increment{});
          // Wait (boundedly) until every other thread is about to send, then give them time
          // to get through if they could; none may, and the state stays this batch's own.
          const Deadline ready(10s);
          while (others_ready < others && !ready.passed()) std::this_thread::yield();
          const Deadline window(50ms);
          while (!window.passed()) {
            if (others_returned.load() != 0 || m.state() != 1) ++seen_inside;
            std::this_thread::yield();
          }
          (void)m.send(Increment{});
        });
        return;
      }
      const Deadline open(10s);
      while (!batch_open && !open.passed()) std::this_thread::yield();
      ++others_ready;
      (void)m.send(Increment{});
      ++others_returned;
    });
    trellis_test::settle(ctx);
    CHECK(seen_inside.load() == 0);
    CHECK(m.state() == 2 + others);
    // The batch is delivered first, collapsed to (0, 2); then each other send on its own.
    std::vector<Move> expected{{0, 2}};
    for (int k = 2; k < 2 + others; ++k) expected.emplace_back(k, k + 1);
    CHECK(seen.items() == expected);
  }
}
