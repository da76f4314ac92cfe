// SPDX-License-Identifier: MIT
/// @file
/// Effects with receipts (issue 6, section 1) on MemoryStore, in process: idempotency keys,
/// started records and receipts, replay, the three policies after a cut-off call, transient
/// errors, compensation, and the step's checkpoint listing its effects. The crash test in
/// child processes, on the persistent stores, is effect_crash_test.cpp.

#include <openssl/evp.h>

#include <trellis/agent/effect.hpp>
#include <trellis/agent/errors.hpp>
#include <trellis/agent/failpoint.hpp>
#include <trellis/persist/errors.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_test_support.hpp"

using ag::EffectPolicy;
using ag::EffectStatus;
using nlohmann::json;

namespace {

/// SHA-256 of `bytes` in lower-case hex, computed here, apart from the library's code.
std::string sha256_hex(const std::string& bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> d{};
  unsigned int n = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), d.data(), &n, EVP_sha256(), nullptr) == 1);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    static constexpr char digits[] = "0123456789abcdef";
    hex += digits[d[i] >> 4];
    hex += digits[d[i] & 0xF];
  }
  return hex;
}

/// The simulated external system: every call it received, with its key.
struct Payments {
  std::vector<std::string> calls;  // keys, in call order
  int fail_next = 0;               // throw transient_error for this many calls
  bool refuse = false;             // throw a final error
  json charge(int amount, const std::string& key) {
    calls.push_back(key);
    if (fail_next > 0) {
      --fail_next;
      throw ag::transient_error("payments: 503");
    }
    if (refuse) throw std::runtime_error("card declined");
    return {{"charge_id", "ch_" + std::to_string(calls.size())}, {"amount", amount}};
  }
};

Step charge_then(Payments& pay, EffectPolicy policy, std::string next) {
  return [&pay, policy, next](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
    json r = ctx.effect("charge_card", {{"amount", 120}, {"card", "...4242"}}, policy,
                        [&](const ag::EffectCall& call) { return pay.charge(120, call.key); });
    d.text = r.at("charge_id").get<std::string>();
    return ag::Goto{next};
  };
}

/// The keys the run's step_completed events list as replayed from receipts.
std::vector<std::string> replayed_keys(ag::Store& store) {
  std::vector<std::string> keys;
  for (const json& e : store.events("run-1"))
    if (e.at("kind") == "step_completed" && e.at("detail").contains("replayed"))
      for (const json& k : e.at("detail").at("replayed")) keys.push_back(k.get<std::string>());
  return keys;
}

std::vector<std::string> kinds_of(ag::Store& store, const std::string& prefix) {
  std::vector<std::string> kinds;
  for (const json& e : store.events("run-1")) {
    const auto kind = e.at("kind").get<std::string>();
    if (kind.starts_with(prefix)) kinds.push_back(kind);
  }
  return kinds;
}

}  // namespace

// --- keys ------------------------------------------------------------------------------------

TEST_CASE("effect: the key is SHA-256 of run, node, step, ordinal, name and canonical args") {
  const json args = {{"amount", 120}, {"card", "...4242"}};
  const std::string key = ag::effect_key("run-1", "charge", 3, 0, "charge_card", args);
  CHECK(key ==
        sha256_hex(R"(["run-1","charge",3,0,"charge_card",{"amount":120,"card":"...4242"}])"));
  CHECK(key.size() == 64);

  // Same place, same arguments built in another order: the same key.
  json reordered = json::object();
  reordered["card"] = "...4242";
  reordered["amount"] = 120;
  CHECK(ag::effect_key("run-1", "charge", 3, 0, "charge_card", reordered) == key);

  // Any part that differs gives another key.
  CHECK(ag::effect_key("run-2", "charge", 3, 0, "charge_card", args) != key);
  CHECK(ag::effect_key("run-1", "other", 3, 0, "charge_card", args) != key);
  CHECK(ag::effect_key("run-1", "charge", 4, 0, "charge_card", args) != key);
  CHECK(ag::effect_key("run-1", "charge", 3, 1, "charge_card", args) != key);
  CHECK(ag::effect_key("run-1", "charge", 3, 0, "refund", args) != key);
  CHECK(ag::effect_key("run-1", "charge", 3, 0, "charge_card", {{"amount", 121}}) != key);
  // Parts cannot run into each other: ("ab","c") and ("a","bc") differ.
  CHECK(ag::effect_key("ab", "c", 0, 0, "n", nullptr) !=
        ag::effect_key("a", "bc", 0, 0, "n", nullptr));
  CHECK(ag::compensation_key(key) != key);
}

