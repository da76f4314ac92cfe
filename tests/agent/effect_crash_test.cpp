// SPDX-License-Identifier: MIT
/// @file
/// Effects with receipts under SIGKILL (issue 6, section 2). A fresh child process
/// (posix_spawn: fork + exec) runs `effect_crash_child`, an order graph plan -> gate (the
/// at_least_once "request_approval", then a pause for the approval) -> charge (at_most_once
/// "charge_card") -> receipt (idempotent "write_receipt") -> notify (at_least_once "notify") ->
/// done, on a FileStore or a SqliteStore; its effects append their calls to a ledger file (the
/// simulated external system). The saga variant fails after notify, and the graph's
/// compensation of charge_card records a "refund".
///
/// 1. Every agent failpoint (effect.before_started, effect.after_started, effect.after_call,
///    effect.after_receipt, step.after_commit, approval.waiting, resume.started,
///    compensation.after_call), armed for its 1st, 2nd, ... hit until the child runs through:
///    the child must die by SIGKILL; a second child is killed at resume.started (a crash during
///    the resume); a fresh child then takes the run to its end. FileStore's journal.mid_append
///    (a torn line) and journal.after_append, at every append of its journal and effect log.
/// 2. Random kills: a child is SIGKILLed after a delay uniform in [0, 1.2 x an un-killed run's
///    duration] from its "ready" (its store open), then resumed (a third of the trials also kill
///    one or two of the resuming children). TRELLIS_KILL_SEED replays a seed (printed at the
///    start), TRELLIS_KILL_TRIALS sets the number of trials per store (default 200, scaled by
///    TRELLIS_TEST_SCALE: .ci/run's sanitizer phase runs 20). Every trial asked for must run:
///    a loop that its deadline (200 s a store; TRELLIS_KILL_DEADLINE_S) stops short fails,
///    saying how many ran (trellis_test::TrialBudget).
///
/// After every run, check_run() opens the store in this process and checks:
/// - the history, the effect records and the event log read back; seqs are 0, 1, 2, ...;
/// - every record's key is the key of its place in the run (effect_key, compensation_key), its
///   policy the one its effect declares; every key a checkpoint lists has a record and every
///   effect's record is listed by a checkpoint;
/// - every ledger call has the record of its key, of the same effect; each effect's calls all
///   carry one key; a key has at most as many calls as its record says were issued; a
///   succeeded record's result is what its key's last call returned; at_most_once has at most
///   one call, exactly one when it succeeded (nothing is charged twice);
/// - the run ended succeeded (the state holds the ids the receipts hold, which the ledger
///   shows), or failed with reconciliation_required with the charge's record still `started`
///   and nothing after it called, or (saga) failed with node_error and the charge refunded under
///   the compensation's key, the refund's receipt holding the last refund call.
/// The failpoint cases also check the exact counts each kill implies (calls per effect, issues
/// per key, hits per failpoint).
#include <trellis/agent/effect.hpp>
#include <trellis/agent/errors.hpp>
#include <trellis/agent/failpoint.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../persist/persist_test_support.hpp"
#include "test_support.hpp"

namespace {

namespace ag = trellis::agent;
namespace fs = std::filesystem;
using json = nlohmann::json;
using persist_test::Child;
using persist_test::ScratchDir;
using SteadyClock = std::chrono::steady_clock;

enum class Kind { file, sqlite };

std::string name_of(Kind kind) { return kind == Kind::file ? "file" : "sqlite"; }

/// One run of the order graph: its store, its id, its ledger.
struct Scenario {
  Kind kind = Kind::file;
  bool saga = false;
  fs::path store;
  std::string run;
  fs::path ledger;

  std::string describe() const {
    return std::string(name_of(kind)) + (saga ? " saga" : "") + " run " + run;
  }
};

fs::path store_path(Kind kind, const ScratchDir& dir) {
  return kind == Kind::file ? dir / "runs" : dir / "runs.db";
}

std::unique_ptr<ag::Store> open_store(Kind kind, const fs::path& path) {
  if (kind == Kind::file) return std::make_unique<ag::FileStore>(path);
  return std::make_unique<ag::SqliteStore>(path);
}

Child spawn(const Scenario& sc, const std::string& command,
            const std::vector<std::string>& env = {}) {
  std::vector<std::string> args{name_of(sc.kind), sc.store.string(), sc.run, sc.ledger.string(),
                                command};
  if (sc.saga) args.emplace_back("--saga");
  return persist_test::spawn_program(TRELLIS_EFFECT_CRASH_CHILD, args, env);
}

/// A child that ran to its end (or was killed): its wait status and what it printed.
struct Ran {
  int status = 0;
  std::string output;

