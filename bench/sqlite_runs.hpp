#pragma once
/// @file
/// A SqliteStore of 100,000 runs for the benchmarks that list them (agent_list_sqlite.cpp,
/// console.cpp): each run created Queued and committed twice (a step, then a status: a tenth
/// WaitingApproval, the rest spread over Running, Succeeded, Failed and Cancelled), with a small
/// state; built with synchronous OFF (building it is not what is measured).

#include <trellis/agent/checkpoint.hpp>
#include <trellis/agent/clock.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

namespace trellis_bench {

namespace ag = trellis::agent;
namespace fs = std::filesystem;

constexpr int kRuns = 100'000;

inline std::string run_id(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "run-%06d", i);
  return buf;
}

inline std::string at(int seconds) {
  const std::chrono::system_clock::time_point t{std::chrono::seconds(1'700'000'000 + seconds)};
  return ag::detail::format_time(t);
}

inline ag::Checkpoint checkpoint(int i, std::uint64_t seq, ag::RunStatus status) {
  ag::Checkpoint c;
  c.run_id = run_id(i);
  c.seq = seq;
  c.status = status;
  c.next_node = seq == 0 ? "draft" : "review";
  c.step = seq;
  c.state = {{"count", seq}, {"text", "a small state of a few dozen bytes"}};
  c.fingerprint = "draft,review,revise@1";
  c.created_at = at(i + static_cast<int>(seq));
  return c;
}

inline ag::RunStatus final_status(int i) {
  if (i % 10 == 0) return ag::RunStatus::WaitingApproval;
  switch (i % 4) {
    case 0:
      return ag::RunStatus::Running;
    case 1:
      return ag::RunStatus::Succeeded;
    case 2:
      return ag::RunStatus::Failed;
    default:
      return ag::RunStatus::Cancelled;
  }
}

inline void build_database(const fs::path& db) {
  const auto start = std::chrono::steady_clock::now();
  ag::SqliteStore store(db, {.synchronous = ag::SqliteSynchronous::off});
  for (int i = 0; i < kRuns; ++i) {
    store.create(checkpoint(i, 0, ag::RunStatus::Queued));
    store.commit(checkpoint(i, 1, ag::RunStatus::Running), 0);
    ag::Checkpoint last = checkpoint(i, 2, final_status(i));
    if (last.status == ag::RunStatus::WaitingApproval) last.interrupt = ag::Interrupt{"ok?"};
    store.commit(last, 1);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("built %d runs (3 checkpoints each) in %.1f s: %s\n", kRuns, s, db.c_str());
}

}  // namespace trellis_bench
