// SPDX-License-Identifier: MIT
/// @file
/// Test doubles shared by the agent layer's in-process tests (graph_test.cpp, effect_test.cpp):
/// a typed state, a node made of a function, a store that dies on its Nth commit, and a
/// harness with a manual clock.
#pragma once

#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/machine/state_machine.hpp>  // the lifecycle tests drive a StateMachine
#include <trellis/signals2/event_bus.hpp>     // Graph::events(), a Boost.Signals2 bus

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ag = trellis::agent;
using namespace std::chrono_literals;
using ag::PermissionMode;
using ag::Reason;
using ag::RunStatus;

// --- test doubles ----------------------------------------------------------------------------

namespace {

/// The state of every graph below: a text, and the nodes whose changes were committed.
struct Doc {
  std::string text;
  std::vector<std::string> trail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Doc, text, trail)

using Step = std::function<ag::NextStep(Doc&, ag::RunContext&)>;

/// A node whose behaviour is a function; it appends its name to the trail and counts its runs
/// (including the runs whose changes were discarded).
class FnNode final : public ag::Node<Doc> {
 public:
  FnNode(std::string name, Step step, PermissionMode required, std::map<std::string, int>* calls)
      : name_(std::move(name)), step_(std::move(step)), required_(required), calls_(calls) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(Doc& s, ag::RunContext& ctx) override {
    if (calls_ != nullptr) ++(*calls_)[name_];
    s.trail.push_back(name_);
    return step_(s, ctx);
  }
  PermissionMode required_mode() const override { return required_; }

 private:
  std::string name_;
  Step step_;
  PermissionMode required_;
  std::map<std::string, int>* calls_;
};

inline Step to(std::string next) {
  return [next = std::move(next)](Doc&, ag::RunContext&) -> ag::NextStep { return ag::Goto{next}; };
}
inline Step halt() {
  return [](Doc&, ag::RunContext&) -> ag::NextStep { return ag::Halt{}; };
}

/// Thrown by CrashingStore: stands for the process dying (it is no std::exception, so nothing
/// in the run loop mistakes it for a node's failure).
struct PowerCut {};

/// A store that passes every call to another one: the base of the failing stores below, which
/// override only the writes they break.
class ForwardingStore : public ag::Store {
 public:
  explicit ForwardingStore(ag::Store& inner) : inner_(inner) {}
  using ag::Store::commit;
  using ag::Store::put_effect;
  void create(const ag::Checkpoint& first) override { inner_.create(first); }
  void commit(const ag::Checkpoint& next, std::uint64_t expected_seq,
              const ag::LeaseToken& lease) override {
    inner_.commit(next, expected_seq, lease);
  }
  std::optional<ag::Checkpoint> latest(std::string_view id) override { return inner_.latest(id); }
  std::optional<ag::Checkpoint> checkpoint(std::string_view id, std::uint64_t seq) override {
    return inner_.checkpoint(id, seq);
  }
  std::vector<ag::Checkpoint> history(std::string_view id) override { return inner_.history(id); }
  std::vector<std::string> runs() override { return inner_.runs(); }
  ag::Lease lease(std::string_view id, std::string_view owner) override {
    return inner_.lease(id, owner);
  }
  void renew(const ag::LeaseToken& lease) override { inner_.renew(lease); }
  std::optional<std::chrono::milliseconds> lease_ttl() const override { return inner_.lease_ttl(); }
  void append_event(std::string_view id, const nlohmann::json& e) override {
    inner_.append_event(id, e);
  }
  std::vector<nlohmann::json> events(std::string_view id) override { return inner_.events(id); }
  void apply_retention(const ag::Retention& r) override { inner_.apply_retention(r); }
  void put_effect(const ag::EffectRecord& r, const ag::LeaseToken& lease) override {
    inner_.put_effect(r, lease);
  }
  std::optional<ag::EffectRecord> effect(std::string_view id, std::string_view key) override {
    return inner_.effect(id, key);
  }
  std::vector<ag::EffectRecord> effects(std::string_view id) override { return inner_.effects(id); }
  std::optional<ag::CacheEntry> cached(std::string_view key) override { return inner_.cached(key); }
  void put_cached(const ag::CacheEntry& entry) override { inner_.put_cached(entry); }

 private:
  ag::Store& inner_;
};

/// A store that dies on its Nth commit (nothing of that commit is written), as a process
/// killed between two commits would. An effect's started record and receipt are commits too:
/// the power can go at either.
class CrashingStore final : public ForwardingStore {
 public:
  CrashingStore(ag::Store& inner, int commits_before_crash)
      : ForwardingStore(inner), left_(commits_before_crash) {}
  void commit(const ag::Checkpoint& next, std::uint64_t expected_seq,
              const ag::LeaseToken& lease) override {
    if (left_-- == 0) throw PowerCut{};
    ForwardingStore::commit(next, expected_seq, lease);
  }
  void put_effect(const ag::EffectRecord& r, const ag::LeaseToken& lease) override {
    if (left_-- == 0) throw PowerCut{};
    ForwardingStore::put_effect(r, lease);
  }

 private:
  int left_;
};

/// 2024-01-01T00:00:00Z: a clock reading that formats like a real one.
const ag::Clock::time_point t0 = ag::Clock::time_point{} + 19723 * 24h;

/// A graph over Doc, a store, a manual clock, a fixed random source (0.5: no jitter) and the
/// run counts of every node.
struct Harness {
  ag::Graph<Doc> graph;
  ag::MemoryStore store;
  ag::ManualClock clock{t0};
  std::map<std::string, int> calls;
  double random = 0.5;

  Harness& node(std::string name, Step step, PermissionMode required = PermissionMode::Plan) {
    graph.add(std::make_unique<FnNode>(std::move(name), std::move(step), required, &calls));
    return *this;
  }
  ag::RunOptions options() {
    ag::RunOptions o;
    o.clock = &clock;
    o.random = [this] { return random; };
    return o;
  }
  ag::Outcome<Doc> run(const std::string& id = "run-1", ag::RunOptions o = {}) {
    if (o.clock == nullptr) o = with_defaults(std::move(o));
    return graph.run(id, Doc{}, store, std::move(o));
  }
  ag::Outcome<Doc> resume(const std::string& id = "run-1",
                          std::optional<ag::Resume> decision = std::nullopt,
                          ag::RunOptions o = {}) {
    if (o.clock == nullptr) o = with_defaults(std::move(o));
    return graph.resume(id, store, std::move(decision), std::move(o));
  }
  ag::Checkpoint latest(const std::string& id = "run-1") {
    auto cp = store.latest(id);
    REQUIRE(cp.has_value());
    return *cp;
  }
  std::vector<std::string> event_kinds(const std::string& id = "run-1") {
    std::vector<std::string> kinds;
    for (const auto& e : store.events(id)) kinds.push_back(e.at("kind").get<std::string>());
    return kinds;
  }

 private:
  ag::RunOptions with_defaults(ag::RunOptions o) {
    o.clock = &clock;
    if (!o.random) o.random = [this] { return random; };
    return o;
  }
};

}  // namespace