  bool killed() const { return persist_test::killed_by_sigkill(status); }
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  bool has(const std::string& text) const { return output.find(text) != std::string::npos; }
};

Ran finish(Child& child) {
  Ran r;
  r.output = persist_test::read_all_output(child, std::chrono::seconds(60));
  r.status = persist_test::wait_child(child, std::chrono::seconds(60));
  return r;
}

Ran run_child(const Scenario& sc, const std::string& command,
              const std::vector<std::string>& env = {}) {
  Child child = spawn(sc, command, env);
  return finish(child);
}

/// Reads the child's output for `period` (so that it never blocks on a full pipe).
void read_for(const Child& child, std::chrono::microseconds period, std::string& out) {
  const auto end = SteadyClock::now() + period;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - SteadyClock::now());
    pollfd p{child.output_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0) {
      if (SteadyClock::now() >= end) return;
      continue;
    }
    char buffer[4096];
    const ssize_t got = ::read(child.output_fd, buffer, sizeof buffer);
    if (got <= 0) return;  // the child is gone
    out.append(buffer, static_cast<std::size_t>(got));
    if (SteadyClock::now() >= end) return;
  }
}

/// Starts `drive` and kills it `delay` after it said "ready" (its store open); returns what it
/// printed and how it ended (it may have ended by itself before the kill).
Ran kill_after(const Scenario& sc, std::chrono::microseconds delay) {
  Child child = spawn(sc, "drive");
  Ran r;
  r.output = persist_test::read_line(child);
  if (r.output == "ready\n") read_for(child, delay, r.output);
  ::kill(child.pid, SIGKILL);  // not yet waited for: the pid is still this child's
  Ran rest = finish(child);
  r.output += rest.output;
  r.status = rest.status;
  return r;
}

/// Takes the run to its end in a fresh child without failpoints (the child resumes, approves
/// and resumes again, at most 10 graph calls): it must get there without an error.
Ran drive_to_end(const Scenario& sc) {
  Ran r = run_child(sc, "drive");
  CHECK_MESSAGE(r.exited_ok(), "an un-killed child did not take the run to its end; output:\n"
                                   << r.output);
  return r;
}

// --- the ledger and the invariants -----------------------------------------------------------

/// What each effect of the graph calls in the ledger, and its policy.
struct CallInfo {
  ag::EffectPolicy policy;
  const char* field;  ///< the member of the effect's result holding the call's id
};
const std::map<std::string, CallInfo, std::less<>>& calls() {
  static const std::map<std::string, CallInfo, std::less<>> table{
      {"request_approval", {ag::EffectPolicy::at_least_once, "request_id"}},
      {"charge_card", {ag::EffectPolicy::at_most_once, "charge_id"}},
      {"write_receipt", {ag::EffectPolicy::idempotent, "receipt_id"}},
      {"notify", {ag::EffectPolicy::at_least_once, "message_id"}},
      {"refund", {ag::EffectPolicy::at_least_once, "refund_id"}},
  };
  return table;
}

/// The ledger's name of the call a record stands for.
std::string call_of(const ag::EffectRecord& r) { return r.compensates.empty() ? r.name : "refund"; }

struct LedgerLine {
  std::string call, policy, key, id;
};

std::vector<LedgerLine> read_ledger(const fs::path& file) {
  std::vector<LedgerLine> out;
  if (!fs::exists(file)) return out;
  const std::string bytes = persist_test::read_bytes(file);
  CHECK_MESSAGE((bytes.empty() || bytes.back() == '\n'), "the ledger ends in a torn line");
  std::istringstream in(bytes);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    LedgerLine l;
    std::string extra;
    words >> l.call >> l.policy >> l.key >> l.id;
    CHECK_MESSAGE((!l.id.empty() && !(words >> extra)), "a malformed ledger line: " << line);
    out.push_back(std::move(l));
  }
  return out;
}

