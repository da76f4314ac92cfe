// SPDX-License-Identifier: MIT
// Effects that happen once: a refund agent on a FileStore, beside a simulated payment system.
//
//   refund_agent DIR start RUN AMOUNT    plan and pay a refund of AMOUNT (25, 249.90); over
//                                        100.00 it waits for a person's approval first
//   refund_agent DIR approve RUN WHO     approve a waiting refund: the run goes on to the end
//   refund_agent DIR reject RUN REASON   reject it: the run fails (approval_rejected)
//   refund_agent DIR resume RUN          continue a run that was killed mid-way
//   refund_agent DIR show RUN            the run's status and its effects, with full keys
//   refund_agent DIR runs ls|show|...    the operator's commands on DIR's runs (docs/cli.md,
//                                        through trellis::agent::cli::main): runs, approvals,
//                                        approve/reject RUN --request ID, input, cancel,
//                                        reconcile, fork, delete, gc, run, step
//
// Exit status: 0 when the run succeeded or waits for approval, 3 when it failed, 1 on an error
// (an unknown run, a run in the wrong state), 2 on bad arguments; the operator's commands exit
// as docs/cli.md says.
//
// The run: plan -> approval (over the threshold only) -> refund -> receipt -> notify -> done.
// Each outside call goes through ctx.effect with a policy, under an idempotency key derived
// from the run, the step and the arguments, so that a kill at any point and a resume neither
// pay twice nor lose what was paid:
//   refund         at_most_once   the payment system (DIR/payments.ledger, one line per refund
//                                 paid): a call cut off by a crash is never re-run; the run
//                                 fails with reconciliation_required, naming the key to look up
//   write_receipt  idempotent     DIR/receipts/RUN.txt, rewritten whole: a second call is harmless
//   notify         at_least_once  the mail service (DIR/outbox.log): re-issued after a crash
//                                 with the same key, which the service uses to drop a duplicate
// Every effect prints its key (first 12 hex digits) and whether it ran or was replayed from its
// receipt. The payment system and the mail service keep the key of every call they accepted
// and refuse to act twice on one: the key is what makes a retry, and a reconciliation, safe.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/cli/main.hpp>
#include <trellis/signals2/event_bus.hpp>

namespace ag = trellis::agent;
namespace fs = std::filesystem;

constexpr long kApprovalOverCents = 100'00;  // refunds over 100.00 need a person's approval

struct Refund {
  std::string order;  // the run id stands for the order being refunded
  long cents = 0;
  std::string approved_by;
  std::string refund_id;
  std::string receipt;
  bool notified = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Refund, order, cents, approved_by, refund_id, receipt, notified)

std::string money(long cents) {
  char text[32];
  std::snprintf(text, sizeof text, "%ld.%02ld", cents / 100, cents % 100);
  return text;
}

std::string short_key(const std::string& key) { return key.substr(0, 12); }

/// The line of an append-only log whose first word is `key`: its number (from 1) and text.
struct Found {
  int line = 0;
  std::string text;
};
std::optional<Found> find_key(const fs::path& log, const std::string& key) {
  std::ifstream in(log);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line)
    if (text.starts_with(key + ' ')) return Found{line, text};
  return std::nullopt;
}
int lines_of(const fs::path& log) {
  std::ifstream in(log);
  int n = 0;
  for (std::string text; std::getline(in, text);) ++n;
  return n;
}
void append_line(const fs::path& log, const std::string& text) {
  std::ofstream out(log, std::ios::app);
  out << text << '\n';
  if (!out.flush()) throw std::runtime_error("cannot append to " + log.string());
}

/// The simulated payment system: an append-only ledger, "<key> <amount>" per refund paid. A
/// key it has seen is not paid again: the refund already made under it is returned.
class Payments {
 public:
  explicit Payments(fs::path ledger) : ledger_(std::move(ledger)) {}
  nlohmann::json refund(const std::string& key, long cents) {
    if (std::optional<Found> seen = find_key(ledger_, key)) {
      std::printf("  payments: key %s seen before (ledger line %d): nothing paid again\n",
                  short_key(key).c_str(), seen->line);
      return {{"refund_id", "rf-" + std::to_string(seen->line)}};
    }
    append_line(ledger_, key + ' ' + money(cents));
    const int line = lines_of(ledger_);
    std::printf("  payments: refunded %s under key %s (ledger line %d)\n", money(cents).c_str(),
                short_key(key).c_str(), line);
    return {{"refund_id", "rf-" + std::to_string(line)}};
  }
  const fs::path& ledger() const { return ledger_; }

