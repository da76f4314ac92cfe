// The command line (graph_runner.hpp: run_commands): CLI11 parses, one command runs, and what
// it throws becomes one line on stderr and an exit code (docs/cli.md).

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cli_support.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/cli/graph_runner.hpp"

namespace trellis::agent::cli {

namespace {

using namespace detail;

/// The exit code of a failure (docs/cli.md, "Exit codes").
int exit_code(const std::exception& e) {
  if (const auto* g = dynamic_cast<const invalid_graph*>(&e)) return g->exit;
  if (dynamic_cast<const usage_failure*>(&e) || dynamic_cast<const invalid_run_id*>(&e) ||
      dynamic_cast<const invalid_option*>(&e))
    return 2;
  if (dynamic_cast<const not_a_store*>(&e) || dynamic_cast<const unknown_run*>(&e) ||
      dynamic_cast<const unknown_request*>(&e))
    return 3;
  if (dynamic_cast<const conflict_failure*>(&e) || dynamic_cast<const request_superseded*>(&e) ||
      dynamic_cast<const run_conflict*>(&e) || dynamic_cast<const run_busy*>(&e) ||
      dynamic_cast<const run_finished*>(&e))
    return 4;
  if (dynamic_cast<const request_expired*>(&e)) return 5;
  return 1;
}

std::string code_of(const std::exception& e) {
  if (const auto* t = dynamic_cast<const trellis::error*>(&e)) return std::string(t->id());
  if (dynamic_cast<const usage_failure*>(&e)) return "cli.usage";
  if (dynamic_cast<const conflict_failure*>(&e)) return "cli.conflict";
  if (dynamic_cast<const invalid_graph*>(&e)) return "flow.graph_file";
  return "cli.error";
}

/// One line: "trellis: <what>" (the library's messages name the run and the reason).
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (!text.starts_with("trellis")) text = "trellis: " + text;
  return text;
}

void add_filter(CLI::App* app, FilterArgs& f) {
  app->add_option("--status", f.status,
                  "only runs in this status (Queued, Running, "
                  "WaitingApproval, Waiting, Succeeded, Failed, Cancelled)");
  app->add_option("--since", f.since,
                  "only runs touched since T (2026-11-24T10:00:00Z, or 30m, 2h, 7d back from now)");
  app->add_option("--node", f.node, "only runs whose next node is N");
}

}  // namespace

int run_commands(int argc, char** argv, Store* own_store, GraphRunner* graph) {
  return run_commands(argc, argv, own_store, graph, {});
}

