// SPDX-License-Identifier: MIT
// A child process for effect_crash_test.cpp (started with posix_spawn, SIGKILLed at a failpoint
// from TRELLIS_FAILPOINT or at a random time):
//
//   effect_crash_child file|sqlite <store> <run id> <ledger> run|resume|approve|drive [--saga]
//
// runs an order graph over a FileStore (<store> is its root) or a SqliteStore (<store> is the
// database):
//
//   plan -> gate -> charge -> receipt -> notify -> done        (--saga: notify -> ship)
//
// gate makes the at_least_once effect "request_approval" (asks a person), then pauses the run
// for an approval until it is resumed with Approve (its rerun replays the request's receipt);
// charge makes the at_most_once effect "charge_card", receipt the idempotent "write_receipt",
// notify the at_least_once "notify"; done halts. With --saga, ship throws (the run fails with
// node_error) and the graph declares a compensation of charge_card, which records a "refund".
//
// Every effect's function calls the simulated external system: it appends one line
//   "<call> <policy> <key> <id>\n"
// to <ledger> with one write(2) on an O_APPEND descriptor, then fsync (1 ms of latency before
// and after it, as a remote call would have), and returns {"<field>": "<id>"}, where <call> is
// request_approval, charge_card, write_receipt, notify or refund and <id> is unique to the call
// (the pid and a per-process counter), so a stored result names the call it came from.
//
// Once its store is open, the child prints "ready" (the parent times its kills from there).
// Commands: run starts the run, resume resumes it without a decision, approve resumes it with
// Approve, drive takes it to its end (runs it if it does not exist, approves it while it waits,
// resumes it otherwise; a failed run is resumed once more, to finish its compensations). Each
// graph call prints one line "outcome <status> <reason> <steps>"; drive ends with
// "final <status> <reason>". A lease held by a killed process is waited out (the SqliteStore's
// lease expires after 50 ms without a commit). Exit codes: 0 done, 2 usage, 3 an exception
// (its message on stderr).

#include <trellis/agent/errors.hpp>
#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/agent/sqlite_store.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace ag = trellis::agent;
using json = nlohmann::json;

/// The run's state: the ids the effects returned, and the nodes whose changes were committed.
struct Order {
  std::string request_id;
  std::string charge_id;
  std::string receipt_id;
  std::string message_id;
  std::vector<std::string> trail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, request_id, charge_id, receipt_id, message_id, trail)

/// The simulated external system: an append-only ledger of every call, a millisecond away (so
/// that random kills land in calls too, before and after the ledger has it).
class Ledger {
 public:
  static constexpr std::chrono::milliseconds kLatency{1};

  explicit Ledger(std::string path) : path_(std::move(path)) {}

  /// Records one call and returns its id ("<prefix>_<pid>_<n>").
  std::string call(std::string_view what, ag::EffectPolicy policy, const std::string& key,
                   std::string_view prefix) {
    const std::string id =
        std::string(prefix) + "_" + std::to_string(::getpid()) + "_" + std::to_string(++calls_);
    const std::string line = std::string(what) + " " +
                             std::string(trellis::enumeration<ag::EffectPolicy>::name(policy)) +
                             " " + key + " " + id + "\n";
    std::this_thread::sleep_for(kLatency);  // the request travels
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("ledger: open " + path_ + ": " + std::strerror(errno));
    const ssize_t wrote = ::write(fd, line.data(), line.size());
    const int saved = errno;
    if (wrote != static_cast<ssize_t>(line.size()) || ::fsync(fd) != 0) {
      ::close(fd);
      throw std::runtime_error("ledger: write " + path_ + ": " + std::strerror(saved));
    }
    ::close(fd);
    std::this_thread::sleep_for(kLatency);  // the response travels
    return id;
  }

 private:
  std::string path_;
  unsigned calls_ = 0;
};

using Body = std::function<ag::NextStep(Order&, ag::RunContext&)>;

class FnNode final : public ag::Node<Order> {
 public:
  FnNode(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}
  std::string_view name() const override { return name_; }
  ag::NextStep run(Order& s, ag::RunContext& ctx) override {
    s.trail.push_back(name_);
    return body_(s, ctx);
  }

 private:
  std::string name_;
  Body body_;
};

