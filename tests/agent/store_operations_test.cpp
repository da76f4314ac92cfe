// SPDX-License-Identifier: MIT
// Operators' records, the same over every store (issue 14): cancel requests, listings, events
// by position, deletion, graph shapes, and the operations built on them (operations.hpp):
// decisions, cancellations and reconciliations committed without running the graph, and what
// the run loop makes of them.

#include <trellis/agent/chain.hpp>
#include <trellis/agent/follow.hpp>
#include <trellis/agent/operations.hpp>

#include "store_test_support.hpp"

// Every store; PostgresStore's cases need a server: ctest runs them (the names that end in
// "<PostgresStore>") inside tests/support/with_postgres.sh, and the others without one
// (store_tests.cmake).
#define TRELLIS_ALL_STORES MemoryStore, FileStore, SqliteStore, PostgresStore
#define TRELLIS_SHARED_STORES FileStore, SqliteStore, PostgresStore

namespace {

namespace ag = trellis::agent;
using ag::CancelRequest;
using ag::RunFilter;
using ag::RunSummary;

// ---- a small graph: work (three times) -> gate (asks for approval) -> pay (an at_most_once
// effect) -> end --------------------------------------------------------------------------------

struct Job {
  int count = 0;
  std::string paid;
  int slow_ms = 0;  // work waits this long (or until its stop_token fires) each time
  bool gate = true;
  bool throw_on_stop = false;  // work throws when its stop_token fires (an aborted call)
  bool hold = false;           // pay first makes a compensable "hold" effect
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job, count, paid, slow_ms, gate, throw_on_stop, hold)

struct Calls {
  std::atomic<int> refunds{0};
  std::atomic<int> work{0};
  std::atomic<bool> saw_stop{false};
  std::atomic<int> releases{0};       // compensations of "hold"
  Store* cancel_from_gate = nullptr;  // gate asks this store to cancel its own run first
};

struct Work final : ag::Node<Job> {
  explicit Work(Calls& c) : calls(c) {}
  Calls& calls;
  std::string_view name() const override { return "work"; }
  ag::NextStep run(Job& s, ag::RunContext& ctx) override {
    ++calls.work;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(s.slow_ms);
    while (std::chrono::steady_clock::now() < until) {
      if (ctx.stop_requested()) {
        calls.saw_stop = true;
        if (s.throw_on_stop) throw std::runtime_error("aborted");
        break;
      }
      std::this_thread::sleep_for(2ms);
    }
    ++s.count;
    if (s.count < 3) return ag::Goto{"work"};
    return ag::Goto{s.gate ? "gate" : "pay"};
  }
};

struct Gate final : ag::Node<Job> {
  explicit Gate(Calls& c) : calls(c) {}
  Calls& calls;
  std::string_view name() const override { return "gate"; }
  ag::NextStep run(Job&, ag::RunContext& ctx) override {
    // As if an operator asked to cancel while this step ran (the run call holds the lease).
    if (calls.cancel_from_gate != nullptr)
      ag::cancel_run(*calls.cancel_from_gate, std::string(ctx.run_id()), "ana", "during the gate");
    return ag::Interrupt{
        "pay the refund?",
        ag::ApprovalRequest{"refund 5.00", {{"amount", 5}}, "money leaves", std::nullopt}, "pay"};
  }
};

struct Pay final : ag::Node<Job> {
  explicit Pay(Calls& c) : calls(c) {}
  Calls& calls;
  std::string_view name() const override { return "pay"; }
  ag::NextStep run(Job& s, ag::RunContext& ctx) override {
    if (s.hold)  // undone by the graph's declared compensation of "hold"
      ctx.effect("hold", {{"amount", 5}}, ag::EffectPolicy::idempotent,
                 [](const ag::EffectCall&) {});
    const nlohmann::json r =
        ctx.effect("refund", {{"amount", 5}}, ag::EffectPolicy::at_most_once,
                   [this](const ag::EffectCall& call) {
                     ++calls.refunds;
                     return nlohmann::json{{"id", "rf-" + call.key.substr(0, 6)}};
                   });
    s.paid = r.at("id").get<std::string>();
    return ag::Halt{};
  }
};

struct JobGraph {
  Calls calls;
  ag::Graph<Job> g;
  JobGraph() {
    g.add<Work>(calls).add<Gate>(calls).add<Pay>(calls).entry("work").max_steps(20);
    g.compensation("hold", [this](const ag::EffectCall&, const nlohmann::json&) {
      ++calls.releases;
      return nlohmann::json();
    });
  }
};

/// Creates run `id` of the job graph, Queued at its first node (as a run nobody advances yet).
void create_queued(Store& store, JobGraph& j, const std::string& id) {
  Checkpoint first = cp(id, 0, RunStatus::Queued);
  first.next_node = "work";
  first.state = Job{.count = 0, .paid = {}, .slow_ms = 0, .gate = false};
  first.schema = 1;
  first.fingerprint = j.g.fingerprint();
  store.create(first);
}

/// The key `pay` gives its refund at `step` of run `id` (after a hold: its second effect).
std::string refund_key(const std::string& id, std::uint64_t step, bool hold = false) {
  return ag::effect_key(id, "pay", step, hold ? 1 : 0, "refund", {{"amount", 5}});
}

/// Leaves run `id` failed with reconciliation_required: the refund's call was cut off (its
/// started record is there, no receipt), as after a kill -9 during the call.
template <class S>
void cut_off_refund(JobGraph& j, S& store, const std::string& id, bool hold = false) {
  auto out = j.g.run(id,
                     Job{.count = 0,
                         .paid = {},
                         .slow_ms = 0,
                         .gate = false,
                         .throw_on_stop = false,
                         .hold = hold},
                     store);
  REQUIRE(out.succeeded());  // pay ran at step 3: redo it on a fork that was cut off
  ag::fork_run(store, id, 3, id + "-cut");
  if (hold) {  // the hold went through on the fork too
    ag::EffectRecord held;
    held.run_id = id + "-cut";
    held.name = "hold";
    held.args = {{"amount", 5}};
    held.policy = ag::EffectPolicy::idempotent;
    held.node = "pay";
    held.step = 3;
    held.key = ag::effect_key(id + "-cut", "pay", 3, 0, "hold", held.args);
    held.status = EffectStatus::succeeded;
    held.compensable = true;
    held.started_at = iso(kT0);
    store.put_effect(held);
  }
  ag::EffectRecord rec;
  rec.run_id = id + "-cut";
  rec.name = "refund";
  rec.args = {{"amount", 5}};
  rec.policy = ag::EffectPolicy::at_most_once;
  rec.node = "pay";
  rec.step = 3;
  rec.ordinal = hold ? 1 : 0;
  rec.key = refund_key(id + "-cut", 3, hold);
  rec.started_at = iso(kT0);
  store.put_effect(rec);
  const int before = j.calls.refunds;
  auto failed = j.g.resume(id + "-cut", store);
  REQUIRE(failed.failed());
  REQUIRE(failed.reason == ag::Reason::reconciliation_required);
  REQUIRE(j.calls.refunds == before);
}

}  // namespace