int run_commands(int argc, char** argv, Store* own_store, GraphRunner* graph,
                 const std::vector<ExtraCommand>& extra) {
  CLI::App app{graph ? "Operate this program's durable agent runs (docs/cli.md)"
                     : "trellis: operate durable agent runs in a store (docs/cli.md)",
               "trellis"};
  if (argc > 0 && argv[0]) app.name(std::filesystem::path(argv[0]).filename().string());
  app.require_subcommand(1);
  app.fallthrough();
  std::string spec, output = "table", graph_path, work_dir;
  // (required unless a graph file is worked on: then the FileStore "runs" is the default;
  // Session::store says so when it is missing)
  app.add_option("--store", spec,
                 own_store ? "the store: DIR (FileStore) or sqlite:PATH (default: the program's)"
                           : "the store: DIR (FileStore) or sqlite:PATH (required, but with a "
                             "graph file: default runs)");
  app.add_option("-o,--output", output, "table (default) or json (docs/cli.schema.json)")
      ->check(CLI::IsMember({"table", "json"}));
  if (!graph)
    app.add_option("--graph", graph_path,
                   "a graph file (YAML or JSON): the graph of run, resume, step, enqueue and "
                   "worker");
  app.add_option("--work-dir", work_dir,
                 "graph files: where runs' work directories are (default: trellis-work)");

  std::function<int(Session&)> action;

  // runs ...
  CLI::App* runs = app.add_subcommand("runs", "list and inspect runs");
  runs->require_subcommand(1);
  FilterArgs ls_filter;
  CLI::App* ls = runs->add_subcommand("ls", "list runs: id, status, node, steps, age, request");
  add_filter(ls, ls_filter);
  PageArgs ls_page;
  ls->add_option("--graph", ls_page.graph, "only runs whose graph fingerprint starts with G");
  ls->add_option("--after", ls_page.after,
                 "only runs whose id sorts after RUN (the last of the page before)");
  ls->add_option("--limit", ls_page.limit, "at most N runs, the first by id (0: all)");
  ls->callback([&] { action = [&](Session& s) { return runs_ls(s, ls_filter, ls_page); }; });

  std::string run_id;
  CLI::App* show = runs->add_subcommand("show", "a run: status, state, the pending request");
  show->add_option("RUN", run_id, "the run")->required();
  show->callback([&] { action = [&](Session& s) { return runs_show(s, run_id); }; });

  bool diff = false;
  CLI::App* history = runs->add_subcommand("history", "every checkpoint of a run");
  history->add_option("RUN", run_id, "the run")->required();
  history->add_flag("--diff", diff, "the state's changes between checkpoints (JSON pointers)");
  history->callback([&] { action = [&](Session& s) { return runs_history(s, run_id, diff); }; });

  bool follow = false;
  std::uint64_t after = 0;
  unsigned poll_ms = 200;
  CLI::App* events = runs->add_subcommand("events", "a run's events");
  events->add_option("RUN", run_id, "the run")->required();
  events->add_flag("-f,--follow", follow,
                   "keep printing new events until the run has ended (or SIGINT/SIGTERM)");
  events->add_option("--after", after, "only events after this position (seq)");
  events->add_option("--poll", poll_ms, "with --follow: milliseconds between looks (200)")
      ->check(CLI::Range(10u, 60'000u));
  events->callback([&] {
    action = [&](Session& s) {
      return runs_events(s, run_id, follow, after, std::chrono::milliseconds(poll_ms));
    };
  });

  CLI::App* effects = runs->add_subcommand("effects", "a run's effects and their receipts");
  effects->add_option("RUN", run_id, "the run")->required();
  effects->callback([&] { action = [&](Session& s) { return runs_effects(s, run_id); }; });

  CLI::App* verify = runs->add_subcommand(
      "verify", "check a run's hash chain; name its first broken link (exit 6 when broken)");
  verify->add_option("RUN", run_id, "the run")->required();
  verify->callback([&] { action = [&](Session& s) { return runs_verify(s, run_id); }; });

  std::string format = "mermaid";
  CLI::App* draw = runs->add_subcommand("draw", "a run's path over its graph");
  draw->add_option("RUN", run_id, "the run")->required();
  draw->add_option("--format", format, "mermaid (default), dot or svg (needs Graphviz's dot)")
      ->check(CLI::IsMember({"mermaid", "dot", "svg"}));
  draw->callback([&] { action = [&](Session& s) { return runs_draw(s, run_id, format); }; });

  // approvals ls
  CLI::App* approvals = app.add_subcommand("approvals", "requests that wait for a decision");
  approvals->require_subcommand(1);
  CLI::App* als = approvals->add_subcommand("ls", "every pending request, with what it asks");
  als->callback([&] { action = [&](Session& s) { return approvals_ls(s); }; });

  // approve / reject / input
  DecideArgs decide_args;
  auto add_decision = [&](const char* name, const char* what, DecisionKind kind) {
    CLI::App* c = app.add_subcommand(name, what);
    c->add_option("RUN", decide_args.run, "the run")->required();
    c->add_option("--request", decide_args.request, "the request's id (runs show, approvals ls)")
        ->required();
    c->add_option("--as", decide_args.as, "who decides (default: $TRELLIS_USER, $USER, login)");
    c->callback([&, kind] {
      decide_args.kind = kind;
      action = [&](Session& s) { return decide(s, decide_args); };
    });
    return c;
  };
  add_decision("approve", "approve a pending request (the run becomes Queued)",
               DecisionKind::approve)
      ->add_option("--comment", decide_args.comment, "a comment kept with the decision");
  add_decision("reject", "reject a pending request (the run fails: approval_rejected)",
               DecisionKind::reject)
      ->add_option("--reason", decide_args.reason, "why")
      ->required();
  add_decision("input", "answer a pending request with a JSON value (the run becomes Queued)",
               DecisionKind::input)
      ->add_option("--json", decide_args.json, "the value, as JSON")
      ->required();

  // cancel / delete (one run, or a filter with --dry-run or --yes)
  BulkArgs cancel_args, delete_args;
  std::string as, reason;
  CLI::App* cancel_cmd = app.add_subcommand("cancel", "cancel a run, or the runs a filter selects");
  cancel_cmd->add_option("RUN", cancel_args.run, "the run (or give a filter)");
  add_filter(cancel_cmd, cancel_args.filter);
  cancel_cmd->add_option("--as", as, "who asks (default: $TRELLIS_USER, $USER, login)");
  cancel_cmd->add_option("--reason", reason, "why");
  cancel_cmd->add_flag("--dry-run", cancel_args.dry_run,
                       "list what a filter selects, write nothing");
  cancel_cmd->add_flag("--yes", cancel_args.yes, "act on every run the filter selects");
  cancel_cmd->callback(
      [&] { action = [&](Session& s) { return cancel(s, cancel_args, as, reason); }; });

  CLI::App* delete_cmd = app.add_subcommand("delete", "delete a run, or the runs a filter selects");
  delete_cmd->add_option("RUN", delete_args.run, "the run (or give a filter)");
  add_filter(delete_cmd, delete_args.filter);
  delete_cmd->add_flag("--dry-run", delete_args.dry_run,
                       "list what a filter selects, write nothing");
  delete_cmd->add_flag("--yes", delete_args.yes, "act on every run the filter selects");
  delete_cmd->callback([&] { action = [&](Session& s) { return delete_runs(s, delete_args); }; });

  // reconcile
  ReconcileArgs rec;
  CLI::App* reconcile_cmd = app.add_subcommand(
      "reconcile", "record the outcome of an effect in doubt (the run becomes Queued)");
  reconcile_cmd->add_option("RUN", rec.run, "the run (failed: reconciliation_required)")
      ->required();
  reconcile_cmd->add_option("--key", rec.key, "the effect's idempotency key (runs effects)")
      ->required();
  CLI::Option* happened = reconcile_cmd->add_flag("--happened", rec.happened, "it happened");
  CLI::Option* not_happened =
      reconcile_cmd->add_flag("--did-not-happen", rec.did_not_happen, "it did not happen");
  happened->excludes(not_happened);
  reconcile_cmd->add_option("--result", rec.result, "with --happened: what it returned, as JSON");
  reconcile_cmd->add_option("--reason", rec.reason, "how you know (a ledger line, a ticket)")
      ->required();
  reconcile_cmd->add_option("--as", rec.as,
                            "who records it (default: $TRELLIS_USER, $USER, login)");
  reconcile_cmd->callback([&] { action = [&](Session& s) { return reconcile(s, rec); }; });

  // fork
  std::uint64_t at = 0;
  std::string new_id;
  CLI::App* fork_cmd = app.add_subcommand("fork", "start a new run from a checkpoint of a run");
  fork_cmd->add_option("RUN", run_id, "the run")->required();
  fork_cmd->add_option("--at", at, "the checkpoint (runs history)")->required();
  fork_cmd->add_option("--as", new_id, "the new run's id")->required();
  std::string fork_by, fork_reason;
  fork_cmd->add_option("--by", fork_by,
                       "who forks, recorded in the fork (default: $TRELLIS_USER, $USER, login)");
  fork_cmd->add_option("--reason", fork_reason, "why, recorded in the fork");
  fork_cmd->callback([&] {
    action = [&](Session& s) { return fork(s, run_id, at, new_id, fork_by, fork_reason); };
  });

  // gc
  std::string finished_before;
  std::optional<std::size_t> keep_last;
  bool gc_dry = false, gc_yes = false;
  CLI::App* gc_cmd = app.add_subcommand("gc", "delete finished runs; trim histories");
  gc_cmd
      ->add_option("--finished-before", finished_before,
                   "delete runs that ended before T (2026-11-24T10:00:00Z, or 30d back)")
      ->required();
  gc_cmd->add_option("--keep-last", keep_last,
                     "then keep only the last N checkpoints of every run");
  gc_cmd->add_flag("--dry-run", gc_dry, "list what would be deleted, write nothing");
  gc_cmd->add_flag("--yes", gc_yes, "delete");
  gc_cmd->callback([&] {
    action = [&](Session& s) { return gc(s, finished_before, keep_last, gc_dry, gc_yes); };
  });

  // graph files: validate, draw
  std::vector<std::string> validate_paths;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate", "check graph files (YAML or JSON) without running anything: errors, warnings");
  validate_cmd->add_option("FILE", validate_paths, "the graph files")->required();
  validate_cmd->callback(
      [&] { action = [&](Session& s) { return validate_files(s, validate_paths); }; });

  std::string draw_path, draw_format = "mermaid";
  CLI::App* draw_cmd = app.add_subcommand("draw", "draw a graph file's graph");
  draw_cmd->add_option("FILE", draw_path, "the graph file")->required();
  draw_cmd->add_option("--format", draw_format, "mermaid (default), dot or svg (needs dot)")
      ->check(CLI::IsMember({"mermaid", "dot", "svg"}));
  draw_cmd->callback(
      [&] { action = [&](Session& s) { return draw_file(s, draw_path, draw_format, work_dir); }; });

  // run / resume / step: of a graph file, or of the graph the program links (cli::main) or
  // --graph names
  RunArgs run_args;
  CLI::App* run_cmd = app.add_subcommand(
      "run", graph ? "start a run (with --state JSON, or the default state), or run a graph file"
                   : "run a graph file (run FILE --input NAME=VALUE...), or start run RUN of "
                     "--graph FILE");
  run_cmd->add_option("FILE|RUN", run_args.target,
                      "a graph file (an existing .yaml, .yml or .json file), or the new run's id");
  run_cmd->add_option("--state", run_args.state, "the initial state, as JSON");
  run_cmd->add_option("--input", run_args.inputs,
                      "NAME=VALUE: a graph file's input (VALUE as JSON if it parses, else text; "
                      "repeatable)");
  run_cmd->add_option("--inputs", run_args.inputs_json, "a graph file's inputs, as a JSON object");
  run_cmd->add_option("--run-id", run_args.run_id,
                      "a graph file's run id (default: NAME-UTCTIME-XXXX)");
  run_cmd->callback([&] {
    run_args.work_dir = work_dir;
    action = [&](Session& s) { return run_command(s, run_args); };
  });
  CLI::App* resume_cmd =
      app.add_subcommand("resume", "continue a run (queued, cancelled, or cut off by a crash)");
  resume_cmd->add_option("RUN", run_id, "the run")->required();
  resume_cmd->callback([&] { action = [&](Session& s) { return run_resume(s, run_id); }; });
  StepArgs step_args;
  CLI::App* step_cmd = app.add_subcommand(
      "step",
      "run one node on its own, of a run or of a graph file: dry (nothing written, no effect "
      "called) by default");
  step_cmd->add_option("FILE|RUN", step_args.target, "a graph file, or the run")->required();
  step_cmd->add_option("--node", step_args.node, "the node to run")->required();
  step_cmd->add_option("--state", step_args.state,
                       "the state it starts from, as JSON (default: the run's; for a graph "
                       "file, the graph's state, over its initial state)");
  step_cmd->add_option("--input", step_args.inputs,
                       "step FILE: NAME=VALUE, an input of the graph file (repeatable)");
  step_cmd->add_flag("--commit", step_args.commit, "a real step: real effects, committed");
  step_cmd->add_option("--effect", step_args.effects,
                       "NAME=JSON: a dry step's answer for effect NAME (repeatable)");
  step_cmd->callback([&] {
    step_args.work_dir = work_dir;
    action = [&](Session& s) { return step_command(s, step_args); };
  });

  // enqueue / worker: they need the graph too, but `trellis` offers them to say why it cannot
  EnqueueArgs enqueue_args;
  std::vector<std::string> enqueue_inputs;
  std::string enqueue_inputs_json;
  CLI::App* enqueue_cmd = app.add_subcommand(
      "enqueue", graph ? "start a run in the background (Queued, for a worker to advance)"
                       : "(with --graph FILE) start a run in the background");
  enqueue_cmd->add_option("RUN", enqueue_args.run, "the new run's id")->required();
  enqueue_cmd->add_option("--state", enqueue_args.state,
                          "the initial state, as JSON (default: the state's default)");
  enqueue_cmd->add_option("--priority", enqueue_args.priority,
                          "workers claim higher priorities first (default 0)");
  enqueue_cmd->add_option("--at", enqueue_args.at,
                          "not before T (2026-11-24T10:00:00Z, or +90s, +5m, +2h ahead of now)");
  enqueue_cmd->add_option("--input", enqueue_inputs,
                          "with a graph file: NAME=VALUE, an input (repeatable)");
  enqueue_cmd->add_option("--inputs", enqueue_inputs_json,
                          "with a graph file: the inputs, as a JSON object");
  enqueue_cmd->callback([&] {
    action = [&](Session& s) {
      return enqueue_command(s, enqueue_args, enqueue_inputs, enqueue_inputs_json);
    };
  });

  WorkerArgs worker_args;
  double for_seconds = 0;
  CLI::App* worker_cmd = app.add_subcommand(
      "worker", graph ? "advance the store's due runs of this program's graph until stopped"
                      : "(with --graph FILE) advance the graph's due runs until stopped");
  worker_cmd->add_option("--threads", worker_args.threads, "runs advanced at once (default 2)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{256}));
  worker_cmd
      ->add_option("--poll", worker_args.poll_ms,
                   "milliseconds an idle thread waits before looking again (200)")
      ->check(CLI::Range(1u, 60'000u));
  CLI::Option* drain_opt = worker_cmd->add_flag(
      "--drain", worker_args.drain, "advance what is due now, one run at a time, then exit");
  CLI::Option* for_opt =
      worker_cmd->add_option("--for", for_seconds, "run for SECONDS, then stop gracefully");
  for_opt->excludes(drain_opt);
  worker_cmd->add_option("--name", worker_args.name,
                         "the worker's name in leases and output (default: host:pid)");
  worker_cmd->callback([&] {
    if (for_opt->count() > 0) worker_args.for_seconds = for_seconds;
    action = [&](Session& s) { return worker(s, worker_args); };
  });

  // Commands of the layers above: everything after the name is theirs to parse.
  std::vector<std::string> extra_args;
  for (const ExtraCommand& command : extra) {
    CLI::App* c = app.add_subcommand(command.name, command.description);
    c->prefix_command();
    c->set_help_flag();     // --help is the command's own,
    c->fallthrough(false);  // and so is every option after its name
    const ExtraCommand* cmd = &command;
    c->callback([&, c, cmd] {
      extra_args = c->remaining();
      action = [&, cmd](Session& s) {
        return cmd->run(extra_args, [&]() -> Store& { return s.store(Access::write); });
      };
    });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << app.get_name() << ": "
              << one_line(e.what()).substr(std::string("trellis: ").size()) << " (see "
              << app.get_name() << " --help)\n";
    return 2;
  }

  const bool json = output == "json";
  try {
    Session session(spec, own_store, graph, json);
    if (!graph_path.empty()) session.use_graph_file(load_graph(graph_path, work_dir));
    return action ? action(session) : 2;
  } catch (const std::exception& e) {
    const int rc = exit_code(e);
    // A graph file's problems: one line each, as `validate` prints them.
    const std::optional<std::vector<FileDiagnostic>> problems = diagnostics_of(e);
    if (problems) {
      for (const FileDiagnostic& d : *problems) std::cerr << diagnostic_line(d) << '\n';
    } else {
      std::cerr << one_line(e.what()) << '\n';
    }
    if (json) {
      nlohmann::json doc = document("error");
      doc["error"] = {{"code", code_of(e)}, {"message", one_line(e.what())}, {"exit", rc}};
      if (problems) {
        doc["error"]["diagnostics"] = nlohmann::json::array();
        for (const FileDiagnostic& d : *problems)
          doc["error"]["diagnostics"].push_back(diagnostic_json(d));
      }
      print_json(doc);
    }
    return rc;
  }
}

}  // namespace trellis::agent::cli
