/// @file
/// Benchmarks of DurableStateMachine (issue 4, section 4), each beside a hand-written POSIX
/// baseline in the same binary that does the same disk work with no library, so that the
/// ratio of the two rates says what the machine costs on top of the disk:
///
/// - `baseline/rename_protocol` vs `durable/sync`: the sidecar protocol (temp file, write,
///   fsync, rename over the target, fsync of the directory) of a JSON object of the sidecar's
///   size, vs a sync machine whose state is a `long` and whose every event adds 1.
/// - `baseline/append_fdatasync` vs `durable/journal`: one JSONL line of the journal's size
///   appended and fdatasync'd, vs the same machine with the journal on and a compaction
///   interval longer than the run (so that every transition is one append).
/// - `durable/group/threads:N` (N = 1, 2, 4, 8): N threads send to ONE group machine on a
///   ThreadSafeContext; concurrent senders share one sidecar write.
/// - `durable/async/batch:K`: K sends to an async machine per iteration; `lag_epochs` is how
///   far durable_through() is behind epoch() at the end of each timed batch, and `flush_ms` the
///   wall time of the flush() that follows it (not timed).
///
/// Every case counts `transitions_per_s` (for a baseline, one write or append is one
/// transition), per wall-clock second: the work is waiting for the disk, which CPU time would
/// not count. Each case runs a fixed number of iterations (an fsync costs from 0.1 to 10 ms
/// depending on the machine and its load; auto-sizing would run for minutes). Files live in a
/// fresh mkdtemp directory under $TRELLIS_BENCH_DIR (default /tmp) — the disk under test — and
/// are removed at exit. Machines are built before the timed loop and checked after it (the
/// state, and the file re-read from disk); a failed check reports the case with an error and
/// the program exits 1. After the run, the ratios behind the targets are printed; a missed
/// target is printed, not an error.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench_support.hpp"

#include <trellis/trellis.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kIoIterations = 200;  // per thread, for every case that waits on fsync
constexpr std::int64_t kAsyncBatch = 50'000;
constexpr std::int64_t kAsyncIterations = 20;

// ---------------------------------------------------------------- setup

/// The increment machine: the state is a counter, every event adds 1, so the final state
/// tells how many transitions were acknowledged. An enum, so the journal can write it.
enum class Inc { one };
std::optional<long> increment(const long& s, Inc) { return s + 1; }

using trellis_bench::check;

/// The run's scratch directory; fresh() names a new file in it.
class ScratchDir : public trellis_bench::ScratchDir {
 public:
  ScratchDir() : trellis_bench::ScratchDir("trellis-bench-persist") {}
  std::filesystem::path fresh(const std::string& stem, const char* extension = ".json") {
    return trellis_bench::ScratchDir::fresh(stem, extension);
  }
};

ScratchDir* g_dir = nullptr;

/// The wall-clock rates each case measured, for the summary of ratios after the run.
std::mutex g_rates_mutex;
std::map<std::string, std::vector<double>> g_rates;

void record_rate(const std::string& name, double rate) {
  std::lock_guard lock(g_rates_mutex);
  g_rates[name].push_back(rate);
}

std::optional<double> median_rate(const std::string& name) {
  std::lock_guard lock(g_rates_mutex);
  auto it = g_rates.find(name);
  if (it == g_rates.end() || it->second.empty()) return std::nullopt;
  std::vector<double> v = it->second;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Wall time of a timed loop, started just before it and read just after.
class WallClock {
 public:
  WallClock() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

void report_rate(benchmark::State& st, const std::string& name, double transitions,
                 double seconds) {
  st.counters["transitions_per_s"] = benchmark::Counter(transitions, benchmark::Counter::kIsRate);
  if (seconds > 0) record_rate(name, transitions / seconds);
}

// ---------------------------------------------------------------- baselines (POSIX, by hand)

namespace baseline {

/// A sidecar-like JSON object of the real sidecar's size: same members, a fixed checksum.
std::string sidecar_blob(long epoch) {
  char text[320];
  const int n = std::snprintf(
      text, sizeof text,
      "{\"format\":\"trellis.sidecar\",\"version\":1,\"machine\":\"counter\",\"schema\":1,"
      "\"epoch\":%ld,\"state\":%ld,\"updated_at\":\"2024-05-01T12:00:00.000Z\","
      "\"checksum\":\"sha256:"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}\n",
      epoch, epoch);
  return std::string(text, static_cast<std::size_t>(n));
}

/// A journal-like JSONL line of the real journal line's size.
std::string journal_line(long epoch) {
  char text[256];
  const int n =
      std::snprintf(text, sizeof text,
                    "{\"epoch\":%ld,\"event\":0,\"from\":%ld,\"to\":%ld,\"checksum\":\"sha256:"
                    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}\n",
                    epoch, epoch - 1, epoch);
  return std::string(text, static_cast<std::size_t>(n));
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/// One atomic replacement of `target`: temp file, write, fsync, close, rename, directory fsync.
bool replace_file(const fs::path& target, const std::string& temp, const fs::path& dir,
                  const std::string& bytes) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd < 0) return false;
  const bool written = write_all(fd, bytes) && ::fsync(fd) == 0;
  if (::close(fd) != 0 || !written) return false;
  if (::rename(temp.c_str(), target.c_str()) != 0) return false;
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return false;
  const bool synced = ::fsync(dfd) == 0;
  return ::close(dfd) == 0 && synced;
}

