// SPDX-License-Identifier: MIT
// Workers, durable timers and enqueue (worker.hpp, next_step.hpp's Sleep, graph.hpp's enqueue):
// on MemoryStore in the calling thread (Worker::drain), and a pool of threads on SqliteStore.

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/memory_store.hpp>
#include <trellis/agent/operations.hpp>
#include <trellis/agent/sqlite_store.hpp>
#include <trellis/agent/subgraph.hpp>
#include <trellis/agent/worker.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace ag = trellis::agent;
using namespace std::chrono_literals;
using ag::RunStatus;

namespace {

struct Count {
  int n = 0;
  std::vector<std::string> trail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Count, n, trail)

using Fn = std::function<ag::NextStep(Count&, ag::RunContext&)>;

class FnNode final : public ag::Node<Count> {
 public:
  FnNode(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(Count& s, ag::RunContext& ctx) override {
    s.trail.push_back(name_);
    return fn_(s, ctx);
  }

 private:
  std::string name_;
  Fn fn_;
};

/// A graph of nodes made of functions, entry at the first one added.
struct TestGraph {
  ag::Graph<Count> g;
  explicit TestGraph(std::string version = "1") { g.version(std::move(version)); }
  TestGraph& node(std::string name, Fn fn) {
    if (g.shape().nodes.empty()) g.entry(name);
    g.add(std::make_unique<FnNode>(std::move(name), std::move(fn)));
    return *this;
  }
};

ag::NextStep halt(Count& s, ag::RunContext&) {
  ++s.n;
  return ag::Halt{};
}

/// Waits (bounded) until `done`; false when it did not happen in time.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::filesystem::path temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trellis-worker-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p;
}

}  // namespace

TEST_CASE("enqueue: the run is stored Queued at the entry node with its priority, and returns") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("only", halt);
  t.g.enqueue("r1", Count{}, store, {.priority = 7});
  const auto cp = store.latest("r1");
  REQUIRE(cp);
  CHECK(cp->status == RunStatus::Queued);
  CHECK(cp->next_node == "only");
  CHECK(cp->priority == 7);
  CHECK(cp->state.at("n") == 0);  // nothing ran
  CHECK_THROWS_AS(t.g.enqueue("r1", Count{}, store), ag::graph_error);
}

TEST_CASE("worker: drain advances every enqueued run of its graph to its end") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("a", [](Count& s, ag::RunContext&) -> ag::NextStep {
     ++s.n;
     return ag::Goto{"b"};
   }).node("b", halt);
  for (int i = 0; i < 5; ++i) t.g.enqueue("r" + std::to_string(i), Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 5);
  for (int i = 0; i < 5; ++i) {
    const auto cp = store.latest("r" + std::to_string(i));
    CHECK(cp->status == RunStatus::Succeeded);
    CHECK(cp->state.at("n") == 2);
  }
  CHECK(w.stats().claimed == 5);
  CHECK(w.drain() == 0);  // nothing left
}

TEST_CASE("worker: higher priority first, then the earliest enqueued") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("only", halt);
  t.g.enqueue("low", Count{}, store, {.priority = 0});
  t.g.enqueue("high", Count{}, store, {.priority = 5});
  t.g.enqueue("mid", Count{}, store, {.priority = 1});
  std::vector<std::string> order;
  ag::Worker w(store, {.on_event = [&](const ag::WorkerEvent& e) { order.push_back(e.run_id); }});
  w.add(t.g);
  w.drain();
  CHECK(order == std::vector<std::string>{"high", "mid", "low"});
}

TEST_CASE("worker: a run enqueued for later is not started before its time") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("only", halt);
  t.g.enqueue("later", Count{}, store, {.at = std::chrono::system_clock::now() + 1h});
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 0);
  CHECK(store.latest("later")->status == RunStatus::Queued);
}

TEST_CASE("sleep: run() commits the run Waiting with its wake time and returns") {
  ag::MemoryStore store;
  ag::ManualClock clock{std::chrono::system_clock::time_point{} + 1000h};
  TestGraph t;
  t.node("nap", [](Count& s, ag::RunContext&) -> ag::NextStep {
     ++s.n;
     return ag::Sleep{.duration = 10min, .then = "wake"};
   }).node("wake", halt);
  const auto out = t.g.run("r", Count{}, store, {.clock = &clock});
  CHECK(out.waiting());
  CHECK(out.steps == 1);
  CHECK(out.state->n == 1);  // the sleeping step committed its state
  const auto cp = store.latest("r");
  CHECK(cp->status == RunStatus::Waiting);
  CHECK(cp->next_node == "wake");
  CHECK(cp->wake_at == ag::detail::format_time(clock.now() + 10min));
  CHECK(out.wake_at == cp->wake_at);
  CHECK(clock.sleeps().empty());  // no thread slept on it
}