/// What a checked run came to, for the cases that expect exact counts.
struct Observed {
  bool read = false;  ///< the store read back
  ag::RunStatus status = ag::RunStatus::Queued;
  ag::Reason reason = ag::Reason::none;
  std::map<std::string, int> lines;             ///< ledger calls per call name
  std::map<std::string, std::uint32_t> issued;  ///< per call name: its record's issues
  bool mid_effect = false;  ///< some record was re-issued (a kill landed in an effect)
};

std::string status_text(ag::RunStatus s, ag::Reason r) {
  return std::string(trellis::enumeration<ag::RunStatus>::name(s)) + " " +
         std::string(trellis::enumeration<ag::Reason>::name(r));
}

/// The invariants of the header comment, over the run's store and ledger after its end.
Observed check_run(const Scenario& sc) {
  INFO(sc.describe());
  Observed o;
  std::vector<ag::Checkpoint> history;
  std::optional<ag::Checkpoint> latest;
  std::vector<ag::EffectRecord> records;
  try {
    std::unique_ptr<ag::Store> store = open_store(sc.kind, sc.store);
    history = store->history(sc.run);
    latest = store->latest(sc.run);
    records = store->effects(sc.run);
    (void)store->events(sc.run);
  } catch (const std::exception& e) {
    FAIL_CHECK("the store does not read back: " << e.what());
    return o;
  }
  if (history.empty() || !latest) {
    FAIL_CHECK("the run has no history");
    return o;
  }
  o.read = true;
  for (std::size_t i = 0; i < history.size(); ++i) {
    CHECK(history[i].seq == i);
    CHECK(history[i].run_id == sc.run);
  }
  CHECK(*latest == history.back());
  const ag::Checkpoint& last = history.back();
  o.status = last.status;
  o.reason = last.reason;
  INFO("ended " << status_text(last.status, last.reason) << ": " << last.detail);

  // The records: one per key, each keyed by its place in the run.
  std::map<std::string, const ag::EffectRecord*, std::less<>> by_key;
  for (const ag::EffectRecord& r : records)
    CHECK_MESSAGE(by_key.emplace(r.key, &r).second, "two records of key " << r.key);
  for (const ag::EffectRecord& r : records) {
    INFO("record " << json(r).dump());
    CHECK(r.run_id == sc.run);
    CHECK(r.issued >= 1);
    CHECK(r.status != ag::EffectStatus::failed);  // no call of this graph fails
    CHECK(r.status != ag::EffectStatus::transient);
    if (r.final()) CHECK_FALSE(r.finished_at.empty());
    const auto info = calls().find(call_of(r));
    if (info == calls().end()) {
      FAIL_CHECK("a record of an effect the graph does not make");
      continue;
    }
    CHECK(r.policy == info->second.policy);
    if (r.compensates.empty()) {
      CHECK(r.key == ag::effect_key(sc.run, r.node, r.step, r.ordinal, r.name, r.args));
    } else {
      CHECK(sc.saga);
      CHECK(r.key == ag::compensation_key(r.compensates));
      const auto undone = by_key.find(r.compensates);
      REQUIRE_MESSAGE(undone != by_key.end(), "a compensation of no record");
      CHECK(undone->second->name == r.name);
      CHECK(undone->second->status == ag::EffectStatus::succeeded);
    }
    if (r.issued > 1) o.mid_effect = true;
  }

  // The checkpoints list the keys of the effects their steps made, and only those.
  std::set<std::string> listed;
  for (const ag::Checkpoint& cp : history)
    for (const std::string& key : cp.effects) {
      listed.insert(key);
      CHECK_MESSAGE(by_key.contains(key),
                    "checkpoint " << cp.seq << " lists effect " << key << " without a record");
    }
  for (const ag::EffectRecord& r : records)
    if (r.compensates.empty())
      CHECK_MESSAGE(listed.contains(r.key),
                    "no checkpoint lists effect " << r.name << " (" << r.key << ")");

  // The ledger against the records.
  const std::vector<LedgerLine> ledger = read_ledger(sc.ledger);
  std::map<std::string, std::vector<const LedgerLine*>> by_ledger_key;
  std::map<std::string, std::set<std::string>> keys_of_call;
  for (const LedgerLine& l : ledger) {
    INFO("ledger line " << l.call << " " << l.policy << " " << l.key << " " << l.id);
    const auto info = calls().find(l.call);
    REQUIRE_MESSAGE(info != calls().end(), "a call the graph does not make");
    CHECK(l.policy == trellis::enumeration<ag::EffectPolicy>::name(info->second.policy));
    by_ledger_key[l.key].push_back(&l);
    keys_of_call[l.call].insert(l.key);
    ++o.lines[l.call];
    const auto record = by_key.find(l.key);
    if (record == by_key.end()) {
      FAIL_CHECK("a call without a record of its key");
    } else {
      CHECK(call_of(*record->second) == l.call);
    }
  }
  for (const auto& [call, keys] : keys_of_call)
    CHECK_MESSAGE(keys.size() == 1, call << " was called under " << keys.size() << " keys");
  for (const ag::EffectRecord& r : records) {
    const std::string call = call_of(r);
    INFO("record " << json(r).dump());
    o.issued[call] = r.issued;
    const std::vector<const LedgerLine*>& made = by_ledger_key[r.key];
    CHECK(made.size() <= r.issued);
    if (r.policy == ag::EffectPolicy::at_most_once) CHECK(made.size() <= 1);
    if (r.status == ag::EffectStatus::succeeded) {
      REQUIRE_MESSAGE(!made.empty(), "a receipt without a call");
      CHECK(r.result.value(calls().at(call).field, "") == made.back()->id);
      if (r.policy == ag::EffectPolicy::at_most_once) CHECK(made.size() == 1);
    }
  }

  // How the run ended, and the state against the receipts.
  auto record_of = [&](std::string_view call) -> const ag::EffectRecord* {
    for (const ag::EffectRecord& r : records)
      if (call_of(r) == call) return &r;
    return nullptr;
  };
  auto result_id = [&](std::string_view call) {
    const ag::EffectRecord* r = record_of(call);
    return r == nullptr ? std::string("(no record)")
                        : r->result.value(calls().at(std::string(call)).field, "(no result)");
  };
  const ag::EffectRecord* charge = record_of("charge_card");
  const json trail = last.state.value("trail", json::array());
  const bool reconciled = last.reason == ag::Reason::reconciliation_required;
  if (last.status == ag::RunStatus::Failed && reconciled) {
    // The charge was cut off: it may have happened, so nothing after it ran.
    REQUIRE_MESSAGE(charge != nullptr, "reconciliation_required without a charge record");
    CHECK(charge->status == ag::EffectStatus::started);
    CHECK(last.detail.find(charge->key) != std::string::npos);
    CHECK(records.size() == 2);  // the approval's request, and the charge
    CHECK(o.lines["request_approval"] >= 1);
    CHECK(last.state.value("request_id", "") == result_id("request_approval"));
    CHECK(o.lines["write_receipt"] == 0);
    CHECK(o.lines["notify"] == 0);
    CHECK(o.lines["refund"] == 0);
    CHECK(last.state.value("charge_id", "?").empty());
    CHECK(trail == json::array({"plan", "gate", "gate"}));
  } else if ((!sc.saga && last.status == ag::RunStatus::Succeeded) ||
             (sc.saga && last.status == ag::RunStatus::Failed &&
              last.reason == ag::Reason::node_error)) {
    for (const char* call : {"request_approval", "charge_card", "write_receipt", "notify"}) {
      INFO("effect " << call);
      const ag::EffectRecord* r = record_of(call);
      REQUIRE(r != nullptr);
      CHECK(r->status == ag::EffectStatus::succeeded);
      CHECK(o.lines[call] >= 1);
    }
    CHECK(last.state.value("request_id", "") == result_id("request_approval"));
    CHECK(last.state.value("charge_id", "") == result_id("charge_card"));
    CHECK(last.state.value("receipt_id", "") == result_id("write_receipt"));
    CHECK(last.state.value("message_id", "") == result_id("notify"));
    if (!sc.saga) {
      CHECK(trail == json::array({"plan", "gate", "gate", "charge", "receipt", "notify", "done"}));
      CHECK(records.size() == 4);
      CHECK(o.lines["refund"] == 0);
    } else {
      CHECK(trail == json::array({"plan", "gate", "gate", "charge", "receipt", "notify"}));
      CHECK(last.detail.find("the warehouse is on fire") != std::string::npos);
      // The charge was refunded, under the compensation's key, its receipt holding the refund.
      const ag::EffectRecord* refund = record_of("refund");
      REQUIRE_MESSAGE(refund != nullptr, "the failed run's charge was not compensated");
      CHECK(refund->compensates == charge->key);
      CHECK(refund->status == ag::EffectStatus::succeeded);
      CHECK(refund->result.value("charge_id", "") == result_id("charge_card"));
      CHECK(o.lines["refund"] >= 1);
      CHECK(records.size() == 5);
    }
  } else {
    FAIL_CHECK("the run ended " << status_text(last.status, last.reason) << ": " << last.detail);
  }
  return o;
}