// ---- the store calls --------------------------------------------------------------------------

TEST_CASE_TEMPLATE("store: cancel requests get ids 1, 2, ... per run and are read after an id", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  CHECK(h.store().cancel_requests("run-1").empty());
  CHECK(h.store().request_cancel(CancelRequest{"run-1", 99, "ana", "wrong order", iso(kT0)}) == 1);
  CHECK(h.store().request_cancel(CancelRequest{"run-2", 0, "bo", "", iso(kT0)}) == 1);
  CHECK(h.store().request_cancel(CancelRequest{"run-1", 0, "cy", "again", iso(kT0)}) == 2);
  const auto all = h.reopen().cancel_requests("run-1");
  REQUIRE(all.size() == 2);
  CHECK(all[0] == CancelRequest{"run-1", 1, "ana", "wrong order", iso(kT0)});
  CHECK(all[1].id == 2);
  CHECK(all[1].by == "cy");
  const auto after = h.store().cancel_requests("run-1", 1);
  REQUIRE(after.size() == 1);
  CHECK(after[0].id == 2);
  CHECK(h.store().cancel_requests("run-1", 2).empty());
  CHECK_THROWS_AS(h.store().request_cancel(CancelRequest{"nobody", 0, "ana", "", iso(kT0)}),
                  ag::unknown_run);
  CHECK_THROWS_AS(h.store().request_cancel(CancelRequest{"../x", 0, "ana", "", iso(kT0)}),
                  ag::invalid_run_id);
}

TEST_CASE_TEMPLATE("store: events_after gives positions that continue a reading without a gap", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  for (int i = 0; i < 3; ++i) {
    h.store().append_event("run-1", {{"n", i}});
    h.store().append_event("run-2", {{"other", i}});
  }
  const auto all = h.store().events_after("run-1", 0);
  REQUIRE(all.size() == 3);
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].event == nlohmann::json{{"n", i}});
    CHECK(all[i].seq > 0);
    if (i > 0) CHECK(all[i].seq > all[i - 1].seq);
  }
  const auto rest = h.reopen().events_after("run-1", all[0].seq);
  REQUIRE(rest.size() == 2);
  CHECK(rest[0] == all[1]);
  CHECK(rest[1] == all[2]);
  h.store().append_event("run-1", {{"n", 3}});
  const auto more = h.store().events_after("run-1", all[2].seq);
  REQUIRE(more.size() == 1);
  CHECK(more[0].event == nlohmann::json{{"n", 3}});
  CHECK(h.store().events_after("nobody", 0).empty());
}

TEST_CASE_TEMPLATE("store: follow_events replays, then passes what is appended, until stopped", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().append_event("run-1", {{"n", 0}});
  std::vector<int> seen;
  std::stop_source stop;
  std::thread writer([&] {
    for (int i = 1; i <= 3; ++i) {
      std::this_thread::sleep_for(5ms);
      h.store().append_event("run-1", {{"n", i}});
    }
  });
  const std::uint64_t last = ag::follow_events(
      h.store(), "run-1", 0,
      [&](const ag::StoredEvent& e) {
        seen.push_back(e.event.at("n").get<int>());
        return seen.size() < 4;
      },
      stop.get_token(), 2ms);
  writer.join();
  CHECK(seen == std::vector<int>{0, 1, 2, 3});
  CHECK(last == h.store().events_after("run-1", 0).back().seq);
  CHECK_THROWS_AS(
      ag::follow_events(
          h.store(), "nobody", 0, [](const ag::StoredEvent&) { return true; }, stop.get_token()),
      ag::unknown_run);
}

