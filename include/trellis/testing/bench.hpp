#pragma once
/// @file
/// A kit to benchmark a machine's concurrent sends (Google Benchmark; target
/// `trellis::bench_kit`). One call registers, for each thread count, the machine as a
/// `ThreadSafeStateMachine` and, as its baseline, the same transition function behind a plain
/// `std::mutex`, one after the other in the same run:
///
/// ```cpp
/// namespace tt = trellis::testing;
/// tt::register_send_benchmarks<long, Inc>(
///     "increment", 0L, [](long n, Inc) -> std::optional<long> { return n + 1; },
///     [](std::size_t /*thread*/, std::uint64_t /*i*/) { return Inc{}; },
///     {.threads = {1, 2, 4, 8}, .state_count = [](long n) { return std::uint64_t(n); }});
/// benchmark::RunSpecifiedBenchmarks();
/// return tt::report_send_benchmarks();  // the summary; non-zero when an update was lost
/// ```
///
/// How a run measures (one Google Benchmark iteration is one round):
/// - N threads of the kit's own, started once per run, send to ONE subject. Each round starts
///   them together (they wait on a barrier until all N have arrived, then read their clocks)
///   and stops them together (a flag set `round` later): every thread sends for the whole
///   round, so a thread that started late does not run alone at the end. Thread `k` sends
///   `generator(k, i)` for i = 0, 1, 2, ... (its own copy of the generator, called outside
///   any lock).
/// - `sends_per_s`: every thread's send() calls per wall second (the round's wall time runs
///   from the first thread's start to the last thread's stop; it is the benchmark's manual
///   time, so the Time column is the wall time of a round).
/// - `cpu_per_wall`: the threads' CPU time (CLOCK_THREAD_CPUTIME_ID) over that wall time. About
///   N when the threads really ran at once; near 1 when they took turns, and then the figure
///   says nothing about contention. `overlapped` is 1 when cpu_per_wall >= 0.9 x N.
/// - `waits_per_s` and `preempted_per_s`: the threads' voluntary context switches (a thread
///   blocked: a contended lock that sleeps its waiters) and involuntary ones (the scheduler
///   gave the CPU away: other processes) per wall second; they say why cpu_per_wall fell.
/// - `oversubscribed` is 1 when N exceeds the CPUs this process may run on: such threads
///   cannot all run at once, and their figures are never compared with the baseline.
/// - `lost`: accepted transitions that were not committed or not observed. Every send's result
///   is counted; the sends that returned `Transitioned` must equal the calls of a counting
///   `on_transition` observer (`observed`, the default) and the transitions the state itself
///   recorded (`state_count`, when given: how many transitions a state has counted, e.g. the
///   value of a counter; the kit checks `state_count(final) - state_count(initial)`). Only
///   the second catches a lost update (two sends that both read the same state): the observer
///   check catches transitions committed but never told. A run that lost anything fails
///   (SkipWithError) and makes `report_send_benchmarks()` return non-zero.
///
/// The baseline is what a user would write by hand: `step(state, e)` under one `std::mutex`,
/// the new state assigned unless rejected or equal, and (when observed) a counter incremented
/// per transition under that mutex. Benchmarks are named `<name>/baseline_mutex/threads:N` and
/// `<name>/ThreadSafeStateMachine/threads:N` (Google Benchmark appends
/// `/process_time/manual_time`: the CPU column is the whole process's CPU time per round).
///
/// `report_send_benchmarks()` prints, per machine and thread count, the median figures of the
/// final runs (the ones Google Benchmark reports; several with --benchmark_repetitions) and
/// the machine's sends/s as a ratio to the baseline's only when both runs overlapped and were
/// not oversubscribed; otherwise the row says why there is no ratio. A run whose threads did
/// not overlap is never shown as a speed-up.

#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "trellis/base/error.hpp"
#include "trellis/base/subscription.hpp"
#include "trellis/machine/send_result.hpp"
#include "trellis/machine/state_machine.hpp"
#include "trellis/reactive/context.hpp"