TEST_CASE("effect: two effects of one step get their own keys, handed to the function") {
  Harness h;
  std::vector<ag::EffectCall> seen;
  h.node("a", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    for (int i = 0; i < 2; ++i)
      ctx.effect("notify", {{"to", "ana"}}, EffectPolicy::at_least_once,
                 [&](const ag::EffectCall& call) { seen.push_back(call); });
    return ag::Halt{};
  });
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].key != seen[1].key);
  CHECK(seen[0].ordinal == 0);
  CHECK(seen[1].ordinal == 1);
  CHECK(seen[1].key == ag::effect_key("run-1", "a", 0, 1, "notify", {{"to", "ana"}}));
  CHECK(seen[0].issue == 1);
  // The step's checkpoint references both, in call order.
  CHECK(h.latest().effects == std::vector<std::string>{seen[0].key, seen[1].key});
}

// --- records and replay ----------------------------------------------------------------------

TEST_CASE("effect: a started record before the call and a receipt after it, both in the store") {
  Harness h;
  Payments pay;
  std::vector<EffectStatus> during;  // what the store held while the call ran
  h.node("charge", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect("charge_card", {{"amount", 120}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& call) {
                 during.push_back(h.store.effect("run-1", call.key)->status);
                 return pay.charge(120, call.key);
               });
    return ag::Halt{};
  });
  h.graph.entry("charge");
  REQUIRE(h.run().succeeded());
  CHECK(during == std::vector<EffectStatus>{EffectStatus::started});
  const auto records = h.store.effects("run-1");
  REQUIRE(records.size() == 1);
  const ag::EffectRecord& r = records[0];
  CHECK(r.key == pay.calls.at(0));
  CHECK(r.name == "charge_card");
  CHECK(r.args == json{{"amount", 120}});
  CHECK(r.policy == EffectPolicy::at_most_once);
  CHECK(r.node == "charge");
  CHECK(r.step == 0);
  CHECK(r.status == EffectStatus::succeeded);
  CHECK(r.result.at("charge_id") == "ch_1");
  CHECK(r.issued == 1);
  CHECK_FALSE(r.finished_at.empty());
  CHECK(kinds_of(h.store, "effect_") ==
        std::vector<std::string>{"effect_started", "effect_completed"});
}

TEST_CASE("effect: after a crash before the step commit, the receipt replays the result") {
  for (EffectPolicy policy :
       {EffectPolicy::idempotent, EffectPolicy::at_least_once, EffectPolicy::at_most_once}) {
    CAPTURE(policy);
    Harness h;
    Payments pay;
    h.node("charge", charge_then(pay, policy, "done")).node("done", halt());
    h.graph.entry("charge");
    {
      CrashingStore dying(h.store, 2);  // started, receipt, then the step commit dies
      auto o = h.options();
      CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
    }
    CHECK(h.latest().step == 0);
    const auto out = h.resume();
    REQUIRE(out.succeeded());
    CHECK(pay.calls.size() == 1);      // not charged again
    CHECK(out.state->text == "ch_1");  // the stored result, as the node saw it first
    CHECK(h.calls["charge"] == 2);     // the node did run again
    CHECK(replayed_keys(h.store) == std::vector<std::string>{pay.calls.at(0)});
  }
}

TEST_CASE("effect: a cut-off call is re-issued with the same key (idempotent, at_least_once)") {
  for (EffectPolicy policy : {EffectPolicy::idempotent, EffectPolicy::at_least_once}) {
    CAPTURE(policy);
    Harness h;
    Payments pay;
    h.node("charge", charge_then(pay, policy, "done")).node("done", halt());
    h.graph.entry("charge");
    {
      CrashingStore dying(h.store, 1);  // started is committed, the call made, the receipt dies
      auto o = h.options();
      CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
    }
    CHECK(h.store.effects("run-1").at(0).status == EffectStatus::started);
    const auto out = h.resume();
    REQUIRE(out.succeeded());
    REQUIRE(pay.calls.size() == 2);
    CHECK(pay.calls[0] == pay.calls[1]);  // the external system can deduplicate
    CHECK(h.store.effects("run-1").at(0).issued == 2);
    CHECK(h.store.effects("run-1").at(0).status == EffectStatus::succeeded);
  }
}

