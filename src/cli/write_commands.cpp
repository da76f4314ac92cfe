// The commands that write: approve/reject/input, cancel, reconcile, fork, delete, gc, and, in a
// program that links its graph, run and resume.

#include <iostream>

#include "cli_support.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/operations.hpp"
#include "trellis/agent/subgraph.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent::cli::detail {

namespace {

std::string or_default_user(const std::string& as) { return as.empty() ? default_user() : as; }

/// The runs a bulk form selects: the one named, or those the filter passes. A filter with
/// neither --dry-run nor --yes is refused (usage).
std::vector<RunSummary> select(Session& s, Store& store, const BulkArgs& b, const char* verb) {
  if (!b.run.empty()) {
    if (b.filter.given())
      throw usage_failure(std::string("trellis: ") + verb +
                          ": give a run or a filter (--status, --since, --node), not both");
    return {};
  }
  if (!b.filter.given())
    throw usage_failure(std::string("trellis: ") + verb +
                        ": give a run, or a filter (--status, --since, --node) with --dry-run or "
                        "--yes");
  if (!b.dry_run && !b.yes)
    throw usage_failure(std::string("trellis: ") + verb +
                        " with a filter acts on many runs: add --dry-run to list them, or --yes");
  (void)s;
  return store.list_runs(make_filter(b.filter.status, b.filter.since, b.filter.node));
}

nlohmann::json cancel_json(const std::string& run, const CancelResult& r) {
  return {{"run_id", run},
          {"request", r.request},
          {"cancelled_now", r.cancelled_now},
          {"status", name(r.status)}};
}

void print_cancel(const std::string& run, const CancelResult& r) {
  if (r.cancelled_now)
    std::cout << run << ": cancelled now (request " << r.request << ")\n";
  else if (r.request == 0)
    std::cout << run << ": already cancelled\n";
  else if (terminal(r.status))
    std::cout << run << ": it ended (" << name(r.status) << ") before the cancel request "
              << r.request << " could apply\n";
  else
    std::cout << run << ": cancel requested (request " << r.request
              << "); the process advancing it stops it at its next check: between steps, when "
              << "it pauses, or through its node's stop token (status now " << name(r.status)
              << ")\n";
}

/// The end of a bulk form: its JSON document, or a line when no run matched; returns `rc`.
int end_bulk(const Session& s, const char* kind, const char* verb, bool dry_run,
             nlohmann::json results, bool none, int rc) {
  if (s.json()) {
    nlohmann::json doc = document(kind);
    doc["dry_run"] = dry_run;
    doc["runs"] = std::move(results);
    print_json(doc);
  } else if (none) {
    std::cout << "no run to " << verb << '\n';
  }
  return rc;
}

}  // namespace

int decide(Session& s, const DecideArgs& a) {
  Resume decision;
  const char* verb = "approved";
  const std::string by = or_default_user(a.as);
  switch (a.kind) {
    case DecisionKind::approve:
      decision = Approve{by, a.comment};
      break;
    case DecisionKind::reject:
      decision = Reject{a.reason, by};
      verb = "rejected";
      break;
    case DecisionKind::input:
      decision = Input{parse_json_option(a.json, "--json"), by};
      verb = "answered";
      break;
  }
  // Runs that surface this request (subgraph.hpp) go on with it: said below.
  const std::vector<std::string> parents = surfacing_runs(s.store(Access::write), a.run, a.request);
  const Checkpoint cp = record_decision(s.store(Access::write), a.run, a.request, decision);
  if (s.json()) {
    nlohmann::json doc = document("decision");
    doc["run_id"] = a.run;
    doc["request"] = a.request;
    doc["decision"] = a.kind == DecisionKind::approve  ? "approve"
                      : a.kind == DecisionKind::reject ? "reject"
                                                       : "input";
    doc["by"] = by;
    doc["status"] = name(cp.status);
    doc["seq"] = cp.seq;
    if (!parents.empty()) doc["parents"] = parents;  // runs that go on with it (subgraph.hpp)
    print_json(doc);
    return 0;
  }
  std::cout << a.run << ": request " << a.request << " " << verb << (by.empty() ? "" : " by " + by)
            << "; the run is " << name(cp.status)
            << (cp.status == RunStatus::Queued
                    ? " (it goes on when a worker picks it up, or when its program resumes it: " +
                          command_hint(s, "resume " + a.run) + ")"
                    : std::string(cp.reason == Reason::none ? "" : " (" + name(cp.reason) + ")"))
            << '\n';
  for (const std::string& parent : parents)
    std::cout << "  " << parent << " waited on it (a subgraph) and goes on with it: "
              << command_hint(s, "resume " + parent) << '\n';
  return 0;
}

