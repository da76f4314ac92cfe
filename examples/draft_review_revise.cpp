// SPDX-License-Identifier: MIT
// A durable agent graph: draft -> review -> (a person approves) -> revise, on a FileStore.
//
//   draft_review_revise [--store DIR] [--slow]      start run-7, or resume it after a crash
//   draft_review_revise [--store DIR] approve [WHO] approve the revision; it runs and finishes
//   draft_review_revise [--store DIR] reject REASON reject it; the run fails (approval_rejected)
//   draft_review_revise [--store SPEC] runs ls|...  the operator's commands on a store's runs
//                                                   (docs/cli.md, through cli::main): runs,
//                                                   approvals, approve/reject RUN --request ID,
//                                                   input, cancel, reconcile, fork, delete, gc,
//                                                   run, resume, step, enqueue, worker; SPEC is
//                                                   DIR or sqlite:PATH (as `trellis --store`)
//
// Many runs, several processes: `enqueue run-1 --state '{"request":"..."}'` starts a run in
// the background; `worker` advances every due run (with others started the same way, on the
// same store), pauses each at the gate, and goes on with a run as soon as its approval is
// recorded (`trellis approve`). `worker --for 30`, `--drain`, or SIGINT/SIGTERM ends it.
//
// The nodes stand in for model calls with deterministic text (no network). Every step is
// committed to DIR (default ./draft_review_revise.runs) before the next one starts, so a
// kill -9 at any point loses at most the step in flight: the next start resumes there and
// skips what was committed. --slow makes each step take a moment, to leave time for a kill.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <trellis/agent/file_store.hpp>
#include <trellis/agent/graph.hpp>
#include <trellis/cli/main.hpp>
#include <trellis/cli/open_store.hpp>
#include <trellis/signals2/event_bus.hpp>

namespace ag = trellis::agent;

struct Doc {
  std::string request, draft, critique, revision;
  std::vector<std::string> done;  // the steps whose work was committed, in order
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Doc, request, draft, critique, revision, done)

bool slow = false;

// A "model call": announces itself, takes a moment under --slow.
void think(const char* node, const char* what) {
  std::printf("  %s: %s\n", node, what);
  std::fflush(stdout);
  if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(700));
}

struct Draft : ag::Node<Doc> {
  std::string_view name() const override { return "draft"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    think("draft", "writing a first version");
    s.draft = "Trellis runs " + s.request + ". It checkpoints every step.";
    s.done.push_back("draft");
    return ag::Goto{"review"};
  }
};

struct Review : ag::Node<Doc> {
  std::string_view name() const override { return "review"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    think("review", "reading the draft");
    s.critique = "Say what happens after a crash.";
    s.done.push_back("review");
    // The gate: nothing is revised until a person approves (the process exits meanwhile).
    return ag::Interrupt{"approve the revision",
                         ag::ApprovalRequest{"revise the draft per the critique",
                                             {{"critique", s.critique}},
                                             "the revision replaces the draft",
                                             std::nullopt},
                         "revise"};
  }
};

struct Revise : ag::Node<Doc> {
  std::string_view name() const override { return "revise"; }
  ag::NextStep run(Doc& s, ag::RunContext&) override {
    think("revise", "applying the critique");
    s.revision = s.draft + " After a crash it resumes at the first uncommitted step.";
    s.done.push_back("revise");
    return ag::Halt{};
  }
};