TEST_CASE_TEMPLATE("store: list_runs summarizes each run from its newest checkpoint and filters", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("b-run", 0, RunStatus::Queued, kT0));
  advance(h.store(), "b-run", 3);
  Checkpoint paused = cp("a-run", 0, RunStatus::WaitingApproval, kT0 + 100s);
  paused.interrupt = ag::Interrupt{.reason = "ok?"};
  h.store().create(paused);
  h.store().create(cp("c-run", 0, RunStatus::Queued, kT0 + 200s));
  Checkpoint done = cp("c-run", 1, RunStatus::Succeeded, kT0 + 200s);
  done.next_node.clear();
  h.store().commit(done, 0);

  const auto all = h.reopen().list_runs();
  REQUIRE(all.size() == 3);
  CHECK(all[0].run_id == "a-run");
  CHECK(all[1].run_id == "b-run");
  CHECK(all[2].run_id == "c-run");
  CHECK(all[0].status == RunStatus::WaitingApproval);
  CHECK(all[0].request == "0");
  CHECK(all[1] == ag::summarize(cp("b-run", 3), iso(kT0)));
  CHECK(all[1].created_at == iso(kT0));
  CHECK(all[1].updated_at == iso(kT0 + 3s));
  CHECK(all[1].request.empty());
  CHECK(all[2].status == RunStatus::Succeeded);
  CHECK(all[2].node.empty());

  const auto waiting = h.store().list_runs(RunFilter{.status = RunStatus::WaitingApproval});
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].run_id == "a-run");
  const auto recent = h.store().list_runs(RunFilter{.since = iso(kT0 + 100s)});
  REQUIRE(recent.size() == 2);
  CHECK(recent[0].run_id == "a-run");
  CHECK(recent[1].run_id == "c-run");
  const auto at_review = h.store().list_runs(RunFilter{.node = "review"});
  REQUIRE(at_review.size() == 1);  // b-run's newest (seq 3) is at review; a-run is at draft
  CHECK(at_review[0].run_id == "b-run");
  CHECK(h.store().list_runs(RunFilter{.status = RunStatus::Waiting}).empty());
}

TEST_CASE_TEMPLATE("store: list_runs pages by run id, filters by graph prefix; count_runs counts",
                   S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  // Ids whose byte order differs from a locale's ("B" < "a"; "run-10" < "run-9").
  const std::vector<std::string> ids{"B-run", "a-run", "run-10", "run-9", "z-run"};
  for (const std::string& id : ids) {
    Checkpoint c =
        cp(id, 0, id == "run-9" || id == "a-run" ? RunStatus::WaitingApproval : RunStatus::Queued);
    if (id == "run-10") c.fingerprint = "other-graph@2";
    if (c.status == RunStatus::WaitingApproval) c.interrupt = ag::Interrupt{.reason = "ok?"};
    h.store().create(c);
  }
  ag::Store& store = h.reopen();
  const auto listed_ids = [](const std::vector<ag::RunSummary>& runs) {
    std::vector<std::string> out;
    for (const ag::RunSummary& r : runs) out.push_back(r.run_id);
    return out;
  };
  // Pages of two, each starting after the last id of the one before, cover every run once.
  std::vector<std::string> paged;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    const auto runs = store.list_runs(RunFilter{.after = after, .limit = 2});
    CHECK(runs.size() <= 2);
    if (runs.empty()) break;
    for (const std::string& id : listed_ids(runs)) paged.push_back(id);
    after = runs.back().run_id;
  }
  CHECK(paged == ids);
  CHECK(listed_ids(store.list_runs(RunFilter{.after = "run-10"})) ==
        std::vector<std::string>{"run-9", "z-run"});
  CHECK(listed_ids(store.list_runs(RunFilter{.after = "zz"})).empty());
  CHECK(listed_ids(store.list_runs(RunFilter{.limit = 1})) == std::vector<std::string>{"B-run"});
  // The graph filter is a prefix of the fingerprint, combined with the others.
  CHECK(listed_ids(store.list_runs(RunFilter{.graph = "other"})) ==
        std::vector<std::string>{"run-10"});
  CHECK(listed_ids(store.list_runs(RunFilter{.graph = "draft,review@1"})).size() == 4);
  CHECK(store.list_runs(RunFilter{.graph = "draft,review@1x"}).empty());
  CHECK(listed_ids(
            store.list_runs(RunFilter{.status = RunStatus::WaitingApproval, .after = "a-run"})) ==
        std::vector<std::string>{"run-9"});
  // count_runs: list_runs' size, the limit ignored.
  CHECK(store.count_runs() == 5);
  CHECK(store.count_runs(RunFilter{.status = RunStatus::WaitingApproval}) == 2);
  CHECK(store.count_runs(RunFilter{.graph = "draft", .after = "a-run", .limit = 1}) == 2);
  CHECK(store.count_runs(RunFilter{.status = RunStatus::Failed}) == 0);
}

TEST_CASE_TEMPLATE("store: list_runs keeps a run's creation time after retention trims it", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  advance(h.store(), "run-1", 6);
  h.store().apply_retention(Retention{.keep_last = 2});
  const auto all = h.reopen().list_runs();
  REQUIRE(all.size() == 1);
  CHECK(all[0].created_at == iso(kT0));
  CHECK(all[0].seq == 6);
}