TEST_CASE("sleep: resume() before the wake time writes nothing; at it the run goes on") {
  ag::MemoryStore store;
  ag::ManualClock clock{std::chrono::system_clock::time_point{} + 1000h};
  TestGraph t;
  t.node("nap", [](Count&, ag::RunContext&) -> ag::NextStep {
     return ag::Sleep{.duration = 10min, .then = "wake"};
   }).node("wake", halt);
  t.g.run("r", Count{}, store, {.clock = &clock});
  const std::uint64_t seq = store.latest("r")->seq;
  clock.advance(9min);
  const auto early = t.g.resume("r", store, std::nullopt, {.clock = &clock});
  CHECK(early.waiting());
  CHECK(store.latest("r")->seq == seq);
  clock.advance(1min);
  const auto done = t.g.resume("r", store, std::nullopt, {.clock = &clock});
  CHECK(done.succeeded());
  CHECK(done.state->trail == std::vector<std::string>{"nap", "wake"});
}

TEST_CASE("sleep: an empty `then` runs the sleeping node again when the timer fires") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("poll", [](Count& s, ag::RunContext&) -> ag::NextStep {
    if (++s.n < 3) return ag::Sleep{.duration = 1ms};
    return ag::Halt{};
  });
  auto out = t.g.run("r", Count{}, store);
  CHECK(out.waiting());
  CHECK(store.latest("r")->next_node == "poll");
  ag::Worker w(store);
  w.add(t.g);
  REQUIRE(eventually([&] {
    w.drain();
    return store.latest("r")->status == RunStatus::Succeeded;
  }));
  CHECK(store.latest("r")->state.at("n") == 3);
}

TEST_CASE("sleep: a worker fires a due timer once, and leaves one not due") {
  ag::MemoryStore store;
  TestGraph t;
  std::atomic<int> woke{0};
  t.node("nap", [](Count& s, ag::RunContext&) -> ag::NextStep {
     return ag::Sleep{.duration = s.n == 0 ? 20ms : 1h, .then = "wake"};
   }).node("wake", [&](Count& s, ag::RunContext& ctx) {
    ++woke;
    return halt(s, ctx);
  });
  t.g.enqueue("soon", Count{}, store);
  t.g.enqueue("late", Count{.n = 1, .trail = {}}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 2);  // both slept
  CHECK(store.latest("soon")->status == RunStatus::Waiting);
  std::this_thread::sleep_for(40ms);
  CHECK(w.drain() == 1);
  CHECK(store.latest("soon")->status == RunStatus::Succeeded);
  CHECK(store.latest("late")->status == RunStatus::Waiting);
  CHECK(w.drain() == 0);
  CHECK(woke == 1);
}

TEST_CASE("sleep: a `then` outside the node's declared edges fails the run undeclared_edge") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("nap", [](Count&, ag::RunContext&) -> ag::NextStep {
     return ag::Sleep{.duration = 1min, .then = "other"};
   }).node("other", halt);
  t.g.edges("nap", {"nap"});
  const auto out = t.g.run("r", Count{}, store);
  CHECK(out.failed());
  CHECK(out.reason == ag::Reason::undeclared_edge);
}

TEST_CASE("worker: a retry backoff is a timer: the run waits, given back, then retries") {
  ag::MemoryStore store;
  TestGraph t;
  t.g.retry({.attempts = 3, .initial_backoff = 20ms, .multiplier = 1, .max_backoff = 20ms});
  t.node("flaky", [](Count& s, ag::RunContext& ctx) -> ag::NextStep {
    if (ctx.attempt() == 0) throw ag::transient_error("try again");
    return halt(s, ctx);
  });
  t.g.enqueue("r", Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 1);
  const auto waiting = store.latest("r");
  CHECK(waiting->status == RunStatus::Waiting);
  CHECK(waiting->attempt == 1);
  CHECK_FALSE(waiting->wake_at.empty());
  REQUIRE(eventually([&] {
    w.drain();
    return store.latest("r")->status == RunStatus::Succeeded;
  }));
  bool scheduled = false, waited = false;
  for (const auto& e : store.events("r")) {
    scheduled = scheduled || e.at("kind") == "retry_scheduled";
    waited = waited || e.at("kind") == "waiting";
  }
  CHECK(scheduled);
  CHECK(waited);
}