// The graph, with where each node may go (drawn by `trellis runs draw`; a step anywhere else
// fails the run with undeclared_edge).
void build(ag::Graph<Doc>& g) {
  g.add<Draft>().add<Review>().add<Revise>().entry("draft").max_steps(50);
  g.edges("draft", {"review"}).edges("review", {"revise"}).edges("revise", {ag::end_node});
  g.approval_gate("review");
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

int report(const ag::Outcome<Doc>& out, const std::string& how) {
  const Doc& s = *out.state;
  if (out.interrupted()) {
    std::printf("\ndraft:\n  %s\ncritique:\n  %s\n", s.draft.c_str(), s.critique.c_str());
    std::printf("waiting for approval: %s\n", out.interrupt->approval->action.c_str());
    std::printf("  approve: %s approve\n  reject:  %s reject \"reason\"\n", how.c_str(),
                how.c_str());
  } else if (out.succeeded()) {
    std::printf("\nrevision:\n  %s\ndone\n", s.revision.c_str());
  } else {
    std::printf("\nrun-7 %s: %s (%s)\n", out.failed() ? "failed" : "was cancelled",
                out.detail.c_str(),
                std::string(trellis::enumeration<ag::Reason>::name(out.reason)).c_str());
  }
  return 0;
}

/// Whether `args` ask for an operator command (docs/cli.md) rather than this demo's own:
/// every command the `trellis` command has, plus run, resume, step, enqueue and worker;
/// approve and reject in their operator form (with --request: they record the decision only).
bool operator_command(const std::vector<std::string>& args) {
  static const std::vector<std::string> ops{"runs", "approvals", "input", "cancel", "reconcile",
                                            "fork", "delete",    "gc",    "run",    "resume",
                                            "step", "enqueue",   "worker"};
  if (args.empty()) return false;
  for (const std::string& op : ops)
    if (args[0] == op) return true;
  if (args[0] == "approve" || args[0] == "reject")
    for (const std::string& a : args)
      if (a.starts_with("--")) return true;
  return false;
}

int main(int argc, char** argv) {
  std::string dir = "draft_review_revise.runs";
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--store" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--slow")
      slow = true;
    else
      args.push_back(a);
  }
  if (operator_command(args)) {  // the whole operator command line, in one line
    ag::Graph<Doc> g;
    build(g);
    try {
      const std::unique_ptr<ag::Store> store = ag::cli::open_store(dir, false);  // DIR, sqlite:
      // A line at a time: a worker advances several runs at once.
      std::mutex lines;
      const boost::signals2::scoped_connection printer =
          g.events().connect([&](const ag::RunEventRecord& e) {
            std::ostringstream line;
            ag::ProgressPrinter(line, g.max_steps())(e);
            const std::lock_guard lock(lines);
            std::cout << line.str() << std::flush;
          });
      std::vector<char*> rest{argv[0]};
      for (std::string& a : args) rest.push_back(a.data());
      rest.push_back(nullptr);
      return ag::cli::main(static_cast<int>(rest.size() - 1), rest.data(), g, *store);
    } catch (const trellis::error& e) {  // a store that cannot be opened
      std::fprintf(stderr, "draft_review_revise: %s\n", e.what());
      return 1;
    }
  }
  if (dir.starts_with("sqlite:") || dir.find("://") != std::string::npos) {
    std::fprintf(stderr,
                 "draft_review_revise: the demo keeps run-7 in a directory; --store %s works "
                 "with the operator commands (runs, enqueue, worker, ...)\n",
                 dir.c_str());
    return 2;
  }
  const std::string how = "draft_review_revise" +
                          (dir == "draft_review_revise.runs" ? std::string() : " --store " + dir);
  const std::string id = "run-7";

  ag::Graph<Doc> g;
  build(g);
  ag::FileStore store{dir};
  const auto printer = ag::ProgressPrinter(std::cout, g.max_steps()).attach(g.events());

  try {
    const std::optional<ag::Checkpoint> cp = store.latest(id);
    if (!args.empty() && (args[0] == "approve" || args[0] == "reject")) {
      if (!cp || cp->status != ag::RunStatus::WaitingApproval) {
        std::printf("%s is not waiting for approval; run %s first\n", id.c_str(), how.c_str());
        return 1;
      }
      const bool approve = args[0] == "approve";
      const std::string text = args.size() > 1 ? args[1] : "";
      std::printf("%s: %s%s%s\n", id.c_str(), approve ? "approved" : "rejected",
                  text.empty() ? ""
                  : approve    ? " by "
                               : ": ",
                  text.c_str());
      const ag::Resume decision =
          approve ? ag::Resume{ag::Approve{text}} : ag::Resume{ag::Reject{text}};
      return report(g.resume(id, store, decision), how);  // `approve` or `reject "reason"`
    }
    if (!args.empty()) {
      std::fprintf(stderr,
                   "usage: draft_review_revise [--store DIR] [--slow] [approve [WHO] | "
                   "reject REASON]\n");
      return 2;
    }
    if (!cp) {
      std::printf("starting %s in %s\n", id.c_str(), dir.c_str());
      Doc start;
      start.request = "agent graphs that survive a crash";
      return report(g.run(id, start, store), how);  // no argument: a new run-7
    }
    const Doc s = g.decode_state(*cp);
    if (ag::terminal(cp->status)) {
      std::printf("%s has already %s (steps: %s); remove %s to start over\n", id.c_str(),
                  cp->status == ag::RunStatus::Succeeded ? "succeeded" : "failed",
                  joined(s.done).c_str(), dir.c_str());
      return 0;
    }
    if (cp->status == ag::RunStatus::WaitingApproval) {
      std::printf("%s is paused (steps done: %s)\n", id.c_str(), joined(s.done).c_str());
      ag::Outcome<Doc> paused;
      paused.status = cp->status;
      paused.state = s;
      paused.interrupt = cp->interrupt;
      return report(paused, how);
    }
    // A kill after the approval: the decision was committed before the revision started, so
    // the revision reruns with it (who approved is in the checkpoint), without asking again.
    std::string decided;
    if (const auto* yes = cp->decision ? std::get_if<ag::Approve>(&cp->decision->given) : nullptr)
      decided = yes->reviewer.empty() ? " (approved)" : " (approved by " + yes->reviewer + ")";
    std::printf("resuming %s at %s%s; committed steps skipped: %s\n", id.c_str(),
                cp->next_node.c_str(), decided.c_str(), joined(s.done).c_str());
    return report(g.resume(id, store), how);  // after a kill: the uncommitted step on
  } catch (const trellis::error& e) {
    std::fprintf(stderr, "draft_review_revise: %s\n", e.what());
    return 1;
  }
}
