// The commands on graph files (docs/cli.md, "Graph files"): validate, draw FILE, run FILE,
// step FILE, and --graph FILE, which makes a graph file the graph of run, resume, step, enqueue
// and worker.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <system_error>

#include "cli_support.hpp"
#include "trellis/agent/detail/event_hub.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/memory_store.hpp"
#include "trellis/agent/progress_printer.hpp"
#include "trellis/cli/main.hpp"
#include "trellis/flow/action.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/file_graph.hpp"
#include "trellis/flow/graph_file.hpp"
#include "trellis/flow/validate.hpp"

namespace trellis::agent::cli::detail {

namespace {

/// The graph's event sink (Graph::events<ProgressSink>(): only the command observes a graph it
/// loaded): the progress lines of `run` and `resume`, once print_to() names a printer.
class ProgressSink final : public ::trellis::agent::detail::EventSink {
 public:
  bool observed() const noexcept override { return printer_.load() != nullptr; }
  void publish(const RunEventRecord& e) override {
    if (const ProgressPrinter* p = printer_.load()) (*p)(e);
  }
  void print_to(const ProgressPrinter* p) { printer_.store(p); }

 private:
  std::atomic<const ProgressPrinter*> printer_{nullptr};
};

/// The graph file of a FileGraph as the commands run it: a run started without --state starts
/// from the file's inputs (FileGraph::initial of the --input values given).
class FileGraphRunner final : public GraphRunner {
 public:
  explicit FileGraphRunner(LoadedGraph& g);

  std::string fingerprint() const override { return typed_.fingerprint(); }
  std::optional<GraphShape> shape() const override { return typed_.shape(); }
  std::string check_state(const nlohmann::json& state) const override {
    return typed_.check_state(state);
  }
  RunReport run(const std::string& run_id, const nlohmann::json* state, Store& store) override {
    if (state) return typed_.run(run_id, state, store);
    const nlohmann::json initial = this->initial();
    return typed_.run(run_id, &initial, store);
  }
  RunReport resume(const std::string& run_id, Store& store) override {
    return typed_.resume(run_id, store);
  }
  StepReport step(const std::string& run_id, const std::string& node, Store& store,
                  StepOptions options) override {
    return typed_.step(run_id, node, store, std::move(options));
  }
  void enqueue(const std::string& run_id, const nlohmann::json* state, Store& store,
               const EnqueueOptions& options) override {
    if (state) return typed_.enqueue(run_id, state, store, options);
    const nlohmann::json initial = this->initial();
    typed_.enqueue(run_id, &initial, store, options);
  }
  void add_to(Worker& worker) override { typed_.add_to(worker); }

  /// The initial state of a run with the inputs given, as JSON (usage_failure naming the input
  /// when they do not fit the file's `inputs`).
  nlohmann::json initial() const;