// --- the failpoints --------------------------------------------------------------------------

/// The agent's failpoints (agent/failpoint.hpp), and how often one un-killed drive of the order
/// graph reaches each: four effects (the rerun of gate after the approval replays its request);
/// eight commits (plan, the pause, the approval, gate, charge, receipt, notify, done or the
/// failure); one
/// pause; resume.started when the approval resumes the run and, for the saga, when the failed
/// run is resumed to finish its compensations; one compensation.
struct Failpoint {
  const char* name;
  unsigned hits_plain;
  unsigned hits_saga;
};
constexpr Failpoint agent_failpoints[] = {
    {"effect.before_started", 4, 4}, {"effect.after_started", 4, 4},    {"effect.after_call", 4, 4},
    {"effect.after_receipt", 4, 4},  {"step.after_commit", 8, 8},       {"approval.waiting", 1, 1},
    {"resume.started", 1, 2},        {"compensation.after_call", 0, 1},
};

/// What the kill at hit `hit` of `fp` implies for the end of the run (`fp` empty: no kill).
void check_expected(Observed o, const Scenario& sc, std::string_view fp, unsigned hit) {
  // The effects' failpoints are hit in this order.
  const std::map<std::string, unsigned> effect_hit{
      {"request_approval", 1}, {"charge_card", 2}, {"write_receipt", 3}, {"notify", 4}};
  const bool cut_off = fp == "effect.after_started" || fp == "effect.after_call";
  const bool reconcile = cut_off && hit == 2;  // at_most_once never re-runs
  if (reconcile) {
    CHECK(o.status == ag::RunStatus::Failed);
    CHECK(o.reason == ag::Reason::reconciliation_required);
    CHECK(o.lines["request_approval"] == 1);
    CHECK(o.issued["request_approval"] == 1);
    CHECK(o.lines["charge_card"] == (fp == "effect.after_call" ? 1 : 0));
    CHECK(o.issued["charge_card"] == 1);
    return;
  }
  if (sc.saga) {
    CHECK(o.status == ag::RunStatus::Failed);
    CHECK(o.reason == ag::Reason::node_error);
  } else {
    CHECK(o.status == ag::RunStatus::Succeeded);
  }
  for (const auto& [call, at] : effect_hit) {
    INFO("effect " << call);
    const bool reissued = cut_off && hit == at;  // its call was cut off: issued again
    CHECK(o.issued[call] == (reissued ? 2u : 1u));
    CHECK(o.lines[call] == (reissued && fp == "effect.after_call" ? 2 : 1));
  }
  if (sc.saga) {
    const bool again = fp == "compensation.after_call";
    CHECK(o.issued["refund"] == (again ? 2u : 1u));
    CHECK(o.lines["refund"] == (again ? 2 : 1));
  }
}

