#pragma once
/// @file
/// `GraphFile`: a graph file as loaded (docs/graph-files.md is the format's reference, and
/// docs/graph-file.schema.json its JSON Schema). A file is YAML or JSON (one schema; both are
/// read by yaml-cpp, so every value has a line and column), versioned by `trellis_graph: 1`.
///
/// ```yaml
/// trellis_graph: 1
/// name: triage
/// version: "3"
/// start: classify
/// inputs:
///   ticket: {type: string, required: true}
///   mode: {type: string, default: fast}
/// state: {labels: []}
/// max_steps: 20
/// permissions: ["exec:git", "support.*"]
/// nodes:
///   classify:
///     action: support.classify
///     params: {text: "${inputs.ticket}"}
///     assign: {labels: "${result.labels}"}
///     next:
///       - {to: escalate, when: "'urgent' in state.labels"}
///       - {to: done}
///     on_error: done
///   escalate:
///     approval: {request: "Escalate ${inputs.ticket}?", expires_in: 1h}
///     next: done
///   done:
///     return: {labels: "${state.labels}"}
/// ```
///
/// A node's kind is the one kind key it has: `action`, `gate` (true), `approval`, `return`,
/// `foreach`, `subgraph`. Loading checks the file's shape (types of members, unknown members,
/// kinds); validate.hpp checks its meaning (targets, types, capabilities, reachability).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/flow/expression.hpp"
#include "trellis/flow/interpolation.hpp"
#include "trellis/flow/source.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow {

/// The format version this release reads and writes (`trellis_graph: 1`).
inline constexpr int graph_file_format = 1;

/// What a node's failure does when the node has no `on_error`: fail the run, or record the
/// error and go on along the node's default edge (the run then ends Succeeded with
/// Reason::completed_with_errors, the suppressed errors listed in its output).
enum class OnError { fail, continue_ };
/// "fail", "continue".
std::string_view to_string(OnError e) noexcept;

/// A node's kind, by the kind key it has in the file.
enum class NodeKind { action, gate, approval, return_, foreach, subgraph };
/// "action", "gate", "approval", "return", "foreach", "subgraph".
std::string_view to_string(NodeKind k) noexcept;

/// One input of the graph (`inputs:` is a map from name to this).
struct InputSpec {
  std::string name;
  nlohmann::json schema;  ///< as written ({type, required, default, description}; JSON Schema)
  Type type;              ///< Type::from_schema(schema)
  bool required = false;
  std::optional<nlohmann::json> default_value;
  SourcePos at;
};

/// One outgoing edge: `to` when `when` holds (no `when`: always; the default, last).
struct Branch {
  std::string to;
  std::optional<Expression> when;
  SourcePos at;
};

/// One `assign:` entry: state member `key` (a dotted path: "report.title") gets `value`.
struct Assignment {
  std::string key;
  ValueTemplate value;
  SourcePos at;
};

/// An `approval:` node's request (agent::ApprovalRequest, interpolated).
struct ApprovalSpec {
  Template request;              ///< what will happen if approved (ApprovalRequest::action)
  ValueTemplate proposed_input;  ///< the exact proposed input
  std::optional<Template> risk_reason;
  /// `expires_in`: "90s", "30m", "2h", "1d" (a whole number and a unit); nullopt: never.
  std::optional<std::chrono::seconds> expires_in;
};

/// A `foreach:` node: one item per element of `over` (a template that renders a list).
struct ForeachSpec {
  Template over;
  std::string as = "item";  ///< the item's root name in the body's scope (and `index`)
  std::string action;       ///< the action run per item (with `params`)
  ValueTemplate params;
  /// Failure policy: stop at the first failure (max_failures 0), continue (nullopt: any
  /// number), or tolerate a count (max_failures) or a fraction (max_failure_ratio) of items.
  std::optional<std::uint64_t> max_failures = 0;
  std::optional<double> max_failure_ratio;
  std::optional<unsigned> max_concurrency;  ///< nullopt: the graph's
};

/// A `subgraph:` node: runs the graph in file `graph` (relative to this file) as a child run.
struct SubgraphSpec {
  std::string graph;     ///< the path as written
  ValueTemplate inputs;  ///< the child's inputs
};

struct NodeSpec {
  std::string name;
  NodeKind kind = NodeKind::gate;
  SourcePos at;  ///< the node's key in `nodes:`

  std::string action;                    ///< kind action: the registered action's name (action.hpp)
  ValueTemplate params;                  ///< kind action
  bool cache = false;                    ///< kind action: `cache: true` (idempotent actions only)
  std::optional<ApprovalSpec> approval;  ///< kind approval
  ValueTemplate output;                  ///< kind return
  std::optional<ForeachSpec> foreach;    ///< kind foreach
  std::optional<SubgraphSpec> subgraph;  ///< kind subgraph

  std::vector<Assignment> assign;  ///< applied to a candidate state, then the edges are chosen
  /// `next: name` is one Branch without `when`; a list is evaluated in order. Empty for return.
  std::vector<Branch> next;
  std::string on_error;  ///< a node to go to when this one fails (empty: the graph's on_error)
  SourcePos on_error_at;
};

struct GraphFile {
  std::string path;  ///< as given to load_graph_file (or the name given with a text)
  int format = graph_file_format;
  std::string name;
  std::string version;  ///< the user's version: part of the fingerprint (agent::Graph::version)
  std::string start;
  SourcePos start_at;
  std::vector<InputSpec> inputs;
  nlohmann::json state = nlohmann::json::object();  ///< the initial state (an object)
  /// Absent: 2 x the number of nodes + 1 (each node once, an approval twice: its pause and its
  /// rerun), allowed only without a cycle (validate).
  std::optional<std::uint64_t> max_steps;
  unsigned max_concurrency = 4;
  OnError on_error = OnError::fail;
  std::optional<std::vector<std::string>> permissions;  ///< glob patterns (capability.hpp)
  std::vector<std::string> env_requires;                ///< environment names `exec` passes on
  std::vector<NodeSpec> nodes;                          ///< in file order
  /// SHA-256 (hex) of the file's bytes as read: "the graph's hash" (caching, the run's record).
  std::string hash;
  /// SHA-256 (hex) of the file's canonical JSON form (the document as JSON, object members
  /// sorted, compact; json::dump), so the same graph in YAML or JSON, with other comments,
  /// spacing or member order, has the same one: the graph's part of a cached result's key.
  /// Computed only for a graph with a `cache: true` node (empty otherwise).
  std::string content_hash;

  const NodeSpec* node(std::string_view name) const;
};

/// Reads and loads `path` (YAML or JSON). Throws graph_file_error (unreadable file, malformed
/// YAML, a foreign or newer `trellis_graph`, members of the wrong type or unknown, a node
/// without exactly one kind) listing every shape problem found.
GraphFile load_graph_file(const std::filesystem::path& path);
/// The same from `text`, named `name` in messages.
GraphFile load_graph_text(std::string_view text, std::string name);

}  // namespace trellis::flow
