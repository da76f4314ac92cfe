#pragma once
// Private to the trellis::cli target: what the commands share (the output, times, the store
// being worked on, the failures that map to exit codes). See docs/cli.md for the contract.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/run_summary.hpp"
#include "trellis/agent/store.hpp"
#include "trellis/cli/documents.hpp"
#include "trellis/cli/graph_runner.hpp"

namespace trellis::agent::cli::detail {

/// Bad usage found after parsing (a malformed JSON value, time or filter): exit code 2.
struct usage_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A conflict the library reports with a more general error (a fork into an existing run):
/// exit code 4.
struct conflict_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// How a command gets its store: to read, to write a store that must exist, or to create.
enum class Access { read, write, create };

struct LoadedGraph;  // a graph file loaded for the commands (flow_commands.cpp)

/// What every command is given.
class Session {
 public:
  Session(std::string spec, Store* own, GraphRunner* graph, bool json)
      : spec_(std::move(spec)), own_(own), graph_(graph), json_(json) {}
  /// The store (opened on first use; `--store` if given, else the program's own, else, with a
  /// graph file, the FileStore "runs").
  Store& store(Access access);
  GraphRunner* graph() const noexcept { return graph_; }
  bool json() const noexcept { return json_; }
  /// Where the store is, for messages.
  std::string where() const;

  /// Works on graph file `g` (--graph FILE, run FILE): it is the graph of run, resume, step,
  /// enqueue and worker, and the store defaults to the FileStore "runs" (flow_commands.cpp).
  void use_graph_file(std::shared_ptr<LoadedGraph> g);
  /// The graph file worked on, or nullptr.
  LoadedGraph* graph_file() const noexcept { return file_.get(); }