TEST_CASE_TEMPLATE("store: delete_run removes a run whole, and refuses while it is leased", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  h.store().create(cp("run-2", 0));
  advance(h.store(), "run-1", 2);
  h.store().put_effect(started("run-1", "refund"));
  h.store().append_event("run-1", {{"n", 1}});
  h.store().request_cancel(CancelRequest{"run-1", 0, "ana", "", iso(kT0)});
  {
    Lease held = h.store().lease("run-1", "w1");
    CHECK_THROWS_AS(h.store().delete_run("run-1"), ag::run_busy);
    CHECK(h.store().latest("run-1").has_value());
  }
  h.store().delete_run("run-1");
  CHECK_FALSE(h.store().latest("run-1").has_value());
  CHECK(h.store().history("run-1").empty());
  CHECK(h.store().effects("run-1").empty());
  CHECK(h.store().events_after("run-1", 0).empty());
  CHECK(h.store().cancel_requests("run-1").empty());
  CHECK(h.reopen().runs() == std::vector<std::string>{"run-2"});
  CHECK(h.store().list_runs().size() == 1);
  CHECK_THROWS_AS(h.store().delete_run("run-1"), ag::unknown_run);
  CHECK_THROWS_AS(h.store().delete_run(".."), ag::invalid_run_id);
  h.store().create(cp("run-1", 0));  // the id can be used again
  CHECK(h.store().latest("run-1")->seq == 0);
  CHECK(h.store().cancel_requests("run-1").empty());
}

TEST_CASE_TEMPLATE("store: a graph's shape is kept under its fingerprint; the newest put wins", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  ag::GraphShape shape{"v=1;nodes=a,b",
                       "a",
                       {ag::NodeShape{"a", {"b"}, true, false, {}},
                        ag::NodeShape{"b", {std::string(ag::end_node)}, true, true, {"pay"}}}};
  CHECK_FALSE(h.store().graph(shape.fingerprint).has_value());
  h.store().put_graph(shape);
  h.store().put_graph(shape);
  CHECK(h.reopen().graph(shape.fingerprint) == shape);
  shape.nodes[0].successors.push_back("a");
  h.store().put_graph(shape);
  CHECK(h.reopen().graph(shape.fingerprint) == shape);
  CHECK_FALSE(h.store().graph("v=2;nodes=a").has_value());
}

TEST_CASE_TEMPLATE(
    "store: a checkpoint's cancel_handled and reconciliation, and an effect's "
    "reconciliation, are stored and read back",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0));
  Checkpoint next = cp("run-1", 1, RunStatus::Queued);
  next.cancel_handled = 3;
  next.reconciliation =
      ag::Reconciliation{"k", true, {{"id", "rf-1"}}, "ana", "ledger line 7", iso(kT0)};
  h.store().commit(next, 0);
  Checkpoint plain = cp("run-1", 2);
  plain.cancel_handled = 3;
  h.store().commit(plain, 1);
  EffectRecord r = receipt(started("run-1", "refund"), {{"id", "rf-1"}});
  r.reconciliation = next.reconciliation;
  h.store().put_effect(r);
  CHECK(h.reopen().checkpoint("run-1", 1) == next);
  CHECK(h.store().latest("run-1") == plain);
  CHECK(h.store().effect("run-1", r.key) == r);
}

// ---- decisions ----------------------------------------------------------------------------------

TEST_CASE_TEMPLATE(
    "operations: an approval recorded without the graph queues the run; a resume "
    "runs the step with it",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  REQUIRE(paused.interrupted());
  CHECK(paused.request_id == std::to_string(h.store().latest("run-1")->seq));
  const Checkpoint decided =
      ag::record_decision(h.reopen(), "run-1", paused.request_id, ag::Approve{"ana", "fine"});
  CHECK(decided.status == RunStatus::Queued);
  const auto stored = h.store().latest("run-1");
  REQUIRE(stored.has_value());
  CHECK(*stored == decided);
  REQUIRE(stored->decision.has_value());
  CHECK(stored->decision->given == ag::Resume{ag::Approve{"ana", "fine"}});
  CHECK(std::to_string(stored->decision->answers) == paused.request_id);
  CHECK(j.calls.refunds == 0);  // nothing ran
  CHECK(h.store().list_runs(RunFilter{.status = RunStatus::Queued}).size() == 1);

  const auto done = j.g.resume("run-1", h.store());
  CHECK(done.succeeded());
  CHECK(j.calls.refunds == 1);
  CHECK_FALSE(done.state->paid.empty());
}

TEST_CASE_TEMPLATE("operations: a rejection recorded without the graph fails the run", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  const Checkpoint c =
      ag::record_decision(h.store(), "run-1", paused.request_id, ag::Reject{"too much", "bo"});
  CHECK(c.status == RunStatus::Failed);
  CHECK(c.reason == ag::Reason::approval_rejected);
  CHECK(c.detail == "rejected by bo: too much");
  CHECK(h.store().latest("run-1") == c);
  CHECK_THROWS_AS(j.g.resume("run-1", h.store()), ag::run_finished);
  CHECK(j.calls.refunds == 0);
}