int cancel(Session& s, const BulkArgs& b, const std::string& as, const std::string& reason) {
  Store& store = s.store(Access::write);
  const std::string by = or_default_user(as);
  if (!b.run.empty()) {
    (void)select(s, store, b, "cancel");
    const CancelResult r = cancel_run(store, b.run, by, reason);
    if (s.json()) {
      nlohmann::json doc = document("cancel");
      doc.update(cancel_json(b.run, r));
      print_json(doc);
    } else {
      print_cancel(b.run, r);
    }
    return 0;
  }
  std::vector<RunSummary> runs = select(s, store, b, "cancel");
  std::erase_if(
      runs, [](const RunSummary& r) { return !lifecycle().accepts(r.status, RunEvent::Cancel); });
  nlohmann::json results = nlohmann::json::array();
  int rc = 0;
  for (const RunSummary& r : runs) {
    if (b.dry_run) {
      results.push_back({{"run_id", r.run_id}, {"status", name(r.status)}});
      if (!s.json()) std::cout << r.run_id << ": would be cancelled (" << name(r.status) << ")\n";
      continue;
    }
    try {
      const CancelResult c = cancel_run(store, r.run_id, by, reason);
      results.push_back(cancel_json(r.run_id, c));
      if (!s.json()) print_cancel(r.run_id, c);
    } catch (const trellis::error& e) {  // one run's failure does not stop the others
      results.push_back({{"run_id", r.run_id}, {"error", e.what()}, {"code", e.id()}});
      std::cerr << e.what() << '\n';
      rc = 1;
    }
  }
  return end_bulk(s, "cancel_many", "cancel", b.dry_run, std::move(results), runs.empty(), rc);
}

int reconcile(Session& s, const ReconcileArgs& a) {
  if (a.happened == a.did_not_happen)
    throw usage_failure("trellis: reconcile: give --happened --result JSON or --did-not-happen");
  if (a.happened && a.result.empty())
    throw usage_failure(
        "trellis: reconcile --happened needs --result JSON (what the effect returned)");
  if (a.did_not_happen && !a.result.empty())
    throw usage_failure("trellis: reconcile --did-not-happen takes no --result");
  Reconciliation r;
  r.key = a.key;
  r.happened = a.happened;
  if (a.happened) r.result = parse_json_option(a.result, "--result");
  r.by = or_default_user(a.as);
  r.reason = a.reason;
  const Checkpoint cp = reconcile_run(s.store(Access::write), a.run, r);
  if (s.json()) {
    nlohmann::json doc = document("reconcile");
    doc["run_id"] = a.run;
    doc["key"] = a.key;
    doc["happened"] = a.happened;
    doc["by"] = r.by;
    doc["status"] = name(cp.status);
    doc["seq"] = cp.seq;
    print_json(doc);
    return 0;
  }
  std::cout << a.run << ": effect " << a.key << " recorded as "
            << (a.happened ? "happened" : "not happened") << " by " << r.by << "; the run is "
            << name(cp.status)
            << " (it goes on when a worker picks it up, or when its program resumes it)\n";
  return 0;
}