 private:
  std::string spec_;
  Store* own_;
  GraphRunner* graph_;
  bool json_;
  std::unique_ptr<Store> opened_;
  std::shared_ptr<LoadedGraph> file_;
  std::string default_spec_;
};

/// Prints `doc` as one line of JSON.
void print_json(const nlohmann::json& doc);

/// A table printed with aligned columns (the human output).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::size_t size() const noexcept { return rows_.size() - 1; }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// --- times ----------------------------------------------------------------------------------

using SysClock = std::chrono::system_clock;
/// "2026-11-24T10:00:00Z" (seconds or milliseconds optional, also "2026-11-24"), or a span
/// back from now: "90s", "30m", "2h", "7d", "2w". usage_failure naming `option` otherwise.
SysClock::time_point parse_time(std::string_view text, std::string_view option);
/// ISO-8601 UTC with milliseconds, as the stores write times.
std::string utc(SysClock::time_point t);
/// The instant of a stored time text (nullopt when it does not parse).
std::optional<SysClock::time_point> parse_stored_time(std::string_view text);
/// "45s", "12m", "3h", "5d": how long ago `stored` was (empty when unknown).
std::string age(std::string_view stored);
/// When a run is due, for a table: "now" (due at or before now), "in 45s", "in 12m", ...;
/// empty when `due` is empty (never by time) or unknown.
std::string due_text(std::string_view due);

// --- values ---------------------------------------------------------------------------------

/// `text` parsed as JSON; usage_failure naming `option` when it is not.
nlohmann::json parse_json_option(std::string_view text, std::string_view option);
/// The default reviewer: $TRELLIS_USER, else $USER, else the login name.
std::string default_user();
/// A run status by name ("WaitingApproval", case-insensitive, '-' and '_' ignored).
RunStatus parse_status(std::string_view text);
std::string name(RunStatus s);
std::string name(Reason r);
/// The filter of `runs ls` and of the bulk forms.
RunFilter make_filter(const std::string& status, const std::string& since, const std::string& node);

// --- the documents' parts -------------------------------------------------------------------

// summary_json, checkpoint_json, request_json, ...: the public documents.hpp.
nlohmann::json report_json(const RunReport& r);
/// The one-line human form of a JSON value (compact, truncated to `width` characters).
std::string brief(const nlohmann::json& v, std::size_t width = 60);

// --- the commands (read_commands.cpp, write_commands.cpp) -----------------------------------

struct FilterArgs {
  std::string status, since, node;
  bool given() const { return !status.empty() || !since.empty() || !node.empty(); }
};
/// `runs ls`'s page: a graph prefix, the run id it starts after, at most `limit` runs (0: all).
struct PageArgs {
  std::string graph, after;
  std::size_t limit = 0;
};
int runs_ls(Session& s, const FilterArgs& f, const PageArgs& page = {});
int runs_show(Session& s, const std::string& run);
int runs_history(Session& s, const std::string& run, bool diff);
int runs_events(Session& s, const std::string& run, bool follow, std::uint64_t after,
                std::chrono::milliseconds poll);
int runs_effects(Session& s, const std::string& run);
/// The exit status of `runs verify` for a run whose hash chain is broken (docs/cli.md).
inline constexpr int exit_chain_broken = 6;
int runs_verify(Session& s, const std::string& run);
int runs_draw(Session& s, const std::string& run, const std::string& format);
int approvals_ls(Session& s);

enum class DecisionKind { approve, reject, input };
struct DecideArgs {
  DecisionKind kind = DecisionKind::approve;
  std::string run, request, as, comment, reason, json;
};
int decide(Session& s, const DecideArgs& a);

struct BulkArgs {
  std::string run;  ///< one run, or (empty) the runs the filter selects
  FilterArgs filter;
  bool dry_run = false, yes = false;
};
int cancel(Session& s, const BulkArgs& b, const std::string& as, const std::string& reason);
int delete_runs(Session& s, const BulkArgs& b);
int gc(Session& s, const std::string& finished_before, std::optional<std::size_t> keep_last,
       bool dry_run, bool yes);

struct ReconcileArgs {
  std::string run, key, result, reason, as;
  bool happened = false, did_not_happen = false;
};
int reconcile(Session& s, const ReconcileArgs& a);
/// `by` empty: default_user().
int fork(Session& s, const std::string& run, std::uint64_t at, const std::string& new_id,
         const std::string& by, const std::string& reason);

int run_start(Session& s, const std::string& run, const std::string& state);
int run_resume(Session& s, const std::string& run);
struct EnqueueArgs {
  std::string run, state, at;
  int priority = 0;
};
int enqueue(Session& s, const EnqueueArgs& a);

struct WorkerArgs {
  std::size_t threads = 2;
  unsigned poll_ms = 200;
  bool drain = false;
  std::optional<double> for_seconds;
  std::string name;
};
int worker(Session& s, const WorkerArgs& a);

int run_step(Session& s, const std::string& run, const std::string& node, const std::string& state,
             bool commit, const std::vector<std::string>& effects);

/// `dot_text` drawn as SVG by Graphviz's `dot -Tsvg` (store_error when dot is missing or fails).
std::string to_svg(const std::string& dot_text);

// --- graph files (flow_commands.cpp) --------------------------------------------------------

/// One diagnostic of a graph file, as `validate` prints it:
/// "FILE:LINE:COL: error|warning: MESSAGE [code]".
struct FileDiagnostic {
  std::string file;
  int line = 0, column = 0;
  bool error = true;
  std::string message, code;
};
std::string diagnostic_line(const FileDiagnostic& d);
nlohmann::json diagnostic_json(const FileDiagnostic& d);

/// A graph file that does not load or validate (exit 1), or inputs that do not fit it (exit 2,
/// usage): every error found, printed one per line on stderr as validate prints them.
struct invalid_graph : std::runtime_error {
  explicit invalid_graph(std::vector<FileDiagnostic> d, int exit = 1);
  std::vector<FileDiagnostic> diagnostics;
  int exit;
};
/// The diagnostics of `e` when it is about a graph file (invalid_graph, flow::graph_file_error).
std::optional<std::vector<FileDiagnostic>> diagnostics_of(const std::exception& e);

/// Whether `arg` names an existing regular file ending in .yaml, .yml or .json.
bool is_graph_file(const std::string& arg);
/// Loads graph file `path` with the built-in actions (load_graph_file, validate, FileGraph with
/// work_root `work_dir`, or "trellis-work" when empty); invalid_graph listing its errors.
std::shared_ptr<LoadedGraph> load_graph(const std::string& path, const std::string& work_dir);
/// The inputs of a run of `g`: the object `--inputs JSON`, then each `--input k=v` (v the text
/// itself for an input declared `type: string`, else v as JSON when it parses, else the text);
/// usage_failure when malformed.
nlohmann::json parse_inputs(const LoadedGraph& g, const std::vector<std::string>& pairs,
                            const std::string& json);

/// With a graph file and the human output: `run` and `resume` print the run's progress lines
/// (agent::ProgressPrinter: "[RUN] step 1/4 write ✓ 0.3 ms").
void show_progress(Session& s);
/// How to give `command` the session's graph, for messages: "trellis --graph FILE worker" with
/// a graph file, else "<program> worker".
std::string command_hint(const Session& s, const std::string& command);

int validate_files(Session& s, const std::vector<std::string>& files);
int draw_file(Session& s, const std::string& file, const std::string& format,
              const std::string& work_dir);

/// `run`: of graph file `target` (an existing .yaml/.yml/.json file), or run `target` of the
/// session's graph (linked, or --graph FILE).
struct RunArgs {
  std::string target, state, inputs_json, run_id, work_dir;
  std::vector<std::string> inputs;
};
int run_command(Session& s, const RunArgs& a);
/// `step`: one node of graph file `target` on a scratch run, or of run `target`.
struct StepArgs {
  std::string target, node, state, work_dir;
  bool commit = false;
  std::vector<std::string> effects, inputs;
};
int step_command(Session& s, const StepArgs& a);
/// `enqueue` with --input/--inputs on a graph file (--graph FILE).
int enqueue_command(Session& s, const EnqueueArgs& a, const std::vector<std::string>& inputs,
                    const std::string& inputs_json);

}  // namespace trellis::agent::cli::detail
