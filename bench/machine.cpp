/// @file
/// Benchmarks of the three state machine runners on the traffic light of issue 3 (Red -> Green
/// -> Yellow -> Red on Advance; Skip jumps from Green to Red and is rejected elsewhere), each
/// beside a hand-written baseline in the same binary (`baseline/...`) that does the same job
/// with no library: a `switch` on an enum, the transition function called through a plain
/// pointer or a std::function, the same switch behind a plain std::mutex, a `std::function`
/// observer called by hand, a log handed to a oneTBB task.
///
/// - `machine/StateMachine/...`: send with no observer (`send_fnptr`: the transition function
///   is a plain function pointer; `send_lambda`: the same function as a lambda), with N
///   on_transition observers, with a state_is signal attached, a rejected event.
/// - `machine/ThreadSafeStateMachine/send` (and `send_lambda`): one thread, no contention.
///   (Concurrent sends are measured with the benchmark kit, trellis/testing/bench.hpp.)
/// - `machine/AsyncStateMachine/observed/N`: N sends, then drain(): every transition reaches
///   one on_transition observer on the executor; counter `per_transition`.
///
/// Machines are built before the timed loop; correctness is checked after it (a failed check
/// reports the run with SkipWithError and makes the program exit 1).

#include <benchmark/benchmark.h>
#include <oneapi/tbb/task_arena.h>
#include "bench_support.hpp"

#include <trellis/trellis.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------- the machines

enum class Light { Red, Green, Yellow };
enum class Tick { Advance, Skip };

/// The pure transition function every trellis machine here runs, as a lambda (no capture): a
/// machine built with it keeps its exact type, so `send` can inline it.
constexpr auto kStep = [](const Light& s, const Tick& e) -> std::optional<Light> {
  switch (e) {
    case Tick::Advance:
      switch (s) {
        case Light::Red:
          return Light::Green;
        case Light::Green:
          return Light::Yellow;
        case Light::Yellow:
          return Light::Red;
      }
      return std::nullopt;
    case Tick::Skip:
      if (s == Light::Green) return Light::Red;
      return std::nullopt;
  }
  return std::nullopt;
};

/// The same function as a plain function pointer (what most machines here run): the machine
/// calls it indirectly, it cannot be inlined. Note: GCC 12 returns a std::optional<Light> built
/// by several return statements through the stack (a 4-byte and a 1-byte store, then one 8-byte
/// load), a store-forwarding stall of about 5 ns on the reference machine, in the function
/// itself: `baseline/fnptr/send` measures that floor.
constexpr std::optional<Light> (*step)(const Light&, const Tick&) = kStep;

/// The state after `advances` Advance events from Red.
Light after_advances(std::int64_t advances) {
  static constexpr Light kCycle[] = {Light::Red, Light::Green, Light::Yellow};
  return kCycle[advances % 3];
}

using trellis_bench::check;