 private:
  fs::path ledger_;
};

/// Where the agent's outside world lives: under DIR, beside the runs.
struct World {
  fs::path dir;
  Payments payments{dir / "payments.ledger"};
  fs::path outbox = dir / "outbox.log";
  fs::path receipts = dir / "receipts";
};

struct Plan : ag::Node<Refund> {
  std::string_view name() const override { return "plan"; }
  ag::NextStep run(Refund& s, ag::RunContext&) override {
    const bool gate = s.cents > kApprovalOverCents;
    std::printf(
        "  plan: refund %s for order %s; %s\n", money(s.cents).c_str(), s.order.c_str(),
        gate ? "over the approval threshold, a person signs off first" : "no approval needed");
    return ag::Goto{gate ? "approval" : "refund"};
  }
};

struct Approval : ag::Node<Refund> {
  std::string_view name() const override { return "approval"; }
  ag::NextStep run(Refund& s, ag::RunContext& ctx) override {
    if (const auto* yes = ctx.resume() ? std::get_if<ag::Approve>(&*ctx.resume()) : nullptr) {
      s.approved_by = yes->reviewer;
      return ag::Goto{"refund"};
    }
    // The process exits meanwhile; `approve` resumes the run here, in another process.
    return ag::Interrupt{"refund over " + money(kApprovalOverCents),
                         ag::ApprovalRequest{"refund " + money(s.cents) + " for order " + s.order,
                                             {{"order", s.order}, {"amount", money(s.cents)}},
                                             "over the approval threshold",
                                             std::nullopt}};
  }
};

struct IssueRefund : ag::Node<Refund> {
  World& world;
  explicit IssueRefund(World& w) : world(w) {}
  std::string_view name() const override { return "refund"; }
  ag::NextStep run(Refund& s, ag::RunContext& ctx) override {
    // at_most_once: after a crash during the call, the run stops for a person to reconcile.
    const nlohmann::json paid =
        ctx.effect("refund", {{"order", s.order}, {"cents", s.cents}},
                   ag::EffectPolicy::at_most_once, [&](const ag::EffectCall& call) {
                     return world.payments.refund(call.key, s.cents);  // the key goes along
                   });
    s.refund_id = paid.at("refund_id").get<std::string>();
    return ag::Goto{"receipt"};
  }
};

struct WriteReceipt : ag::Node<Refund> {
  World& world;
  explicit WriteReceipt(World& w) : world(w) {}
  std::string_view name() const override { return "receipt"; }
  ag::NextStep run(Refund& s, ag::RunContext& ctx) override {
    const fs::path file = world.receipts / (s.order + ".txt");
    ctx.effect("write_receipt", {{"order", s.order}, {"refund_id", s.refund_id}},
               ag::EffectPolicy::idempotent, [&](const ag::EffectCall&) {
                 fs::create_directories(world.receipts);
                 const fs::path temp = file.string() + ".tmp";
                 {
                   std::ofstream out(temp, std::ios::trunc);
                   out << "refund " << s.refund_id << " of " << money(s.cents) << " for order "
                       << s.order << "\napproved by "
                       << (s.approved_by.empty() ? "policy (under the threshold)" : s.approved_by)
                       << '\n';
                   if (!out.flush()) throw std::runtime_error("cannot write " + temp.string());
                 }
                 fs::rename(temp, file);  // whole or not at all: rewriting it is harmless
                 std::printf("  receipt: wrote %s\n", file.c_str());
               });
    s.receipt = file.string();
    return ag::Goto{"notify"};
  }
};

