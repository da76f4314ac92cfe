// SPDX-License-Identifier: MIT
/// @file
/// What a crash does to a DurableStateMachine (issue 4, section 3). A fresh child process
/// (posix_spawn: fork + exec, never a bare fork of this threaded process) runs
/// `durable_child`, a counter that sends +1 and prints what was acknowledged; it is SIGKILLed
/// at a failpoint or after a random delay, and the parent reopens the sidecar and checks:
///
/// - the files parse (no recovery_error) and the recovered state matches its epoch;
/// - the epoch never goes back across runs, and the next child starts where we recovered;
/// - sync, group, journal: the recovered epoch covers every acknowledged transition and
///   exceeds them by at most the sends in flight (one per sending thread);
/// - async: the recovered epoch lies between the last durable_through the child printed and
///   the last epoch it sent.
///
/// The random loop prints its seed; TRELLIS_KILL_SEED replays it and TRELLIS_KILL_TRIALS sets
/// the number of trials (default 200, scaled by TRELLIS_TEST_SCALE). Every trial asked for must
/// run: a loop that its deadline (200 s; TRELLIS_KILL_DEADLINE_S) stops short fails, saying how
/// many ran (trellis_test::TrialBudget).
#include <trellis/persist/durable_state_chart.hpp>
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/reactive/context.hpp>

#include <signal.h>
#include <sys/types.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "flip_chart.hpp"
#include "persist_test_support.hpp"
#include "test_support.hpp"

using persist_test::Child;
using persist_test::ScratchDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using Counter = trellis::DurableStateMachine<int, int>;

std::optional<int> step(const int& s, const int& e) { return s + e; }

enum class Mode { sync, group, async, journal };

const char* name_of(Mode mode) {
  switch (mode) {
    case Mode::sync:
      return "sync";
    case Mode::group:
      return "group";
    case Mode::async:
      return "async";
    case Mode::journal:
      return "journal";
  }
  return "?";
}

constexpr int group_threads = 4;

/// What a child printed before it died.
struct Report {
  bool started = false;
  std::uint64_t start = 0;
  std::size_t acks = 0;
  std::uint64_t max_ack = 0;
  std::optional<std::uint64_t> max_sent;
  std::uint64_t max_durable = 0;
  bool done = false;
  std::string output;
};

Report parse(const std::string& output) {
  Report r;
  r.output = output;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line without its newline: not a whole line
    std::istringstream words(line);
    std::string word;
    std::uint64_t value = 0;
    words >> word >> value;
    if (word == "start") {
      r.started = true;
      r.start = value;
    } else if (word == "ack") {
      ++r.acks;
      r.max_ack = std::max(r.max_ack, value);
    } else if (word == "sent") {
      r.max_sent = std::max(r.max_sent.value_or(0), value);
    } else if (word == "durable") {
      r.max_durable = std::max(r.max_durable, value);
    } else if (word == "done") {
      r.done = true;
    }
  }
  return r;
}

Child spawn_child(Mode mode, const fs::path& file, int sends,
                  const std::vector<std::string>& env = {}) {
  const int per_thread = mode == Mode::group ? std::max(1, sends / group_threads) : sends;
  return persist_test::spawn_program(
      TRELLIS_DURABLE_CHILD,
      {name_of(mode), file.string(), std::to_string(per_thread), std::to_string(group_threads)},
      env);
}

/// Reads the child's output for `period` (so that it never blocks on a full pipe).
void read_for(const Child& child, std::chrono::microseconds period, std::string& out) {
  const auto end = Clock::now() + period;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    pollfd p{child.output_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0) {
      if (Clock::now() >= end) return;
      continue;
    }
    char buffer[4096];
    const ssize_t got = ::read(child.output_fd, buffer, sizeof buffer);
    if (got <= 0) return;  // the child is gone
    out.append(buffer, static_cast<std::size_t>(got));
    if (Clock::now() >= end) return;
  }
}