TEST_CASE("worker: an approval nobody decided before it expired fails the run approval_expired") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("ask", [](Count& s, ag::RunContext& ctx) -> ag::NextStep {
     if (ctx.resume()) return ag::Goto{"done"};
     ag::ApprovalRequest req{.action = "pay",
                             .proposed_input = {},
                             .risk_reason = "money",
                             .expires_at = std::chrono::system_clock::now() + 30ms};
     (void)s;
     return ag::Interrupt{.reason = "approve", .approval = req};
   }).node("done", halt);
  t.node("never", halt);
  t.g.enqueue("r", Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 1);
  CHECK(store.latest("r")->status == RunStatus::WaitingApproval);
  REQUIRE(eventually([&] {
    w.drain();
    return store.latest("r")->status == RunStatus::Failed;
  }));
  const auto cp = store.latest("r");
  CHECK(cp->reason == ag::Reason::approval_expired);
  CHECK_FALSE(cp->decision);  // nobody decided
}

TEST_CASE("worker: a pause without an expiry is never claimed; a recorded decision makes it run") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("ask", [](Count& s, ag::RunContext& ctx) -> ag::NextStep {
     if (ctx.resume()) return ag::Goto{"done"};
     (void)s;
     return ag::Interrupt{
         .reason = "approve",
         .approval = ag::ApprovalRequest{
             .action = "pay", .proposed_input = {}, .risk_reason = "", .expires_at = std::nullopt}};
   }).node("done", halt);
  t.g.enqueue("r", Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 1);
  CHECK(w.drain() == 0);
  const auto paused = store.latest("r");
  REQUIRE(paused->status == RunStatus::WaitingApproval);
  ag::record_decision(store, "r", ag::request_id(*paused), ag::Approve{"ana", "ok"});
  CHECK(w.drain() == 1);
  CHECK(store.latest("r")->status == RunStatus::Succeeded);
}

TEST_CASE("worker: a run of a graph it does not have is left alone and reported once") {
  ag::MemoryStore store;
  TestGraph mine("1"), theirs("2");
  mine.node("only", halt);
  theirs.node("only", halt);
  theirs.g.enqueue("foreign", Count{}, store);
  std::mutex m;
  std::vector<ag::WorkerEvent> events;
  ag::Worker w(store, {.threads = 1, .poll = 5ms, .on_event = [&](const ag::WorkerEvent& e) {
                         std::lock_guard lock(m);
                         events.push_back(e);
                       }});
  w.add(mine.g);
  CHECK(w.drain() == 0);
  w.start();
  REQUIRE(eventually([&] { return w.stats().foreign == 1; }));
  std::this_thread::sleep_for(50ms);  // more idle polls: still reported once
  w.stop();
  w.join();
  CHECK(w.stats().foreign == 1);
  CHECK(store.latest("foreign")->status == RunStatus::Queued);
  CHECK(store.latest("foreign")->seq == 0);
  std::lock_guard lock(m);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == ag::WorkerEvent::Kind::foreign);
  CHECK(events[0].fingerprint == theirs.g.fingerprint());
}

TEST_CASE("worker: a Running run whose lease is free (its worker died) is claimed and resumed") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("a", [](Count& s, ag::RunContext&) -> ag::NextStep {
     ++s.n;
     return ag::Goto{"b"};
   }).node("b", halt);
  ag::Checkpoint first;
  first.run_id = "crashed";
  first.status = RunStatus::Running;
  first.next_node = "b";
  first.step = 1;
  first.state = Count{.n = 1, .trail = {"a"}};
  first.fingerprint = t.g.fingerprint();
  first.created_at = ag::detail::format_time(std::chrono::system_clock::now());
  store.create(first);
  ag::Worker w(store);
  w.add(t.g);
  {
    ag::Lease held = store.lease("crashed", "alive");  // a live holder: left alone
    CHECK(w.drain() == 0);
  }
  CHECK(w.drain() == 1);
  CHECK(store.latest("crashed")->status == RunStatus::Succeeded);
  CHECK(store.latest("crashed")->state.at("n") == 2);
}

TEST_CASE("worker: a cancelled run is not claimed") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("only", halt);
  t.g.enqueue("r", Count{}, store);
  ag::cancel_run(store, "r", "ops", "not needed");
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 0);
  CHECK(store.latest("r")->status == RunStatus::Cancelled);
}