void failpoint_suite(Kind kind) {
  for (const bool saga : {false, true}) {
    for (const Failpoint& fp : agent_failpoints) {
      const unsigned hits = saga ? fp.hits_saga : fp.hits_plain;
      if (hits == 0) continue;
      unsigned hit = 1;
      for (; hit <= hits + 2; ++hit) {
        const std::string armed = std::string(fp.name) + ":kill@" + std::to_string(hit);
        INFO(name_of(kind) << (saga ? " saga" : "") << ", TRELLIS_FAILPOINT=" << armed);
        ScratchDir dir;
        const Scenario sc{kind, saga, store_path(kind, dir), "order-1", dir / "ledger"};
        const Ran first = run_child(sc, "drive", {"TRELLIS_FAILPOINT=" + armed});
        if (!first.killed()) {
          // Past the last hit: the run went through without a crash.
          INFO("output:\n" << first.output);
          CHECK(first.exited_ok());
          CHECK(first.has("final "));
          check_expected(check_run(sc), sc, "", 0);
          break;
        }
        // A crash during the resume, then fresh children to the end.
        const Ran during = run_child(sc, "drive", {"TRELLIS_FAILPOINT=resume.started:kill"});
        {
          INFO("output:\n" << during.output);
          // Only a run that already succeeded is not resumed (drive sees it has ended).
          CHECK((during.killed() || (during.exited_ok() && during.has("final Succeeded"))));
        }
        const Ran last = drive_to_end(sc);
        INFO("first child's output:\n" << first.output << "last child's output:\n" << last.output);
        CHECK(last.has("final "));
        const Observed o = check_run(sc);
        if (o.read) check_expected(o, sc, fp.name, hit);
      }
      CHECK_MESSAGE(hit == hits + 1, std::string(fp.name)
                                         << " was reached " << hit - 1 << " times, expected "
                                         << hits << (saga ? " (saga)" : ""));
    }
  }
}