namespace trellis::testing {

/// What a subject counted besides the send results, to check that no transition was lost.
struct SendTally {
  /// Calls of the counting on_transition observer (nullopt: not observed).
  std::optional<std::uint64_t> observer_calls;
  /// Transitions the state recorded: state_count(final) - state_count(initial) (nullopt: no
  /// state_count).
  std::optional<std::uint64_t> recorded;
};

/// The figures of one run of one subject at one thread count.
struct SendRun {
  std::string name;     // the machine's name, as registered
  std::string subject;  // "ThreadSafeStateMachine" or "baseline_mutex"
  int threads = 0;
  int cores = 0;  // CPUs this process may run on
  std::uint64_t rounds = 0;
  std::uint64_t sends = 0;  // send() calls of every thread
  std::uint64_t transitioned = 0;
  std::uint64_t unchanged = 0;
  std::uint64_t rejected = 0;
  SendTally tally;
  double wall_seconds = 0;  // sum over rounds: first thread's start to last thread's stop
  double cpu_seconds = 0;   // sum over rounds and threads of the threads' CPU time
  /// Context switches of the sending threads (getrusage RUSAGE_THREAD): voluntary ones are
  /// waits (a thread blocked, e.g. on a contended lock), involuntary ones preemptions (the
  /// scheduler gave its CPU to another thread or process).
  std::uint64_t waits = 0;
  std::uint64_t preemptions = 0;
  std::string error;  // what a send or the generator threw, if anything did

  double sends_per_second() const { return wall_seconds > 0 ? double(sends) / wall_seconds : 0; }
  double cpu_per_wall() const { return wall_seconds > 0 ? cpu_seconds / wall_seconds : 0; }
  double waits_per_second() const { return wall_seconds > 0 ? double(waits) / wall_seconds : 0; }
  double preemptions_per_second() const {
    return wall_seconds > 0 ? double(preemptions) / wall_seconds : 0;
  }
  /// The largest disagreement between the Transitioned results and the observer calls or the
  /// recorded transitions (0 when nothing can be compared).
  std::uint64_t lost() const {
    std::uint64_t worst = 0;
    for (const std::optional<std::uint64_t>& seen : {tally.observer_calls, tally.recorded}) {
      if (seen)
        worst = std::max(worst, *seen > transitioned ? *seen - transitioned : transitioned - *seen);
    }
    return worst;
  }
  /// The threads ran at once: cpu/wall >= 0.9 x threads.
  bool overlapped() const { return threads > 0 && cpu_per_wall() >= 0.9 * threads; }
  /// More threads than CPUs: they cannot all run at once.
  bool oversubscribed() const { return threads > cores; }
  bool failed() const { return lost() != 0 || !error.empty(); }
};

/// The CPUs this process may run on (its affinity mask), at least 1.
inline int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// The subject: a ThreadSafeStateMachine on its own ThreadSafeContext, with the counting
/// observer when `observed`.
template <class S, class E>
class MachineSends {
 public:
  static constexpr const char* label = "ThreadSafeStateMachine";

  template <class Step>
  MachineSends(S initial, Step step, bool observed,
               std::function<std::uint64_t(const S&)> state_count)
      : count_(std::move(state_count)),
        initial_count_(count_ ? count_(initial) : 0),
        machine_(ctx_, std::move(initial), std::move(step)),
        observed_(observed) {
    if (observed_) {
      subscription_ = machine_.on_transition([this](const S&, const S&) {
        // Not an atomic increment: observers of one machine never overlap, and if two did, a
        // count would be lost and reported.
        calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      });
    }
  }
  MachineSends(const MachineSends&) = delete;
  MachineSends& operator=(const MachineSends&) = delete;

  SendResult send(const E& e) { return machine_.send(e); }

  SendTally tally() const {
    SendTally t;
    if (observed_) t.observer_calls = calls_.load(std::memory_order_relaxed);
    if (count_) t.recorded = count_(machine_.state()) - initial_count_;
    return t;
  }

  ThreadSafeStateMachine<S, E>& machine() noexcept { return machine_; }

 private:
  std::function<std::uint64_t(const S&)> count_;
  std::uint64_t initial_count_;
  ThreadSafeContext ctx_;
  ThreadSafeStateMachine<S, E> machine_;
  bool observed_;
  std::atomic<std::uint64_t> calls_{0};
  Subscription subscription_;
};

/// The baseline: the same transition function behind one std::mutex, as written by hand.
template <class S, class E, class Step>
class MutexSends {
 public:
  static constexpr const char* label = "baseline_mutex";