int fork(Session& s, const std::string& run, std::uint64_t at, const std::string& new_id,
         const std::string& by, const std::string& reason) {
  Store& store = s.store(Access::write);
  check_run_id(new_id);
  if (store.latest(new_id))
    throw conflict_failure("trellis: cannot fork run '" + run + "' as '" + new_id + "': run '" +
                           new_id + "' already exists in " + s.where());
  Checkpoint cp;
  try {
    cp = fork_run(store, run, at, new_id, or_default_user(by), reason);
  } catch (const graph_error& e) {  // created meanwhile
    throw conflict_failure(e.what());
  }
  if (s.json()) {
    nlohmann::json doc = document("fork");
    doc["from"] = run;
    doc["at"] = at;
    doc["run_id"] = new_id;
    doc["status"] = name(cp.status);
    doc["node"] = cp.next_node;
    doc["step"] = cp.step;
    doc["by"] = cp.forked_from->by;
    doc["reason"] = cp.forked_from->reason;
    print_json(doc);
    return 0;
  }
  std::cout << new_id << ": forked from " << run << " at checkpoint " << at << "; "
            << name(cp.status) << " at " << (cp.next_node.empty() ? "-" : cp.next_node)
            << " (resume it with its program)\n";
  return 0;
}

int delete_runs(Session& s, const BulkArgs& b) {
  Store& store = s.store(Access::write);
  if (!b.run.empty()) {
    (void)select(s, store, b, "delete");
    store.delete_run(b.run);
    if (s.json()) {
      nlohmann::json doc = document("delete");
      doc["dry_run"] = false;
      doc["runs"] = nlohmann::json::array({{{"run_id", b.run}, {"deleted", true}}});
      print_json(doc);
    } else {
      std::cout << b.run << ": deleted\n";
    }
    return 0;
  }
  const std::vector<RunSummary> runs = select(s, store, b, "delete");
  nlohmann::json results = nlohmann::json::array();
  int rc = 0;
  for (const RunSummary& r : runs) {
    if (b.dry_run) {
      results.push_back({{"run_id", r.run_id}, {"deleted", false}, {"status", name(r.status)}});
      if (!s.json()) std::cout << r.run_id << ": would be deleted (" << name(r.status) << ")\n";
      continue;
    }
    try {
      store.delete_run(r.run_id);
      results.push_back({{"run_id", r.run_id}, {"deleted", true}, {"status", name(r.status)}});
      if (!s.json()) std::cout << r.run_id << ": deleted\n";
    } catch (const trellis::error& e) {
      results.push_back(
          {{"run_id", r.run_id}, {"deleted", false}, {"error", e.what()}, {"code", e.id()}});
      std::cerr << e.what() << '\n';
      rc = 1;
    }
  }
  return end_bulk(s, "delete", "delete", b.dry_run, std::move(results), runs.empty(), rc);
}