/// Reopens the sidecar the way the parent would after a crash and checks the invariants
/// against what the child printed. `epoch` is the epoch before this child ran; it is updated.
/// Returns the machine's recovery report.
trellis::RecoveryReport check_recovery(Mode mode, const fs::path& file, const Report& child,
                                       std::uint64_t& epoch) {
  INFO("mode " << name_of(mode) << "; child output:\n" << child.output);
  trellis::Context ctx;
  std::optional<Counter> m;
  try {
    m.emplace(ctx, file, 0, step, trellis::DurableOptions{.journal = mode == Mode::journal});
  } catch (const trellis::error& e) {
    FAIL_CHECK("reopening after the kill failed: " << e.what());
    return {};
  }
  const std::uint64_t recovered = m->epoch();
  CHECK(m->state() == static_cast<int>(recovered));
  CHECK(recovered >= epoch);  // never goes back
  if (child.started) CHECK(child.start == epoch);

  if (!child.started) {
    CHECK(recovered == epoch);  // killed before its first send
  } else if (mode == Mode::async) {
    CHECK(recovered >= child.max_durable);
    CHECK(recovered <= child.max_sent.value_or(epoch));
  } else {
    const std::uint64_t in_flight = mode == Mode::group ? group_threads : 1;
    CHECK(recovered >= child.max_ack);
    CHECK(recovered <= child.start + child.acks + in_flight);
    if (child.done) CHECK(recovered == child.start + child.acks);
  }
  epoch = recovered;
  return m->recovery();
}

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

}  // namespace

TEST_CASE("crash: SIGKILL at every failpoint loses no acknowledged transition") {
  struct Config {
    std::string failpoint;
    Mode mode;
  };
  std::vector<Config> configs;
  for (std::string_view fp : trellis::failpoint_names) {
    if (fp.starts_with("journal.")) {
      configs.push_back({std::string(fp), Mode::journal});
    } else if (fp.starts_with("sidecar.")) {
      for (Mode mode : {Mode::sync, Mode::group, Mode::async, Mode::journal})
        configs.push_back({std::string(fp), mode});
    }
  }
  // Every sidecar failpoint, in every mode that writes the sidecar (journal: at compaction),
  // and the journal's failpoints: each armed for the 1st, 2nd and 3rd hit, the runs one after
  // the other on one file, so the epoch accumulates across crashes.
  for (const Config& config : configs) {
    ScratchDir dir;
    const fs::path file = dir / "counter.json";
    std::uint64_t epoch = 0;
    for (unsigned hit = 1; hit <= 3; ++hit) {
      INFO("failpoint " << config.failpoint << "@" << hit << " in " << name_of(config.mode));
      Child child =
          spawn_child(config.mode, file, 12,
                      {"TRELLIS_FAILPOINT=" + config.failpoint + ":kill@" + std::to_string(hit)});
      const std::string output = persist_test::read_all_output(child, std::chrono::seconds(60));
      const int status = persist_test::wait_child(child);
      REQUIRE_MESSAGE(persist_test::killed_by_sigkill(status),
                      "the failpoint did not kill the child; output:\n"
                          << output);
      const trellis::RecoveryReport report =
          check_recovery(config.mode, file, parse(output), epoch);
      if (config.failpoint == "sidecar.after_temp_write" ||
          config.failpoint == "sidecar.after_temp_fsync") {
        CHECK(report.temps_removed == 1);  // the crashed write's temporary file
      }
      if (config.failpoint == "journal.mid_append") {
        CHECK(report.torn_tail.has_value());  // the half line, cut
      }
    }
  }
}