TEST_CASE_TEMPLATE(
    "operations: a decision on a superseded, unknown or malformed request is "
    "refused and writes nothing",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  const std::uint64_t seq = h.store().latest("run-1")->seq;
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", "x1", ag::Approve{}),
                  ag::unknown_request);
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", "", ag::Approve{}), ag::unknown_request);
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", "1", ag::Approve{}),
                  ag::unknown_request);  // checkpoint 1 is a step, not a pause
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", "99", ag::Approve{}),
                  ag::unknown_request);
  CHECK_THROWS_AS(ag::record_decision(h.store(), "nobody", "1", ag::Approve{}), ag::unknown_run);
  CHECK(h.store().latest("run-1")->seq == seq);
  ag::record_decision(h.store(), "run-1", paused.request_id, ag::Approve{"ana"});
  // Decided: a second decision on the same request is stale, whoever gives it.
  try {
    ag::record_decision(h.store(), "run-1", paused.request_id, ag::Reject{"no", "bo"});
    FAIL("a second decision was accepted");
  } catch (const ag::request_superseded& e) {
    CHECK(std::string(e.what()).find("run 'run-1'") != std::string::npos);
  }
  CHECK(h.store().latest("run-1")->seq == seq + 1);
  CHECK(h.store().latest("run-1")->status == RunStatus::Queued);
}

TEST_CASE_TEMPLATE(
    "operations: a decision after the request expired is request_expired and "
    "writes nothing",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  h.store().create(cp("run-1", 0, RunStatus::Running));
  Checkpoint pause = cp("run-1", 1, RunStatus::WaitingApproval);
  pause.interrupt = ag::Interrupt{"ok?", ag::ApprovalRequest{"pay", {}, "money", kT0 + 60s}, ""};
  h.store().commit(pause, 0);
  ag::ManualClock clock(kT0 + 61s);
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", "1", ag::Approve{}, clock),
                  ag::request_expired);
  CHECK(h.store().latest("run-1") == pause);
  ag::ManualClock early(kT0 + 59s);
  CHECK(ag::record_decision(h.store(), "run-1", "1", ag::Approve{}, early).status ==
        RunStatus::Queued);
}

TEST_CASE_TEMPLATE("operations: a decision while a worker holds the run is run_busy", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  Lease held = h.store().lease("run-1", "worker-7");
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", paused.request_id, ag::Approve{}),
                  ag::run_busy);
  CHECK(h.store().latest("run-1")->status == RunStatus::WaitingApproval);
}

// ---- cancellations -----------------------------------------------------------------------------

TEST_CASE_TEMPLATE(
    "operations: cancelling a run nobody advances commits Cancelled at once; a "
    "resume continues it and does not cancel again",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  create_queued(h.store(), j, "run-1");
  const ag::CancelResult r = ag::cancel_run(h.store(), "run-1", "ana", "wrong customer");
  CHECK(r.cancelled_now);
  CHECK(r.request == 1);
  CHECK(r.status == RunStatus::Cancelled);
  const Checkpoint c = *h.store().latest("run-1");
  CHECK(c.status == RunStatus::Cancelled);
  CHECK(c.cancel_handled == 1);
  CHECK(c.detail == "cancelled by ana: wrong customer");
  CHECK(h.store().cancel_requests("run-1").size() == 1);
  // Cancelling again changes nothing.
  const ag::CancelResult again = ag::cancel_run(h.store(), "run-1", "bo", "");
  CHECK(again.request == 0);
  CHECK_FALSE(again.cancelled_now);
  CHECK(h.store().latest("run-1")->seq == c.seq);

  const auto done = j.g.resume("run-1", h.store());
  CHECK(done.succeeded());
  CHECK(done.state->count == 3);
}

TEST_CASE_TEMPLATE(
    "operations: a run cancelled while it waits for approval waits again when "
    "resumed, under a new request id",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  REQUIRE(paused.interrupted());
  CHECK(ag::cancel_run(h.store(), "run-1", "ana", "").cancelled_now);
  CHECK_THROWS_AS(ag::record_decision(h.store(), "run-1", paused.request_id, ag::Approve{}),
                  ag::request_superseded);
  const auto again = j.g.resume("run-1", h.store());
  CHECK(again.interrupted());  // the approval is not skipped
  CHECK(j.calls.refunds == 0);
  CHECK(again.request_id != paused.request_id);
  REQUIRE(again.interrupt.has_value());
  CHECK(again.interrupt == paused.interrupt);
  const auto done = j.g.resume("run-1", h.store(), ag::Approve{"ana"});
  CHECK(done.succeeded());
  CHECK(j.calls.refunds == 1);
}

TEST_CASE_TEMPLATE("operations: cancelling a finished run is run_conflict and writes nothing", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  REQUIRE(j.g.run("run-1", Job{.count = 0, .paid = {}, .slow_ms = 0, .gate = false}, h.store())
              .succeeded());
  const std::uint64_t seq = h.store().latest("run-1")->seq;
  CHECK_THROWS_AS(ag::cancel_run(h.store(), "run-1", "ana", ""), ag::run_conflict);
  CHECK(h.store().latest("run-1")->seq == seq);
  CHECK(h.store().cancel_requests("run-1").empty());
  CHECK_THROWS_AS(ag::cancel_run(h.store(), "nobody", "ana", ""), ag::unknown_run);
}