TEST_CASE("effect: a cut-off at_most_once call fails the run with reconciliation_required") {
  Harness h;
  Payments pay;
  h.node("charge", charge_then(pay, EffectPolicy::at_most_once, "done")).node("done", halt());
  h.graph.entry("charge");
  {
    CrashingStore dying(h.store, 1);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  const auto out = h.resume();
  CHECK(out.failed());
  CHECK(out.reason == Reason::reconciliation_required);
  const std::string key = pay.calls.at(0);
  CHECK(out.detail.find(key) != std::string::npos);                       // names the key
  CHECK(out.detail.find("\"amount\":120") != std::string::npos);          // and the arguments
  CHECK(pay.calls.size() == 1);                                           // never re-run
  CHECK(h.store.effects("run-1").at(0).status == EffectStatus::started);  // left for a person
  CHECK_THROWS_AS(h.resume(), ag::run_finished);
}

TEST_CASE("effect: a node that swallows reconciliation_required still fails the run") {
  Harness h;
  Payments pay;
  h.node("charge", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
     try {
       ctx.effect("charge_card", {{"amount", 120}}, EffectPolicy::at_most_once,
                  [&](const ag::EffectCall& c) { return pay.charge(120, c.key); });
     } catch (const std::exception&) {  // a careless catch-all
     }
     return ag::Goto{"done"};
   }).node("done", halt());
  h.graph.entry("charge");
  {
    CrashingStore dying(h.store, 1);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  const auto out = h.resume();
  CHECK(out.reason == Reason::reconciliation_required);
  CHECK(h.calls["done"] == 0);
}

TEST_CASE("effect: a transient error's receipt is not final: the retry re-issues the same key") {
  for (EffectPolicy policy :
       {EffectPolicy::idempotent, EffectPolicy::at_least_once, EffectPolicy::at_most_once}) {
    CAPTURE(policy);
    Harness h;
    Payments pay;
    pay.fail_next = 2;
    h.node("charge", charge_then(pay, policy, "done")).node("done", halt());
    h.graph.entry("charge").retry({.attempts = 3});
    const auto out = h.run();
    REQUIRE(out.succeeded());
    REQUIRE(pay.calls.size() == 3);
    CHECK(pay.calls[0] == pay.calls[1]);
    CHECK(pay.calls[1] == pay.calls[2]);
    const auto r = h.store.effects("run-1").at(0);
    CHECK(r.status == EffectStatus::succeeded);
    CHECK(r.issued == 3);
  }
}

TEST_CASE("effect: a final error is stored and thrown again on replay, without a call") {
  Harness h;
  Payments pay;
  pay.refuse = true;
  int caught = 0;
  h.node("charge",
         [&](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
           try {
             ctx.effect("charge_card", {{"amount", 120}}, EffectPolicy::at_most_once,
                        [&](const ag::EffectCall& c) { return pay.charge(120, c.key); });
           } catch (const ag::effect_failed& e) {
             ++caught;
             d.text = e.what();
             return ag::Goto{"apologise"};
           }
           return ag::Goto{"done"};
         })
      .node("apologise", halt())
      .node("done", halt());
  h.graph.entry("charge");
  {
    CrashingStore dying(h.store, 2);  // started, the error's receipt, then the step dies
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  CHECK(h.store.effects("run-1").at(0).status == EffectStatus::failed);
  const auto out = h.resume();
  REQUIRE(out.succeeded());
  CHECK(caught == 2);            // the node saw the same failure on the replay
  CHECK(pay.calls.size() == 1);  // without a second call
  CHECK(out.state->text.find("card declined") != std::string::npos);
  CHECK(out.state->trail.back() == "apologise");
}

TEST_CASE("effect: an effect's error that escapes the node fails the run as node_error") {
  Harness h;
  Payments pay;
  pay.refuse = true;
  h.node("charge", charge_then(pay, EffectPolicy::at_least_once, "done")).node("done", halt());
  h.graph.entry("charge");
  const auto out = h.run();
  CHECK(out.reason == Reason::node_error);
  CHECK(out.detail.find("card declined") != std::string::npos);
  CHECK(out.detail.find("charge_card") != std::string::npos);
}

TEST_CASE("effect: calling an effect outside a run is a graph_error") {
  ag::ManualClock clock{t0};
  ag::RunContext ctx("r", "n", 0, 0, PermissionMode::Default, {}, std::nullopt, clock);
  CHECK_THROWS_AS(ctx.effect("x", nullptr, EffectPolicy::idempotent, [](const ag::EffectCall&) {}),
                  ag::graph_error);
}

// --- compensation ----------------------------------------------------------------------------

namespace {
/// charge (compensable) -> reserve (compensable) -> ship, which fails for good.
struct Saga {
  Harness h;
  Payments pay;
  std::vector<std::pair<std::string, json>> undone;  // (effect key undone, its result)
  std::vector<std::string> compensation_keys;

  ag::CompensateFn undo() {
    return [this](const ag::EffectCall& call, const json& result) {
      undone.emplace_back(call.compensates, result);
      compensation_keys.push_back(call.key);
      return json{{"refunded", result.at("charge_id")}};
    };
  }
  void declare(bool with_overload) {
    for (const char* name : {"charge", "reserve"}) {
      h.node(name, [this, name, with_overload](Doc&, ag::RunContext& ctx) -> ag::NextStep {
        auto fn = [this](const ag::EffectCall& c) { return pay.charge(1, c.key); };
        if (with_overload)
          ctx.effect(std::string(name) + "_effect", {{"n", name}}, EffectPolicy::at_most_once, fn,
                     undo());
        else
          ctx.effect(std::string(name) + "_effect", {{"n", name}}, EffectPolicy::at_most_once, fn);
        return ag::Goto{std::string(name) == "charge" ? "reserve" : "ship"};
      });
    }
    h.node("ship", [](Doc&, ag::RunContext&) -> ag::NextStep {
      throw std::runtime_error("warehouse on fire");
    });
    h.graph.entry("charge");
  }
};
}  // namespace

TEST_CASE("effect: when the run fails, compensations run once, newest effect first") {
  Saga s;
  s.declare(true);
  const auto out = s.h.run();
  CHECK(out.reason == Reason::node_error);
  REQUIRE(s.undone.size() == 2);
  CHECK(s.undone[0].first == s.pay.calls[1]);  // reserve, then charge
  CHECK(s.undone[1].first == s.pay.calls[0]);
  CHECK(s.undone[0].second.at("charge_id") == "ch_2");  // handed the effect's result
  CHECK(s.compensation_keys[0] == ag::compensation_key(s.pay.calls[1]));
  // Each compensation has its own receipt, listed with the run's effects.
  const auto records = s.h.store.effects("run-1");
  REQUIRE(records.size() == 4);
  CHECK(records[2].compensates == s.pay.calls[1]);
  CHECK(records[2].status == EffectStatus::succeeded);
  CHECK(records[2].result == json{{"refunded", "ch_2"}});
  CHECK(out.detail.find("compensation pending") == std::string::npos);
  CHECK_THROWS_AS(s.h.resume(), ag::run_finished);  // nothing left: the run is over
  CHECK(s.undone.size() == 2);
}

TEST_CASE("effect: no compensation runs for a run that succeeds, or for a failed effect") {
  Saga s;
  s.declare(true);
  s.pay.refuse = true;  // the first charge fails: nothing succeeded, nothing to undo
  const auto out = s.h.run();
  CHECK(out.failed());
  CHECK(s.undone.empty());
}

TEST_CASE("effect: a compensation declared on the graph covers a failure in a later process") {
  Saga s;
  s.declare(true);
  {
    CrashingStore dying(s.h.store, 6);  // charge and reserve: 2 puts + commit each; ship dies
    auto o = s.h.options();
    CHECK_THROWS_AS(s.h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  // The restarted process has not run the effects' steps, so it has not got their functions:
  // without a declaration on the graph the failure leaves the compensations owed, and says so.
  auto out = s.h.resume();
  CHECK(out.failed());
  CHECK(out.detail.find("compensation pending: reserve_effect") != std::string::npos);
  CHECK(s.undone.empty());
  // A program that declares it finishes the compensations on resume.
  s.h.graph.compensation("charge_effect", s.undo()).compensation("reserve_effect", s.undo());
  out = s.h.resume();
  CHECK(out.failed());
  CHECK(out.reason == Reason::node_error);
  CHECK(s.undone.size() == 2);
  CHECK_THROWS_AS(s.h.resume(), ag::run_finished);
}

TEST_CASE("effect: a crash during a compensation is finished by resume, with the same key") {
  Saga s;
  s.declare(true);
  s.h.graph.compensation("charge_effect", s.undo()).compensation("reserve_effect", s.undo());
  {
    // charge 2 puts + commit, reserve 2 puts + commit, fail commit, compensation started; its
    // receipt dies.
    CrashingStore dying(s.h.store, 8);
    auto o = s.h.options();
    CHECK_THROWS_AS(s.h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  CHECK(s.h.latest().status == RunStatus::Failed);
  REQUIRE(s.undone.size() == 1);
  const auto out = s.h.resume();
  CHECK(out.failed());
  REQUIRE(s.undone.size() == 3);  // the cut-off one re-issued, then the other
  CHECK(s.compensation_keys[0] == s.compensation_keys[1]);
  CHECK(s.h.store.effects("run-1").at(2).issued == 2);
}

TEST_CASE("effect: an effect without its own compensation uses the graph's declaration") {
  Saga s;
  s.declare(false);
  s.h.graph.compensation("charge_effect", s.undo());  // reserve_effect has none: not undone
  const auto out = s.h.run();
  CHECK(out.reason == Reason::node_error);
  REQUIRE(s.undone.size() == 1);
  CHECK(s.undone[0].first == s.pay.calls[0]);
  CHECK(out.detail.find("compensation pending") == std::string::npos);
  CHECK(s.h.store.effects("run-1").at(0).compensable);
  CHECK_FALSE(s.h.store.effects("run-1").at(1).compensable);
}

// --- review regressions ----------------------------------------------------------------------

TEST_CASE("effect: numbers hash alike whatever form carried them; NaN and bad UTF-8 are refused") {
  const auto key = [](json args) { return ag::effect_key("r", "n", 0, 0, "e", args); };
  CHECK(key({{"x", 0.0}}) == key({{"x", -0.0}}));
  CHECK(key({{"x", 1}}) == key({{"x", 1.0}}));
  CHECK(key({{"x", 1u}}) == key({{"x", 1}}));
  CHECK(key({{"x", 1.5}}) != key({{"x", 1}}));
  CHECK(key({{"x", 0}}) == key({{"x", 0.0}}));
  CHECK_THROWS_AS(key({{"x", std::nan("")}}), ag::graph_error);
  CHECK_THROWS_AS(key({{"x", std::numeric_limits<double>::infinity()}}), ag::graph_error);
  CHECK_THROWS_AS(key({{"x", "\xff"}}), ag::graph_error);
}

TEST_CASE("effect: the rerun of a node after its approval replays what it did before pausing") {
  Harness h;
  std::vector<std::string> calls;
  h.node("gate", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect("notify_reviewer", {{"to", "ana"}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& c) { calls.push_back(c.key); });
    if (!ctx.approved()) return ag::Interrupt{"approve me"};
    ctx.effect("charge", {{"amount", 1}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& c) { calls.push_back(c.key); });
    return ag::Halt{};
  });
  h.graph.entry("gate");
  REQUIRE(h.run().interrupted());
  REQUIRE(h.resume("run-1", ag::Approve{"ana"}).succeeded());
  REQUIRE(calls.size() == 2);  // notify once (replayed in the rerun), then charge
  CHECK(calls[0] == ag::effect_key("run-1", "gate", 0, 0, "notify_reviewer", {{"to", "ana"}}));
  CHECK(calls[1] == ag::effect_key("run-1", "gate", 0, 1, "charge", {{"amount", 1}}));
  CHECK(replayed_keys(h.store) == std::vector<std::string>{calls[0]});
}

TEST_CASE("effect: a retry after an approval keeps the decision and the keys") {
  Harness h;
  std::vector<std::string> calls;
  int fail = 1;
  h.node("gate", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    if (!ctx.approved()) return ag::Interrupt{"approve me"};
    ctx.effect("charge", {{"amount", 1}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& c) { calls.push_back(c.key); });
    if (fail-- > 0) throw ag::transient_error("503 from the next call");
    return ag::Halt{};
  });
  h.graph.entry("gate").retry({.attempts = 3});
  REQUIRE(h.run().interrupted());
  const auto out = h.resume("run-1", ag::Approve{"ana"});
  CHECK(out.succeeded());    // the retry still had the approval
  CHECK(calls.size() == 1);  // and replayed the charge's receipt
}

namespace {
/// A store whose Nth effect record throws store_error (a disk hiccup).
class FlakyStore final : public ForwardingStore {
 public:
  FlakyStore(ag::Store& inner, int fail_put) : ForwardingStore(inner), fail_put_(fail_put) {}
  void put_effect(const ag::EffectRecord& r, const ag::LeaseToken& lease) override {
    if (puts_++ == fail_put_) throw ag::store_error("disk hiccup");
    ForwardingStore::put_effect(r, lease);
  }

 private:
  int fail_put_;
  int puts_ = 0;
};
}  // namespace

TEST_CASE("effect: a lost receipt stops the run at its last checkpoint, whatever the node does") {
  Harness h;
  Payments pay;
  int refunded = 0;
  FlakyStore flaky(h.store, 1);  // the receipt's put fails
  h.node("charge", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
     try {
       ctx.effect(
           "charge_card", {{"amount", 120}}, EffectPolicy::at_least_once,
           [&](const ag::EffectCall& c) { return pay.charge(120, c.key); },
           [&](const ag::EffectCall&, const json&) {
             ++refunded;
             return json();
           });
     } catch (const std::exception&) {  // a careless catch-all
     }
     return ag::Goto{"done"};
   }).node("done", halt());
  h.graph.entry("charge");
  auto o = h.options();
  CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, flaky, o), ag::store_error);
  CHECK(h.latest().step == 0);  // the step did not commit past the missing receipt
  CHECK(h.calls["done"] == 0);
  // Resume applies the policy: at_least_once re-issues the call under the same key.
  REQUIRE(h.resume().succeeded());
  REQUIRE(pay.calls.size() == 2);
  CHECK(pay.calls[0] == pay.calls[1]);
  CHECK(refunded == 0);
}

TEST_CASE("effect: an injected I/O error at an effect boundary is infrastructure, not a failure") {
  for (const char* point : {"effect.before_started", "effect.after_started", "effect.after_call",
                            "effect.after_receipt"}) {
    CAPTURE(point);
    Harness h;
    Payments pay;
    h.node("charge", charge_then(pay, EffectPolicy::at_least_once, "done")).node("done", halt());
    h.graph.entry("charge");
    {
      trellis::ScopedFailpoint fp(point, trellis::FailpointAction::error);
      CHECK_THROWS_AS(h.run(), trellis::persist_error);
    }
    CHECK_FALSE(ag::terminal(h.latest().status));
    const auto out = h.resume();
    CHECK(out.succeeded());
    // Only a call cut off after it was made is made again (at_least_once, same key).
    CHECK(pay.calls.size() == (std::string_view(point) == "effect.after_call" ? 2U : 1U));
  }
}

TEST_CASE("effect: an error text or a result that is not UTF-8 still leaves a receipt") {
  Harness h;
  int calls = 0;
  h.node("a", [&](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
    try {
      ctx.effect("charge", {{"amount", 1}}, EffectPolicy::at_most_once,
                 [&](const ag::EffectCall&) -> json {
                   ++calls;
                   throw std::runtime_error("gateway said: d\xe9\x63lin\xe9");  // Latin-1
                 });
    } catch (const ag::effect_failed& e) {
      d.text = e.what();
    }
    json r = ctx.effect("fetch", nullptr, EffectPolicy::idempotent,
                        [&](const ag::EffectCall&) { return json("\xff\xfe"); });
    return ag::Halt{};
  });
  h.graph.entry("a");
  const auto out = h.run();  // the second effect's result cannot be stored: it failed
  CHECK(out.reason == Reason::node_error);
  CHECK(out.detail.find("cannot be stored") != std::string::npos);
  const auto records = h.store.effects("run-1");
  REQUIRE(records.size() == 2);
  CHECK(records[0].status == EffectStatus::failed);
  CHECK(records[0].error.find("gateway said: d\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  CHECK(records[1].status == EffectStatus::failed);
  CHECK(records[1].error.find("cannot be stored") != std::string::npos);
  CHECK(calls == 1);
}

TEST_CASE("effect: a result holding NaN or an infinity leaves a failed receipt that names it") {
  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    Harness h;
    int calls = 0;
    std::string seen;
    h.node("a", [&](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
      try {
        ctx.effect("quote", {{"item", 7}}, EffectPolicy::at_most_once, [&](const ag::EffectCall&) {
          ++calls;
          return json{{"price", bad}};
        });
      } catch (const ag::effect_failed& e) {
        seen = e.what();
        d.text = "no quote";
      }
      return ag::Halt{};
    });
    h.graph.entry("a");
    CHECK(h.run().succeeded());
    const auto records = h.store.effects("run-1");
    REQUIRE(records.size() == 1);
    CHECK(records[0].status == EffectStatus::failed);  // not a receipt whose result reads null
    CHECK(records[0].result.is_null());
    CHECK(records[0].error.find("cannot be stored: /result/price is ") != std::string::npos);
    CHECK(seen.find("/result/price") != std::string::npos);
    CHECK(calls == 1);
  }
}

TEST_CASE("effect: arguments nested deeper than a store reads back are refused before any record") {
  Harness h;
  std::string refused;
  h.node("a", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    json deep = json::array();
    for (int i = 0; i < trellis::max_json_depth; ++i) deep = json::array({deep});
    try {
      ctx.effect("store_tree", {{"tree", deep}}, EffectPolicy::idempotent,
                 [](const ag::EffectCall&) {});
    } catch (const ag::graph_error& e) {  // as for NaN arguments: no record, no key
      refused = e.what();
    }
    return ag::Halt{};
  });
  h.graph.entry("a");
  CHECK(h.run().succeeded());
  CHECK(refused.find("effect 'store_tree'") != std::string::npos);
  CHECK(refused.find("/args/tree/0/0") != std::string::npos);
  CHECK(refused.find("is nested deeper than 512 levels") != std::string::npos);
  CHECK(h.store.effects("run-1").empty());
}

TEST_CASE("effect: a fork starts without the source run's effect keys") {
  Harness h;
  h.node("a", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
     ctx.effect("e", nullptr, EffectPolicy::idempotent, [](const ag::EffectCall&) {});
     return ag::Goto{"b"};
   }).node("b", halt());
  h.graph.entry("a");
  REQUIRE(h.run().succeeded());
  h.graph.fork("run-1", 1, "run-2", h.store);
  CHECK(h.store.effects("run-2").empty());
  CHECK(h.latest("run-2").effects.empty());
}