  MutexSends(S initial, Step step, bool observed,
             std::function<std::uint64_t(const S&)> state_count)
      : count_(std::move(state_count)),
        initial_count_(count_ ? count_(initial) : 0),
        state_(std::move(initial)),
        step_(std::move(step)),
        observed_(observed) {}
  MutexSends(const MutexSends&) = delete;
  MutexSends& operator=(const MutexSends&) = delete;

  SendResult send(const E& e) {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<S> next = step_(std::as_const(state_), e);
    if (!next) return SendResult::Rejected;
    if (*next == state_) return SendResult::Unchanged;
    S from = std::exchange(state_, std::move(*next));
    if (observed_) observe(from, state_);
    return SendResult::Transitioned;
  }

  SendTally tally() const {
    std::lock_guard<std::mutex> lock(mu_);
    SendTally t;
    if (observed_) t.observer_calls = calls_;
    if (count_) t.recorded = count_(state_) - initial_count_;
    return t;
  }

 private:
  void observe(const S&, const S&) { ++calls_; }

  std::function<std::uint64_t(const S&)> count_;
  std::uint64_t initial_count_;
  mutable std::mutex mu_;
  S state_;
  Step step_;
  bool observed_;
  std::uint64_t calls_ = 0;
};

/// N threads sending to one subject in rounds (see the file comment). `Subject` has
/// `SendResult send(const E&)` (called from every thread at once) and `SendTally tally()`;
/// `Gen` is called as `gen(std::size_t thread, std::uint64_t i)` and returns the event.
template <class Subject, class Gen>
class ConcurrentSends {
 public:
  using event_type = std::decay_t<std::invoke_result_t<Gen&, std::size_t, std::uint64_t>>;
  static_assert(
      std::is_convertible_v<
          decltype(std::declval<Subject&>().send(std::declval<const event_type&>())), SendResult>,
      "trellis: a subject needs SendResult send(const E&)");

  /// The figures of one round.
  struct Round {
    double wall_seconds = 0;
    double cpu_seconds = 0;
    std::uint64_t sends = 0;
    std::uint64_t waits = 0;
    std::uint64_t preemptions = 0;
  };

  /// Starts `threads` threads (>= 1), each with its own copy of `gen`; they wait for rounds.
  ConcurrentSends(Subject& subject, const Gen& gen, int threads)
      : subject_(subject), gen_(gen), slots_(static_cast<std::size_t>(std::max(threads, 1))) {
    if (threads < 1) {
      throw invalid_option("trellis: ConcurrentSends: " + std::to_string(threads) +
                           " threads; at least 1 is needed");
    }
    workers_.reserve(slots_.size());
    for (std::size_t k = 0; k < slots_.size(); ++k) workers_.emplace_back([this, k] { work(k); });
  }
  ConcurrentSends(const ConcurrentSends&) = delete;
  ConcurrentSends& operator=(const ConcurrentSends&) = delete;
  ~ConcurrentSends() { stop_threads(); }

  /// Runs one round of about `length`: every thread sends from the barrier until the stop.
  /// Rethrows the first exception a send or the generator threw (the run is then unusable).
  Round round(std::chrono::nanoseconds length) {
    const auto n = static_cast<std::uint32_t>(slots_.size());
    stop_.store(false, std::memory_order_relaxed);
    ready_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    go_.fetch_add(1, std::memory_order_release);
    go_.notify_all();
    wait_until(ready_, n);
    std::this_thread::sleep_for(length);
    stop_.store(true, std::memory_order_relaxed);
    wait_until(done_, n);

    Round r;
    auto first = slots_[0].start;
    auto last = slots_[0].end;
    for (Slot& s : slots_) {
      first = std::min(first, s.start);
      last = std::max(last, s.end);
      r.cpu_seconds += s.cpu_seconds;
      r.waits += s.waits;
      r.preemptions += s.preemptions;
      for (std::uint64_t c : s.counts) r.sends += c;
      for (std::size_t v = 0; v < 3; ++v) totals_[v] += s.counts[v];
    }
    r.wall_seconds = std::chrono::duration<double>(last - first).count();
    ++rounds_;
    wall_ += r.wall_seconds;
    cpu_ += r.cpu_seconds;
    waits_ += r.waits;
    preemptions_ += r.preemptions;
    for (Slot& s : slots_) {
      if (s.error) {
        std::exception_ptr e = std::exchange(s.error, nullptr);
        error_ = describe(e);
        std::rethrow_exception(e);
      }
    }
    return r;
  }