TEST_CASE("worker: stop() gives a run back between steps, runnable and not cancelled") {
  ag::MemoryStore store;
  TestGraph t;
  std::atomic<bool> in_loop{false};
  t.node("loop", [&](Count& s, ag::RunContext&) -> ag::NextStep {
    in_loop = true;
    std::this_thread::sleep_for(2ms);
    if (++s.n >= 100000) return ag::Halt{};
    return ag::Goto{"loop"};
  });
  t.g.max_steps(1000000);
  t.g.enqueue("long", Count{}, store);
  ag::Worker w(store, {.threads = 1, .poll = 5ms});
  w.add(t.g);
  w.start();
  REQUIRE(eventually([&] { return in_loop.load(); }));
  w.stop();
  w.join();
  const auto cp = store.latest("long");
  CHECK(cp->status == RunStatus::Running);
  CHECK(cp->state.at("n").get<int>() < 100000);
  ag::Lease free_again = store.lease("long", "next");  // given back: nobody holds it
  CHECK(free_again.held());
}

/// A pool of 3 threads on `store` ends 24 runs (two steps, a Sleep between): every run once,
/// each history whole.
void pool_ends_every_run(ag::Store& store) {
  TestGraph t;
  t.node("a", [](Count& s, ag::RunContext&) -> ag::NextStep {
     ++s.n;
     return ag::Goto{"b"};
   }).node("b", [](Count& s, ag::RunContext&) -> ag::NextStep {
    ++s.n;
    return ag::Sleep{.duration = 1ms, .then = "c"};
  });
  t.node("c", halt);
  const int runs = 24;
  for (int i = 0; i < runs; ++i) t.g.enqueue("r" + std::to_string(i), Count{}, store);
  ag::Worker w(store, {.threads = 3, .poll = 5ms});
  w.add(t.g);
  w.start();
  const bool all = eventually([&] {
    for (int i = 0; i < runs; ++i)
      if (store.latest("r" + std::to_string(i))->status != RunStatus::Succeeded) return false;
    return true;
  });
  w.stop();
  w.join();
  if (!all)
    for (const auto& r : store.list_runs())
      MESSAGE(r.run_id << " " << trellis::enumeration<RunStatus>::name(r.status) << " due=" << r.due
                       << " node=" << r.node);
  REQUIRE(all);
  for (int i = 0; i < runs; ++i) {
    const auto history = store.history("r" + std::to_string(i));
    for (std::size_t k = 0; k < history.size(); ++k) CHECK(history[k].seq == k);
    CHECK(history.back().state.at("n") == 3);
    CHECK(history.back().state.at("trail") == nlohmann::json{"a", "b", "c"});
  }
  CHECK(w.stats().lost == 0);
  CHECK(w.stats().errors == 0);
}

TEST_CASE("worker: a pool of threads on SqliteStore ends every run once, each history whole") {
  ag::SqliteStore store(temp_path("pool.db"));
  pool_ends_every_run(store);
}

TEST_CASE("worker: a pool of threads on FileStore ends every run once, each history whole") {
  const auto root = temp_path("pool-files");
  std::filesystem::remove_all(root);
  ag::FileStore store(root);
  pool_ends_every_run(store);
}

TEST_CASE("worker: a run whose call keeps failing is held back; the others go on") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("only", halt);
  ag::Checkpoint broken;
  broken.run_id = "broken";
  broken.status = RunStatus::Running;
  broken.next_node = "only";
  broken.state = {{"n", "not a number"}};  // does not decode: every call fails
  broken.fingerprint = t.g.fingerprint();
  broken.created_at = ag::detail::format_time(std::chrono::system_clock::now());
  store.create(broken);
  for (int i = 0; i < 3; ++i) t.g.enqueue("ok" + std::to_string(i), Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 4);  // the broken run once (held back after), the three others
  for (int i = 0; i < 3; ++i)
    CHECK(store.latest("ok" + std::to_string(i))->status == RunStatus::Succeeded);
  CHECK(w.stats().errors == 1);
  CHECK(store.latest("broken")->seq == 0);  // left where it was
}

TEST_CASE("worker: a claimed run is due by the store's clock, not by the worker's") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("nap", [](Count&, ag::RunContext&) -> ag::NextStep {
     return ag::Sleep{.duration = 1ms, .then = "wake"};
   }).node("wake", halt);
  t.g.enqueue("r", Count{}, store);
  ag::ManualClock behind{std::chrono::system_clock::now() - 1h};  // the worker's clock, late
  ag::Worker w(store, {.run = {.clock = &behind}});
  w.add(t.g);
  // It sleeps until 1 ms after the worker's (stopped) clock: 1 h in the store's past, so due
  // at once by the store's clock; the worker runs it although its own clock says not yet.
  CHECK(w.drain() == 2);
  CHECK(store.latest("r")->status == RunStatus::Succeeded);
}