TEST_CASE("effect: a compensation that fails for good is named in the outcome") {
  Harness h;
  Payments pay;
  h.node("charge", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
     ctx.effect(
         "charge_card", {{"amount", 120}}, EffectPolicy::at_most_once,
         [&](const ag::EffectCall& c) { return pay.charge(120, c.key); },
         [](const ag::EffectCall&, const json&) -> json {
           throw std::runtime_error("refund window closed");
         });
     return ag::Goto{"ship"};
   }).node("ship", [](Doc&, ag::RunContext&) -> ag::NextStep {
    throw std::runtime_error("warehouse on fire");
  });
  h.graph.entry("charge");
  const auto out = h.run();
  CHECK(out.failed());
  CHECK(out.detail.find("compensation failed: charge_card") != std::string::npos);
  CHECK(out.detail.find("refund window closed") != std::string::npos);
}

TEST_CASE("effect: a node that pauses twice still replays what it did before its first pause") {
  Harness h;
  std::vector<std::string> calls;
  h.node("gate", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect("hold_funds", {{"amount", 1}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& c) { calls.push_back(c.key); });
    if (!ctx.resume()) return ag::Interrupt{"need input"};
    if (std::holds_alternative<ag::Input>(*ctx.resume())) return ag::Interrupt{"need approval"};
    return ag::Goto{"after"};
  });
  h.node("after", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect("hold_funds", {{"amount", 1}}, EffectPolicy::at_most_once,
               [&](const ag::EffectCall& c) { calls.push_back(c.key); });
    return ag::Halt{};
  });
  h.graph.entry("gate");
  REQUIRE(h.run().interrupted());
  REQUIRE(h.resume("run-1", ag::Input{json(5)}).interrupted());
  REQUIRE(h.resume("run-1", ag::Approve{"ana"}).succeeded());
  REQUIRE(calls.size() == 2);  // once in gate (replayed in both reruns), once in `after`
  CHECK(calls[0] == ag::effect_key("run-1", "gate", 0, 0, "hold_funds", {{"amount", 1}}));
  CHECK(calls[1] != calls[0]);
  CHECK_FALSE(h.latest().rerun_step.has_value());  // cleared by the next step
}

