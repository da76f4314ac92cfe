// SPDX-License-Identifier: MIT
/// @file
/// Fan-out of effects (fanout.hpp, issue 16): RunContext::effects runs one effect per item, up
/// to N at a time, each recorded as soon as it finishes; outcomes in input order; after a crash
/// or a stop only the unfinished items run again; the failure policy. Labelled concurrency: the
/// suite runs under ThreadSanitizer.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_test_support.hpp"
#include "trellis/agent/fanout_pool.hpp"
#include "trellis/agent/graph.hpp"
#include "trellis/agent/memory_store.hpp"
#include "trellis/agent/worker.hpp"

using nlohmann::json;

namespace {

std::vector<json> numbered(int n) {
  std::vector<json> args;
  for (int i = 0; i < n; ++i) args.push_back({{"i", i}});
  return args;
}

/// Calls per item index, from any thread.
struct Calls {
  std::mutex m;
  std::map<int, int> by_item;
  void add(int i) {
    std::lock_guard lock(m);
    ++by_item[i];
  }
  int of(int i) {
    std::lock_guard lock(m);
    return by_item[i];
  }
};

}  // namespace

TEST_CASE("fanout: outcomes come back in input order, whatever order the items finish in") {
  Harness h;
  std::vector<json> results;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    auto outs = ctx.effects("work", numbered(8), ag::EffectPolicy::idempotent,
                            [](const ag::EffectCall& c) {
                              // Later items finish first.
                              std::this_thread::sleep_for(
                                  std::chrono::milliseconds(2 * (8 - c.args.at("i").get<int>())));
                              return c.args.at("i").get<int>() * 10;
                            },
                            {.concurrency = 4});
    for (auto& o : outs) results.push_back(o.ok() ? o.result : json("failed"));
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  CHECK(results == std::vector<json>{0, 10, 20, 30, 40, 50, 60, 70});
  // Item i is the effect of ordinal i (its key names its index), listed by the checkpoint in
  // input order.
  const auto records = h.store.effects("run-1");
  REQUIRE(records.size() == 8);
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i)
    keys.push_back(
        ag::effect_key("run-1", "fan", 0, static_cast<std::uint32_t>(i), "work", json{{"i", i}}));
  CHECK(h.latest().effects == keys);
}

TEST_CASE("fanout: up to `concurrency` items run at the same time") {
  Harness h;
  std::mutex m;
  std::condition_variable cv;
  int running = 0;
  int most = 0;
  bool all_met = false;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effects("meet", numbered(4), ag::EffectPolicy::idempotent,
                [&](const ag::EffectCall&) {
                  std::unique_lock lock(m);
                  ++running;
                  most = std::max(most, running);
                  cv.notify_all();
                  // Each item waits (at most 10 s) until all four run at once.
                  all_met = all_met || cv.wait_for(lock, std::chrono::seconds(10),
                                                   [&] { return running == 4; });
                  return 0;
                },
                {.concurrency = 4});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  CHECK(most == 4);
  CHECK(all_met);
}

TEST_CASE("fanout: a run stopped during its fan-out runs again only the unfinished items") {
  Harness h;
  Calls calls;
  std::stop_source stop;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    auto outs = ctx.effects("work", numbered(6), ag::EffectPolicy::at_least_once,
                            [&](const ag::EffectCall& c) {
                              const int i = c.args.at("i").get<int>();
                              calls.add(i);
                              if (i == 2)
                                stop.request_stop();  // the run is cancelled after item 2's call
                              return i;
                            },
                            {.concurrency = 1});
    for (const auto& o : outs)
      if (!o.ok()) throw std::runtime_error("stopped");
    return ag::Halt{};
  });
  h.graph.entry("fan");
  ag::RunOptions o = h.options();
  o.stop = stop.get_token();
  CHECK(h.run("run-1", o).cancelled());
  CHECK(h.store.effects("run-1").size() == 3);  // items 0-2 have receipts, 3-5 no record
  REQUIRE(h.resume().succeeded());
  for (int i = 0; i < 6; ++i) CHECK(calls.of(i) == 1);
}

TEST_CASE("fanout: a node that reruns replays its items from their receipts") {
  Harness h;
  Calls calls;
  int tries = 0;
  h.graph.retry({.attempts = 2, .initial_backoff = 1ms});
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    auto outs = ctx.effects("work", numbered(5), ag::EffectPolicy::at_least_once,
                            [&](const ag::EffectCall& c) {
                              calls.add(c.args.at("i").get<int>());
                              return c.args.at("i");
                            },
                            {.concurrency = 3});
    if (++tries == 1) throw ag::transient_error("after the fan-out, before the commit");
    for (int i = 0; i < 5; ++i) CHECK(outs[static_cast<std::size_t>(i)].result == i);
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  CHECK(tries == 2);
  for (int i = 0; i < 5; ++i) CHECK(calls.of(i) == 1);
}