TEST_CASE("crash: SIGKILL at random times loses no acknowledged transition") {
  const std::uint64_t seed = env_number("TRELLIS_KILL_SEED", std::random_device{}());
  // A slow machine fails with the count it ran rather than time out (the whole suite has 300 s;
  // an idle machine runs the 200 trials in about 10 s).
  auto trials = trellis_test::TrialBudget::from_environment(200, std::chrono::seconds(200));
  std::printf(
      "crash: random kill loop: %d trials asked, seed %llu (TRELLIS_KILL_SEED=%llu "
      "replays)\n",
      trials.wanted(), static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  MESSAGE("random kill loop seed " << seed);
  std::mt19937_64 rng(seed);

  ScratchDir dir;
  // How long a child takes to start and open its machine: the kill delays span a little
  // more than that, so some kills land during startup and recovery, most during the sends.
  const auto warm_start = Clock::now();
  {
    Child child = spawn_child(Mode::sync, dir / "warmup.json", 0);
    (void)persist_test::read_all_output(child);
    REQUIRE(persist_test::wait_child(child) == 0);
  }
  const auto startup =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - warm_start);
  const std::chrono::microseconds max_delay = 2 * startup + std::chrono::milliseconds(40);
  MESSAGE("child startup " << startup.count() << " us; kill delays up to " << max_delay.count()
                           << " us");

  std::map<Mode, std::uint64_t> epochs;
  std::map<Mode, int> killed_mid_run;
  for (int trial = 0; trials.another(); ++trial) {
    const Mode mode = static_cast<Mode>(trial % 4);
    const auto delay = std::chrono::microseconds(
        std::uniform_int_distribution<std::int64_t>(0, max_delay.count())(rng));
    INFO("seed " << seed << ", trial " << trial << ", mode " << name_of(mode) << ", delay "
                 << delay.count() << " us");
    const fs::path file = dir / (std::string(name_of(mode)) + ".json");
    Child child = spawn_child(mode, file, 1'000'000);
    std::string output;
    read_for(child, delay, output);
    ::kill(child.pid, SIGKILL);
    output += persist_test::read_all_output(child);
    const int status = persist_test::wait_child(child);
    REQUIRE_MESSAGE(persist_test::killed_by_sigkill(status), "output:\n" << output);
    const Report report = parse(output);
    if (report.started) ++killed_mid_run[mode];
    check_recovery(mode, file, report, epochs[mode]);
    trials.done();
  }
  std::printf("crash: random kill loop: ran %d of %d trials\n", trials.ran(), trials.wanted());
  MESSAGE("ran " << trials.ran() << " of " << trials.wanted() << " trials; epochs reached: sync "
                 << epochs[Mode::sync] << ", group " << epochs[Mode::group] << ", async "
                 << epochs[Mode::async] << ", journal " << epochs[Mode::journal]);
  CHECK_MESSAGE(trials.shortfall().empty(), trials.shortfall());
  // The delays must reach the sends, or the loop tests only startup.
  for (Mode mode : {Mode::sync, Mode::group, Mode::async, Mode::journal}) {
    INFO("mode " << name_of(mode));
    CHECK(epochs[mode] > 0);
  }
}

TEST_CASE("crash: a kill loop stopped short by its deadline fails, saying how many trials ran") {
  const auto now = std::chrono::steady_clock::now();
  trellis_test::TrialBudget all(3, std::nullopt);
  while (all.another()) all.done();
  CHECK(all.ran() == 3);
  CHECK(all.shortfall().empty());

  trellis_test::TrialBudget late(200, now + std::chrono::hours(1));
  for (int i = 0; i < 5 && late.another(); ++i) late.done();
  CHECK(late.ran() == 5);
  CHECK(late.shortfall().find("the loop stopped after 5 of 200 trials") == 0);

  trellis_test::TrialBudget past(200, now);  // a deadline already reached: no trial starts
  CHECK_FALSE(past.another());
  CHECK(past.ran() == 0);
  CHECK(past.shortfall().find("the deadline stopped the loop after 0 of 200 trials") == 0);
}