  /// Stops the threads and returns the totals of every round so far, with the subject's tally.
  SendRun finish(std::string name, std::string subject_label) {
    stop_threads();
    SendRun run;
    run.name = std::move(name);
    run.subject = std::move(subject_label);
    run.threads = static_cast<int>(slots_.size());
    run.cores = available_cores();
    run.rounds = rounds_;
    run.rejected = totals_[SendResult::Rejected];
    run.unchanged = totals_[SendResult::Unchanged];
    run.transitioned = totals_[SendResult::Transitioned];
    run.sends = run.rejected + run.unchanged + run.transitioned;
    run.wall_seconds = wall_;
    run.cpu_seconds = cpu_;
    run.waits = waits_;
    run.preemptions = preemptions_;
    run.tally = subject_.tally();
    run.error = error_;
    return run;
  }

 private:
  struct alignas(64) Slot {
    std::chrono::steady_clock::time_point start{};
    std::chrono::steady_clock::time_point end{};
    double cpu_seconds = 0;
    std::uint64_t waits = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t counts[3] = {};  // by SendResult::Value, this round
    std::exception_ptr error;
  };

  static double thread_cpu() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

  static void wait_until(std::atomic<std::uint32_t>& a, std::uint32_t n) {
    for (std::uint32_t v = a.load(std::memory_order_acquire); v < n;
         v = a.load(std::memory_order_acquire)) {
      a.wait(v, std::memory_order_acquire);
    }
  }

  /// This thread's voluntary and involuntary context switches so far.
  static std::pair<std::uint64_t, std::uint64_t> switches() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return {static_cast<std::uint64_t>(u.ru_nvcsw), static_cast<std::uint64_t>(u.ru_nivcsw)};
  }

  static std::string describe(const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      return x.what();
    } catch (...) {
      return "an exception that is not a std::exception";
    }
  }

  void work(std::size_t k) {
    Gen gen = gen_;
    Slot& me = slots_[k];
    const auto n = static_cast<std::uint32_t>(slots_.size());
    std::uint64_t i = 0;
    std::uint32_t seen = 0;
    for (;;) {
      go_.wait(seen, std::memory_order_acquire);
      seen = go_.load(std::memory_order_acquire);
      if (quit_.load(std::memory_order_acquire)) return;
      // The barrier: nobody reads a clock before all N threads are running.
      if (ready_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) ready_.notify_all();
      while (ready_.load(std::memory_order_acquire) < n) std::this_thread::yield();

      std::uint64_t counts[3] = {};
      std::exception_ptr error;
      const auto switches0 = switches();
      me.start = std::chrono::steady_clock::now();
      const double cpu0 = thread_cpu();
      try {
        while (!stop_.load(std::memory_order_relaxed)) {
          const SendResult r = subject_.send(gen(k, i));
          ++i;
          ++counts[r.value()];
        }
      } catch (...) {
        error = std::current_exception();
      }
      me.cpu_seconds = thread_cpu() - cpu0;
      me.end = std::chrono::steady_clock::now();
      const auto switches1 = switches();
      me.waits = switches1.first - switches0.first;
      me.preemptions = switches1.second - switches0.second;
      std::copy(std::begin(counts), std::end(counts), std::begin(me.counts));
      me.error = std::move(error);
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) done_.notify_all();
    }
  }

  void stop_threads() {
    if (workers_.empty()) return;
    quit_.store(true, std::memory_order_release);
    go_.fetch_add(1, std::memory_order_release);
    go_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  Subject& subject_;
  const Gen gen_;
  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  alignas(64) std::atomic<std::uint32_t> go_{0};
  alignas(64) std::atomic<std::uint32_t> ready_{0};
  alignas(64) std::atomic<std::uint32_t> done_{0};
  alignas(64) std::atomic<bool> stop_{false};
  std::atomic<bool> quit_{false};
  std::uint64_t rounds_ = 0;
  std::uint64_t totals_[3] = {};
  double wall_ = 0;
  double cpu_ = 0;
  std::uint64_t waits_ = 0;
  std::uint64_t preemptions_ = 0;
  std::string error_;
};