/// FileStore appends every checkpoint and every effect record as one journal line; its
/// journal.* failpoints (failpoint.hpp) kill the child with half a line written (a torn started
/// record, receipt or checkpoint) or right after a whole line: at every append of a drive, then
/// fresh children take the run to its end, and the general invariants hold.
void torn_append_suite() {
  for (const bool saga : {false, true}) {
    for (const char* fp : {"journal.mid_append", "journal.after_append"}) {
      unsigned hit = 1;
      for (; hit <= 40; ++hit) {
        const std::string armed = std::string(fp) + ":kill@" + std::to_string(hit);
        INFO("file" << (saga ? " saga" : "") << ", TRELLIS_FAILPOINT=" << armed);
        ScratchDir dir;
        const Scenario sc{Kind::file, saga, store_path(Kind::file, dir), "order-1", dir / "ledger"};
        const Ran first = run_child(sc, "drive", {"TRELLIS_FAILPOINT=" + armed});
        if (!first.killed()) {
          INFO("output:\n" << first.output);
          CHECK(first.exited_ok());
          break;
        }
        const Ran last = drive_to_end(sc);
        INFO("first child's output:\n" << first.output << "last child's output:\n" << last.output);
        (void)check_run(sc);
      }
      // Eight commits and two records (started, receipt) per effect: four, and the refund.
      const unsigned appends = saga ? 8 + 2 * 5 : 8 + 2 * 4;
      CHECK_MESSAGE(hit == appends + 1, std::string(fp) << " was reached " << hit - 1
                                                        << " times, expected " << appends);
    }
  }
}

// --- random kills ----------------------------------------------------------------------------

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

std::uint64_t kill_seed() {
  static const std::uint64_t seed = env_number("TRELLIS_KILL_SEED", std::random_device{}());
  return seed;
}

