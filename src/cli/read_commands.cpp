// The commands that only read: runs ls/show/history/events/effects/draw, approvals ls.

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stop_token>
#include <thread>

#include <trellis/io/environment.hpp>
#include "cli_support.hpp"
#include "trellis/agent/chain.hpp"
#include "trellis/agent/diagram.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/follow.hpp"
#include "trellis/agent/operations.hpp"
#include "trellis/json/enumeration.hpp"

extern char** environ;  // for posix_spawn: dot gets this process's environment

namespace trellis::agent::cli::detail {

namespace {

Checkpoint newest(Store& store, const std::string& run, const Session& s) {
  std::optional<Checkpoint> cp = store.latest(run);
  if (!cp) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  return std::move(*cp);
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

int runs_ls(Session& s, const FilterArgs& f, const PageArgs& page) {
  RunFilter filter = make_filter(f.status, f.since, f.node);
  filter.graph = page.graph;
  filter.after = page.after;
  filter.limit = page.limit;
  const std::vector<RunSummary> runs = s.store(Access::read).list_runs(filter);
  if (s.json()) {
    std::cout << runs_document_text(runs) << '\n';
    return 0;
  }
  Table t({"RUN", "STATUS", "NODE", "STEPS", "AGE", "IDLE", "REQUEST", "DUE", "PRIORITY"});
  for (const RunSummary& r : runs)
    t.add({r.run_id, name(r.status) + (r.reason == Reason::none ? "" : " (" + name(r.reason) + ")"),
           or_dash(r.node), std::to_string(r.step), or_dash(age(r.created_at)),
           or_dash(age(r.updated_at)), or_dash(r.request), or_dash(due_text(r.due)),
           std::to_string(r.priority)});
  t.print(std::cout);
  return 0;
}

int runs_show(Session& s, const std::string& run) {
  Store& store = s.store(Access::read);
  const Checkpoint cp = newest(store, run, s);
  std::optional<Checkpoint> first = cp.seq == 0 ? cp : store.checkpoint(run, 0);
  const RunSummary sum = summarize(cp, first ? first->created_at : cp.created_at);
  const std::vector<CancelRequest> cancels = store.cancel_requests(run, 0);
  if (s.json()) {
    print_json(run_document(store, run));
    return 0;
  }
  std::cout << "run:      " << run << '\n'
            << "status:   " << name(cp.status)
            << (cp.reason == Reason::none ? "" : " (" + name(cp.reason) + ")") << '\n';
  if (!cp.detail.empty()) std::cout << "detail:   " << cp.detail << '\n';
  std::cout << "node:     " << or_dash(cp.next_node) << '\n'
            << "steps:    " << cp.step << " (checkpoint " << cp.seq << ")\n"
            << "created:  " << sum.created_at << '\n'
            << "updated:  " << cp.created_at << '\n'
            << "graph:    " << or_dash(cp.fingerprint) << '\n';
  if (!sum.due.empty()) std::cout << "due:      " << sum.due << " (" << due_text(sum.due) << ")\n";
  if (sum.priority != 0) std::cout << "priority: " << sum.priority << '\n';
  std::cout << "state:    " << cp.state.dump() << '\n';
  if (cp.status == RunStatus::WaitingApproval) {
    const Interrupt i = cp.interrupt.value_or(Interrupt{});
    std::cout << "request:  " << request_id(cp) << " (asked by " << or_dash(cp.resume_node)
              << "): " << i.reason << '\n';
    if (i.approval) {
      std::cout << "  action:         " << i.approval->action << '\n'
                << "  proposed input: " << i.approval->proposed_input.dump() << '\n'
                << "  risk:           " << i.approval->risk_reason << '\n'
                << "  expires:        "
                << (i.approval->expires_at ? utc(*i.approval->expires_at) : std::string("never"))
                << '\n';
    }
    std::cout << "  decide:         trellis approve " << run << " --request " << request_id(cp)
              << " | reject ... --reason R | input ... --json V\n";
  }
  for (const CancelRequest& c : cancels)
    std::cout << "cancel request " << c.id << " by " << or_dash(c.by) << " at " << c.at
              << (c.reason.empty() ? "" : ": " + c.reason)
              << (c.id <= cp.cancel_handled ? " (answered)" : " (pending)") << '\n';
  return 0;
}

int runs_history(Session& s, const std::string& run, bool diff) {
  Store& store = s.store(Access::read);
  const std::vector<Checkpoint> history = store.history(run);
  if (history.empty()) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  if (s.json()) {
    print_json(history_document(store, run, diff));
    return 0;
  }
  // What a checkpoint records beyond its status: the pause, the decision, the reconciliation,
  // the fork.
  const auto note_of = [](const Checkpoint& cp) {
    std::string note = cp.detail;
    if (cp.status == RunStatus::WaitingApproval) {
      note = "request " + request_id(cp) + ": " + cp.interrupt.value_or(Interrupt{}).reason;
    } else if (cp.decision && note.empty()) {
      const std::string by =
          std::visit([](const auto& d) { return d.reviewer; }, cp.decision->given);
      const char* kind = std::holds_alternative<Approve>(cp.decision->given)  ? "approved"
                         : std::holds_alternative<Reject>(cp.decision->given) ? "rejected"
                                                                              : "input given";
      note = "request " + std::to_string(cp.decision->answers) + " " + kind +
             (by.empty() ? "" : " by " + by);
    } else if (cp.reconciliation) {
      note = "reconciled " + cp.reconciliation->key.substr(0, 12) + " by " + cp.reconciliation->by;
    }
    if (const auto& f = cp.forked_from) {
      const std::string from = "forked from " + f->run_id + " at " + std::to_string(f->seq) +
                               (f->by.empty() ? "" : " by " + f->by);
      note = note.empty() ? from : from + "; " + note;
    }
    return note;
  };
  Table t({"SEQ", "STATUS", "NODE", "STEP", "AT", "NOTE"});
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Checkpoint& cp = history[i];
    const std::string note = note_of(cp);
    t.add({std::to_string(cp.seq),
           name(cp.status) + (cp.reason == Reason::none ? "" : " (" + name(cp.reason) + ")"),
           or_dash(cp.next_node), std::to_string(cp.step), cp.created_at, or_dash(brief(note))});
  }
  if (!diff) {
    t.print(std::cout);
    return 0;
  }
  // With the changes: each checkpoint's line, then its changes indented below it.
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Checkpoint& cp = history[i];
    std::cout << "checkpoint " << cp.seq << ": " << name(cp.status)
              << (cp.reason == Reason::none ? "" : " (" + name(cp.reason) + ")") << " at "
              << or_dash(cp.next_node) << ", step " << cp.step << ", " << cp.created_at;
    if (const std::string note = note_of(cp); !note.empty())
      std::cout << " (" << brief(note) << ')';
    std::cout << '\n';
    const nlohmann::json ch = i == 0 ? state_changes(nlohmann::json::object(), cp.state)
                                     : state_changes(history[i - 1].state, cp.state);
    for (const nlohmann::json& c : ch)
      std::cout << "  "
                << (c["path"].get<std::string>().empty() ? "/" : c["path"].get<std::string>())
                << ": " << (c["op"] == "add" ? "(none)" : brief(c["old"].dump(), 40)) << " -> "
                << (c["op"] == "remove" ? "(none)" : brief(c["new"].dump(), 40)) << '\n';
  }
  return 0;
}

namespace {

volatile std::sig_atomic_t interrupted = 0;
extern "C" void on_stop_signal(int) { interrupted = 1; }

void print_event(const Session& s, const std::string& run, const StoredEvent& e, bool lines) {
  if (s.json()) {
    if (lines) {
      nlohmann::json doc = document("event");
      doc["run_id"] = run;
      doc["seq"] = e.seq;
      doc["event"] = e.event;
      print_json(doc);
    }
    return;
  }
  const std::string kind = e.event.value("kind", std::string());
  const std::string at = e.event.value("at", std::string());
  const std::string node = e.event.value("node", std::string());
  const nlohmann::json detail = e.event.contains("detail") ? e.event["detail"] : nlohmann::json();
  std::cout << e.seq << "  " << or_dash(at) << "  " << or_dash(kind) << "  " << or_dash(node)
            << "  " << (detail.is_null() || detail.empty() ? "" : brief(detail, 100)) << '\n';
}

}  // namespace

int runs_events(Session& s, const std::string& run, bool follow, std::uint64_t after,
                std::chrono::milliseconds poll) {
  Store& store = s.store(Access::read);
  if (!store.latest(run)) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  if (!follow) {
    if (s.json()) {
      print_json(events_document(store, run, after));
    } else {
      for (const StoredEvent& e : store.events_after(run, after)) print_event(s, run, e, false);
    }
    return 0;
  }
  // Followed: one line per event (JSON lines with -o json) until the run has ended and no
  // event came within a poll, or SIGINT/SIGTERM.
  struct sigaction act {};
  act.sa_handler = on_stop_signal;
  sigemptyset(&act.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &act, &old_int);
  sigaction(SIGTERM, &act, &old_term);
  std::atomic<std::uint64_t> seen{0};
  std::exception_ptr failure;
  std::jthread follower([&](std::stop_token stop) {
    try {
      follow_events(
          store, run, after,
          [&](const StoredEvent& e) {
            print_event(s, run, e, true);
            std::cout.flush();
            seen.fetch_add(1);
            return true;
          },
          stop, poll);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  std::uint64_t seen_at_last_look = 0;
  bool ended_last_look = false;
  while (!interrupted && !failure) {
    for (auto slept = std::chrono::milliseconds(0); slept < poll && !interrupted;
         slept += std::chrono::milliseconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::optional<Checkpoint> cp = store.latest(run);
    const bool ended = !cp || terminal(cp->status);
    const std::uint64_t now_seen = seen.load();
    if (ended && ended_last_look && now_seen == seen_at_last_look) break;
    ended_last_look = ended;
    seen_at_last_look = now_seen;
  }
  follower.request_stop();
  follower.join();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (failure) std::rethrow_exception(failure);
  return 0;
}

int runs_verify(Session& s, const std::string& run) {
  Store& store = s.store(Access::read);
  if (!store.latest(run)) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  const ChainReport report = verify_chain(store, run);
  if (s.json()) {
    nlohmann::json doc = document("chain");
    doc.update(nlohmann::json(report));
    print_json(doc);
  } else {
    std::cout << report.text() << '\n';
  }
  return report.intact() ? 0 : exit_chain_broken;
}

int runs_effects(Session& s, const std::string& run) {
  Store& store = s.store(Access::read);
  if (!store.latest(run)) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  if (s.json()) {
    print_json(effects_document(store, run));
    return 0;
  }
  const std::vector<EffectRecord> effects = store.effects(run);
  Table t({"NAME", "POLICY", "STATUS", "ISSUED", "NODE", "STEP", "KEY", "RECONCILIATION"});
  for (const EffectRecord& r : effects) {
    std::string rec = "-";
    if (r.reconciliation)
      rec = std::string(r.reconciliation->happened ? "happened" : "did not happen") + " (by " +
            or_dash(r.reconciliation->by) + ": " + r.reconciliation->reason + ")";
    else if (r.status == EffectStatus::started && r.policy == EffectPolicy::at_most_once)
      rec = "in doubt";
    std::string status(enumeration<EffectStatus>::name(r.status));
    if (!r.cached_from.empty()) status += " (cached)";
    t.add({r.name, std::string(enumeration<EffectPolicy>::name(r.policy)), status,
           std::to_string(r.issued), r.node, std::to_string(r.step), r.key, rec});
  }
  t.print(std::cout);
  return 0;
}

int approvals_ls(Session& s) {
  const std::vector<PendingApproval> pending = pending_approvals(s.store(Access::read));
  if (s.json()) {
    print_json(approvals_document(pending));
    return 0;
  }
  Table t({"RUN", "REQUEST", "NODE", "WAITING", "EXPIRES", "ACTION", "RISK"});
  for (const PendingApproval& p : pending) {
    const std::optional<ApprovalRequest>& a = p.interrupt.approval;
    t.add({p.run.run_id, p.run.request, or_dash(p.asked_by), or_dash(age(p.run.updated_at)),
           a && a->expires_at ? utc(*a->expires_at) : "-",
           or_dash(brief(a ? a->action : p.interrupt.reason, 50)),
           or_dash(a ? brief(a->risk_reason, 40) : std::string())});
  }
  t.print(std::cout);
  return 0;
}

std::string to_svg(const std::string& dot_text) {
  const std::string dot = trellis::detail::find_program("dot").value_or("");
  if (dot.empty())
    throw store_error(
        "trellis: draw --format svg needs Graphviz's dot on PATH (Debian: graphviz); "
        "--format dot prints the DOT text");
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::string in = (tmp / "trellis-draw-XXXXXX").string();
  const int fd = ::mkstemp(in.data());
  if (fd < 0) throw store_error("trellis: draw: cannot create a temporary file in " + tmp.string());
  const std::string out = in + ".svg";
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      std::remove(a.c_str());
      std::remove(b.c_str());
    }
  } cleanup{in, out};
  for (std::size_t done = 0; done < dot_text.size();) {
    const ssize_t n = ::write(fd, dot_text.data() + done, dot_text.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw store_error("trellis: draw: cannot write " + in);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  std::vector<std::string> args{dot, "-Tsvg", in, "-o", out};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    throw store_error("trellis: draw: cannot start " + dot);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw store_error("trellis: draw: " + dot + " -Tsvg failed");
  std::ifstream svg(out, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(svg), std::istreambuf_iterator<char>());
}

int runs_draw(Session& s, const std::string& run, const std::string& format) {
  Store& store = s.store(Access::read);
  if (!store.latest(run)) throw unknown_run("trellis: no run '" + run + "' in " + s.where());
  const RunPicture picture = draw_run(store, run, format, s.graph());
  const std::string& text = picture.text;
  const bool stored = picture.graph_known;
  if (s.json()) {
    nlohmann::json doc = document("drawing");
    doc["run_id"] = run;
    doc["format"] = format;
    doc["graph"] = stored;
    doc["text"] = text;
    print_json(doc);
    return 0;
  }
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
  return 0;
}

}  // namespace trellis::agent::cli::detail
