// SPDX-License-Identifier: MIT
// A child process for the persist/ tests (started with posix_spawn):
//   persist_helper lock <sidecar>            take the lock, print "locked <pid>", wait to be killed
//   persist_helper store <sidecar> <epoch>   store a record {"n": epoch} for machine "m"
//   persist_helper append <journal> <epoch>  append the entry of `epoch` to the journal
// Failpoints come from TRELLIS_FAILPOINT. Exit codes: 0 done, 2 usage, 3 a trellis::error
// (printed on stderr).

#include <trellis/persist/errors.hpp>
#include <trellis/persist/journal.hpp>
#include <trellis/persist/sidecar.hpp>
#include <trellis/persist/sidecar_lock.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

namespace {

trellis::SidecarRecord record_of(std::uint64_t epoch) {
  return {"m", epoch, 1, nlohmann::json{{"n", epoch}}, trellis::iso8601_utc()};
}

trellis::JournalEntry entry_of(std::uint64_t epoch) {
  return {epoch, nlohmann::json{{"step", epoch}}, nlohmann::json(epoch - 1), nlohmann::json(epoch)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: persist_helper lock|store|append <path> [epoch]\n");
    return 2;
  }
  const std::string_view command = argv[1];
  const std::string path = argv[2];
  const std::uint64_t epoch = argc > 3 ? std::stoull(argv[3]) : 0;
  try {
    if (command == "lock") {
      trellis::SidecarLock lock(path);
      std::printf("locked %d\n", static_cast<int>(::getpid()));
      std::fflush(stdout);
      // The parent SIGKILLs us; the bound only stops an orphan from lingering.
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 0;
    }
    if (command == "store") {
      trellis::store_sidecar(path, record_of(epoch));
      return 0;
    }
    if (command == "append") {
      trellis::Journal journal(path);
      journal.append(entry_of(epoch));
      return 0;
    }
  } catch (const trellis::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  std::fprintf(stderr, "persist_helper: unknown command '%s'\n", argv[1]);
  return 2;
}