/// CPU time per unit when an iteration handles `per_iteration` units (seconds in JSON, an SI
/// prefix on the console).
benchmark::Counter time_per(double per_iteration) {
  return benchmark::Counter(
      per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// An event the optimizer cannot see through (it may have changed in a register).
Tick opaque(Tick e) {
  benchmark::DoNotOptimize(e);
  return e;
}

// ---------------------------------------------------------------- baselines: a hand-written switch

namespace baseline {

/// The traffic light as a hand-written switch, the floor for one send.
struct SwitchLight {
  Light s = Light::Red;
  /// True when the state changed.
  bool send(Tick e) {
    switch (s) {
      case Light::Red:
        if (e == Tick::Advance) return s = Light::Green, true;
        return false;
      case Light::Green:
        if (e == Tick::Advance) return s = Light::Yellow, true;
        if (e == Tick::Skip) return s = Light::Red, true;
        return false;
      case Light::Yellow:
        if (e == Tick::Advance) return s = Light::Red, true;
        return false;
    }
    return false;
  }
};

void send(benchmark::State& st) {
  SwitchLight m;
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    m.send(opaque(Tick::Advance));
    benchmark::ClobberMemory();
  }
  check(st, m.s == after_advances(st.iterations()), "wrong final state");
}

/// `step` called through `Fn` (which holds it), its result stored as a machine does: the
/// floor of a runner that calls the transition through a pointer or a std::function.
template <class Fn>
struct CalledLight {
  Fn f = step;
  Light s = Light::Red;
  bool send(Tick e) {
    std::optional<Light> next = f(s, e);
    if (!next || *next == s) return false;
    s = *next;
    return true;
  }
};

/// The floor of a machine running a function pointer: `step` called through a plain pointer
/// the optimizer cannot see through.
using FnptrLight = CalledLight<std::optional<Light> (*)(const Light&, const Tick&)>;

void fnptr_send(benchmark::State& st) {
  FnptrLight m;
  benchmark::DoNotOptimize(m.f);
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    m.send(opaque(Tick::Advance));
    benchmark::ClobberMemory();
  }
  check(st, m.s == after_advances(st.iterations()), "wrong final state");
}

/// The machine's own shape without the reactive cell: `step` called through a
/// `std::function<std::optional<Light>(const Light&, const Tick&)>`, the result stored. The
/// floor of any runner that takes an arbitrary callable and type-erases it.
using FunctionLight = CalledLight<std::function<std::optional<Light>(const Light&, const Tick&)>>;

void function_send(benchmark::State& st) {
  FunctionLight m;
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    m.send(opaque(Tick::Advance));
    benchmark::ClobberMemory();
  }
  check(st, m.s == after_advances(st.iterations()), "wrong final state");
}

void function_rejected(benchmark::State& st) {
  FunctionLight m;
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Skip)));
    benchmark::ClobberMemory();
  }
  check(st, m.s == Light::Red, "a rejected event moved the state");
}

/// The switch, then one `std::function` observer called by hand on each transition.
void on_transition(benchmark::State& st) {
  SwitchLight m;
  long seen = 0;
  std::vector<std::function<void(Light, Light)>> observers;
  observers.emplace_back([&seen](Light from, Light to) { seen += from != to ? 1 : 0; });
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    const Light from = m.s;
    if (m.send(opaque(Tick::Advance))) {
      for (auto& f : observers) f(from, m.s);
    }
    benchmark::ClobberMemory();
  }
  check(st, seen == st.iterations() && m.s == after_advances(st.iterations()),
        "wrong observer count or final state");
}

/// The switch, then a flag kept equal to (state == Red): what a state_is signal maintains.
void state_is(benchmark::State& st) {
  SwitchLight m;
  bool red = true;
  benchmark::DoNotOptimize(&m);
  benchmark::DoNotOptimize(&red);
  for (auto _ : st) {
    if (m.send(opaque(Tick::Advance))) red = m.s == Light::Red;
    benchmark::ClobberMemory();
  }
  check(st, red == (m.s == Light::Red) && m.s == after_advances(st.iterations()),
        "wrong flag or final state");
}

void rejected(benchmark::State& st) {
  SwitchLight m;
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Skip)));
    benchmark::ClobberMemory();
  }
  check(st, m.s == Light::Red, "a rejected event moved the state");
}

/// The switch behind a plain std::mutex, one thread.
void mutex_send(benchmark::State& st) {
  SwitchLight m;
  std::mutex mu;
  benchmark::DoNotOptimize(&m);
  for (auto _ : st) {
    std::lock_guard lock(mu);
    m.send(opaque(Tick::Advance));
    benchmark::ClobberMemory();
  }
  check(st, m.s == after_advances(st.iterations()), "wrong final state");
}

