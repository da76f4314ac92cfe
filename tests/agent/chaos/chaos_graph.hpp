// SPDX-License-Identifier: MIT
/// @file
/// The graph the chaos suites run (the parent enqueues its runs, chaos_worker children advance
/// them), its simulated external system, and the records both sides read.
///
///   tick --(i % 3 == 0)--> nap (Sleep 50 ms) --> tick
///        --(i % 3 == 1)--> flaky (throws transient_error with probability `flaky`) --> tick
///        --(hold, once)--> hold (waits for the release file, then at_most_once "after_hold")
///        --(i >= n)-----> charge (at_most_once "charge") --> notify (at_least_once "notify")
///                         --> gate (Sleeps 200 ms until the gate file exists) --> Halt
///
/// Every node appends one token "<node>:<pid>" to the state's trail, so a committed step shows
/// in every later checkpoint and a step committed twice or lost shows as a trail that does not
/// grow by exactly the steps committed. A retry backoff is a durable timer (workers run with
/// durable_waits), so flaky commits the run Waiting between its tries.
///
/// The external system is an append-only log file: every effect call appends one JSON line
///   {"ev":"call","run":..,"key":..,"name":..,"policy":..,"pid":..,"call":"<pid>_<n>"}
/// with one write(2) on an O_APPEND descriptor followed by fsync, a millisecond of latency
/// before and after (so random kills land inside calls), and returns {"call": "<pid>_<n>"}: a
/// receipt names the call it came from. The hold node appends {"ev":"hold",...} as it starts
/// waiting (the SIGSTOP case times its stop from it).
#pragma once

#include <trellis/agent/errors.hpp>
#include <trellis/agent/graph.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace trellis_chaos {

namespace ag = trellis::agent;
using json = nlohmann::json;

/// A run's state.
struct ChaosState {
  int n = 6;                       ///< ticks before the charge
  int i = 0;                       ///< ticks so far
  bool naps = true;                ///< tick goes through nap (a Sleep) now and then
  bool hold = false;               ///< the run passes the hold node once (the SIGSTOP case)
  bool held = false;               ///< it did
  std::string charge;              ///< the charge's call id (from its receipt)
  std::string notice;              ///< the notification's call id
  std::string after;               ///< the after_hold effect's call id
  std::vector<std::string> trail;  ///< "<node>:<pid>" per step committed
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChaosState, n, i, naps, hold, held, charge, notice, after, trail)

/// Appends `line` and a newline to `path` with one write(2) (O_APPEND), then fsync when asked.
inline void append_line(const std::string& path, const std::string& line, bool sync) {
  const std::string text = line + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("chaos: open " + path + ": " + std::strerror(errno));
  const ssize_t wrote = ::write(fd, text.data(), text.size());
  const int saved = errno;
  const bool synced = !sync || ::fsync(fd) == 0;
  ::close(fd);
  if (wrote != static_cast<ssize_t>(text.size()) || !synced)
    throw std::runtime_error("chaos: write " + path + ": " + std::strerror(saved));
}

inline bool file_exists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

/// What the nodes of a child do (the parent's graph never runs a node).
struct ChaosConfig {
  std::string log;      ///< the external system's log
  std::string release;  ///< the hold node waits until this file exists
  std::string gate;     ///< the gate node sleeps until this file exists (empty: never)
  double flaky = 0.3;   ///< probability that flaky throws transient_error
};

/// The external system: one line per call (see the file comment).
class ExternalSystem {
 public:
  explicit ExternalSystem(std::string log) : log_(std::move(log)) {}
  json call(const ag::EffectCall& c, std::string_view policy) {
    const std::string id = std::to_string(::getpid()) + "_" + std::to_string(++calls_);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the request travels
    append_line(log_,
                json{{"ev", "call"},
                     {"run", c.run_id},
                     {"key", c.key},
                     {"name", c.name},
                     {"policy", policy},
                     {"pid", ::getpid()},
                     {"call", id}}
                    .dump(),
                true);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the response travels
    return json{{"call", id}};
  }

