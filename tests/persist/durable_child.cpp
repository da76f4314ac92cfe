// SPDX-License-Identifier: MIT
// A child process for crash_test.cpp (started with posix_spawn, then SIGKILLed):
//
//   durable_child sync|group|async|journal <sidecar> <sends> [threads]
//       opens a DurableStateMachine<int, int> counter on <sidecar> in that mode and sends +1
//       <sends> times (group: on each of [threads] threads, default 4). It prints, one line
//       per write(2) so that a kill never leaves half a line:
//         "start E"    the epoch it recovered, before any send
//         "ack E"      sync, group, journal: a send returned; E = epoch() afterwards
//         "sent E"     async: about to send the transition that makes epoch E
//         "durable D"  async: after a flush() (every 2 sends), durable_through() = D
//         "done"       every send finished
//   durable_child hold <sidecar>
//       opens a sync machine, prints "start E" and sleeps until it is killed.
//   durable_child chart <sidecar> <sends>
//       opens the flip chart (flip_chart.hpp) as a sync DurableStateChart and sends "flip"
//       <sends> times; each flip queues a "tick" due at once, delivered by the same send().
//       Prints "start F" (the flips it recovered, after the constructor delivered the ticks
//       due), then "ack F" after each send, then "done".
//
// Failpoints come from TRELLIS_FAILPOINT. Journal mode compacts every 3 transitions, so the
// sidecar's failpoints are reached there too. Exit codes: 0 done, 2 usage, 3 a trellis::error.

#include <trellis/persist/durable_state_chart.hpp>
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/reactive/context.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "flip_chart.hpp"

namespace {

using Counter = trellis::DurableStateMachine<int, int>;

std::optional<int> step(const int& s, const int& e) { return s + e; }

/// One line, one write(2): a pipe write of under PIPE_BUF bytes is atomic, so the parent sees
/// whole lines only, even from several threads.
void say(std::string_view what, std::uint64_t value) {
  char line[64];
  const int n = std::snprintf(line, sizeof line, "%.*s %llu\n", static_cast<int>(what.size()),
                              what.data(), static_cast<unsigned long long>(value));
  if (::write(STDOUT_FILENO, line, static_cast<std::size_t>(n)) != n) std::_Exit(4);
}

void say(std::string_view what) {
  const std::string line = std::string(what) + "\n";
  if (::write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    std::_Exit(4);
}

int run_chart(const std::string& path, int sends) {
  trellis::Context ctx;
  trellis::DurableStateChart<flip_chart::Flips> chart(ctx, path, flip_chart::make());
  say("start", static_cast<std::uint64_t>(chart.data().flips));
  for (int i = 0; i < sends; ++i) {
    (void)chart.send("flip");
    say("ack", static_cast<std::uint64_t>(chart.data().flips));
  }
  say("done");
  return 0;
}

int run(std::string_view mode, const std::string& path, int sends, int threads) {
  if (mode == "chart") return run_chart(path, sends);
  if (mode == "group") {
    trellis::ThreadSafeContext ctx;
    Counter m(ctx, path, 0, step, {.durability = trellis::Durability::group});
    say("start", m.epoch());
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t) {
      senders.emplace_back([&] {
        for (int i = 0; i < sends; ++i) {
          (void)m.send(1);
          say("ack", m.epoch());
        }
      });
    }
    for (auto& s : senders) s.join();
    say("done");
    return 0;
  }

  trellis::Context ctx;
  trellis::DurableOptions options;
  if (mode == "async") {
    options.durability = trellis::Durability::async;
  } else if (mode == "journal") {
    options.journal = true;
    options.compact_every = 3;
  } else if (mode != "sync" && mode != "hold") {
    std::fprintf(stderr, "durable_child: unknown mode '%.*s'\n", static_cast<int>(mode.size()),
                 mode.data());
    return 2;
  }
  Counter m(ctx, path, 0, step, options);
  say("start", m.epoch());
  if (mode == "hold") {
    // The parent SIGKILLs us; the bound only stops an orphan from lingering.
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  for (int i = 0; i < sends; ++i) {
    if (mode == "async") {
      say("sent", m.epoch() + 1);
      (void)m.send(1);
      if (i % 2 == 1) {
        m.flush();
        say("durable", m.durable_through().get());
      }
    } else {
      (void)m.send(1);
      say("ack", m.epoch());
    }
  }
  say("done");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: durable_child sync|group|async|journal|hold <sidecar> [sends]"
                 " [threads]\n");
    return 2;
  }
  const int sends = argc > 3 ? std::stoi(argv[3]) : 0;
  const int threads = argc > 4 ? std::stoi(argv[4]) : 4;
  try {
    return run(argv[1], argv[2], sends, threads);
  } catch (const trellis::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