TEST_CASE("fanout: stop at the first failure skips the items not started; they get no record") {
  Harness h;
  std::vector<ag::EffectOutcome> outs;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    outs = ctx.effects("work", numbered(5), ag::EffectPolicy::idempotent,
                       [](const ag::EffectCall& c) -> json {
                         if (c.args.at("i") == 1) throw std::runtime_error("item 1 broke");
                         return c.args.at("i");
                       },
                       {.concurrency = 1, .max_failures = 0});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  REQUIRE(outs.size() == 5);
  CHECK(outs[0].ok());
  CHECK(outs[1].error != nullptr);
  CHECK_FALSE(outs[1].skipped);
  for (std::size_t i = 2; i < 5; ++i) CHECK(outs[i].skipped);
  CHECK(h.store.effects("run-1").size() == 2);
  CHECK(h.latest().effects.size() == 2);
}

TEST_CASE("fanout: a tolerated count of failures lets every item run") {
  Harness h;
  std::vector<ag::EffectOutcome> outs;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    outs = ctx.effects("work", numbered(6), ag::EffectPolicy::idempotent,
                       [](const ag::EffectCall& c) -> json {
                         if (c.args.at("i").get<int>() % 3 == 0)
                           throw std::runtime_error("every third");
                         return c.args.at("i");
                       },
                       {.concurrency = 2, .max_failures = 2});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  int failed = 0;
  for (const auto& o : outs) {
    CHECK_FALSE(o.skipped);
    failed += o.error ? 1 : 0;
  }
  CHECK(failed == 2);
}

TEST_CASE(
    "fanout: a crash in the middle (a store that dies) starts no more items; resumed, only the "
    "unfinished items run again") {
  Harness h;
  Calls calls;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effects("work", numbered(4), ag::EffectPolicy::at_least_once,
                [&](const ag::EffectCall& c) {
                  calls.add(c.args.at("i").get<int>());
                  return c.args.at("i");
                },
                {.concurrency = 1});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  // Writes: items 0 and 1 (started + receipt each), item 2's started record, then the power
  // goes at item 2's receipt.
  CrashingStore dying(h.store, 5);
  CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, h.options()), PowerCut);
  CHECK(calls.of(3) == 0);  // nothing started after the crash
  REQUIRE(h.resume().succeeded());
  CHECK(calls.of(0) == 1);
  CHECK(calls.of(1) == 1);
  CHECK(calls.of(2) == 2);  // cut off during its call: re-issued under its key
  CHECK(calls.of(3) == 1);
  for (const auto& r : h.store.effects("run-1")) CHECK(r.issued == (r.ordinal == 2 ? 2U : 1U));
}

TEST_CASE("fanout: an item cannot make effects of its own (graph_error)") {
  Harness h;
  std::vector<ag::EffectOutcome> outs;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    outs = ctx.effects("outer", numbered(1), ag::EffectPolicy::idempotent,
                       [&](const ag::EffectCall&) {
                         return ctx.effect("inner", json::object(), ag::EffectPolicy::idempotent,
                                           [](const ag::EffectCall&) { return 1; });
                       },
                       {.concurrency = 1});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  REQUIRE(outs.size() == 1);
  REQUIRE(outs[0].error != nullptr);
  // The item's call threw graph_error: its receipt holds it (effect_failed names it).
  CHECK_THROWS_WITH_AS(std::rethrow_exception(outs[0].error),
                       doctest::Contains("cannot make effects of its own"), ag::effect_failed);
}

namespace {

/// Items that must all run at once: each waits (at most 10 s) until `n` of them run.
struct Meeting {
  std::mutex m;
  std::condition_variable cv;
  int n;
  int running = 0;
  bool met = false;
  std::vector<std::thread::id> threads;  // of each item's call
  explicit Meeting(int count) : n(count) {}
  json item() {
    std::unique_lock lock(m);
    threads.push_back(std::this_thread::get_id());
    ++running;
    cv.notify_all();
    met = cv.wait_for(lock, std::chrono::seconds(10), [&] { return running >= n; }) || met;
    return 0;
  }
};

/// The graph of `h`: one node, "fan", whose two items (concurrency 2) meet; it notes its thread.
void meet_in(Harness& h, Meeting& meeting, std::thread::id& node_thread) {
  h.node("fan", [&meeting, &node_thread](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    node_thread = std::this_thread::get_id();
    ctx.effects("meet", numbered(2), ag::EffectPolicy::idempotent,
                [&meeting](const ag::EffectCall&) { return meeting.item(); }, {.concurrency = 2});
    return ag::Halt{};
  });
  h.graph.entry("fan");
}

}  // namespace