/// The async floor, built like AsyncContext: a send updates the switch and appends (from, to)
/// to a log under a mutex; the first entry of an empty log enqueues one task on a oneTBB arena
/// that delivers the whole log to the observer; drain() waits on a condition variable until no
/// task is in flight.
class AsyncLight {
 public:
  explicit AsyncLight(std::function<void(Light, Light)> observer)
      : arena_(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1), 0),
        observer_(std::move(observer)) {}
  ~AsyncLight() { drain(); }

  void send(Tick e) {
    std::lock_guard lock(mu_);
    const Light from = m_.s;
    if (!m_.send(e)) return;
    log_.emplace_back(from, m_.s);
    if (log_.size() == 1) {
      in_flight_.fetch_add(1, std::memory_order_relaxed);
      arena_.enqueue([this] { deliver(); });
    }
  }

  void drain() {
    std::unique_lock lock(idle_mu_);
    idle_.wait(lock, [this] { return in_flight_.load(std::memory_order_acquire) == 0; });
  }

  Light state() {
    std::lock_guard lock(mu_);
    return m_.s;
  }

 private:
  void deliver() {
    {
      std::lock_guard lock(mu_);  // observers of one machine never overlap, as in trellis
      std::vector<std::pair<Light, Light>> batch;
      batch.swap(log_);
      for (const auto& [from, to] : batch) observer_(from, to);
    }
    std::lock_guard guard(idle_mu_);
    if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.notify_all();
  }

  tbb::task_arena arena_;
  std::function<void(Light, Light)> observer_;
  std::mutex mu_;
  SwitchLight m_;
  std::vector<std::pair<Light, Light>> log_;
  std::atomic<long> in_flight_{0};
  std::mutex idle_mu_;
  std::condition_variable idle_;
};

void async_observed(benchmark::State& st) {
  const auto n = st.range(0);
  std::atomic<long> seen{0};
  AsyncLight m([&seen](Light, Light) {
    seen.store(seen.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  });
  for (auto _ : st) {
    for (std::int64_t i = 0; i < n; ++i) m.send(opaque(Tick::Advance));
    m.drain();
  }
  st.counters["per_transition"] = time_per(static_cast<double>(n));
  check(st, seen.load() == st.iterations() * n && m.state() == after_advances(st.iterations() * n),
        "wrong observer count or final state");
}

}  // namespace baseline

// ---------------------------------------------------------------- trellis: StateMachine

namespace machine {

/// send(Advance) with the transition `f`.
template <class F>
void send_with(benchmark::State& st, F f) {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, f};
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Advance)));
  }
  check(st, m.state() == after_advances(st.iterations()), "wrong final state");
}

/// send(Advance) with `step`, a plain function pointer.
void send_fnptr(benchmark::State& st) { send_with(st, step); }

/// send(Advance) with the same function as a lambda, which the machine can inline.
void send_lambda(benchmark::State& st) { send_with(st, kStep); }

/// A rejected event (Skip from Red) with the lambda.
void rejected_lambda(benchmark::State& st) {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, kStep};
  if (!check(st, m.send(Tick::Skip) == trellis::SendResult::Rejected, "Skip from Red accepted"))
    return;
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Skip)));
  }
  check(st, m.state() == Light::Red, "a rejected event moved the state");
}

/// N on_transition observers (the target is for N = 1).
void on_transition(benchmark::State& st) {
  const auto n = st.range(0);
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, step};
  long seen = 0;
  std::vector<trellis::Subscription> subs;
  for (std::int64_t k = 0; k < n; ++k) {
    subs.push_back(m.on_transition(
        [&seen](const Light& from, const Light& to) { seen += from != to ? 1 : 0; }));
  }
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Advance)));
  }
  check(st, seen == st.iterations() * n && m.state() == after_advances(st.iterations()),
        "wrong observer count or final state");
}

void state_is(benchmark::State& st) {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, step};
  auto red = m.state_is(Light::Red);
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Advance)));
  }
  check(st, red.get() == (m.state() == Light::Red) && m.state() == after_advances(st.iterations()),
        "state_is is stale or the final state is wrong");
}

void rejected(benchmark::State& st) {
  trellis::Context ctx;
  trellis::StateMachine<Light, Tick> m{ctx, Light::Red, step};
  if (!check(st, m.send(Tick::Skip) == trellis::SendResult::Rejected, "Skip from Red accepted"))
    return;
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Skip)));
  }
  check(st, m.state() == Light::Red, "a rejected event moved the state");
}

