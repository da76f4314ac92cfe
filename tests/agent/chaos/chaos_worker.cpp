// SPDX-License-Identifier: MIT
// A worker process for chaos_test.cpp (started with posix_spawn; SIGKILLed, SIGSTOPped and
// SIGCONTed at random by the parent):
//
//   chaos_worker --store SPEC --log PATH --acks PATH [--release PATH] [--gate PATH]
//                [--ttl-ms N] [--clock-offset-ms N] [--threads N] [--poll-ms N] [--flaky P]
//                [--exit-when-done]
//
// opens the store SPEC names (chaos_store.hpp), wraps it in a recorder, and runs a Worker with
// the chaos graph (chaos_graph.hpp) until SIGTERM (a graceful stop) or, with --exit-when-done,
// until every run of the store has ended. --clock-offset-ms gives the worker's run calls a
// clock that far from the system clock (RunOptions::clock): lease arithmetic must not use it.
//
// The recorder appends one JSON line to --acks (one write(2), O_APPEND, no fsync: a SIGKILL
// does not lose it, and the machine does not crash in these tests) after every call of the
// store that returned:
//   {"ev":"commit","run":..,"seq":..,"step":..,"status":..,"epoch":..,"pid":..,"state":<hash>}
//   {"ev":"effect","run":..,"key":..,"status":..,"epoch":..,"pid":..}
// and the worker's events {"ev":"lost"|"error"|"foreign","run":..,"detail":..,"pid":..}: an
// acknowledged commit is one whose line is there. Prints "ready" once the worker runs.
// Exit codes: 0 stopped, 2 usage, 3 an exception (its message on stderr).

#include "chaos_graph.hpp"
#include "chaos_store.hpp"

#include <trellis/agent/worker.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace trellis_chaos;

std::atomic<bool> g_terminate{false};
extern "C" void on_sigterm(int) { g_terminate = true; }

/// The system clock moved by a fixed offset (a worker whose machine's clock is wrong).
class OffsetClock final : public ag::Clock {
 public:
  explicit OffsetClock(std::chrono::milliseconds offset) : offset_(offset) {}
  time_point now() const override { return std::chrono::system_clock::now() + offset_; }
  void sleep_for(duration d, std::stop_token stop) override {
    ag::SystemClock::instance().sleep_for(d, std::move(stop));
  }

 private:
  std::chrono::milliseconds offset_;
};

/// Forwards every call to the store it wraps and records what its writes did (file comment).
class Recorder final : public ag::Store {
 public:
  Recorder(ag::Store& inner, std::string acks) : inner_(inner), acks_(std::move(acks)) {}

  void note(const json& line) {
    try {
      append_line(acks_, line.dump(), false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "chaos_worker: %s\n", e.what());
      std::_Exit(3);  // a record the parent counts on is missing: stop here, loudly
    }
  }

  void create(const ag::Checkpoint& first) override { inner_.create(first); }
  void commit(const ag::Checkpoint& next, std::uint64_t expected_seq,
              const ag::LeaseToken& lease) override {
    inner_.commit(next, expected_seq, lease);
    note({{"ev", "commit"},
          {"run", next.run_id},
          {"seq", next.seq},
          {"step", next.step},
          {"status", trellis::enumeration<ag::RunStatus>::name(next.status)},
          {"epoch", lease.epoch},
          {"pid", ::getpid()},
          {"state", std::to_string(std::hash<std::string>{}(next.state.dump()))}});
  }
  std::optional<ag::Checkpoint> latest(std::string_view run_id) override {
    return inner_.latest(run_id);
  }
  std::optional<ag::Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) override {
    return inner_.checkpoint(run_id, seq);
  }
  std::vector<ag::Checkpoint> history(std::string_view run_id) override {
    return inner_.history(run_id);
  }
  std::vector<std::string> runs() override { return inner_.runs(); }
  ag::Lease lease(std::string_view run_id, std::string_view owner) override {
    return inner_.lease(run_id, owner);
  }
  void renew(const ag::LeaseToken& lease) override { inner_.renew(lease); }
  std::optional<std::chrono::milliseconds> lease_ttl() const override { return inner_.lease_ttl(); }
  void put_effect(const ag::EffectRecord& record, const ag::LeaseToken& lease) override {
    inner_.put_effect(record, lease);
    note({{"ev", "effect"},
          {"run", record.run_id},
          {"key", record.key},
          {"status", trellis::enumeration<ag::EffectStatus>::name(record.status)},
          {"epoch", lease.epoch},
          {"pid", ::getpid()}});
  }
  std::optional<ag::EffectRecord> effect(std::string_view run_id, std::string_view key) override {
    return inner_.effect(run_id, key);
  }
  std::vector<ag::EffectRecord> effects(std::string_view run_id) override {
    return inner_.effects(run_id);
  }
  void append_event(std::string_view run_id, const json& event) override {
    inner_.append_event(run_id, event);
  }
  std::vector<json> events(std::string_view run_id) override { return inner_.events(run_id); }
  void apply_retention(const ag::Retention& retention) override {
    inner_.apply_retention(retention);
  }
  std::vector<ag::StoredEvent> events_after(std::string_view run_id,
                                            std::uint64_t after_seq) override {
    return inner_.events_after(run_id, after_seq);
  }
  std::uint64_t request_cancel(const ag::CancelRequest& request) override {
    return inner_.request_cancel(request);
  }
  std::vector<ag::CancelRequest> cancel_requests(std::string_view run_id,
                                                 std::uint64_t after) override {
    return inner_.cancel_requests(run_id, after);
  }
  std::vector<ag::RunSummary> list_runs(const ag::RunFilter& filter) override {
    return inner_.list_runs(filter);
  }
  void delete_run(std::string_view run_id) override { inner_.delete_run(run_id); }
  void put_graph(const ag::GraphShape& shape) override { inner_.put_graph(shape); }
  std::optional<ag::GraphShape> graph(std::string_view fingerprint) override {
    return inner_.graph(fingerprint);
  }
  std::vector<ag::Claim> claim(const ag::ClaimRequest& request) override {
    return inner_.claim(request);
  }
  std::vector<ag::RunSummary> due_runs(std::size_t limit) override {
    return inner_.due_runs(limit);
  }
  bool wait_for_work(std::chrono::milliseconds timeout, std::stop_token stop) override {
    return inner_.wait_for_work(timeout, std::move(stop));
  }

 private:
  ag::Store& inner_;
  std::string acks_;
};