TEST_CASE("effect: a replay is published on the bus per effect, and logged once per step") {
  Harness h;
  Payments pay;
  std::vector<std::string> published;
  auto c = h.graph.events().connect([&](const ag::RunEventRecord& e) {
    if (e.kind == "effect_replayed") published.push_back(e.detail.at("key").get<std::string>());
  });
  h.node("charge", charge_then(pay, EffectPolicy::at_most_once, "done")).node("done", halt());
  h.graph.entry("charge");
  {
    CrashingStore dying(h.store, 2);
    auto o = h.options();
    CHECK_THROWS_AS(h.graph.run("run-1", Doc{}, dying, o), PowerCut);
  }
  REQUIRE(h.resume().succeeded());
  CHECK(published == std::vector<std::string>{pay.calls.at(0)});
  CHECK(replayed_keys(h.store) == published);
  CHECK(kinds_of(h.store, "effect_replayed").empty());  // not one log line per replay
}

// --- cached effects (cache_entry.hpp) -----------------------------------------------------------

namespace {

/// A node that makes one cached "summarize" effect of `text`, counting its calls.
Step summarize(const std::string& text, int& calls, std::string version = "1") {
  return [=, &calls](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
    const ag::EffectCache cache{ag::cache_key("g", "sum", {{"text", text}}, "summarize", version),
                                "g", version};
    d.text = ctx.effect(
                    "summarize", {{"text", text}}, EffectPolicy::idempotent,
                    [&calls, text](const ag::EffectCall&) {
                      ++calls;
                      return "summary of " + text;
                    },
                    cache)
                 .get<std::string>();
    return ag::Halt{};
  };
}

}  // namespace