TEST_CASE("fanout: with a FanoutPool the items run on the node's thread and the pool's helper") {
  Harness h;
  ag::FanoutPool pool;
  std::promise<std::thread::id> helper_id;
  std::jthread helper([&](std::stop_token stop) {
    helper_id.set_value(std::this_thread::get_id());
    pool.serve(stop);
  });
  const std::thread::id helper_thread = helper_id.get_future().get();
  Meeting meeting(2);
  std::thread::id node_thread;
  meet_in(h, meeting, node_thread);
  ag::RunOptions o;
  o.fanout_pool = &pool;
  REQUIRE(h.run("run-1", o).succeeded());
  CHECK(meeting.met);  // in parallel
  // On those two threads: no thread was started for the fan-out.
  std::vector<std::thread::id> expected{node_thread, helper_thread};
  std::sort(expected.begin(), expected.end());
  std::sort(meeting.threads.begin(), meeting.threads.end());
  CHECK(meeting.threads == expected);
}

TEST_CASE("fanout: FanoutPool::run returns once every place taken has returned; errors come back") {
  ag::FanoutPool pool;
  SUBCASE("without a helper thread, the calling thread alone runs the job, once") {
    int calls = 0;
    pool.run([&] { ++calls; }, 3);
    CHECK(calls == 1);
  }
  SUBCASE("a helper's exception is rethrown to the caller, after the helper returned") {
    std::atomic<bool> helper_returned{false};
    std::atomic<int> calls{0};
    std::jthread helper([&](std::stop_token stop) { pool.serve(stop); });
    const auto caller = std::this_thread::get_id();
    const std::function<void()> job = [&] {
      ++calls;
      if (std::this_thread::get_id() == caller) {
        // The caller's call waits for the helper's to start, so the helper takes its place.
        for (int i = 0; i < 1000 && calls.load() < 2; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      struct Mark {
        std::atomic<bool>& done;
        ~Mark() { done = true; }
      } mark{helper_returned};
      throw std::runtime_error("helper failed");
    };
    CHECK_THROWS_WITH_AS(pool.run(job, 1), "helper failed", std::runtime_error);
    CHECK(calls.load() == 2);
    CHECK(helper_returned.load());
  }
}

TEST_CASE("fanout: a Worker's idle thread runs the items of a run its other thread advances") {
  Harness h;
  const auto wait_for_end = [&](const std::string& id) {
    for (int i = 0; i < 1000; ++i) {
      if (auto cp = h.store.latest(id); cp && cp->status == ag::RunStatus::Succeeded) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  // Runs "run-1" on a worker with `threads` threads until it ends (false: not within 10 s).
  const auto run_on_worker = [&](std::size_t threads) {
    ag::Worker w(h.store, {.threads = threads, .poll = std::chrono::milliseconds(20)});
    w.add(h.graph);
    w.start();
    h.graph.enqueue("run-1", Doc{}, h.store);
    const bool ended = wait_for_end("run-1");
    w.stop();
    w.join();
    return ended;
  };
  SUBCASE("two threads: the items meet, on the two worker threads") {
    Meeting meeting(2);
    std::thread::id node_thread;
    meet_in(h, meeting, node_thread);
    REQUIRE(run_on_worker(2));
    CHECK(meeting.met);
    std::sort(meeting.threads.begin(), meeting.threads.end());
    CHECK(std::unique(meeting.threads.begin(), meeting.threads.end()) == meeting.threads.end());
    CHECK(std::count(meeting.threads.begin(), meeting.threads.end(), node_thread) == 1);
  }
  SUBCASE("one thread: no thread is started; the items run one after another on it") {
    std::vector<std::thread::id> item_threads;
    std::mutex m;
    std::thread::id node_thread;
    h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
      node_thread = std::this_thread::get_id();
      ctx.effects("work", numbered(6), ag::EffectPolicy::idempotent,
                  [&](const ag::EffectCall&) {
                    std::lock_guard lock(m);
                    item_threads.push_back(std::this_thread::get_id());
                    return 0;
                  },
                  {.concurrency = 4});
      return ag::Halt{};
    });
    h.graph.entry("fan");
    REQUIRE(run_on_worker(1));
    REQUIRE(item_threads.size() == 6);
    CHECK(std::count(item_threads.begin(), item_threads.end(), node_thread) == 6);
  }
}

TEST_CASE("fanout: each item logs one event, its outcome; none logs effect_started") {
  Harness h;
  h.node("fan", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effects("work", numbered(5), ag::EffectPolicy::idempotent,
                [](const ag::EffectCall& c) -> json {
                  if (c.args.at("i") == 3) throw std::runtime_error("item 3 failed");
                  return 0;
                },
                {.concurrency = 2, .max_failures = std::nullopt});
    return ag::Halt{};
  });
  h.graph.entry("fan");
  REQUIRE(h.run().succeeded());
  std::map<std::string, int> kinds;
  for (const json& e : h.store.events("run-1")) ++kinds[e.at("kind").get<std::string>()];
  CHECK(kinds["effect_completed"] == 4);
  CHECK(kinds["effect_failed"] == 1);
  CHECK(kinds.count("effect_started") == 0);
  // Each item has its record, a final receipt (its started record was replaced by it).
  const auto records = h.store.effects("run-1");
  REQUIRE(records.size() == 5);
  for (const auto& r : records) CHECK(r.final());
}