TEST_CASE(
    "worker: a cancel request seen by a node that gives up with a transient error ends the "
    "run Cancelled, not waiting for the backoff") {
  ag::MemoryStore store;
  TestGraph t;
  t.g.retry({.attempts = 5, .initial_backoff = 1h, .multiplier = 1, .max_backoff = 1h});
  t.node("call", [&store](Count&, ag::RunContext&) -> ag::NextStep {
    ag::CancelRequest r;
    r.run_id = "r";
    r.by = "ops";
    store.request_cancel(r);  // an operator cancels while the call is in flight
    throw ag::transient_error("the call was aborted");
  });
  t.g.enqueue("r", Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  w.drain();
  CHECK(store.latest("r")->status == RunStatus::Cancelled);
}

TEST_CASE("sleep: a sleep past what the clock can count wakes in 2200, never at once") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("forever", [](Count&, ag::RunContext&) -> ag::NextStep {
    return ag::Sleep{.duration = std::chrono::system_clock::duration::max()};
  });
  const auto out = t.g.run("r", Count{}, store);
  REQUIRE(out.waiting());
  CHECK(out.wake_at == "2200-01-01T00:00:00.000Z");
  ag::Worker w(store);
  w.add(t.g);
  CHECK(w.drain() == 0);  // never due
}

TEST_CASE(
    "worker: an approval that expired with nobody deciding forks back to the pause, "
    "asked again without its expiry") {
  ag::MemoryStore store;
  TestGraph t;
  t.node("ask", [](Count&, ag::RunContext& ctx) -> ag::NextStep {
     if (ctx.resume()) return ag::Goto{"execute"};
     return ag::Interrupt{
         .reason = "approve",
         .approval = ag::ApprovalRequest{.action = "pay",
                                         .proposed_input = {},
                                         .risk_reason = "",
                                         .expires_at = std::chrono::system_clock::now() - 1s},
         .then = "execute"};
   }).node("execute", halt);
  t.g.enqueue("r", Count{}, store);
  ag::Worker w(store);
  w.add(t.g);
  w.drain();  // pauses, then (already expired) fails
  const auto failed = store.latest("r");
  REQUIRE(failed->status == RunStatus::Failed);
  REQUIRE(failed->reason == ag::Reason::approval_expired);
  t.g.fork("r", failed->seq, "r2", store);
  const auto fork = store.latest("r2");
  CHECK(fork->status == RunStatus::WaitingApproval);
  REQUIRE(fork->interrupt);
  CHECK_FALSE(fork->interrupt->approval->expires_at);
  CHECK(w.drain() == 0);  // nobody runs "execute" without a decision
}

TEST_CASE("worker: a parent waiting on its child's timer is claimed when due and continues it") {
  ag::MemoryStore store;
  TestGraph child("child");
  child
      .node("a",
            [](Count& s, ag::RunContext&) -> ag::NextStep {
              ++s.n;
              return ag::Sleep{.duration = 100ms, .then = "b"};
            })
      .node("b", halt);
  TestGraph parent("parent");
  parent
      .node("p",
            [&child](Count& s, ag::RunContext& ctx) -> ag::NextStep {
              auto r = ag::subgraph(ctx, child.g, Count{});
              if (!r.done()) return *r.wait;
              s.n = r.output->n;
              return ag::Goto{"end"};
            })
      .node("end", halt);
  parent.g.enqueue("r1", Count{}, store);
  ag::Worker w(store);
  w.add(parent.g);  // the child graph is not the worker's: only its parent advances it
  CHECK(w.drain() == 1);
  CHECK(store.latest("r1")->status == RunStatus::Waiting);
  CHECK(store.latest("r1.p.0")->status == RunStatus::Waiting);
  CHECK(store.latest("r1")->wake_at == store.latest("r1.p.0")->wake_at);
  REQUIRE(eventually([&] {
    w.drain();
    return store.latest("r1")->status == RunStatus::Succeeded;
  }));
  CHECK(store.latest("r1")->state.at("n") == 3);  // the child's a and b, then the parent's end
  CHECK(store.latest("r1.p.0")->status == RunStatus::Succeeded);
  CHECK(store.runs().size() == 2);
}