TEST_CASE("effect: a cached effect's second run, of another run id, is answered from the cache") {
  Harness h;
  int calls = 0;
  h.node("sum", summarize("hello", calls));
  h.graph.entry("sum");
  REQUIRE(h.run("run-1").succeeded());
  const std::string key = ag::cache_key("g", "sum", {{"text", "hello"}}, "summarize", "1");
  const auto entry = h.store.cached(key);
  REQUIRE(entry.has_value());
  CHECK(entry->result == "summary of hello");
  CHECK(entry->run_id == "run-1");
  CHECK(entry->node == "sum");
  CHECK(entry->action == "summarize");
  CHECK(h.store.effects("run-1").at(0).cached_from.empty());  // it ran

  const auto second = h.run("run-2");
  REQUIRE(second.succeeded());
  CHECK(second.state->text == "summary of hello");
  CHECK(calls == 1);  // not called again
  const auto records = h.store.effects("run-2");
  REQUIRE(records.size() == 1);
  CHECK(records[0].status == EffectStatus::succeeded);
  CHECK(records[0].cached_from == key);
  CHECK(h.latest("run-2").effects == std::vector<std::string>{records[0].key});
  // Its record survives a store round trip (the persistent stores write it as JSON).
  CHECK(json(records[0]).get<ag::EffectRecord>() == records[0]);
}

