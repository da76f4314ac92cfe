// A counter that survives kill -9: a DurableStateMachine (sync) persisted in a JSON sidecar.
// Each run says whether it started fresh or recovered (and at which epoch), then counts N more
// steps, printing each one once it is on disk. Kill it mid-way and run it again: it goes on
// from the last step it printed.
//
//   durable_counter [PATH] [STEPS] [--slow]
//     PATH   the sidecar (default ./durable_counter.json; "PATH.lock" is created beside it)
//     STEPS  how many steps this run adds (default 5)
//     --slow sleep between steps (or set DURABLE_COUNTER_SLOW=1), time enough to kill -9 it
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <trellis/persist/durable_state_machine.hpp>

enum class Count { step };
std::optional<long> count(const long& n, Count) { return n + 1; }  // pure, like any step

int main(int argc, char** argv) {
  std::string path = "./durable_counter.json";
  long steps = 5;
  const char* slow_env = std::getenv("DURABLE_COUNTER_SLOW");
  bool slow = slow_env != nullptr && *slow_env != '\0' && std::string(slow_env) != "0";
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--slow") {
      slow = true;
    } else if (positional++ == 0) {
      path = arg;
    } else {
      char* end = nullptr;
      steps = std::strtol(arg.c_str(), &end, 10);
      if (positional > 2 || arg.empty() || *end != '\0' || steps < 0) {
        std::fprintf(stderr, "usage: durable_counter [PATH] [STEPS >= 0] [--slow]\n");
        return 2;
      }
    }
  }

  try {
    trellis::Context ctx;
    trellis::DurableStateMachine<long, Count> counter{
        ctx, path, 0L, count, {.durability = trellis::Durability::sync}};
    const trellis::RecoveryReport& found = counter.recovery();
    if (found.from_sidecar) {
      std::printf("recovered from %s at epoch %llu: counter = %ld\n", path.c_str(),
                  static_cast<unsigned long long>(found.epoch), counter.state());
    } else {
      std::printf("fresh start at %s: counter = %ld\n", path.c_str(), counter.state());
    }
    if (found.temps_removed > 0)
      std::printf("removed %zu temporary file(s) left by an interrupted write\n",
                  found.temps_removed);
    std::fflush(stdout);

    for (long i = 0; i < steps; ++i) {
      if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      counter.send(Count::step);  // sync: on disk (fsync'd, renamed) before send() returns
      std::printf("step %llu acknowledged: counter = %ld\n",
                  static_cast<unsigned long long>(counter.epoch()), counter.state());
      std::fflush(stdout);  // a line printed is a step on disk, even if we are killed next
    }
    std::printf("done: counter = %ld, epoch %llu\n", counter.state(),
                static_cast<unsigned long long>(counter.epoch()));
  } catch (const trellis::error& e) {  // sidecar_locked, recovery_error, persist_error
    std::fprintf(stderr, "durable_counter: %s\n", e.what());
    return 1;
  }
}