void build(ag::Graph<Order>& g, Ledger& ledger, bool saga) {
  auto node = [&g](std::string name, Body body) {
    g.add(std::make_unique<FnNode>(std::move(name), std::move(body)));
  };
  node("plan", [](Order&, ag::RunContext&) -> ag::NextStep { return ag::Goto{"gate"}; });
  node("gate", [&ledger](Order& s, ag::RunContext& ctx) -> ag::NextStep {
    // Asks a person (on the first run; the rerun after the approval replays the receipt).
    const json r = ctx.effect(
        "request_approval", {{"reviewer", "ops"}}, ag::EffectPolicy::at_least_once,
        [&ledger](const ag::EffectCall& c) {
          return json{{"request_id", ledger.call("request_approval",
                                                 ag::EffectPolicy::at_least_once, c.key, "rq")}};
        });
    s.request_id = r.at("request_id").get<std::string>();
    if (!ctx.approved())
      return ag::Interrupt{"charging the card needs an approval",
                           ag::ApprovalRequest{"charge the card",
                                               {{"amount", 120}, {"card", "4242"}},
                                               "money leaves the customer's account",
                                               std::nullopt}};
    return ag::Goto{"charge"};
  });
  node("charge", [&ledger](Order& s, ag::RunContext& ctx) -> ag::NextStep {
    const json r = ctx.effect(
        "charge_card", {{"amount", 120}, {"card", "4242"}}, ag::EffectPolicy::at_most_once,
        [&ledger](const ag::EffectCall& c) {
          return json{{"charge_id",
                       ledger.call("charge_card", ag::EffectPolicy::at_most_once, c.key, "ch")}};
        });
    s.charge_id = r.at("charge_id").get<std::string>();
    return ag::Goto{"receipt"};
  });
  node("receipt", [&ledger](Order& s, ag::RunContext& ctx) -> ag::NextStep {
    const json r = ctx.effect(
        "write_receipt", {{"charge_id", s.charge_id}}, ag::EffectPolicy::idempotent,
        [&ledger](const ag::EffectCall& c) {
          return json{{"receipt_id",
                       ledger.call("write_receipt", ag::EffectPolicy::idempotent, c.key, "rc")}};
        });
    s.receipt_id = r.at("receipt_id").get<std::string>();
    return ag::Goto{"notify"};
  });
  node("notify", [&ledger, saga](Order& s, ag::RunContext& ctx) -> ag::NextStep {
    const json r = ctx.effect(
        "notify", {{"to", "customer"}, {"charge_id", s.charge_id}}, ag::EffectPolicy::at_least_once,
        [&ledger](const ag::EffectCall& c) {
          return json{
              {"message_id", ledger.call("notify", ag::EffectPolicy::at_least_once, c.key, "ms")}};
        });
    s.message_id = r.at("message_id").get<std::string>();
    return ag::Goto{saga ? "ship" : "done"};
  });
  if (saga) {
    node("ship", [](Order&, ag::RunContext&) -> ag::NextStep {
      throw std::runtime_error("the warehouse is on fire");
    });
    g.compensation("charge_card", [&ledger](const ag::EffectCall& c, const json& result) {
      return json{
          {"refund_id", ledger.call("refund", ag::EffectPolicy::at_least_once, c.key, "rf")},
          {"charge_id", result.at("charge_id")}};
    });
  } else {
    node("done", [](Order&, ag::RunContext&) -> ag::NextStep { return ag::Halt{}; });
  }
  g.entry("plan").max_steps(20);
}

std::string_view name(ag::RunStatus s) { return trellis::enumeration<ag::RunStatus>::name(s); }
std::string_view name(ag::Reason r) { return trellis::enumeration<ag::Reason>::name(r); }

/// One line, one write(2), so that a kill never leaves half of it in the pipe.
void say(const std::string& line) {
  const std::string text = line + "\n";
  if (::write(STDOUT_FILENO, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    std::_Exit(4);
}

void print(const ag::Outcome<Order>& out) {
  say("outcome " + std::string(name(out.status)) + " " + std::string(name(out.reason)) + " " +
      std::to_string(out.steps));
}

/// Calls `f` until it does not throw run_busy: a killed process's lease is waited out.
template <class F>
auto patiently(F&& f) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    try {
      return f();
    } catch (const ag::run_busy&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

int drive(ag::Graph<Order>& g, ag::Store& store, const std::string& id) {
  for (int round = 0; round < 10; ++round) {
    const std::optional<ag::Checkpoint> latest = store.latest(id);
    std::optional<ag::Outcome<Order>> out;
    if (!latest) {
      out = patiently([&] { return g.run(id, Order{}, store); });
    } else if (latest->status == ag::RunStatus::WaitingApproval) {
      out = patiently([&] { return g.resume(id, store, ag::Approve{"crash-test"}); });
    } else if (latest->status == ag::RunStatus::Succeeded) {
      say("final " + std::string(name(latest->status)) + " " + std::string(name(latest->reason)));
      return 0;
    } else {
      try {  // a failed run finishes the compensations it owes, or says it is over
        out = patiently([&] { return g.resume(id, store); });
      } catch (const ag::run_finished&) {
        say("final " + std::string(name(latest->status)) + " " + std::string(name(latest->reason)));
        return 0;
      }
    }
    print(*out);
  }
  std::fprintf(stderr, "effect_crash_child: run '%s' did not end in 10 calls\n", id.c_str());
  return 3;
}

int usage() {
  std::fprintf(stderr,
               "usage: effect_crash_child file|sqlite <store> <run id> <ledger> "
               "run|resume|approve|drive [--saga]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || argc > 7) return usage();
  const std::string_view kind = argv[1];
  const std::string store_path = argv[2];
  const std::string id = argv[3];
  const std::string_view command = argv[5];
  bool saga = false;
  if (argc == 7) {
    if (std::string_view(argv[6]) != "--saga") return usage();
    saga = true;
  }
  if (kind != "file" && kind != "sqlite") return usage();
  if (command != "run" && command != "resume" && command != "approve" && command != "drive")
    return usage();
  try {
    Ledger ledger(argv[4]);
    ag::Graph<Order> g;
    build(g, ledger, saga);
    std::unique_ptr<ag::Store> store;
    if (kind == "file") {
      store = std::make_unique<ag::FileStore>(store_path);
    } else {
      ag::SqliteStoreOptions options;
      options.lease_ttl = std::chrono::milliseconds(50);  // a killed holder's lease, waited out
      store = std::make_unique<ag::SqliteStore>(store_path, options);
    }
    say("ready");
    if (command == "run") {
      print(patiently([&] { return g.run(id, Order{}, *store); }));
    } else if (command == "resume") {
      print(patiently([&] { return g.resume(id, *store); }));
    } else if (command == "approve") {
      print(patiently([&] { return g.resume(id, *store, ag::Approve{"crash-test"}); }));
    } else {
      return drive(g, *store, id);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "effect_crash_child: %s\n", e.what());
    return 3;
  }
}
