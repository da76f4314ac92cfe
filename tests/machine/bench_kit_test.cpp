// SPDX-License-Identifier: MIT
// The concurrent-send benchmark kit's bookkeeping (trellis/testing/bench.hpp): lost
// transitions are detected, threads that take turns are not called overlapped, and the
// summary never turns a run that did not overlap into a ratio. No timing is asserted: the
// figures the cases check are counts, or CPU time that sleeping threads cannot accumulate.

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <trellis/testing/bench.hpp>
#include <utility>
#include <vector>

namespace tt = trellis::testing;
using namespace std::chrono_literals;

namespace {

struct Inc {};

std::optional<long> increment(const long& n, const Inc&) { return n + 1; }

/// A counter that records its transitions, except those of events marked `forget`: the state
/// a buggy transition function leaves behind.
struct Counted {
  long value = 0;
  std::uint64_t recorded = 0;
  friend bool operator==(const Counted&, const Counted&) = default;
};
struct Add {
  bool forget = false;
};

std::optional<Counted> add(const Counted& s, const Add& e) {
  return Counted{s.value + 1, s.recorded + (e.forget ? 0 : 1)};
}

/// Rounds of `length` until `min_sends` sends were made (at most 500 rounds, so the case is
/// time-bounded on a loaded machine).
template <class Rig>
void run_rounds(Rig& rig, std::uint64_t min_sends, std::chrono::milliseconds length = 2ms) {
  std::uint64_t sends = 0;
  for (int i = 0; i < 500 && sends < min_sends; ++i) sends += rig.round(length).sends;
}

const auto inc_generator = [](std::size_t, std::uint64_t) { return Inc{}; };

/// A correct subject under a mutex whose tally drops every fourth observer call.
struct DroppingObserver {
  static constexpr const char* label = "dropping";
  std::mutex mu;
  std::uint64_t transitions = 0;
  trellis::SendResult send(const Inc&) {
    std::lock_guard<std::mutex> lock(mu);
    ++transitions;
    return trellis::SendResult::Transitioned;
  }
  tt::SendTally tally() {
    std::lock_guard<std::mutex> lock(mu);
    return {.observer_calls = transitions - transitions / 4, .recorded = std::nullopt};
  }
};

/// A subject whose every send sleeps: its threads use almost no CPU.
struct Sleeper {
  static constexpr const char* label = "sleeper";
  std::mutex mu;
  std::uint64_t transitions = 0;
  trellis::SendResult send(const Inc&) {
    std::lock_guard<std::mutex> lock(mu);
    std::this_thread::sleep_for(1ms);
    ++transitions;
    return trellis::SendResult::Transitioned;
  }
  tt::SendTally tally() {
    std::lock_guard<std::mutex> lock(mu);
    return {.observer_calls = transitions, .recorded = std::nullopt};
  }
};

/// A subject whose fifth send throws.
struct Throwing {
  static constexpr const char* label = "throwing";
  std::mutex mu;
  int sends = 0;
  trellis::SendResult send(const Inc&) {
    std::lock_guard<std::mutex> lock(mu);
    if (++sends == 5) throw std::runtime_error("the fifth send");
    return trellis::SendResult::Transitioned;
  }
  tt::SendTally tally() { return {}; }
};

tt::SendRun synthetic(const char* subject, int threads, std::uint64_t rounds, double sends_per_s,
                      double cpu_per_wall) {
  tt::SendRun r;
  r.name = "m";
  r.subject = subject;
  r.threads = threads;
  r.cores = 2;
  r.rounds = rounds;
  r.wall_seconds = 1.0;
  r.sends = static_cast<std::uint64_t>(sends_per_s);
  r.transitioned = r.sends;
  r.tally.observer_calls = r.sends;
  r.cpu_seconds = cpu_per_wall;
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("ConcurrentSends: a thread-safe machine loses no transition under two threads") {
  tt::MachineSends<long, Inc> subject(0L, increment, true,
                                      [](const long& n) { return static_cast<std::uint64_t>(n); });
  tt::ConcurrentSends rig(subject, inc_generator, 2);
  run_rounds(rig, 10'000);
  const tt::SendRun run = rig.finish("increment", "machine");
  REQUIRE(run.sends >= 10'000);
  CHECK(run.transitioned == run.sends);
  CHECK(run.tally.recorded == run.sends);
  CHECK(run.tally.observer_calls == run.sends);
  CHECK(run.lost() == 0);
  CHECK_FALSE(run.failed());
}

TEST_CASE("ConcurrentSends: a transition the state does not record is counted as lost") {
  tt::MachineSends<Counted, Add> subject(Counted{}, add, true,
                                         [](const Counted& s) { return s.recorded; });
  const auto every_tenth_forgets = [](std::size_t, std::uint64_t i) {
    return Add{.forget = i % 10 == 9};
  };
  tt::ConcurrentSends rig(subject, every_tenth_forgets, 2);
  run_rounds(rig, 1'000);
  const tt::SendRun run = rig.finish("counted", "machine");
  const Counted final_state = subject.machine().state();
  REQUIRE(run.sends >= 1'000);
  CHECK(run.lost() == static_cast<std::uint64_t>(final_state.value) - final_state.recorded);
  CHECK(run.lost() > 0);
  CHECK(run.failed());
}

TEST_CASE("ConcurrentSends: observer calls that miss transitions are counted as lost") {
  DroppingObserver subject;
  tt::ConcurrentSends rig(subject, inc_generator, 2);
  run_rounds(rig, 100);
  const tt::SendRun run = rig.finish("dropping", "dropping");
  REQUIRE(run.transitioned >= 100);
  CHECK(run.lost() == run.transitioned / 4);
  CHECK(run.failed());
}

TEST_CASE("ConcurrentSends: threads that sleep instead of sending at once are not overlapped") {
  Sleeper subject;
  tt::ConcurrentSends rig(subject, inc_generator, 2);
  for (int i = 0; i < 3; ++i) rig.round(20ms);
  const tt::SendRun run = rig.finish("sleeper", "sleeper");
  CHECK(run.sends > 0);
  CHECK(run.cpu_per_wall() < 1.8);
  CHECK_FALSE(run.overlapped());
  CHECK(run.lost() == 0);
}

TEST_CASE("ConcurrentSends: an exception from a send ends the round and fails the run") {
  Throwing subject;
  tt::ConcurrentSends rig(subject, inc_generator, 2);
  CHECK_THROWS_WITH_AS(run_rounds(rig, 1'000'000), "the fifth send", std::runtime_error);
  const tt::SendRun run = rig.finish("throwing", "throwing");
  CHECK(run.error == "the fifth send");
  CHECK(run.failed());
}

TEST_CASE("ConcurrentSends: fewer than one thread is refused") {
  Sleeper subject;
  CHECK_THROWS_AS(tt::ConcurrentSends(subject, inc_generator, 0), trellis::invalid_option);
}

TEST_CASE("format_send_summary: a machine whose threads took turns gets no ratio") {
  // The published run of issue 3: 2.87x a mutex, with the machine's threads at cpu/wall 1.35.
  const std::string text = tt::format_send_summary({
      synthetic("baseline_mutex", 2, 50, 15.8e6, 1.95),
      synthetic("ThreadSafeStateMachine", 2, 50, 45.3e6, 1.35),
  });
  CHECK(contains(text, "not overlapped"));
  CHECK_FALSE(contains(text, "x2.87"));
  CHECK_FALSE(contains(text, "overlapped: x"));
}

TEST_CASE("format_send_summary: more threads than CPUs are oversubscribed, with no ratio") {
  const std::string text = tt::format_send_summary({
      synthetic("baseline_mutex", 4, 50, 10e6, 3.9),
      synthetic("ThreadSafeStateMachine", 4, 50, 30e6, 3.9),
  });
  CHECK(contains(text, "oversubscribed (4 threads on 2 CPUs): no ratio"));
  CHECK_FALSE(contains(text, "x3.00"));
}

TEST_CASE("format_send_summary: overlapped runs get the ratio of the final runs' medians") {
  const std::string text = tt::format_send_summary({
      // Google Benchmark's first, shorter tries: left out of the medians.
      synthetic("baseline_mutex", 2, 1, 1e6, 1.95),
      synthetic("ThreadSafeStateMachine", 2, 1, 90e6, 1.95),
      synthetic("baseline_mutex", 2, 50, 10e6, 1.95),
      synthetic("ThreadSafeStateMachine", 2, 50, 8e6, 1.9),
      synthetic("baseline_mutex", 2, 50, 10e6, 1.9),
      synthetic("ThreadSafeStateMachine", 2, 50, 9e6, 1.95),
      synthetic("ThreadSafeStateMachine", 2, 50, 30e6, 1.95),
  });
  CHECK(contains(text, "overlapped: x0.90 of mutex"));
  CHECK(contains(text, "(3 runs)"));
  CHECK(contains(text, "lost: 0 in all 7 runs"));
}

TEST_CASE("format_send_summary: a run that lost transitions is listed as failed") {
  tt::SendRun lossy = synthetic("ThreadSafeStateMachine", 1, 50, 1e6, 1.0);
  lossy.tally.recorded = lossy.transitioned - 3;
  const std::string text =
      tt::format_send_summary({synthetic("baseline_mutex", 1, 50, 1e6, 1.0), lossy});
  CHECK(contains(text, "FAILED m/ThreadSafeStateMachine/threads:1: lost 3 transitions"));
  CHECK(contains(text, "no ratio: a run failed"));
  CHECK_FALSE(contains(text, "lost: 0"));
}

TEST_CASE("register_send_benchmarks: options that can check nothing are refused") {
  const auto attempt = [](const char* name, tt::SendBenchmarkOptions<long> options) {
    const auto gen = [](std::size_t, std::uint64_t) { return Inc{}; };
    tt::register_send_benchmarks<long, Inc>(name, 0L, increment, gen, std::move(options));
  };
  CHECK_THROWS_WITH_AS(attempt("unchecked", {.threads = {1}, .observed = false}),
                       "trellis: register_send_benchmarks(\"unchecked\"): nothing to check lost "
                       "transitions against: set observed, or give state_count",
                       trellis::invalid_option);
  CHECK_THROWS_AS(attempt("none", {.threads = {}}), trellis::invalid_option);
  CHECK_THROWS_AS(attempt("zero", {.threads = {2, 0}}), trellis::invalid_option);
  CHECK_THROWS_AS(attempt("instant", {.threads = {1}, .round = std::chrono::milliseconds(0)}),
                  trellis::invalid_option);
}
