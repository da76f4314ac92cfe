#pragma once
/// @file
/// What the benchmark programs share: failing a benchmark on a wrong result (checked outside
/// the timed loop), and a scratch directory for the ones that write files.

#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace trellis_bench {

/// Set once any benchmark reported a wrong result; main() turns it into the exit status.
inline std::atomic<bool> failed{false};

/// Reports `what` as the benchmark's error unless `ok`; returns `ok`.
inline bool check(benchmark::State& st, bool ok, const std::string& what) {
  if (!ok) {
    st.SkipWithError(what.c_str());
    failed.store(true);
  }
  return ok;
}

/// A fresh directory under $TRELLIS_BENCH_DIR (default /tmp) for the whole run, removed at
/// exit.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    const char* base = std::getenv("TRELLIS_BENCH_DIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + name + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "error: mkdtemp(%s): %s\n", pattern.c_str(), std::strerror(errno));
      std::exit(1);
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  /// A path no earlier case used (a case may run more than once, with repetitions).
  std::filesystem::path fresh(const std::string& stem, const char* extension) {
    return path_ / (stem + "-" + std::to_string(next_++) + extension);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int next_ = 0;
};

}  // namespace trellis_bench