void rename_protocol(benchmark::State& st) {
  const fs::path target = g_dir->fresh("raw-sidecar");
  const std::string temp = target.string() + ".tmp";
  const fs::path dir = target.parent_path();
  long epoch = 0;
  bool ok = true;
  WallClock clock;
  for (auto _ : st) {
    ok = replace_file(target, temp, dir, sidecar_blob(++epoch)) && ok;
  }
  const double seconds = clock.seconds();
  if (!check(st, ok, "a raw write failed")) return;
  std::error_code ec;
  if (!check(st, fs::file_size(target, ec) == sidecar_blob(epoch).size(), "wrong file size"))
    return;
  report_rate(st, "baseline/rename_protocol", static_cast<double>(st.iterations()), seconds);
}

void append_fdatasync(benchmark::State& st) {
  const fs::path file = g_dir->fresh("raw-journal", ".jsonl");
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (!check(st, fd >= 0, "cannot open " + file.string())) return;
  // The machine's Journal fsyncs the directory once when it creates the file, outside its loop.
  const int dfd = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  long epoch = 0;
  std::uint64_t bytes = 0;
  bool ok = true;
  WallClock clock;
  for (auto _ : st) {
    const std::string line = journal_line(++epoch);
    ok = write_all(fd, line) && ::fdatasync(fd) == 0 && ok;
    bytes += line.size();
  }
  const double seconds = clock.seconds();
  ::close(fd);
  if (!check(st, ok, "a raw append failed")) return;
  std::error_code ec;
  if (!check(st, fs::file_size(file, ec) == bytes, "wrong journal size")) return;
  report_rate(st, "baseline/append_fdatasync", static_cast<double>(st.iterations()), seconds);
}

}  // namespace baseline

// ---------------------------------------------------------------- durable machines

namespace durable {

/// The epoch of the sidecar on disk, re-read through the public loader (-1: none or unreadable).
long epoch_on_disk(const fs::path& path) {
  try {
    std::optional<trellis::SidecarRecord> record = trellis::load_sidecar(path, "");
    return record ? static_cast<long>(record->epoch) : -1;
  } catch (const trellis::error&) {
    return -1;
  }
}

void sync(benchmark::State& st) {
  const fs::path path = g_dir->fresh("sync");
  long acknowledged = 0;
  {
    trellis::Context ctx;
    trellis::DurableStateMachine<long, Inc> m{
        ctx, path, 0L, increment, {.durability = trellis::Durability::sync}};
    WallClock clock;
    for (auto _ : st) {
      if (m.send(Inc::one) == trellis::SendResult::Transitioned) ++acknowledged;
    }
    const double seconds = clock.seconds();
    const long n = static_cast<long>(st.iterations());
    if (!check(st, acknowledged == n && m.state() == n, "wrong state")) return;
    report_rate(st, "durable/sync", static_cast<double>(n), seconds);
  }
  check(st, epoch_on_disk(path) == acknowledged, "the sidecar on disk is not at the last epoch");
}

void journal(benchmark::State& st) {
  const fs::path path = g_dir->fresh("journal");
  trellis::Context ctx;
  trellis::DurableStateMachine<long, Inc> m{
      ctx, path, 0L, increment, {.journal = true, .compact_every = std::size_t{1} << 40}};
  WallClock clock;
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.send(Inc::one));
  }
  const double seconds = clock.seconds();
  const long n = static_cast<long>(st.iterations());
  if (!check(st, m.state() == n, "wrong state")) return;
  const trellis::JournalContents on_disk = trellis::read_journal(trellis::journal_path_for(path));
  if (!check(st,
             static_cast<long>(on_disk.entries.size()) == n && !on_disk.torn &&
                 on_disk.entries.back().to == n,
             "the journal on disk does not hold every transition"))
    return;
  report_rate(st, "durable/journal", static_cast<double>(n), seconds);
}

/// One group machine shared by the benchmark's threads. Thread 0 builds it before the loop and
/// checks it after; the loop's start and end are barriers for all threads.
struct Group {
  fs::path path;
  trellis::ThreadSafeContext ctx;
  trellis::DurableStateMachine<long, Inc> m;
  explicit Group(fs::path p)
      : path(std::move(p)),
        m{ctx, path, 0L, increment, {.durability = trellis::Durability::group}} {}
};