int gc(Session& s, const std::string& finished_before, std::optional<std::size_t> keep_last,
       bool dry_run, bool yes) {
  if (!dry_run && !yes)
    throw usage_failure("trellis: gc deletes runs: add --dry-run to list them, or --yes");
  const std::string before = utc(parse_time(finished_before, "--finished-before"));
  Store& store = s.store(dry_run ? Access::read : Access::write);
  nlohmann::json results = nlohmann::json::array();
  int rc = 0;
  for (const RunSummary& r : store.list_runs()) {
    if (!terminal(r.status) || !(r.updated_at < before)) continue;
    if (dry_run) {
      results.push_back({{"run_id", r.run_id},
                         {"deleted", false},
                         {"status", name(r.status)},
                         {"updated_at", r.updated_at}});
      if (!s.json())
        std::cout << r.run_id << ": would be deleted (" << name(r.status) << ", " << r.updated_at
                  << ")\n";
      continue;
    }
    try {
      store.delete_run(r.run_id);
      results.push_back({{"run_id", r.run_id},
                         {"deleted", true},
                         {"status", name(r.status)},
                         {"updated_at", r.updated_at}});
      if (!s.json()) std::cout << r.run_id << ": deleted\n";
    } catch (const trellis::error& e) {
      results.push_back(
          {{"run_id", r.run_id}, {"deleted", false}, {"error", e.what()}, {"code", e.id()}});
      std::cerr << e.what() << '\n';
      rc = 1;
    }
  }
  if (keep_last && !dry_run) store.apply_retention(Retention{.keep_last = *keep_last});
  if (s.json()) {
    nlohmann::json doc = document("gc");
    doc["dry_run"] = dry_run;
    doc["finished_before"] = before;
    doc["keep_last"] = keep_last ? nlohmann::json(*keep_last) : nlohmann::json();
    doc["runs"] = std::move(results);
    print_json(doc);
  } else {
    if (results.empty()) std::cout << "no finished run before " << before << '\n';
    if (keep_last)
      std::cout << (dry_run ? "would keep " : "kept ") << "the last " << *keep_last
                << " checkpoints of every run\n";
  }
  return rc;
}

namespace {

int print_report(Session& s, RunReport r) {
  if (r.status == RunStatus::WaitingApproval && r.request_id.empty())
    if (std::optional<Checkpoint> cp = s.store(Access::write).latest(r.run_id))
      r.request_id = request_id(*cp);
  if (s.json()) {
    nlohmann::json doc = document("outcome");
    doc.update(report_json(r));
    print_json(doc);
    return 0;
  }
  std::cout << r.run_id << ": " << name(r.status)
            << (r.reason == Reason::none ? "" : " (" + name(r.reason) + ")") << " after " << r.steps
            << " steps" << (r.detail.empty() ? "" : ": " + r.detail) << '\n';
  if (r.status == RunStatus::WaitingApproval && r.interrupt) {
    std::cout << "  request " << r.request_id << ": " << r.interrupt->reason << '\n';
    if (r.interrupt->approval) std::cout << "  action: " << r.interrupt->approval->action << '\n';
  }
  // A graph file's run: what its `return` node gave.
  if (s.graph_file() && r.state.is_object() && r.state.contains("output") &&
      !r.state["output"].is_null())
    std::cout << "  output: " << brief(r.state["output"], 200) << '\n';
  return 0;
}

GraphRunner& graph_of(Session& s, const char* verb) {
  if (!s.graph())
    throw usage_failure(std::string("trellis: ") + verb +
                        " needs the graph: give its graph file (--graph FILE), or run it from "
                        "the program that links it");
  return *s.graph();
}

}  // namespace

int run_start(Session& s, const std::string& run, const std::string& state) {
  GraphRunner& g = graph_of(s, "run");
  std::optional<nlohmann::json> initial;
  if (!state.empty()) {
    initial = parse_json_option(state, "--state");
    if (std::string why = g.check_state(*initial); !why.empty())
      throw usage_failure("trellis: --state is not a state of this graph: " + why);
  }
  Store& store = s.store(Access::create);
  show_progress(s);
  return print_report(s, g.run(run, initial ? &*initial : nullptr, store));
}

int run_resume(Session& s, const std::string& run) {
  GraphRunner& g = graph_of(s, "resume");
  Store& store = s.store(Access::write);
  if (std::optional<Checkpoint> cp = store.latest(run);
      cp && cp->status == RunStatus::WaitingApproval)
    throw conflict_failure("trellis: run '" + run + "' waits for a decision on request " +
                           request_id(*cp) + ": trellis approve " + run + " --request " +
                           request_id(*cp) + " (or reject, input), then resume it");
  show_progress(s);
  return print_report(s, g.resume(run, store));
}