 private:
  std::string log_;
  std::atomic<unsigned> calls_{0};
};

using Body = std::function<ag::NextStep(ChaosState&, ag::RunContext&)>;

class FnNode final : public ag::Node<ChaosState> {
 public:
  FnNode(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(ChaosState& s, ag::RunContext& ctx) override {
    s.trail.push_back(name_ + ":" + std::to_string(::getpid()));
    return body_(s, ctx);
  }

 private:
  std::string name_;
  Body body_;
};

/// Builds the chaos graph into `g`. `external` and `config` are used only when a node runs
/// (a child's); the parent passes its own, unused.
inline void build_chaos_graph(ag::Graph<ChaosState>& g, ExternalSystem& external,
                              const ChaosConfig& config) {
  auto node = [&g](std::string name, Body body) {
    g.add(std::make_unique<FnNode>(std::move(name), std::move(body)));
  };
  node("tick", [](ChaosState& s, ag::RunContext&) -> ag::NextStep {
    ++s.i;
    if (s.hold && !s.held) return ag::Goto{"hold"};
    if (s.i >= s.n) return ag::Goto{"charge"};
    if (s.naps && s.i % 3 == 0) return ag::Goto{"nap"};
    if (s.i % 3 == 1) return ag::Goto{"flaky"};
    return ag::Goto{"tick"};
  });
  node("nap", [](ChaosState&, ag::RunContext&) -> ag::NextStep {
    return ag::Sleep{.duration = std::chrono::milliseconds(50), .then = "tick"};
  });
  node("flaky", [&config](ChaosState&, ag::RunContext&) -> ag::NextStep {
    thread_local std::mt19937 engine(std::random_device{}());
    if (std::uniform_real_distribution<double>(0.0, 1.0)(engine) < config.flaky)
      throw ag::transient_error("chaos: the flaky service said 503");
    return ag::Goto{"tick"};
  });
  node("hold", [&config, &external](ChaosState& s, ag::RunContext& ctx) -> ag::NextStep {
    append_line(
        config.log,
        json{{"ev", "hold"}, {"run", std::string(ctx.run_id())}, {"pid", ::getpid()}}.dump(), true);
    // Deliberately ignores its stop_token: the fences (the effect's started record, the
    // commit), not the node's manners, must keep a worker that lost the run from acting.
    while (!file_exists(config.release)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const json r = ctx.effect(
        "after_hold", {{"run", std::string(ctx.run_id())}}, ag::EffectPolicy::at_most_once,
        [&external](const ag::EffectCall& c) { return external.call(c, "at_most_once"); });
    s.after = r.at("call").get<std::string>();
    s.held = true;
    return ag::Goto{"tick"};
  });
  node("charge", [&external](ChaosState& s, ag::RunContext& ctx) -> ag::NextStep {
    const json r = ctx.effect(
        "charge", {{"amount", 120}}, ag::EffectPolicy::at_most_once,
        [&external](const ag::EffectCall& c) { return external.call(c, "at_most_once"); });
    s.charge = r.at("call").get<std::string>();
    return ag::Goto{"notify"};
  });
  node("notify", [&external](ChaosState& s, ag::RunContext& ctx) -> ag::NextStep {
    const json r = ctx.effect(
        "notify", {{"to", "customer"}}, ag::EffectPolicy::at_least_once,
        [&external](const ag::EffectCall& c) { return external.call(c, "at_least_once"); });
    s.notice = r.at("call").get<std::string>();
    return ag::Goto{"gate"};
  });
  node("gate", [&config](ChaosState&, ag::RunContext&) -> ag::NextStep {
    if (!config.gate.empty() && !file_exists(config.gate))
      return ag::Sleep{.duration = std::chrono::milliseconds(200)};
    return ag::Halt{};
  });
  g.entry("tick").max_steps(100000).retry({.attempts = 60,
                                           .initial_backoff = std::chrono::milliseconds(20),
                                           .multiplier = 1.5,
                                           .max_backoff = std::chrono::milliseconds(100)});
}

}  // namespace trellis_chaos
