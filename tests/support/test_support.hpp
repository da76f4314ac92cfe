// SPDX-License-Identifier: MIT
/// @file
/// Shared test doubles for the reactive suites: the context lists every behavioural suite
/// runs over, `settle()` (the one place where the asynchronous context differs from the
/// synchronous ones), thread-safe counters and logs (AsyncContext runs effects on TBB
/// worker threads), and `scale()` to shorten randomized or stress loops under sanitizers.
#pragma once

#include <trellis/reactive.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Every behavioural suite runs over these; the synchronous list is for behaviours whose
// promise is "before set()/batch() returns", which AsyncContext does not make.
#define TRELLIS_ALL_CONTEXTS trellis::Context, trellis::ThreadSafeContext, trellis::AsyncContext
#define TRELLIS_SYNC_CONTEXTS trellis::Context, trellis::ThreadSafeContext

TYPE_TO_STRING(trellis::Context);
TYPE_TO_STRING(trellis::ThreadSafeContext);
TYPE_TO_STRING(trellis::AsyncContext);

namespace trellis_test {

template <class Ctx>
inline constexpr bool is_async_v = std::is_base_of_v<trellis::AsyncContext, Ctx>;

/// Waits until the effects caused so far have run: a no-op where effects are synchronous.
template <class Ctx>
void settle(Ctx& ctx) {
  if constexpr (is_async_v<Ctx>) {
    ctx.drain();
  }
}

/// Factor from TRELLIS_TEST_SCALE (default 1.0) for loop lengths; sanitizer jobs set it lower.
inline double scale() {
  static const double factor = [] {
    const char* text = std::getenv("TRELLIS_TEST_SCALE");
    if (text == nullptr || *text == '\0') {
      return 1.0;
    }
    char* end = nullptr;
    const double parsed = std::strtod(text, &end);
    return (end != text && parsed > 0.0) ? parsed : 1.0;
  }();
  return factor;
}

/// `n` scaled by `scale()`, never below `floor`.
inline int scaled(int n, int floor = 1) { return std::max(floor, static_cast<int>(n * scale())); }

/// A run counter that effects on worker threads may bump.
class Counter {
 public:
  void bump() noexcept { n_.fetch_add(1, std::memory_order_relaxed); }
  int value() const noexcept { return n_.load(std::memory_order_relaxed); }
  void reset() noexcept { n_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<int> n_{0};
};

/// An append-only log of values, safe to append to from effect threads.
template <class T>
class Log {
 public:
  void push(T v) {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(v));
  }
  std::vector<T> items() const {
    std::lock_guard lock(mutex_);
    return items_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    items_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<T> items_;
};

/// An exception type of the tests' own, to check that the original exception is rethrown.
struct test_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A wall-clock budget for stress loops, so that a slow (sanitized) build ends them early
/// instead of timing out; the loops still assert their invariants on what they did.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds budget)
      : end_(std::chrono::steady_clock::now() + budget) {}
  bool passed() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

/// The trials of a randomized crash loop: how many it must run, and how many it did. The count
/// is TRELLIS_KILL_TRIALS when set, else `default_trials` scaled by TRELLIS_TEST_SCALE (never
/// below `min_trials`). Every trial asked for must run: a deadline that stops the loop short
/// is a failure (shortfall() says how many ran), not a pass on fewer trials. The deadline
/// (TRELLIS_KILL_DEADLINE_S seconds when set, else `budget`; none for an explicit
/// TRELLIS_KILL_TRIALS) only turns a machine too slow for the count into that failure, with
/// what ran checked, before ctest's timeout kills the suite with nothing said.
class TrialBudget {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// `wanted` trials, stopped at `deadline` if there is one.
  TrialBudget(int wanted, std::optional<time_point> deadline)
      : wanted_(wanted), deadline_(deadline) {}

  /// The budget the environment asks for (see above).
  static TrialBudget from_environment(int default_trials, std::chrono::seconds budget,
                                      int min_trials = 20) {
    return TrialBudget(env_int("TRELLIS_KILL_TRIALS").value_or(scaled(default_trials, min_trials)),
                       deadline_after(budget));
  }

  /// The trials the loop must run.
  int wanted() const noexcept { return wanted_; }
  /// The trials counted by done() so far.
  int ran() const noexcept { return ran_; }
  /// True when another trial should start: fewer than wanted() ran and the deadline is not
  /// past (a deadline that stopped the loop is remembered for shortfall()).
  bool another() {
    if (ran_ >= wanted_) return false;
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) {
      cut_short_ = true;
      return false;
    }
    return true;
  }
  /// Counts a trial that ran to its end.
  void done() noexcept { ++ran_; }
  /// Empty when every trial asked for ran; else why not, with the counts.
  std::string shortfall() const {
    if (ran_ >= wanted_) return {};
    return std::string(cut_short_ ? "the deadline stopped the loop" : "the loop stopped") +
           " after " + std::to_string(ran_) + " of " + std::to_string(wanted_) +
           " trials (TRELLIS_KILL_TRIALS or TRELLIS_TEST_SCALE asks for fewer, "
           "TRELLIS_KILL_DEADLINE_S gives more time)";
  }

 private:
  static std::optional<int> env_int(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return std::nullopt;
    return static_cast<int>(std::strtol(text, nullptr, 10));
  }
  static std::optional<time_point> deadline_after(std::chrono::seconds budget) {
    if (const auto seconds = env_int("TRELLIS_KILL_DEADLINE_S"))
      return std::chrono::steady_clock::now() + std::chrono::seconds(*seconds);
    if (std::getenv("TRELLIS_KILL_TRIALS") != nullptr) return std::nullopt;
    return std::chrono::steady_clock::now() + budget;
  }

  int wanted_;
  std::optional<time_point> deadline_;
  int ran_ = 0;
  bool cut_short_ = false;
};

}  // namespace trellis_test