/// How `register_send_benchmarks` measures.
template <class S>
struct SendBenchmarkOptions {
  /// One pair of benchmarks (baseline, machine) per entry, in this order; each >= 1.
  std::vector<int> threads{1, 2, 4, 8};
  /// Count committed transitions with an on_transition observer (and the baseline's
  /// equivalent); the count must equal the sends that returned Transitioned.
  bool observed = true;
  /// How many transitions a state has recorded (e.g. a counter the transition function
  /// increments); its growth over a run must equal the sends that returned Transitioned.
  /// This is the check that catches a lost update. At least one of the two is required.
  std::function<std::uint64_t(const S&)> state_count{};
  /// The length of one round (one Google Benchmark iteration); > 0.
  std::chrono::milliseconds round{10};
};

namespace detail {

struct SendRegistry {
  std::mutex mu;
  std::vector<SendRun> runs;
};

inline SendRegistry& send_registry() {
  static SendRegistry registry;
  return registry;
}

template <class Subject, class Gen>
void run_send_benchmark(benchmark::State& st, Subject& subject, const Gen& gen, int threads,
                        std::chrono::milliseconds round, const std::string& name) {
  ConcurrentSends<Subject, Gen> rig(subject, gen, threads);
  for (auto _ : st) {
    try {
      st.SetIterationTime(rig.round(round).wall_seconds);
    } catch (...) {
      break;  // recorded by the rig: reported below
    }
  }
  SendRun run = rig.finish(name, Subject::label);
  {
    SendRegistry& registry = send_registry();
    std::lock_guard<std::mutex> lock(registry.mu);
    registry.runs.push_back(run);
  }
  if (!run.error.empty()) {
    st.SkipWithError(("a send or the generator threw: " + run.error).c_str());
    return;
  }
  st.counters["sends_per_s"] = run.sends_per_second();
  st.counters["cpu_per_wall"] = run.cpu_per_wall();
  st.counters["waits_per_s"] = run.waits_per_second();
  st.counters["preempted_per_s"] = run.preemptions_per_second();
  st.counters["overlapped"] = run.overlapped() ? 1 : 0;
  st.counters["oversubscribed"] = run.oversubscribed() ? 1 : 0;
  st.counters["lost"] = static_cast<double>(run.lost());
  if (run.lost() != 0) {
    const auto text = [](const std::optional<std::uint64_t>& v) {
      return v ? std::to_string(*v) : std::string("-");
    };
    const std::string what =
        "lost " + std::to_string(run.lost()) + " transitions: " + std::to_string(run.transitioned) +
        " sends Transitioned, " + text(run.tally.observer_calls) + " observer calls, " +
        text(run.tally.recorded) + " recorded by the state";
    std::fprintf(stderr, "error: %s/%s/threads:%d %s\n", name.c_str(), Subject::label, threads,
                 what.c_str());
    st.SkipWithError(what.c_str());
  }
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 != 0 ? v[m] : (v[m - 1] + v[m]) / 2;
}

inline std::string figure(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M/s", per_second / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f k/s", per_second / 1e3);
  }
  return buf;
}

}  // namespace detail