TEST_CASE("crash: another process's machine refuses us until it is SIGKILLed") {
  ScratchDir dir;
  const fs::path file = dir / "counter.json";
  Child holder = persist_test::spawn_program(TRELLIS_DURABLE_CHILD, {"hold", file.string()});
  REQUIRE(persist_test::read_line(holder) == "start 0\n");
  trellis::Context ctx;
  try {
    Counter m(ctx, file, 0, step);
    FAIL("a second owner was let in");
  } catch (const trellis::sidecar_locked& e) {
    CHECK(e.path() == file);
    CHECK(e.holder() == holder.pid);
    CHECK(std::string(e.what()).find(std::to_string(holder.pid)) != std::string::npos);
  }
  ::kill(holder.pid, SIGKILL);
  CHECK(persist_test::killed_by_sigkill(persist_test::wait_child(holder)));
  CHECK_NOTHROW(Counter(ctx, file, 0, step));
}

TEST_CASE(
    "crash: a durable chart SIGKILLed at random times resumes with each delayed send fired once") {
  // The flip chart (flip_chart.hpp): each "flip" queues a "tick" due at once. Killed at any
  // point, the reopened chart (its constructor delivers the ticks due) must hold every
  // acknowledged flip, at most one more, exactly as many ticks (none lost, none twice), no
  // pending send, and the state the flips' parity names.
  const std::uint64_t seed = env_number("TRELLIS_KILL_SEED", std::random_device{}());
  auto trials = trellis_test::TrialBudget::from_environment(40, std::chrono::seconds(100), 10);
  MESSAGE("durable chart kill loop: " << trials.wanted() << " trials, seed " << seed
                                      << " (TRELLIS_KILL_SEED replays)");
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const fs::path file = dir / "flips.json";
  const auto warm_start = Clock::now();
  {
    Child child = persist_test::spawn_program(TRELLIS_DURABLE_CHILD,
                                              {"chart", (dir / "warmup.json").string(), "0"});
    (void)persist_test::read_all_output(child);
    REQUIRE(persist_test::wait_child(child) == 0);
  }
  const auto startup =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - warm_start);
  const std::chrono::microseconds max_delay = 2 * startup + std::chrono::milliseconds(40);
  std::uint64_t flips = 0;
  int mid_run = 0;
  for (int trial = 0; trials.another(); ++trial) {
    const auto delay = std::chrono::microseconds(
        std::uniform_int_distribution<std::int64_t>(0, max_delay.count())(rng));
    INFO("seed " << seed << ", trial " << trial << ", delay " << delay.count() << " us");
    Child child =
        persist_test::spawn_program(TRELLIS_DURABLE_CHILD, {"chart", file.string(), "1000000"});
    std::string output;
    read_for(child, delay, output);
    ::kill(child.pid, SIGKILL);
    output += persist_test::read_all_output(child);
    REQUIRE_MESSAGE(
        persist_test::killed_by_sigkill(persist_test::wait_child(child)), "output:\n"
                                                                              << output);
    const Report report = parse(output);
    INFO("child output:\n" << output);
    if (report.started) {
      ++mid_run;
      CHECK(report.start == flips);
    }
    trellis::Context ctx;
    std::optional<trellis::DurableStateChart<flip_chart::Flips>> chart;
    try {
      chart.emplace(ctx, file, flip_chart::make());
    } catch (const trellis::error& e) {
      FAIL("reopening after the kill failed: " << e.what());
    }
    const flip_chart::Flips data = chart->data();
    const auto recovered = static_cast<std::uint64_t>(data.flips);
    CHECK(recovered >= flips);  // never goes back
    if (report.started) {
      CHECK(recovered >= report.max_ack);
      CHECK(recovered <= report.start + report.acks + 1);
    } else {
      CHECK(recovered == flips);
    }
    CHECK(data.ticks == data.flips);
    CHECK(chart->pending_sends().empty());
    CHECK(chart->configuration() == std::vector<std::string>{recovered % 2 == 0 ? "even" : "odd"});
    flips = recovered;
    trials.done();
  }
  MESSAGE("ran " << trials.ran() << " of " << trials.wanted() << " trials; " << flips
                 << " flips reached");
  CHECK_MESSAGE(trials.shortfall().empty(), trials.shortfall());
  CHECK(mid_run > 0);
  CHECK(flips > 0);  // the delays reached the sends
}