namespace {

nlohmann::json next_json(const NextStep& next) {
  if (const auto* go = std::get_if<Goto>(&next)) return {{"kind", "goto"}, {"node", go->node}};
  if (std::holds_alternative<Halt>(next)) return {{"kind", "halt"}};
  if (const auto* sleep = std::get_if<Sleep>(&next)) {
    nlohmann::json j = {{"kind", "sleep"}, {"then", sleep->then}};
    if (sleep->until) j["until"] = trellis::agent::detail::format_time(*sleep->until);
    j["duration_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(sleep->duration).count();
    return j;
  }
  const Interrupt& i = std::get<Interrupt>(next);
  nlohmann::json j = interrupt_json(i, "", "");
  j.erase("id");
  j.erase("asked_by");
  j["kind"] = "interrupt";
  return j;
}

std::string next_text(const NextStep& next) {
  if (const auto* go = std::get_if<Goto>(&next)) return "goto " + go->node;
  if (std::holds_alternative<Halt>(next)) return "halt";
  if (const auto* sleep = std::get_if<Sleep>(&next))
    return "sleep, then " + (sleep->then.empty() ? std::string("again") : sleep->then);
  return "interrupt: " + std::get<Interrupt>(next).reason;
}

}  // namespace

int run_step(Session& s, const std::string& run, const std::string& node, const std::string& state,
             bool commit, const std::vector<std::string>& effects) {
  GraphRunner& g = graph_of(s, "step");
  StepOptions options;
  options.commit = commit;
  if (!state.empty()) {
    options.state = parse_json_option(state, "--state");
    if (std::string why = g.check_state(*options.state); !why.empty())
      throw usage_failure("trellis: --state is not a state of this graph: " + why);
  }
  for (const std::string& e : effects) {
    const std::size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_failure("trellis: --effect '" + e + "' is not NAME=JSON");
    options.stubs.insert_or_assign(
        e.substr(0, eq), parse_json_option(e.substr(eq + 1), "--effect " + e.substr(0, eq)));
  }
  if (commit && !options.stubs.empty())
    throw usage_failure("trellis: step --commit runs real effects: it takes no --effect stubs");
  const StepReport r = g.step(run, node, s.store(commit ? Access::write : Access::read), options);
  if (s.json()) {
    nlohmann::json doc = document("step");
    doc["run_id"] = run;
    doc["node"] = node;
    doc["committed"] = r.committed;
    doc["next"] = next_json(r.next);
    doc["state"] = r.state;
    doc["reason"] = name(r.reason);
    doc["detail"] = r.detail;
    doc["seq"] = r.checkpoint ? nlohmann::json(r.checkpoint->seq) : nlohmann::json();
    doc["effects"] = nlohmann::json::array();
    for (const StepEffect& e : r.effects)
      doc["effects"].push_back({{"name", e.name},
                                {"key", e.key},
                                {"args", e.args},
                                {"source", std::string(enumeration<EffectSource>::name(e.source))},
                                {"status", std::string(enumeration<EffectStatus>::name(e.status))},
                                {"result", e.result},
                                {"error", e.error}});
    print_json(doc);
    return 0;
  }
  std::cout << run << ": " << node << (r.committed ? " (committed" : " (dry: nothing written")
            << (r.checkpoint ? ", checkpoint " + std::to_string(r.checkpoint->seq) : std::string())
            << ")\n"
            << "next:   " << next_text(r.next) << '\n';
  if (r.reason != Reason::none)
    std::cout << "fails:  " << name(r.reason) << (r.detail.empty() ? "" : ": " + r.detail) << '\n';
  std::cout << "state:  " << r.state.dump() << '\n';
  for (const StepEffect& e : r.effects)
    std::cout << "effect: " << e.name << " " << enumeration<EffectSource>::name(e.source) << " "
              << enumeration<EffectStatus>::name(e.status) << " key " << e.key << " -> "
              << (e.status == EffectStatus::succeeded ? brief(e.result) : e.error) << '\n';
  return 0;
}

}  // namespace trellis::agent::cli::detail