/// Registers, for each of `options.threads`, "<name>/baseline_mutex/threads:N" then
/// "<name>/ThreadSafeStateMachine/threads:N". `step` is the machine's transition function (any
/// copyable callable `(const S&, const E&)` returning something convertible to
/// std::optional<S>); `generator(thread, i)` makes thread `thread`'s i-th event (each thread
/// calls its own copy, outside any lock). Throws trellis::invalid_option when the options
/// cannot measure: no thread counts, a count below 1, a round of 0, or nothing to check lost
/// transitions against (`observed` false and no `state_count`).
template <class S, class E, class Step, class Gen>
void register_send_benchmarks(const std::string& name, S initial, Step step, Gen generator,
                              SendBenchmarkOptions<S> options = {}) {
  static_assert(
      std::is_invocable_v<Step&, const S&, const E&> &&
          std::is_convertible_v<std::invoke_result_t<Step&, const S&, const E&>, std::optional<S>>,
      "trellis: register_send_benchmarks needs step(const S&, const E&) returning "
      "std::optional<S> (nullopt rejects)");
  static_assert(
      std::is_invocable_v<Gen&, std::size_t, std::uint64_t> &&
          std::is_convertible_v<std::invoke_result_t<Gen&, std::size_t, std::uint64_t>, E>,
      "trellis: register_send_benchmarks needs generator(std::size_t thread, "
      "std::uint64_t i) returning the event E");
  static_assert(std::copy_constructible<Step> && std::copy_constructible<Gen>,
                "trellis: register_send_benchmarks copies step and generator into each run");
  const auto refuse = [&](const std::string& why) {
    throw invalid_option("trellis: register_send_benchmarks(\"" + name + "\"): " + why);
  };
  if (options.threads.empty()) refuse("no thread counts");
  for (int t : options.threads) {
    if (t < 1) refuse("thread count " + std::to_string(t) + "; each must be at least 1");
  }
  if (options.round.count() <= 0) refuse("a round must last more than 0 ms");
  if (!options.observed && !options.state_count) {
    refuse("nothing to check lost transitions against: set observed, or give state_count");
  }

  struct Config {
    std::string name;
    S initial;
    Step step;
    Gen generator;
    SendBenchmarkOptions<S> options;
  };
  auto config = std::make_shared<const Config>(
      Config{name, std::move(initial), std::move(step), std::move(generator), options});
  const auto adapted = [](const Gen& g) {
    return [g](std::size_t thread, std::uint64_t i) -> E { return g(thread, i); };
  };
  using Adapted = decltype(adapted(std::declval<const Gen&>()));

  // One benchmark per subject and thread count: the baseline first, then the machine.
  const auto add = [&]<class Subject>(std::type_identity<Subject>, int threads) {
    const std::string label = name + "/" + Subject::label + "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(label.c_str(),
                                 [config, threads, adapted](benchmark::State& st) {
                                   Subject subject(config->initial, config->step,
                                                   config->options.observed,
                                                   config->options.state_count);
                                   const Adapted gen = adapted(config->generator);
                                   detail::run_send_benchmark(st, subject, gen, threads,
                                                              config->options.round, config->name);
                                 })
        ->UseManualTime()
        ->MeasureProcessCPUTime()
        ->Unit(benchmark::kMillisecond);
  };
  for (int threads : options.threads) {
    add(std::type_identity<MutexSends<S, E, Step>>{}, threads);
    add(std::type_identity<MachineSends<S, E>>{}, threads);
  }
}

/// Every run recorded so far by the benchmarks `register_send_benchmarks` registered (each
/// run Google Benchmark made, including its shorter first tries).
inline std::vector<SendRun> send_runs() {
  detail::SendRegistry& registry = detail::send_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.runs;
}