struct Notify : ag::Node<Refund> {
  World& world;
  explicit Notify(World& w) : world(w) {}
  std::string_view name() const override { return "notify"; }
  ag::NextStep run(Refund& s, ag::RunContext& ctx) override {
    ctx.effect("notify", {{"order", s.order}, {"refund_id", s.refund_id}},
               ag::EffectPolicy::at_least_once, [&](const ag::EffectCall& call) {
                 // The mail service drops a message whose key it has already sent.
                 if (find_key(world.outbox, call.key)) {
                   std::printf("  mail: key %s already sent: duplicate dropped\n",
                               short_key(call.key).c_str());
                   return;
                 }
                 append_line(world.outbox, call.key + " refund " + s.refund_id + " of " +
                                               money(s.cents) + " for order " + s.order);
                 std::printf("  mail: sent the refund notice for order %s\n", s.order.c_str());
               });
    s.notified = true;
    return ag::Halt{};
  }
};

/// One line per effect event: its name, key and what happened to it.
void print_effect(const ag::RunEventRecord& e) {
  if (!e.kind.starts_with("effect_")) return;
  const std::string name = e.detail.value("effect", std::string());
  const std::string key = short_key(e.detail.value("key", std::string()));
  const int issue = e.detail.value("issue", 1);
  std::string what;
  if (e.kind == "effect_completed")
    what = issue > 1 ? "ran again (call " + std::to_string(issue) + " under the same key)" : "ran";
  else if (e.kind == "effect_replayed")
    what = "replayed from receipt (not called again)";
  else if (e.kind == "effect_failed")
    what = "failed: " + e.detail.value("error", std::string());
  else if (e.kind == "effect_reconciliation_required")
    what = "started, no receipt: not re-run (at_most_once)";
  else
    return;  // effect_started: the outcome line follows
  std::printf("  effect %s, key %s: %s\n", name.c_str(), key.c_str(), what.c_str());
  std::fflush(stdout);
}

struct Cli {
  std::string dir;
  std::string how;  // "refund_agent DIR"
};

int report(const ag::Outcome<Refund>& out, const std::string& id, const Cli& cli,
           const World& world, ag::Store& store) {
  const Refund& s = *out.state;
  if (out.interrupted()) {
    std::printf("\nwaiting for approval: %s\n", out.interrupt->approval->action.c_str());
    std::printf("  approve: %s approve %s WHO\n  reject:  %s reject %s REASON\n", cli.how.c_str(),
                id.c_str(), cli.how.c_str(), id.c_str());
    return 0;
  }
  if (out.succeeded()) {
    std::printf("\ndone: refund %s of %s paid, receipt %s, customer notified\n",
                s.refund_id.c_str(), money(s.cents).c_str(), s.receipt.c_str());
    return 0;
  }
  std::printf("\n%s %s (%s)\n", id.c_str(), out.failed() ? "failed" : "was cancelled",
              std::string(trellis::enumeration<ag::Reason>::name(out.reason)).c_str());
  if (out.reason == ag::Reason::reconciliation_required) {
    // The key names the call in the payment system: look it up rather than pay again.
    for (const ag::EffectRecord& r : store.effects(id)) {
      if (r.name != "refund" || r.status != ag::EffectStatus::started) continue;
      std::printf("  the refund under key %s may or may not have been paid\n", r.key.c_str());
      if (std::optional<Found> seen = find_key(world.payments.ledger(), r.key))
        std::printf("  payments ledger line %d: %s -> it was paid, once; do not pay again\n",
                    seen->line, seen->text.c_str());
      else
        std::printf("  payments ledger: no such key -> it was not paid\n");
    }
  }
  return 3;
}

const char* status_text(ag::RunStatus status) {
  switch (status) {
    case ag::RunStatus::Succeeded:
      return "succeeded";
    case ag::RunStatus::Failed:
      return "failed";
    case ag::RunStatus::WaitingApproval:
      return "waiting for approval";
    case ag::RunStatus::Cancelled:
      return "cancelled";
    default:
      return "stopped mid-run (resume it)";
  }
}