bool ended(ag::RunStatus s) {
  return s == ag::RunStatus::Succeeded || s == ag::RunStatus::Failed ||
         s == ag::RunStatus::Cancelled;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "chaos_worker: %s\nusage: chaos_worker --store SPEC --log PATH --acks PATH "
               "[--release PATH] [--gate PATH] [--ttl-ms N] [--clock-offset-ms N] "
               "[--threads N] [--poll-ms N] [--flaky P] [--exit-when-done]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string, std::less<>> args;
  bool exit_when_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--exit-when-done") {
      exit_when_done = true;
    } else if (a.starts_with("--") && i + 1 < argc) {
      args[std::string(a.substr(2))] = argv[++i];
    } else {
      return usage("bad argument");
    }
  }
  auto arg = [&](const char* name, std::string fallback = {}) {
    const auto it = args.find(name);
    return it == args.end() ? fallback : it->second;
  };
  if (arg("store").empty() || arg("log").empty() || arg("acks").empty())
    return usage("--store, --log and --acks are needed");
  try {
    std::signal(SIGTERM, on_sigterm);
    ChaosStoreOptions store_options;
    store_options.lease_ttl = std::chrono::milliseconds(std::stoll(arg("ttl-ms", "1000")));
    const std::unique_ptr<ag::Store> store = open_chaos_store(arg("store"), store_options);
    Recorder recorder(*store, arg("acks"));

    ChaosConfig config;
    config.log = arg("log");
    config.release = arg("release");
    config.gate = arg("gate");
    config.flaky = std::stod(arg("flaky", "0.3"));
    ExternalSystem external(config.log);
    ag::Graph<ChaosState> graph;
    build_chaos_graph(graph, external, config);

    std::optional<OffsetClock> skewed;
    if (const long long offset = std::stoll(arg("clock-offset-ms", "0")); offset != 0)
      skewed.emplace(std::chrono::milliseconds(offset));

    ag::WorkerOptions options;
    options.name = "chaos:" + std::to_string(::getpid());
    options.threads = static_cast<std::size_t>(std::stoul(arg("threads", "2")));
    options.poll = std::chrono::milliseconds(std::stoll(arg("poll-ms", "20")));
    options.run.clock = skewed ? &*skewed : nullptr;
    options.run.cancel_poll = std::chrono::milliseconds(0);
    options.on_event = [&recorder](const ag::WorkerEvent& e) {
      const char* kind = e.kind == ag::WorkerEvent::Kind::lost      ? "lost"
                         : e.kind == ag::WorkerEvent::Kind::error   ? "error"
                         : e.kind == ag::WorkerEvent::Kind::foreign ? "foreign"
                                                                    : nullptr;
      if (kind == nullptr) return;
      recorder.note({{"ev", kind}, {"run", e.run_id}, {"detail", e.detail}, {"pid", ::getpid()}});
    };
    ag::Worker worker(recorder, options);
    worker.add(graph);
    worker.start();
    std::printf("ready\n");
    std::fflush(stdout);
    for (unsigned tick = 0; !g_terminate; ++tick) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (exit_when_done && tick % 10 == 9) {
        const std::vector<ag::RunSummary> all = store->list_runs({});
        if (std::all_of(all.begin(), all.end(),
                        [](const ag::RunSummary& s) { return ended(s.status); }))
          break;
      }
    }
    worker.stop();
    worker.join();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chaos_worker: %s\n", e.what());
    return 3;
  }
}