void random_kills(Kind kind) {
  const std::uint64_t seed = kill_seed();
  // A slow (sanitized, loaded) machine fails with the count it ran rather than time out: two
  // loops of 200 s fit the suite's 600 s with its failpoint cases (an idle machine runs the
  // 200 trials of a store in about 15 s; the timed warm-up runs count against the deadline).
  auto trials = trellis_test::TrialBudget::from_environment(200, std::chrono::seconds(200));
  const int wanted = trials.wanted();
  std::printf(
      "effect crash (%s): random kill loop: %d trials asked, seed %llu (TRELLIS_KILL_SEED=%llu "
      "replays)\n",
      name_of(kind).c_str(), wanted, static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  MESSAGE(name_of(kind) << ": random kill loop seed " << seed << ", " << wanted << " trials asked");
  std::mt19937_64 rng(seed + static_cast<std::uint64_t>(kind));

  ScratchDir dir;
  const fs::path store = store_path(kind, dir);
  // Un-killed runs (from the child's "ready", its store open, to its exit, approval and
  // compensation included) set the delay range, so that the kills land anywhere in the run (and
  // a little after): a delay is a random fraction in [0, 1.2] of the median of the last seven
  // such runs, seven timed before the loop starts, then one every ten trials (the disk's speed
  // varies with the machine's load). The seed replays the fractions, not the disk's speed.
  std::vector<std::chrono::microseconds> timed;
  std::chrono::microseconds duration{0};
  auto time_a_run = [&](const std::string& id, bool saga) {
    const Scenario sc{kind, saga, store, id, dir / ("ledger-" + id)};
    Child child = spawn(sc, "drive");
    const std::string ready = persist_test::read_line(child);
    const auto start = SteadyClock::now();
    const Ran r = finish(child);
    timed.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start));
    INFO("output:\n" << ready << r.output);
    REQUIRE(ready == "ready\n");
    REQUIRE(r.exited_ok());
    std::vector<std::chrono::microseconds> last(
        timed.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(timed.size(), 7)),
        timed.end());
    std::sort(last.begin(), last.end());
    duration = last[last.size() / 2];
  };
  for (int warm = 0; warm < 7; ++warm) time_a_run("warmup-" + std::to_string(warm), warm % 2 == 1);
  MESSAGE(name_of(kind) << ": an un-killed run takes " << duration.count()
                        << " us (median of 7); kill delays up to 1.2 times that");
  auto random_delay = [&](double& fraction) {
    fraction = std::uniform_real_distribution<double>(0.0, 1.2)(rng);
    return std::chrono::microseconds(
        static_cast<std::int64_t>(fraction * static_cast<double>(duration.count())));
  };

  std::map<std::string, int> ends;  // how the runs ended
  int before_create = 0, mid_run = 0, after_end = 0, mid_effect = 0, resume_kills = 0;
  for (int trial = 0; trials.another(); ++trial) {
    if (trial % 10 == 9) time_a_run("timed-" + std::to_string(trial), trial % 20 == 19);
    const bool saga = trial % 2 == 1;
    const Scenario sc{kind, saga, store, "t" + std::to_string(trial),
                      dir / ("ledger-" + std::to_string(trial))};
    double fraction = 0;
    const auto delay = random_delay(fraction);
    const int kill_resumes =
        std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 1 + static_cast<int>(rng() % 2) : 0;
    INFO("seed " << seed << ", trial " << trial << " (" << sc.describe() << "), kill after "
                 << delay.count() << " us (" << fraction << " of a run), then " << kill_resumes
                 << " resume kills");
    const Ran first = kill_after(sc, delay);
    REQUIRE_MESSAGE((first.killed() || first.exited_ok()), "output:\n" << first.output);
    // Where the kill landed.
    try {
      const std::optional<ag::Checkpoint> at = open_store(kind, store)->latest(sc.run);
      if (!at)
        ++before_create;
      else if (at->status == ag::RunStatus::Succeeded || at->status == ag::RunStatus::Failed)
        ++after_end;
      else
        ++mid_run;
    } catch (const std::exception& e) {
      FAIL_CHECK("the store does not read back after the kill: " << e.what());
    }
    std::string outputs = first.output;
    for (int k = 0; k < kill_resumes; ++k) {
      double resume_fraction = 0;
      const Ran r = kill_after(sc, random_delay(resume_fraction));
      outputs += r.output;
      CHECK_MESSAGE((r.killed() || r.exited_ok()), "output:\n" << r.output);
      if (r.killed()) ++resume_kills;
    }
    const Ran last = drive_to_end(sc);
    INFO("outputs:\n" << outputs << last.output);
    const Observed o = check_run(sc);
    ++ends[status_text(o.status, o.reason)];
    if (o.mid_effect) ++mid_effect;
    trials.done();
  }
  const int ran = trials.ran();
  std::printf("effect crash (%s): random kill loop: ran %d of %d trials\n", name_of(kind).c_str(),
              ran, trials.wanted());
  std::string summary;
  for (const auto& [end, n] : ends) summary += " " + end + ": " + std::to_string(n) + ";";
  MESSAGE(name_of(kind) << ": ran " << ran << " of " << trials.wanted() << " trials (a run took "
                        << duration.count() << " us at the end); killed before the run existed "
                        << before_create << ", mid-run " << mid_run << ", after its end "
                        << after_end << "; resumes killed " << resume_kills
                        << "; effects re-issued in " << mid_effect << "; ends:" << summary);
  CHECK_MESSAGE(trials.shortfall().empty(), name_of(kind) << ": " << trials.shortfall());
  // The delays must reach into the run, not only its creation or what follows its end (a
  // handful of trials is too few to tell).
  if (ran >= 20) CHECK(mid_run * 4 >= ran);
}

}  // namespace

TEST_CASE("effect crash: SIGKILL at every failpoint, FileStore") { failpoint_suite(Kind::file); }

TEST_CASE("effect crash: SIGKILL at every failpoint, SqliteStore") {
  failpoint_suite(Kind::sqlite);
}

TEST_CASE("effect crash: SIGKILL mid-append and after an append, FileStore") {
  torn_append_suite();
}

TEST_CASE("effect crash: SIGKILL at random times, FileStore") { random_kills(Kind::file); }

TEST_CASE("effect crash: SIGKILL at random times, SqliteStore") { random_kills(Kind::sqlite); }