void show(const std::string& id, const ag::Checkpoint& cp, const Refund& s, ag::Store& store,
          const World& world) {
  std::printf("%s: %s", id.c_str(), status_text(cp.status));
  if (cp.reason != ag::Reason::none)
    std::printf(" (%s)", std::string(trellis::enumeration<ag::Reason>::name(cp.reason)).c_str());
  std::printf(", steps: %llu; a refund of %s%s%s\n", static_cast<unsigned long long>(cp.step),
              money(s.cents).c_str(), s.approved_by.empty() ? "" : ", approved by ",
              s.approved_by.c_str());
  const std::vector<ag::EffectRecord> effects = store.effects(id);
  std::printf("effects: %zu\n", effects.size());
  for (const ag::EffectRecord& r : effects) {
    std::printf("  %-13s %-13s %-9s issued %u  key %s\n", r.name.c_str(),
                std::string(trellis::enumeration<ag::EffectPolicy>::name(r.policy)).c_str(),
                std::string(trellis::enumeration<ag::EffectStatus>::name(r.status)).c_str(),
                r.issued, r.key.c_str());
    if (r.name == "refund") {
      const std::optional<Found> seen = find_key(world.payments.ledger(), r.key);
      if (seen)
        std::printf("      payments ledger line %d: %s\n", seen->line, seen->text.c_str());
      else
        std::printf("      payments ledger: no refund under this key\n");
    }
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: refund_agent DIR start RUN AMOUNT   (AMOUNT like 25 or 249.90)\n"
               "       refund_agent DIR approve RUN WHO\n"
               "       refund_agent DIR reject RUN REASON\n"
               "       refund_agent DIR resume RUN\n"
               "       refund_agent DIR show RUN\n");
  return 2;
}

/// A positive amount with at most two decimals, in cents (up to 1,000,000.00).
std::optional<long> parse_cents(std::string_view text) {
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 7 || frac.size() > 2 ||
      (dot != std::string_view::npos && frac.empty()))
    return std::nullopt;
  long units = 0, part = 0;
  for (const std::string_view digits : {whole, frac})
    for (char c : digits)
      if (c < '0' || c > '9') return std::nullopt;
  std::from_chars(whole.data(), whole.data() + whole.size(), units);
  if (!frac.empty()) std::from_chars(frac.data(), frac.data() + frac.size(), part);
  const long cents = units * 100 + (frac.size() == 1 ? part * 10 : part);
  if (cents <= 0 || cents > 1'000'000'00) return std::nullopt;
  return cents;
}

void build(ag::Graph<Refund>& g, World& world) {
  g.add<Plan>()
      .add<Approval>()
      .add<IssueRefund>(world)
      .add<WriteReceipt>(world)
      .add<Notify>(world)
      .entry("plan")
      .max_steps(20);
  // Where each node may go, which one asks a person, and which effects each makes: what
  // `trellis runs draw` shows (a step anywhere else fails the run with undeclared_edge).
  g.edges("plan", {"approval", "refund"})
      .edges("approval", {"refund"})
      .edges("refund", {"receipt"})
      .edges("receipt", {"notify"})
      .edges("notify", {ag::end_node});
  g.approval_gate("approval")
      .effects("refund", {"refund"})
      .effects("receipt", {"write_receipt"})
      .effects("notify", {"notify"});
}

/// Whether `args` (DIR COMMAND ...) ask for an operator command (docs/cli.md) rather than
/// one of this example's own: every command the `trellis` command has, plus run and step;
/// approve and reject in their operator form (with --request: they record the decision
/// only, and `resume` runs the graph on).
bool operator_command(const std::vector<std::string>& args) {
  static const std::vector<std::string> ops{"runs", "approvals", "input", "cancel", "reconcile",
                                            "fork", "delete",    "gc",    "run",    "step"};
  if (args.size() < 2) return false;
  for (const std::string& op : ops)
    if (args[1] == op) return true;
  if (args[1] == "approve" || args[1] == "reject")
    for (const std::string& a : args)
      if (a.starts_with("--")) return true;
  return false;
}