 private:
  LoadedGraph& g_;
  GraphAdapter<flow::FlowState> typed_;
};

}  // namespace

/// A graph file loaded: its actions (which outlive the FileGraph), the FileGraph, its runner,
/// and the inputs of the run the command starts.
struct LoadedGraph {
  std::string path;
  flow::ActionRegistry actions = flow::ActionRegistry::with_builtins();
  std::unique_ptr<flow::FileGraph> fg;
  std::unique_ptr<FileGraphRunner> runner;
  nlohmann::json inputs = nlohmann::json::object();
  std::optional<ProgressPrinter> progress;
};

namespace {

FileGraphRunner::FileGraphRunner(LoadedGraph& g) : g_(g), typed_(g.fg->graph()) {}

FileDiagnostic from_problem(const flow::Problem& p, const std::string& file, std::string code) {
  return FileDiagnostic{p.at.file.empty() ? file : p.at.file,
                        p.at.line,
                        p.at.column,
                        true,
                        p.message,
                        std::move(code)};
}

std::vector<FileDiagnostic> from_error(const flow::graph_file_error& e, const std::string& file,
                                       const std::string& code) {
  std::vector<FileDiagnostic> out;
  for (const flow::Problem& p : e.problems()) out.push_back(from_problem(p, file, code));
  if (out.empty()) out.push_back(FileDiagnostic{file, 0, 0, true, e.what(), code});
  return out;
}

nlohmann::json FileGraphRunner::initial() const {
  try {
    return nlohmann::json(g_.fg->initial(g_.inputs));
  } catch (const flow::graph_file_error& e) {
    throw invalid_graph(from_error(e, g_.path, "input"), 2);
  }
}

FileDiagnostic from_diagnostic(const flow::Diagnostic& d, const std::string& file) {
  return FileDiagnostic{d.at.file.empty() ? file : d.at.file, d.at.line, d.at.column,
                        d.severity == flow::Severity::error,  d.message, d.code};
}

/// Every diagnostic of graph file `path`: its load errors (code "load"), or what validate()
/// finds with `actions`.
std::vector<FileDiagnostic> check_file(const std::string& path, const flow::ActionRegistry& actions,
                                       std::optional<flow::GraphFile>* loaded = nullptr) {
  std::optional<flow::GraphFile> file;
  try {
    file = flow::load_graph_file(path);
  } catch (const flow::graph_file_error& e) {
    return from_error(e, path, "load");
  }
  std::vector<FileDiagnostic> out;
  for (const flow::Diagnostic& d : flow::validate(*file, actions).diagnostics)
    out.push_back(from_diagnostic(d, path));
  if (loaded) *loaded = std::move(file);
  return out;
}

bool has_error(const std::vector<FileDiagnostic>& ds) {
  return std::any_of(ds.begin(), ds.end(), [](const FileDiagnostic& d) { return d.error; });
}

/// A run id no other run has: "<graph name>-<UTC time>-<4 hex digits>" (the name's characters
/// that a run id cannot hold become '-').
std::string new_run_id(const flow::GraphFile& file) {
  std::string name = file.name.empty() ? std::string("run") : file.name.substr(0, 80);
  for (char& c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '-' && c != '_' && c != '.') c = '-';
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device random;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04x", static_cast<unsigned>(random() & 0xffffu));
  return name + "-" + stamp + "-" + hex;
}

/// A directory of its own for a dry step's work (removed when the step is done).
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "trellis-step-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw store_error("trellis: step: cannot create a temporary work directory");
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

void refuse_inputs_without_file(const std::vector<std::string>& inputs, const std::string& json,
                                const char* verb) {
  if (!inputs.empty() || !json.empty())
    throw usage_failure(std::string("trellis: ") + verb +
                        ": --input and --inputs are for graph files (" + verb +
                        " FILE, or --graph FILE)");
}

}  // namespace

// --- diagnostics ----------------------------------------------------------------------------

std::string diagnostic_line(const FileDiagnostic& d) {
  std::string at = d.file;
  if (d.line > 0) at += ":" + std::to_string(d.line) + ":" + std::to_string(d.column);
  return at + ": " + (d.error ? "error" : "warning") + ": " + d.message +
         (d.code.empty() ? std::string() : " [" + d.code + "]");
}

nlohmann::json diagnostic_json(const FileDiagnostic& d) {
  return {{"file", d.file},       {"line", d.line},
          {"column", d.column},   {"severity", d.error ? "error" : "warning"},
          {"message", d.message}, {"code", d.code}};
}

invalid_graph::invalid_graph(std::vector<FileDiagnostic> d, int exit)
    : std::runtime_error(d.empty() ? std::string("trellis: invalid graph file")
                                   : diagnostic_line(d.front())),
      diagnostics(std::move(d)),
      exit(exit) {}

std::optional<std::vector<FileDiagnostic>> diagnostics_of(const std::exception& e) {
  if (const auto* g = dynamic_cast<const invalid_graph*>(&e)) return g->diagnostics;
  if (const auto* g = dynamic_cast<const flow::graph_file_error*>(&e))
    return from_error(*g, "", "graph_file");
  return std::nullopt;
}

// --- loading --------------------------------------------------------------------------------

bool is_graph_file(const std::string& arg) {
  const std::filesystem::path p(arg);
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext != ".yaml" && ext != ".yml" && ext != ".json") return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

std::shared_ptr<LoadedGraph> load_graph(const std::string& path, const std::string& work_dir) {
  auto g = std::make_shared<LoadedGraph>();
  g->path = path;
  std::optional<flow::GraphFile> file;
  std::vector<FileDiagnostic> found = check_file(path, g->actions, &file);
  if (has_error(found)) {
    std::erase_if(found, [](const FileDiagnostic& d) { return !d.error; });
    throw invalid_graph(std::move(found));
  }
  flow::FileGraphOptions options;
  options.work_root = std::filesystem::path(work_dir.empty() ? "trellis-work" : work_dir);
  try {
    g->fg = std::make_unique<flow::FileGraph>(std::move(*file), g->actions, std::move(options));
  } catch (const flow::graph_file_error& e) {
    throw invalid_graph(from_error(e, path, "graph_file"));
  }
  g->runner = std::make_unique<FileGraphRunner>(*g);
  return g;
}

void Session::use_graph_file(std::shared_ptr<LoadedGraph> g) {
  graph_ = g->runner.get();
  default_spec_ = "runs";
  file_ = std::move(g);
}

nlohmann::json parse_inputs(const LoadedGraph& g, const std::vector<std::string>& pairs,
                            const std::string& json) {
  nlohmann::json inputs = nlohmann::json::object();
  if (!json.empty()) {
    inputs = parse_json_option(json, "--inputs");
    if (!inputs.is_object())
      throw usage_failure("trellis: --inputs is not a JSON object ({\"name\": value, ...})");
  }
  for (const std::string& pair : pairs) {
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_failure("trellis: --input '" + pair + "' is not NAME=VALUE");
    const std::string name = pair.substr(0, eq), value = pair.substr(eq + 1);
    bool text = false;  // an input declared a string takes the text as it is (version=2)
    for (const flow::InputSpec& in : g.fg->file().inputs)
      if (in.name == name) text = in.type.kind == flow::TypeKind::string;
    nlohmann::json v = text ? nlohmann::json() : nlohmann::json::parse(value, nullptr, false);
    if (text || v.is_discarded()) v = value;  // not JSON: the text itself
    inputs[name] = std::move(v);
  }
  return inputs;
}

void show_progress(Session& s) {
  LoadedGraph* g = s.graph_file();
  if (!g || s.json() || g->progress) return;
  agent::Graph<flow::FlowState>& graph = g->fg->graph();
  g->progress.emplace(std::cout, graph.max_steps());
  graph.events<ProgressSink>().print_to(&*g->progress);
}

std::string command_hint(const Session& s, const std::string& command) {
  if (const LoadedGraph* g = s.graph_file()) return "trellis --graph " + g->path + " " + command;
  // The store does not say which program (or graph file) a run belongs to: both are named.
  return "<program> " + command + " (a graph file's run: trellis --graph FILE " + command + ")";
}

// --- the commands ---------------------------------------------------------------------------

int validate_files(Session& s, const std::vector<std::string>& files) {
  const flow::ActionRegistry actions = flow::ActionRegistry::with_builtins();
  nlohmann::json all = nlohmann::json::array(), summaries = nlohmann::json::array();
  bool ok = true;
  for (const std::string& path : files) {
    const std::vector<FileDiagnostic> found = check_file(path, actions);
    std::size_t errors = 0, warnings = 0;
    for (const FileDiagnostic& d : found) {
      std::cerr << diagnostic_line(d) << '\n';
      all.push_back(diagnostic_json(d));
      ++(d.error ? errors : warnings);
    }
    ok = ok && errors == 0;
    summaries.push_back(
        {{"file", path}, {"ok", errors == 0}, {"errors", errors}, {"warnings", warnings}});
    if (!s.json()) {
      auto count = [](std::size_t n, const char* what) {
        return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
      };
      std::cout << path << ": "
                << (errors == 0 ? std::string("valid") : "invalid, " + count(errors, "error"))
                << (warnings == 0 ? std::string() : ", " + count(warnings, "warning")) << '\n';
    }
  }
  if (s.json()) {
    nlohmann::json doc = document("validation");
    doc["ok"] = ok;
    doc["files"] = std::move(summaries);
    doc["diagnostics"] = std::move(all);
    print_json(doc);
  }
  return ok ? 0 : 1;
}

int draw_file(Session& s, const std::string& file, const std::string& format,
              const std::string& work_dir) {
  const std::shared_ptr<LoadedGraph> g = load_graph(file, work_dir);
  agent::Graph<flow::FlowState>& graph = g->fg->graph();
  std::string text = format == "mermaid" ? graph.to_mermaid() : graph.to_dot();
  if (format == "svg") text = to_svg(text);
  if (s.json()) {
    nlohmann::json doc = document("graph_drawing");
    doc["file"] = file;
    doc["name"] = g->fg->file().name;
    doc["format"] = format;
    doc["fingerprint"] = graph.fingerprint();
    doc["text"] = text;
    print_json(doc);
    return 0;
  }
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
  return 0;
}

int run_command(Session& s, const RunArgs& a) {
  std::string run = a.target;
  if (!a.target.empty() && is_graph_file(a.target)) {
    if (s.graph_file())
      throw usage_failure("trellis: run: two graph files (--graph " + s.graph_file()->path +
                          " and " + a.target + "): give one");
    s.use_graph_file(load_graph(a.target, a.work_dir));
    run.clear();
  }
  if (!run.empty() && !a.run_id.empty())
    throw usage_failure("trellis: run: give the run's id once: RUN or --run-id ID");
  if (run.empty()) run = a.run_id;
  if (LoadedGraph* file = s.graph_file()) {
    if (!a.state.empty())
      throw usage_failure(
          "trellis: run: a run of a graph file starts from its inputs: give --input NAME=VALUE "
          "or --inputs JSON, not --state");
    file->inputs = parse_inputs(*file, a.inputs, a.inputs_json);
    if (run.empty()) run = new_run_id(file->fg->file());
    check_run_id(run);
    (void)file->runner->initial();  // the inputs, checked before the store is created
    if (!s.json())
      std::cout << run << ": run of graph '" << file->fg->file().name << "' (" << file->path
                << ") in " << s.where() << '\n';
  } else {
    refuse_inputs_without_file(a.inputs, a.inputs_json, "run");
    if (!s.graph()) {
      if (!a.target.empty() && std::filesystem::path(a.target).has_extension())
        throw usage_failure("trellis: run: '" + a.target +
                            "' is not a graph file (an existing .yaml, .yml or .json file), and "
                            "no graph is given (--graph FILE)");
      throw usage_failure(
          "trellis: run needs a graph: a graph file (trellis run FILE), --graph FILE, or the "
          "program that links it");
    }
    if (run.empty()) throw usage_failure("trellis: run needs the new run's id: run RUN");
  }
  return run_start(s, run, a.state);
}

int step_command(Session& s, const StepArgs& a) {
  if (!a.target.empty() && is_graph_file(a.target)) {
    if (a.commit)
      throw usage_failure(
          "trellis: step FILE is dry (a scratch run); --commit is for a step of a stored run");
    std::optional<ScratchDir> scratch;
    if (a.work_dir.empty()) scratch.emplace();
    const std::shared_ptr<LoadedGraph> g =
        load_graph(a.target, scratch ? scratch->path.string() : a.work_dir);
    g->inputs = parse_inputs(*g, a.inputs, "");
    nlohmann::json start = g->runner->initial();
    if (!a.state.empty()) {
      nlohmann::json given = parse_json_option(a.state, "--state");
      if (!given.is_object())
        throw usage_failure("trellis: step: --state is not a JSON object (the graph's state)");
      start["state"].update(given);
    }
    // A scratch run in memory, at the node's position: nothing is written anywhere.
    MemoryStore scratch_store;
    std::string run = new_run_id(g->fg->file());
    g->runner->enqueue(run, &start, scratch_store, {});
    Session scratch_session("", &scratch_store, g->runner.get(), s.json());
    return run_step(scratch_session, run, a.node, "", false, a.effects);
  }
  if (!a.inputs.empty())
    throw usage_failure(
        "trellis: step RUN starts from the run's state: --input is for step FILE (a graph file)");
  std::string state = a.state;
  if (!state.empty() && s.graph_file()) {
    // For a graph file, --state is the graph's state: its members replace the run's.
    nlohmann::json given = parse_json_option(a.state, "--state");
    if (!given.is_object())
      throw usage_failure("trellis: step: --state is not a JSON object (the graph's state)");
    const std::optional<Checkpoint> cp = s.store(Access::read).latest(a.target);
    if (!cp) throw unknown_run("trellis: no run '" + a.target + "' in " + s.where());
    nlohmann::json full = cp->state;
    if (!full.is_object()) full = nlohmann::json::object();
    if (!full["state"].is_object()) full["state"] = nlohmann::json::object();
    full["state"].update(given);
    state = full.dump();
  }
  return run_step(s, a.target, a.node, state, a.commit, a.effects);
}

int enqueue_command(Session& s, const EnqueueArgs& a, const std::vector<std::string>& inputs,
                    const std::string& inputs_json) {
  if (LoadedGraph* file = s.graph_file()) {
    if (!a.state.empty())
      throw usage_failure(
          "trellis: enqueue: a run of a graph file starts from its inputs: give --input "
          "NAME=VALUE or --inputs JSON, not --state");
    file->inputs = parse_inputs(*file, inputs, inputs_json);
    (void)file->runner->initial();
  } else {
    refuse_inputs_without_file(inputs, inputs_json, "enqueue");
  }
  return enqueue(s, a);
}

}  // namespace trellis::agent::cli::detail