TEST_CASE("effect: a failed cached effect puts nothing in the cache") {
  Harness h;
  int calls = 0;
  h.node("sum", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect(
        "summarize", {{"text", "x"}}, EffectPolicy::idempotent,
        [&](const ag::EffectCall&) -> json {
          ++calls;
          throw std::runtime_error("model unavailable");
        },
        ag::EffectCache{std::string(64, 'c'), "g", "1"});
    return ag::Halt{};
  });
  h.graph.entry("sum");
  CHECK_FALSE(h.run("run-1").succeeded());
  CHECK_FALSE(h.store.cached(std::string(64, 'c')).has_value());
  CHECK_FALSE(h.run("run-2").succeeded());
  CHECK(calls == 2);
}

namespace {

/// A store whose cache is broken: reading an entry fails as a corrupt one does, and so does
/// writing one (a full disk).
class BrokenCacheStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  int reads = 0;
  int writes = 0;
  std::optional<ag::CacheEntry> cached(std::string_view) override {
    ++reads;
    throw ag::store_error("trellis: cache entry @cache/x.json is corrupt (line 1)");
  }
  void put_cached(const ag::CacheEntry&) override {
    ++writes;
    throw ag::store_error("trellis: no space left on the device");
  }
};

}  // namespace

TEST_CASE(
    "effect: a cache that cannot be read is a miss, and one that cannot be written loses "
    "the entry, not the step") {
  Harness h;
  BrokenCacheStore broken(h.store);
  int calls = 0;
  h.node("sum", summarize("hello", calls));
  h.graph.entry("sum");
  for (const char* id : {"run-1", "run-2"}) {
    const auto out = h.graph.run(id, Doc{}, broken, h.options());
    REQUIRE(out.succeeded());
    CHECK(out.state->text == "summary of hello");
    // The receipt of the call that ran is kept: a rerun of the step replays it.
    const auto records = h.store.effects(id);
    REQUIRE(records.size() == 1);
    CHECK(records[0].status == EffectStatus::succeeded);
    CHECK(records[0].cached_from.empty());
  }
  CHECK(calls == 2);  // each run called it: nothing could come from the cache
  CHECK(broken.reads == 2);
  CHECK(broken.writes == 2);
}

