// SPDX-License-Identifier: MIT
// A child process for the store tests' cross-process lease cases (started with posix_spawn):
//   store_lease_child file <root> <run id>              lease the run in a FileStore
//   store_lease_child sqlite <db> <run id> <ttl ms>     lease the run in a SqliteStore
// prints "leased <pid>" once it holds the lease, then waits to be killed. Exit codes: 2 usage,
// 3 a trellis::error (printed on stderr).

#include <trellis/agent/errors.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: store_lease_child file|sqlite <path> <run id> [ttl ms]\n");
    return 2;
  }
  const std::string_view kind = argv[1];
  try {
    std::unique_ptr<trellis::agent::Store> store;
    if (kind == "file") {
      store = std::make_unique<trellis::agent::FileStore>(argv[2]);
    } else if (kind == "sqlite" && argc >= 5) {
      trellis::agent::SqliteStoreOptions options;
      options.lease_ttl = std::chrono::milliseconds(std::stoll(argv[4]));
      store = std::make_unique<trellis::agent::SqliteStore>(argv[2], options);
    } else {
      std::fprintf(stderr, "store_lease_child: unknown store kind '%s'\n", argv[1]);
      return 2;
    }
    trellis::agent::Lease lease = store->lease(argv[3], "child");
    std::printf("leased %d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  } catch (const trellis::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
}