/// `refund_agent DIR COMMAND ...`: the operator's commands on DIR's runs, with this graph
/// (trellis::agent::cli::main).
int operate(char* program, const std::vector<std::string>& args) {
  World world{args[0]};
  ag::Graph<Refund> g;
  build(g, world);
  ag::FileStore store{world.dir / "runs"};
  const auto printer = ag::ProgressPrinter(std::cout, g.max_steps()).attach(g.events());
  const boost::signals2::scoped_connection effects = g.events().connect(print_effect);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<char*> argv{program};
  for (std::string& a : rest) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ag::cli::main(static_cast<int>(argv.size() - 1), argv.data(), g, store);
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // every line out before a kill -9 or a failpoint
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (operator_command(args)) return operate(argv[0], args);
  if (args.size() < 3) return usage();
  const Cli cli{args[0], "refund_agent " + args[0]};
  const std::string& command = args[1];
  const std::string& id = args[2];
  std::size_t wanted = 0;  // arguments, DIR and the command included
  if (command == "start" || command == "approve" || command == "reject")
    wanted = 4;
  else if (command == "resume" || command == "show")
    wanted = 3;
  if (wanted == 0) {
    std::fprintf(stderr, "refund_agent: unknown command '%s'\n", command.c_str());
    return usage();
  }
  if (args.size() != wanted) return usage();
  try {
    ag::check_run_id(id);
  } catch (const trellis::error& e) {
    std::fprintf(stderr, "refund_agent: '%s' is not a run id: %s\n", id.c_str(), e.what());
    return 2;
  }
  std::optional<long> cents;
  if (command == "start" && !(cents = parse_cents(args[3]))) {
    std::fprintf(stderr,
                 "refund_agent: '%s' is not an amount: give a positive number with at most two "
                 "decimals, up to 1000000 (like 25 or 249.90)\n",
                 args[3].c_str());
    return 2;
  }

  World world{cli.dir};
  ag::Graph<Refund> g;
  build(g, world);
  try {
    ag::FileStore store{world.dir / "runs"};
    const auto printer = ag::ProgressPrinter(std::cout, g.max_steps()).attach(g.events());
    const boost::signals2::scoped_connection effects = g.events().connect(print_effect);
    const std::optional<ag::Checkpoint> cp = store.latest(id);

    if (command == "start") {
      if (cp) {
        std::fprintf(stderr, "refund_agent: run '%s' already exists in %s (see: %s show %s)\n",
                     id.c_str(), cli.dir.c_str(), cli.how.c_str(), id.c_str());
        return 1;
      }
      std::printf("starting %s: a refund of %s\n", id.c_str(), money(*cents).c_str());
      Refund start{.order = id,
                   .cents = *cents,
                   .approved_by = {},
                   .refund_id = {},
                   .receipt = {},
                   .notified = false};
      return report(g.run(id, start, store), id, cli, world, store);
    }
    if (!cp) {
      std::fprintf(stderr, "refund_agent: no run '%s' in %s\n", id.c_str(), cli.dir.c_str());
      return 1;
    }
    if (command == "show") {
      show(id, *cp, g.decode_state(*cp), store, world);
      return 0;
    }
    if (ag::terminal(cp->status)) {
      std::fprintf(stderr, "refund_agent: run '%s' has already %s (see: %s show %s)\n", id.c_str(),
                   cp->status == ag::RunStatus::Succeeded ? "succeeded" : "failed", cli.how.c_str(),
                   id.c_str());
      return 1;
    }
    const bool waiting = cp->status == ag::RunStatus::WaitingApproval;
    if (command == "resume") {
      if (waiting) {
        std::fprintf(stderr, "refund_agent: run '%s' waits for approval: %s approve %s WHO\n",
                     id.c_str(), cli.how.c_str(), id.c_str());
        return 1;
      }
      std::printf("resuming %s at %s\n", id.c_str(), cp->next_node.c_str());
      return report(g.resume(id, store), id, cli, world, store);
    }
    if (!waiting) {
      std::fprintf(stderr, "refund_agent: run '%s' is not waiting for approval\n", id.c_str());
      return 1;
    }
    const bool approve = command == "approve";
    std::printf("%s: %s %s\n", id.c_str(), approve ? "approved by" : "rejected:", args[3].c_str());
    const ag::Resume decision =
        approve ? ag::Resume{ag::Approve{args[3]}} : ag::Resume{ag::Reject{args[3]}};
    return report(g.resume(id, store, decision), id, cli, world, store);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "refund_agent: %s\n", e.what());
    return 1;
  }
}