TEST_CASE("effect: a cache hit is not compensable: a failed run does not undo another run's call") {
  Harness h;
  int calls = 0;
  int undone = 0;
  h.node("sum", [&](Doc& d, ag::RunContext& ctx) -> ag::NextStep {
    summarize("hello", calls)(d, ctx);
    return ag::Goto{"check"};
  });
  bool fail = false;
  h.node("check", [&](Doc&, ag::RunContext&) -> ag::NextStep {
    if (fail) throw std::runtime_error("the check failed");
    return ag::Halt{};
  });
  h.graph.entry("sum");
  h.graph.compensation("summarize", [&](const ag::EffectCall&, const json&) {
    ++undone;
    return json(nullptr);
  });
  REQUIRE(h.run("run-1").succeeded());  // called: its receipt is compensable
  CHECK(h.store.effects("run-1").at(0).compensable);
  fail = true;
  const auto second = h.run("run-2");  // answered from the cache, then fails
  CHECK(second.failed());
  CHECK(calls == 1);
  const auto records = h.store.effects("run-2");
  REQUIRE(records.size() == 1);
  CHECK_FALSE(records[0].compensable);
  CHECK(undone == 0);  // run-1's call is not undone by run-2's failure
}

TEST_CASE("effect: only an idempotent effect may be cached") {
  Harness h;
  int calls = 0;
  h.node("pay", [&](Doc&, ag::RunContext& ctx) -> ag::NextStep {
    ctx.effect(
        "charge", {{"amount", 1}}, EffectPolicy::at_most_once,
        [&](const ag::EffectCall&) { ++calls; }, ag::EffectCache{std::string(64, 'c'), "g", "1"});
    return ag::Halt{};
  });
  h.graph.entry("pay");
  CHECK_FALSE(h.run().succeeded());
  CHECK(calls == 0);
  CHECK(h.store.effects("run-1").empty());
}

TEST_CASE("effect: MemoryStore refuses a record whose text is not UTF-8, naming it, keeping none") {
  // What the persistent stores cannot write, MemoryStore refuses alike (before its lock).
  Harness h;
  h.node("a", [](Doc&, ag::RunContext&) -> ag::NextStep { return ag::Halt{}; });
  h.graph.entry("a");
  REQUIRE(h.run("run-1").succeeded());
  ag::EffectRecord r;
  r.run_id = "run-1";
  r.key = std::string(64, 'a');
  r.name = "notify";
  r.node = "a";
  SUBCASE("a name") { r.name = "no\xff"; }
  SUBCASE("an error") { r.error = "bad \xc0\xaf"; }
  SUBCASE("arguments") { r.args = {{"to", "\xed\xa0\x80"}}; }
  SUBCASE("a result") { r.result = {{"\xff", 1}}; }
  CHECK_THROWS_WITH_AS(h.store.put_effect(r), doctest::Contains("is not valid UTF-8"),
                       ag::store_error);
  CHECK(h.store.effects("run-1").empty());
}