void group(benchmark::State& st) {
  static Group* shared = nullptr;
  if (st.thread_index() == 0) shared = new Group(g_dir->fresh("group"));
  std::optional<WallClock> clock;
  for (auto _ : st) {
    if (!clock) clock.emplace();  // the first pass is after the start barrier
    benchmark::DoNotOptimize(shared->m.send(Inc::one));
  }
  const double seconds = clock ? clock->seconds() : 0.0;
  st.counters["transitions_per_s"] =
      benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
  if (st.thread_index() != 0) return;
  // Thread 0 leaves the loop after the end barrier: every thread has finished sending.
  const long expected = static_cast<long>(st.iterations()) * st.threads();
  const long state = shared->m.state();
  const fs::path path = shared->path;
  delete shared;
  shared = nullptr;
  if (!check(st, state == expected,
             "lost transitions: state " + std::to_string(state) + " after " +
                 std::to_string(expected) + " sends"))
    return;
  if (!check(st, epoch_on_disk(path) == expected, "the sidecar on disk is not at the last epoch"))
    return;
  record_rate("durable/group/threads:" + std::to_string(st.threads()),
              static_cast<double>(expected) / seconds);
}

void async(benchmark::State& st) {
  const fs::path path = g_dir->fresh("async");
  trellis::Context ctx;
  trellis::DurableStateMachine<long, Inc> m{
      ctx, path, 0L, increment, {.durability = trellis::Durability::async}};
  trellis::Signal<std::uint64_t> durable = m.durable_through();
  const std::int64_t batch = st.range(0);
  double timed = 0;
  double lag_sum = 0;
  double lag_max = 0;
  double flush_seconds = 0;
  for (auto _ : st) {
    WallClock clock;
    for (std::int64_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(m.send(Inc::one));
    const double lag = static_cast<double>(m.epoch() - durable.get());
    timed += clock.seconds();
    st.PauseTiming();
    lag_sum += lag;
    lag_max = std::max(lag_max, lag);
    WallClock flushing;
    m.flush();
    flush_seconds += flushing.seconds();
    st.ResumeTiming();
  }
  const double iterations = static_cast<double>(st.iterations());
  const long n = static_cast<long>(st.iterations() * batch);
  st.counters["transitions_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
  st.counters["lag_epochs"] = lag_sum / iterations;
  st.counters["lag_epochs_max"] = lag_max;
  st.counters["flush_ms"] = flush_seconds / iterations * 1e3;
  if (!check(st, m.state() == n && durable.get() == static_cast<std::uint64_t>(n),
             "wrong state or durable_through after flush()"))
    return;
  if (!check(st, epoch_on_disk(path) == n, "the sidecar on disk is not at the last epoch")) return;
  if (timed > 0) record_rate("durable/async", static_cast<double>(n) / timed);
}

}  // namespace durable

// ---------------------------------------------------------------- registration, summary

void register_all() {
  using benchmark::RegisterBenchmark;
  // Each baseline runs right before its machine, so that both see the same disk and load.
  RegisterBenchmark("baseline/rename_protocol", baseline::rename_protocol)
      ->Iterations(kIoIterations)
      ->UseRealTime();
  RegisterBenchmark("durable/sync", durable::sync)->Iterations(kIoIterations)->UseRealTime();
  RegisterBenchmark("baseline/append_fdatasync", baseline::append_fdatasync)
      ->Iterations(kIoIterations)
      ->UseRealTime();
  RegisterBenchmark("durable/journal", durable::journal)->Iterations(kIoIterations)->UseRealTime();
  for (int threads : {1, 2, 4, 8}) {
    RegisterBenchmark("durable/group", durable::group)
        ->Iterations(kIoIterations)
        ->Threads(threads)
        ->UseRealTime();
  }
  RegisterBenchmark("durable/async/batch", durable::async)
      ->Arg(kAsyncBatch)
      ->Iterations(kAsyncIterations)
      ->UseRealTime();
}

/// Prints "name: ratio (target)" for each target whose cases ran (medians over repetitions).
void print_targets() {
  struct Target {
    const char* label;
    std::string numerator;
    std::string denominator;  // empty: an absolute rate
    double at_least;
  };
  const Target targets[] = {
      {"sync / raw rename protocol", "durable/sync", "baseline/rename_protocol", 0.9},
      {"journal / raw fdatasync append", "durable/journal", "baseline/append_fdatasync", 0.9},
      {"group, 8 senders / sync", "durable/group/threads:8", "durable/sync", 5.0},
      {"async transitions per second", "durable/async", "", 1e6},
  };
  std::printf("\ntargets (wall-clock rates, medians of this run):\n");
  for (const Target& t : targets) {
    const std::optional<double> num = median_rate(t.numerator);
    const std::optional<double> den =
        t.denominator.empty() ? std::optional<double>(1.0) : median_rate(t.denominator);
    if (!num || !den || *den <= 0) continue;
    const double value = *num / *den;
    const bool met = value >= t.at_least;
    if (t.denominator.empty()) {
      std::printf("  %-32s %12.0f  (target >= %.0f)  %s\n", t.label, value, t.at_least,
                  met ? "met" : "MISSED");
    } else {
      std::printf("  %-32s %12.2fx (target >= %.1fx) %s  [%.0f/s vs %.0f/s]\n", t.label, value,
                  t.at_least, met ? "met" : "MISSED", *num, *den);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ScratchDir dir;
  g_dir = &dir;
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("scratch directory: %s\n", dir.path().c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_targets();
  return trellis_bench::failed.load() ? 1 : 0;
}