void thread_safe_send(benchmark::State& st) {
  trellis::ThreadSafeContext ctx;
  trellis::ThreadSafeStateMachine<Light, Tick> m{ctx, Light::Red, step};
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Advance)));
  }
  check(st, m.state() == after_advances(st.iterations()), "wrong final state");
}

/// The same with the lambda: what the lock path costs around an inlined decision.
void thread_safe_send_lambda(benchmark::State& st) {
  trellis::ThreadSafeContext ctx;
  trellis::ThreadSafeStateMachine<Light, Tick> m{ctx, Light::Red, kStep};
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(opaque(Tick::Advance)));
  }
  check(st, m.state() == after_advances(st.iterations()), "wrong final state");
}

void async_observed(benchmark::State& st) {
  const auto n = st.range(0);
  trellis::AsyncContext ctx;
  trellis::AsyncStateMachine<Light, Tick> m{ctx, Light::Red, step};
  // Observers of one machine never overlap and drain() orders their runs before this thread's
  // reads: a relaxed load + store (no locked instruction) is enough.
  std::atomic<long> seen{0};
  auto sub = m.on_transition([&seen](const Light&, const Light&) {
    seen.store(seen.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  });
  m.drain();  // the dispatcher's first run (every effect's first run is scheduled too)
  for (auto _ : st) {
    for (std::int64_t i = 0; i < n; ++i) m.send(opaque(Tick::Advance));
    m.drain();
  }
  st.counters["per_transition"] = time_per(static_cast<double>(n));
  check(st, seen.load() == st.iterations() * n && m.state() == after_advances(st.iterations() * n),
        "wrong observer count or final state");
}

}  // namespace machine

// ---------------------------------------------------------------- registration

void register_all() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("baseline/switch/send", baseline::send);
  RegisterBenchmark("baseline/function/send", baseline::function_send);
  RegisterBenchmark("baseline/fnptr/send", baseline::fnptr_send);
  RegisterBenchmark("machine/StateMachine/send_fnptr", machine::send_fnptr);
  RegisterBenchmark("machine/StateMachine/send_lambda", machine::send_lambda);
  RegisterBenchmark("baseline/switch/on_transition", baseline::on_transition);
  RegisterBenchmark("machine/StateMachine/on_transition", machine::on_transition)->Arg(1)->Arg(4);
  RegisterBenchmark("baseline/switch/state_is", baseline::state_is);
  RegisterBenchmark("machine/StateMachine/state_is", machine::state_is);
  RegisterBenchmark("baseline/switch/rejected", baseline::rejected);
  RegisterBenchmark("baseline/function/rejected", baseline::function_rejected);
  RegisterBenchmark("machine/StateMachine/rejected", machine::rejected);
  RegisterBenchmark("machine/StateMachine/rejected_lambda", machine::rejected_lambda);

  RegisterBenchmark("baseline/mutex/send", baseline::mutex_send);
  RegisterBenchmark("machine/ThreadSafeStateMachine/send", machine::thread_safe_send);
  RegisterBenchmark("machine/ThreadSafeStateMachine/send_lambda", machine::thread_safe_send_lambda);

  // Observers run on executor threads: wall time per transition, and the CPU column counts
  // every thread of the process (sender, executor workers, their spinning).
  for (int n : {1, 16, 256, 4096}) {
    RegisterBenchmark("baseline/async/observed", baseline::async_observed)
        ->Arg(n)
        ->UseRealTime()
        ->MeasureProcessCPUTime();
    RegisterBenchmark("machine/AsyncStateMachine/observed", machine::async_observed)
        ->Arg(n)
        ->UseRealTime()
        ->MeasureProcessCPUTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  // glibc and libstdc++ take non-atomic fast paths (shared_ptr counts, for one) while a process
  // has never had a second thread; no user of a thread-safe library runs like that.
  std::thread([] {}).join();
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed.load() ? 1 : 0;
}