TEST_CASE_TEMPLATE(
    "operations: while a worker advances the run, cancel only records the "
    "request; the worker's next check between steps cancels the run",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  create_queued(h.store(), j, "run-1");
  {
    Lease held = h.store().lease("run-1", "worker-7");
    const ag::CancelResult r = ag::cancel_run(h.store(), "run-1", "ana", "stop");
    CHECK_FALSE(r.cancelled_now);
    CHECK(r.request == 1);
    CHECK(h.store().latest("run-1")->status == RunStatus::Queued);
  }
  // The next process to advance it sees the pending request before its first step.
  const auto out = j.g.resume("run-1", h.store());
  CHECK(out.cancelled());
  CHECK(j.calls.work == 0);
  CHECK(h.store().latest("run-1")->cancel_handled == 1);
  CHECK(h.store().latest("run-1")->detail == "cancelled by ana: stop");
  // Resumed again, it runs: the request was answered.
  CHECK(j.g.resume("run-1", h.store()).succeeded());
}

TEST_CASE_TEMPLATE(
    "operations: a node sees a cancel request from another thread through its "
    "stop_token, and the run ends Cancelled after its step" *
        doctest::test_suite("concurrency"),
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  std::atomic<bool> asked{false};
  std::exception_ptr failed;
  std::thread canceller([&] {
    try {
      while (j.calls.work.load() == 0) std::this_thread::sleep_for(1ms);
      const ag::CancelResult r = ag::cancel_run(h.store(), "run-1", "ana", "stop now");
      asked = !r.cancelled_now;  // the run's process holds it: only the request is recorded
    } catch (...) {
      failed = std::current_exception();
    }
  });
  ag::RunOptions o;
  o.cancel_poll = 5ms;
  // Each work step waits up to 10 s unless its stop_token fires.
  const auto out =
      j.g.run("run-1", Job{.count = 0, .paid = {}, .slow_ms = 10'000, .gate = false}, h.store(), o);
  canceller.join();
  if (failed) std::rethrow_exception(failed);
  CHECK(asked);
  CHECK(out.cancelled());
  CHECK(j.calls.saw_stop);
  CHECK(j.calls.work == 1);  // the step in flight committed, no further step ran
  CHECK(out.steps == 1);
  CHECK(h.store().latest("run-1")->cancel_handled == 1);
  CHECK(j.calls.refunds == 0);
}

// ---- reconciliations ----------------------------------------------------------------------------

TEST_CASE_TEMPLATE(
    "operations: reconciling 'it happened' reopens the run, and the resume takes "
    "the recorded result without paying again",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  cut_off_refund(j, h.store(), "run-1");
  const int paid = j.calls.refunds;
  const std::string key = refund_key("run-1-cut", 3);
  const Checkpoint c = ag::reconcile_run(
      h.reopen(), "run-1-cut",
      ag::Reconciliation{key, true, {{"id", "rf-ledger-7"}}, "ana", "ledger line 7", ""});
  CHECK(c.status == RunStatus::Queued);
  REQUIRE(c.reconciliation.has_value());
  CHECK(c.reconciliation->by == "ana");
  CHECK_FALSE(c.reconciliation->at.empty());
  const auto rec = h.store().effect("run-1-cut", key);
  REQUIRE(rec.has_value());
  CHECK(rec->status == EffectStatus::succeeded);
  CHECK(rec->result == nlohmann::json{{"id", "rf-ledger-7"}});
  REQUIRE(rec->reconciliation.has_value());
  CHECK(rec->reconciliation->reason == "ledger line 7");

  const auto done = j.g.resume("run-1-cut", h.store());
  CHECK(done.succeeded());
  CHECK(done.state->paid == "rf-ledger-7");
  CHECK(j.calls.refunds == paid);  // not called again
}

TEST_CASE_TEMPLATE(
    "operations: reconciling 'it did not happen' re-issues the call under the "
    "same key",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  cut_off_refund(j, h.store(), "run-1");
  const int paid = j.calls.refunds;
  const std::string key = refund_key("run-1-cut", 3);
  ag::reconcile_run(h.store(), "run-1-cut",
                    ag::Reconciliation{key, false, nullptr, "bo", "no such payment", ""});
  CHECK(h.store().effect("run-1-cut", key)->status == EffectStatus::transient);
  const auto done = j.g.resume("run-1-cut", h.store());
  CHECK(done.succeeded());
  CHECK(j.calls.refunds == paid + 1);
  const auto rec = h.store().effect("run-1-cut", key);
  CHECK(rec->status == EffectStatus::succeeded);
  CHECK(rec->issued == 2);
  REQUIRE(rec->reconciliation.has_value());  // the audit stays with the record
  CHECK(rec->reconciliation->by == "bo");
}

TEST_CASE_TEMPLATE(
    "operations: reconcile refuses a run that does not need it, an unknown key "
    "and an effect that is not in doubt",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  cut_off_refund(j, h.store(), "run-1");
  const ag::Reconciliation happened{refund_key("run-1-cut", 3), true, {{"id", "x"}}, "ana", "", ""};
  CHECK_THROWS_AS(ag::reconcile_run(h.store(), "run-1", happened),
                  ag::run_conflict);  // run-1 succeeded
  ag::Reconciliation unknown = happened;
  unknown.key = std::string(64, 'a');
  const std::uint64_t seq = h.store().latest("run-1-cut")->seq;
  CHECK_THROWS_AS(ag::reconcile_run(h.store(), "run-1-cut", unknown), ag::run_conflict);
  CHECK_THROWS_AS(ag::reconcile_run(h.store(), "nobody", happened), ag::unknown_run);
  CHECK(h.store().latest("run-1-cut")->seq == seq);
  ag::reconcile_run(h.store(), "run-1-cut", happened);
  CHECK_THROWS_AS(ag::reconcile_run(h.store(), "run-1-cut", happened),
                  ag::run_conflict);  // reopened: no longer failed
}

TEST_CASE_TEMPLATE(
    "operations: a reconciliation cut off between its two writes is finished by "
    "repeating it",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  cut_off_refund(j, h.store(), "run-1");
  const std::string key = refund_key("run-1-cut", 3);
  // The receipt was written, the checkpoint not (as if the process died in between).
  ag::EffectRecord rec = *h.store().effect("run-1-cut", key);
  rec.status = EffectStatus::succeeded;
  rec.result = {{"id", "rf-first"}};
  rec.reconciliation =
      ag::Reconciliation{key,   true,        rec.result,
                         "ana", "first try", ag::detail::now_iso8601(ag::SystemClock::instance())};
  h.store().put_effect(rec);
  REQUIRE(h.store().latest("run-1-cut")->status == RunStatus::Failed);
  const Checkpoint c = ag::reconcile_run(
      h.store(), "run-1-cut", ag::Reconciliation{key, true, {{"id", "other"}}, "bo", "again", ""});
  REQUIRE(c.reconciliation.has_value());
  CHECK(c.reconciliation->by == "ana");  // the recorded one counts
  CHECK(j.g.resume("run-1-cut", h.store()).state->paid == "rf-first");
}

// ---- forks and listings without the graph -------------------------------------------------------

TEST_CASE_TEMPLATE("operations: fork_run copies a checkpoint into a new run without the graph", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  REQUIRE(j.g.run("run-1", Job{.count = 0, .paid = {}, .slow_ms = 0, .gate = false}, h.store())
              .succeeded());
  const Checkpoint at1 = ag::fork_run(h.store(), "run-1", 1, "run-2");
  CHECK(at1.status == RunStatus::Queued);
  CHECK(at1.seq == 0);
  CHECK(at1.next_node == h.store().checkpoint("run-1", 1)->next_node);
  const Checkpoint fresh =
      ag::fork_run(h.store(), "run-1", h.store().latest("run-1")->seq, "run-3");
  CHECK(fresh.next_node == "work");  // a succeeded run forks from its first node
  // Every fork's first checkpoint says where it came from (and, given, who forked it and why).
  REQUIRE(at1.forked_from.has_value());
  CHECK(at1.forked_from->run_id == "run-1");
  CHECK(at1.forked_from->seq == 1);
  CHECK(at1.forked_from->by.empty());
  CHECK(at1.forked_from->at == at1.created_at);
  const Checkpoint audited = ag::fork_run(h.store(), "run-1", 1, "run-5", "ana", "replay step 2");
  const Checkpoint read = *h.reopen().checkpoint("run-5", 0);
  REQUIRE(read.forked_from.has_value());
  CHECK(*read.forked_from ==
        ag::ForkOrigin{"run-1", 1, "ana", "replay step 2", audited.created_at});
  CHECK(ag::verify_chain(h.store(), "run-5").intact());  // the origin is in the sealed record
  const std::vector<nlohmann::json> events = h.store().events("run-5");
  REQUIRE(!events.empty());
  CHECK(events.back()["kind"] == "forked");
  CHECK(events.back()["detail"]["by"] == "ana");
  CHECK(events.back()["detail"]["run_id"] == "run-1");
  CHECK(j.g.resume("run-2", h.store()).succeeded());
  for (const Checkpoint& c : h.store().history("run-2"))  // only in the fork's first checkpoint
    CHECK(c.forked_from.has_value() == (c.seq == 0));
  CHECK_THROWS_AS(ag::fork_run(h.store(), "run-1", 1, "run-2"), ag::graph_error);
  CHECK_THROWS_AS(ag::fork_run(h.store(), "run-1", 99, "run-4"), ag::unknown_run);
}

TEST_CASE_TEMPLATE("operations: a fork's origin stays in its first checkpoint only", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  REQUIRE(j.g.run("gated", Job{}, h.store()).interrupted());
  // Forked at the pause: the operators' commits (a decision, a cancellation) do not carry it.
  const std::uint64_t pause = h.store().latest("gated")->seq;
  REQUIRE(ag::fork_run(h.store(), "gated", pause, "decided", "ana", "").forked_from);
  ag::record_decision(h.store(), "decided", ag::request_id(*h.store().latest("decided")),
                      ag::Approve{"bo"});
  REQUIRE(ag::fork_run(h.store(), "gated", pause, "cancelled", "ana", "").forked_from);
  ag::cancel_run(h.store(), "cancelled", "bo", "no");
  for (const char* id : {"decided", "cancelled"}) {
    const auto history = h.store().history(id);
    REQUIRE(history.size() >= 2);
    for (const Checkpoint& c : history) CHECK(c.forked_from.has_value() == (c.seq == 0));
  }
}

TEST_CASE_TEMPLATE("operations: pending_approvals lists each waiting run with its request", S,
                   TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  j.g.run("run-b", Job{}, h.store());
  j.g.run("run-a", Job{}, h.store());
  j.g.run("run-c", Job{.count = 0, .paid = {}, .slow_ms = 0, .gate = false}, h.store());
  const auto pending = ag::pending_approvals(h.store());
  REQUIRE(pending.size() == 2);
  CHECK(pending[0].run.run_id == "run-a");
  CHECK(pending[1].run.run_id == "run-b");
  CHECK(pending[0].asked_by == "gate");
  REQUIRE(pending[0].interrupt.approval.has_value());
  CHECK(pending[0].interrupt.approval->action == "refund 5.00");
  CHECK(pending[0].run.request == std::to_string(h.store().latest("run-a")->seq));
}

// ---- what the review of issue 14 found ---------------------------------------------------------

TEST_CASE_TEMPLATE(
    "operations: a cancel request made while a step runs that then pauses cancels "
    "the run at its pause; resumed, it waits again",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  j.calls.cancel_from_gate = &h.store();
  const auto out = j.g.run("run-1", Job{}, h.store());
  CHECK(out.cancelled());
  const Checkpoint c = *h.store().latest("run-1");
  CHECK(c.status == RunStatus::Cancelled);
  CHECK(c.cancel_handled == 1);
  CHECK(c.interrupt.has_value());  // the pause is kept
  j.calls.cancel_from_gate = nullptr;
  const auto again = j.g.resume("run-1", h.store());
  CHECK(again.interrupted());
  CHECK(j.calls.refunds == 0);
}

TEST_CASE_TEMPLATE(
    "operations: a node that throws when its stop token fires on a cancel request "
    "ends the run Cancelled, not Failed" *
        doctest::test_suite("concurrency"),
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  std::exception_ptr failed;
  std::thread canceller([&] {
    try {
      while (j.calls.work.load() == 0) std::this_thread::sleep_for(1ms);
      ag::cancel_run(h.store(), "run-1", "ana", "stop");
    } catch (...) {
      failed = std::current_exception();
    }
  });
  ag::RunOptions o;
  o.cancel_poll = 5ms;
  const auto out = j.g.run("run-1",
                           Job{.count = 0,
                               .paid = {},
                               .slow_ms = 10'000,
                               .gate = false,
                               .throw_on_stop = true,
                               .hold = false},
                           h.store(), o);
  canceller.join();
  if (failed) std::rethrow_exception(failed);
  CHECK(out.cancelled());
  CHECK(out.steps == 0);  // the step that threw is dropped
  CHECK(h.store().latest("run-1")->status == RunStatus::Cancelled);
}

TEST_CASE_TEMPLATE(
    "operations: a fork of a rejected run, and of a run cancelled at its pause, "
    "waits for a decision again",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  ag::record_decision(h.store(), "run-1", paused.request_id, ag::Reject{"no", "bo"});
  const Checkpoint rejected =
      ag::fork_run(h.store(), "run-1", h.store().latest("run-1")->seq, "run-2");
  CHECK(rejected.status == RunStatus::WaitingApproval);
  CHECK(rejected.interrupt == paused.interrupt);
  j.g.run("run-3", Job{}, h.store());
  ag::cancel_run(h.store(), "run-3", "ana", "");
  const Checkpoint cancelled =
      ag::fork_run(h.store(), "run-3", h.store().latest("run-3")->seq, "run-4");
  CHECK(cancelled.status == RunStatus::WaitingApproval);
  CHECK_THROWS_AS(j.g.resume("run-4", h.store()), ag::graph_error);  // it needs a decision
  CHECK(j.g.resume("run-4", h.store(), ag::Approve{"ana"}).succeeded());
  CHECK(j.calls.refunds == 1);  // only the approved fork paid
}

TEST_CASE_TEMPLATE(
    "operations: a run failed with reconciliation_required keeps its compensations "
    "until it is reconciled, or resumed without a reconciliation",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  cut_off_refund(j, h.store(), "run-1", true);
  CHECK(j.calls.releases == 0);  // the hold was not undone
  ag::reconcile_run(
      h.store(), "run-1-cut",
      ag::Reconciliation{
          refund_key("run-1-cut", 3, true), true, {{"id", "rf-9"}}, "ana", "ledger", ""});
  CHECK(j.g.resume("run-1-cut", h.store()).succeeded());
  CHECK(j.calls.releases == 0);

  JobGraph k;
  cut_off_refund(k, h.store(), "run-2", true);
  const auto given_up = k.g.resume("run-2-cut", h.store());  // no reconciliation: give up
  CHECK(given_up.failed());
  CHECK(k.calls.releases == 1);
}

TEST_CASE_TEMPLATE(
    "operations: operators' actions are in the run's event log, and an unknown run "
    "is refused before anything is written for it",
    S, TRELLIS_ALL_STORES) {
  Harness<S> h;
  JobGraph j;
  const auto paused = j.g.run("run-1", Job{}, h.store());
  ag::record_decision(h.store(), "run-1", paused.request_id, ag::Approve{"ana", "ok"});
  const auto events = h.store().events_after("run-1", 0);
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().event.at("kind") == "decision_recorded");
  CHECK(events.back().event.at("detail").at("reviewer") == "ana");
  CHECK_THROWS_AS(ag::record_decision(h.store(), "typo", "2", ag::Approve{}), ag::unknown_run);
  CHECK_THROWS_AS(
      ag::reconcile_run(h.store(), "typo", ag::Reconciliation{"k", true, nullptr, "", "", ""}),
      ag::unknown_run);
  if constexpr (std::is_same_v<S, FileStore>)
    CHECK_FALSE(fs::exists(h.store().run_directory("typo")));
  CHECK(h.store().runs() == std::vector<std::string>{"run-1"});
}