/// The summary of `runs`: per machine and thread count, the medians of the final runs (those
/// with the most rounds) of the machine and of its baseline, and the machine's sends/s as a
/// ratio to the baseline's when both overlapped and neither was oversubscribed; otherwise why
/// there is no ratio. Then the runs that lost transitions or threw, or "lost: 0".
inline std::string format_send_summary(const std::vector<SendRun>& runs) {
  using Key = std::tuple<std::string, int, std::string>;  // name, threads, subject
  std::map<Key, std::vector<const SendRun*>> finals;
  std::vector<std::pair<std::string, int>> order;  // (name, threads) as first recorded
  for (const SendRun& r : runs) {
    auto& group = finals[Key{r.name, r.threads, r.subject}];
    if (!group.empty() && group.front()->rounds < r.rounds) group.clear();
    if (group.empty() || group.front()->rounds == r.rounds) group.push_back(&r);
    const std::pair<std::string, int> row{r.name, r.threads};
    if (std::find(order.begin(), order.end(), row) == order.end()) order.push_back(row);
  }
  struct Median {
    bool present = false;
    std::size_t n = 0;
    double sends_per_s = 0;
    double cpu_per_wall = 0;
    double waits_per_s = 0;
    double preemptions_per_s = 0;
    bool failed = false;
  };
  const auto median_of = [&](const std::string& name, int threads, const char* subject) {
    Median m;
    const auto it = finals.find(Key{name, threads, subject});
    if (it == finals.end()) return m;
    std::vector<double> rate;
    std::vector<double> cpu;
    std::vector<double> waits;
    std::vector<double> preemptions;
    for (const SendRun* r : it->second) {
      rate.push_back(r->sends_per_second());
      cpu.push_back(r->cpu_per_wall());
      waits.push_back(r->waits_per_second());
      preemptions.push_back(r->preemptions_per_second());
      m.failed = m.failed || r->failed();
    }
    m.present = true;
    m.n = it->second.size();
    m.sends_per_s = detail::median(rate);
    m.cpu_per_wall = detail::median(cpu);
    m.waits_per_s = detail::median(waits);
    m.preemptions_per_s = detail::median(preemptions);
    return m;
  };
  const auto cell = [](const Median& m) {
    if (!m.present) return std::string("not run");
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%s, cpu/wall %.2f, waits %.0f/s, preempted %.0f/s (%zu run%s)%s",
                  detail::figure(m.sends_per_s).c_str(), m.cpu_per_wall, m.waits_per_s,
                  m.preemptions_per_s, m.n, m.n == 1 ? "" : "s", m.failed ? ", FAILED" : "");
    return std::string(buf);
  };

  std::string out;
  if (runs.empty()) return out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "Concurrent sends: %s vs %s (a std::mutex around the same step), %d CPUs; "
                "medians of the final runs\n",
                "ThreadSafeStateMachine", "baseline_mutex", runs.front().cores);
  out += buf;
  for (const auto& [name, threads] : order) {
    const Median machine = median_of(name, threads, "ThreadSafeStateMachine");
    const Median mutex = median_of(name, threads, "baseline_mutex");
    const int cores = runs.front().cores;
    const double needed = 0.9 * threads;
    std::string verdict;
    if (threads > cores) {
      std::snprintf(buf, sizeof buf, "oversubscribed (%d threads on %d CPUs): no ratio", threads,
                    cores);
      verdict = buf;
    } else if (!machine.present || !mutex.present) {
      verdict = "no ratio: one of the two did not run";
    } else if (machine.failed || mutex.failed) {
      verdict = "no ratio: a run failed";
    } else if (machine.cpu_per_wall < needed || mutex.cpu_per_wall < needed) {
      std::snprintf(buf, sizeof buf,
                    "not overlapped (cpu/wall below 0.9 x %d = %.2f: %s): no ratio", threads,
                    needed,
                    threads == 1 ? "the thread did not run all the time"
                                 : "the threads did not all run at once");
      verdict = buf;
    } else {
      std::snprintf(buf, sizeof buf, "overlapped: x%.2f of mutex",
                    machine.sends_per_s / mutex.sends_per_s);
      verdict = buf;
    }
    out += name + " threads:" + std::to_string(threads) + "\n  machine " + cell(machine) +
           "\n  mutex   " + cell(mutex) + "\n  " + verdict + "\n";
  }
  std::size_t failures = 0;
  for (const SendRun& r : runs) {
    if (!r.failed()) continue;
    ++failures;
    out += "FAILED " + r.name + "/" + r.subject + "/threads:" + std::to_string(r.threads) + ": ";
    out += r.error.empty() ? "lost " + std::to_string(r.lost()) + " transitions" : r.error;
    out += '\n';
  }
  if (failures == 0) {
    std::snprintf(buf, sizeof buf, "lost: 0 in all %zu runs\n", runs.size());
    out += buf;
  }
  return out;
}

/// Prints format_send_summary(send_runs()) to `out` (stderr by default, beside Google
/// Benchmark's own context lines, so a JSON report on stdout stays valid); returns
/// EXIT_FAILURE when a run lost a transition or threw, else EXIT_SUCCESS: main's status.
inline int report_send_benchmarks(std::FILE* out = stderr) {
  const std::vector<SendRun> runs = send_runs();
  const std::string text = format_send_summary(runs);
  std::fputs(text.c_str(), out);
  std::fflush(out);
  const bool failed =
      std::any_of(runs.begin(), runs.end(), [](const SendRun& r) { return r.failed(); });
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

}  // namespace trellis::testing
