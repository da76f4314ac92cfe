// validate(): a loaded graph file's meaning (validate.hpp lists what is checked). Nothing here
// runs an action or writes anything; subgraph files are read, each once per call.

#include "trellis/flow/validate.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trellis/flow/capability.hpp"

namespace trellis::flow {

bool Validation::ok() const noexcept {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.severity == Severity::error; });
}

std::vector<Problem> Validation::errors() const {
  std::vector<Problem> out;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Severity::error) out.push_back({d.at, d.message});
  }
  return out;
}

namespace {

using nlohmann::json;

Type list_of(Type element) {
  Type t = Type::of_kind(TypeKind::list);
  t.element = std::make_shared<const Type>(std::move(element));
  return t;
}

Type string_type() { return Type::of_kind(TypeKind::string); }

/// `decision` in an approval's assign and edges.
Type decision_type() {
  Type t = Type::of_kind(TypeKind::object);
  t.closed = true;
  t.fields.emplace("kind", string_type());
  t.fields.emplace("reviewer", string_type());
  t.fields.emplace("comment", string_type());
  t.fields.emplace("input", Type::any());
  return t;
}

/// `state._last_error`, set by error routing: {node, error, code}.
Type last_error_type() {
  Type t = Type::of_kind(TypeKind::object);
  t.fields.emplace("node", string_type());
  t.fields.emplace("error", string_type());
  t.fields.emplace("code", string_type());
  return t;
}

/// The top-level state keys some `assign` writes ("report" for "report.title").
std::set<std::string, std::less<>> assigned_roots(const GraphFile& file) {
  std::set<std::string, std::less<>> roots;
  for (const NodeSpec& node : file.nodes) {
    for (const Assignment& a : node.assign) roots.insert(a.key.substr(0, a.key.find('.')));
  }
  return roots;
}

/// inputs, state and _now: the scope every node's templates see.
Type base_scope(const GraphFile& file) {
  Type inputs = Type::of_kind(TypeKind::object);
  inputs.closed = true;
  for (const InputSpec& input : file.inputs) inputs.fields.insert_or_assign(input.name, input.type);

  // A state key keeps its initial value's type unless some assign writes it (its type may then
  // change: any, checked at run time). Keys not known are any (the warnings name them).
  Type state = Type::of_kind(TypeKind::object);
  const auto assigned = assigned_roots(file);
  if (file.state.is_object()) {
    for (const auto& [key, value] : file.state.items()) {
      if (!assigned.contains(key)) state.fields.insert_or_assign(key, Type::of(value));
    }
  }
  state.fields.insert_or_assign("_last_error", last_error_type());

  Type scope = Type::of_kind(TypeKind::object);
  scope.closed = true;
  scope.fields.emplace("inputs", std::move(inputs));
  scope.fields.emplace("state", std::move(state));
  scope.fields.emplace("_now", string_type());
  return scope;
}

Type action_result(const ActionRegistry& actions, std::string_view name) {
  const Action* action = actions.find(name);
  return action ? Type::from_schema(action->options.result_schema) : Type::any();
}

/// The base scope and what the node's kind adds after it ran.
Type after_scope(Type scope, const NodeSpec& node, const ActionRegistry& actions) {
  switch (node.kind) {
    case NodeKind::action:
      scope.fields.insert_or_assign("result", action_result(actions, node.action));
      break;
    case NodeKind::foreach:
      scope.fields.insert_or_assign(
          "result",
          list_of(node.foreach ? action_result(actions, node.foreach->action) : Type::any()));
      break;
    case NodeKind::subgraph:
      scope.fields.insert_or_assign("result", Type::any());  // the child's output
      break;
    case NodeKind::approval:
      scope.fields.insert_or_assign("decision", decision_type());
      break;
    case NodeKind::gate:
    case NodeKind::return_:
      break;
  }
  return scope;
}

/// Why `actual` cannot be what `expected` (a type from an action's params schema) wants;
/// nullopt when it can (any on either side fits).
std::optional<std::string> mismatch(const Type& actual, const Type& expected,
                                    const std::string& path) {
  if (actual.kind == TypeKind::any || expected.kind == TypeKind::any) return std::nullopt;
  if (actual.kind != expected.kind) {
    return (path.empty() ? std::string("the params") : path) + " is " + to_string(actual) +
           ", the action expects " + to_string(expected);
  }
  if (actual.kind == TypeKind::object) {
    for (const auto& [name, type] : expected.fields) {
      if (const auto it = actual.fields.find(name); it != actual.fields.end()) {
        if (auto why = mismatch(it->second, type, path.empty() ? name : path + "." + name))
          return why;
      }
    }
  }
  if (actual.kind == TypeKind::list && actual.element && expected.element) {
    return mismatch(*actual.element, *expected.element, path + "[]");
  }
  return std::nullopt;
}

/// What one validate() call shares with the validations of its subgraph files.
struct Shared {
  /// The files being validated, outermost first: canonical path and path as written.
  std::vector<std::pair<std::string, std::string>> stack;
  /// Files already validated (by canonical path): their load or validation errors.
  std::map<std::string, std::vector<Diagnostic>> done;
  std::map<std::string, std::shared_ptr<const GraphFile>> files;
};

std::string identity(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

/// The file's nodes by name (GraphFile::node searches the list: a 500-node file's edges would
/// cost a quarter of a million comparisons).
using NodeIndex = std::unordered_map<std::string_view, const NodeSpec*>;
NodeIndex index_nodes(const GraphFile& file) {
  NodeIndex index;
  index.reserve(file.nodes.size());
  for (const NodeSpec& n : file.nodes) index.emplace(n.name, &n);
  return index;
}
const NodeSpec* find_node(const NodeIndex& index, std::string_view name) {
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

class Validator {
 public:
  Validator(const GraphFile& file, const ActionRegistry& actions, Shared& shared)
      : file_(file),
        actions_(actions),
        shared_(shared),
        base_(base_scope(file)),
        nodes_(index_nodes(file)) {}

  Validation run();

 private:
  void add(Severity severity, SourcePos at, std::string message, std::string code) {
    keys_.push_back({at.line, at.column});
    out_.diagnostics.push_back({severity, std::move(at), std::move(message), std::move(code)});
  }
  void error(SourcePos at, std::string message, std::string code) {
    add(Severity::error, std::move(at), std::move(message), std::move(code));
  }
  void warning(SourcePos at, std::string message, std::string code) {
    add(Severity::warning, std::move(at), std::move(message), std::move(code));
  }

  /// Runs a type check, turning its graph_file_error into type_error diagnostics.
  template <class Check>
  std::optional<Type> typed(Check&& check) {
    try {
      return check();
    } catch (const graph_file_error& e) {
      for (const Problem& p : e.problems()) error(p.at, p.message, "type_error");
      return std::nullopt;
    }
  }

  std::string node_name(const NodeSpec& node) { return "node '" + node.name + "'"; }

  void check_structure();
  void check_node(const NodeSpec& node);
  void check_action(const NodeSpec& node, const std::string& name, const ValueTemplate& params,
                    const Type& scope);
  void check_edges(const NodeSpec& node, const Type& after);
  /// The index in file_.nodes of the first node named as `node` is (names are unique in a
  /// loaded file; a GraphFile built in code may repeat one).
  std::size_t id(const NodeSpec& node) const {
    return static_cast<std::size_t>(find_node(nodes_, node.name) - file_.nodes.data());
  }
  /// Every node's successors (its branches' targets and its on_error, those that exist), by id.
  const std::vector<std::vector<std::size_t>>& successors();
  void check_reachability();
  void check_cycles();
  void check_state_keys();
  void check_subgraph(const NodeSpec& node);

  const GraphFile& file_;
  const ActionRegistry& actions_;
  Shared& shared_;
  Type base_;
  NodeIndex nodes_;
  std::optional<std::vector<std::vector<std::size_t>>> successors_;
  Validation out_;
  std::vector<std::pair<int, int>> keys_;  ///< each diagnostic's place in file order
};

void Validator::check_structure() {
  if (file_.start.empty()) {
    error(file_.start_at, "the graph has no start (start: <the first node's name>)",
          "missing_start");
  } else if (!find_node(nodes_, file_.start)) {
    error(file_.start_at, "start names '" + file_.start + "', which is not a node", "unknown_node");
  }
  if (!file_.permissions) {
    error({file_.path, 1, 1},
          "the graph has no permissions: list the capabilities its actions need (permissions: "
          "[\"exec:git\", \"read_file\"]; an empty list grants nothing)",
          "no_permissions");
  }
  for (const NodeSpec& node : file_.nodes) {
    for (const Branch& b : node.next) {
      if (!find_node(nodes_, b.to)) {
        error(b.at, node_name(node) + " goes to '" + b.to + "', which is not a node",
              "unknown_node");
      }
    }
    if (!node.on_error.empty() && !find_node(nodes_, node.on_error)) {
      error(node.on_error_at,
            node_name(node) + ": on_error names '" + node.on_error + "', which is not a node",
            "unknown_node");
    }
    if (node.kind == NodeKind::return_) continue;
    if (node.next.empty()) {
      error(node.at, node_name(node) + " has no next (only a return node ends the run)",
            "no_default_edge");
    } else if (node.next.back().when) {
      error(node.next.back().at,
            node_name(node) +
                "'s last branch has a condition: add a last branch without `when` "
                "(where the run goes when no condition holds)",
            "no_default_edge");
    }
  }
  if (std::none_of(file_.nodes.begin(), file_.nodes.end(),
                   [](const NodeSpec& n) { return n.kind == NodeKind::return_; })) {
    warning({file_.path, 1, 1}, "the graph has no return node: its runs end with no output",
            "no_return");
  }
}

void Validator::check_action(const NodeSpec& node, const std::string& name,
                             const ValueTemplate& params, const Type& scope) {
  const std::optional<Type> params_type = typed([&] { return params.check(scope); });
  const Action* action = actions_.find(name);
  if (!action) {
    std::string known;
    for (const std::string& n : actions_.names()) known += (known.empty() ? "" : ", ") + n;
    error(node.at,
          node_name(node) + " calls '" + name + "', which is not a registered action" +
              (known.empty() ? std::string(" (the registry is empty)") : " (known: " + known + ")"),
          "unknown_action");
    return;
  }

  // The params against the action's declared schema, as far as they are known now.
  if (!action->options.params_schema.is_null()) {
    const json& schema = action->options.params_schema;
    if (params_type) {
      if (auto why = mismatch(*params_type, Type::from_schema(schema), "")) {
        error(node.at, node_name(node) + ": " + *why, "type_error");
      }
    }
    if (schema.is_object() && schema.contains("required") && schema["required"].is_array() &&
        params.value().is_object()) {
      for (const json& member : schema["required"]) {
        if (member.is_string() && !params.value().contains(member.get<std::string>())) {
          error(node.at,
                node_name(node) + ": '" + name + "' needs the param '" + member.get<std::string>() +
                    "'",
                "type_error");
        }
      }
    }
  }

  // The capability, when the params it depends on are literal (else: checked at run time).
  if (file_.permissions) {
    std::optional<std::string> capability;
    try {
      if (params.literal()) {
        capability = action->capability(params.render(json::object()));
      } else if (std::string c = action->capability(params.value());
                 c.find("${") == std::string::npos) {
        capability = std::move(c);  // the templates are in params it does not read
      }
    } catch (const std::exception&) {
      // params its capability function cannot read as written: known when the node runs
    }
    if (capability && !granted(*file_.permissions, *capability)) {
      error(node.at,
            node_name(node) + " needs the capability '" + *capability +
                "', which permissions do not grant",
            "capability_denied");
    }
  }
}

void Validator::check_edges(const NodeSpec& node, const Type& after) {
  for (const Assignment& a : node.assign) typed([&] { return a.value.check(after); });
  for (const Branch& b : node.next) {
    if (!b.when) continue;
    const std::optional<Type> t = typed([&] { return b.when->check(after); });
    if (t && t->kind != TypeKind::boolean && t->kind != TypeKind::any) {
      error(b.when->where(), "the condition is " + to_string(*t) + ", not a boolean", "type_error");
    }
  }
}

void Validator::check_node(const NodeSpec& node) {
  const Type after = after_scope(base_, node, actions_);
  switch (node.kind) {
    case NodeKind::action: {
      check_action(node, node.action, node.params, base_);
      if (const Action* action = actions_.find(node.action);
          action && node.cache && action->policy != agent::EffectPolicy::idempotent) {
        error(node.at,
              node_name(node) + " caches the results of '" + node.action + "', which is " +
                  std::string(enumeration<agent::EffectPolicy>::name(action->policy)) +
                  ", not idempotent (cache: true is for idempotent actions)",
              "cache_not_idempotent");
      } else if (action && node.cache && !action->options.cacheable) {
        error(node.at,
              node_name(node) + " caches the results of '" + node.action +
                  "', whose result depends on the run (its work directory), not only on its "
                  "params: another run would get this run's result",
              "cache_not_cacheable");
      }
      break;
    }
    case NodeKind::approval:
      if (node.approval) {
        typed([&] { return node.approval->request.check(base_); });
        typed([&] { return node.approval->proposed_input.check(base_); });
        if (node.approval->risk_reason)
          typed([&] { return node.approval->risk_reason->check(base_); });
      }
      break;
    case NodeKind::return_:
      typed([&] { return node.output.check(base_); });
      break;
    case NodeKind::foreach:
      if (node.foreach) {
        const ForeachSpec& f = *node.foreach;
        Type item = Type::any();
        if (f.over.text().empty()) {
          error(f.over.where(),
                node_name(node) +
                    ": a foreach needs `over` (a template that renders a list, "
                    "such as \"${state.sources}\")",
                "foreach_without_over");
        } else if (const std::optional<Type> over = typed([&] { return f.over.check(base_); })) {
          if (over->kind == TypeKind::list) {
            if (over->element) item = *over->element;
          } else if (over->kind != TypeKind::any) {
            error(f.over.where(),
                  node_name(node) + ": foreach.over renders " + to_string(*over) + ", not a list",
                  "type_error");
          }
        }
        Type scope = base_;
        scope.fields.insert_or_assign(f.as, item);
        scope.fields.insert_or_assign("index", Type::of_kind(TypeKind::number));
        check_action(node, f.action, f.params, scope);
      }
      break;
    case NodeKind::subgraph:
      if (node.subgraph) {
        typed([&] { return node.subgraph->inputs.check(base_); });
        check_subgraph(node);
      }
      break;
    case NodeKind::gate:
      break;
  }
  check_edges(node, after);
}

const std::vector<std::vector<std::size_t>>& Validator::successors() {
  if (successors_) return *successors_;
  std::vector<std::vector<std::size_t>>& out = successors_.emplace(file_.nodes.size());
  for (const NodeSpec& node : file_.nodes) {
    std::vector<std::size_t>& next = out[id(node)];
    for (const Branch& b : node.next) {
      if (const NodeSpec* to = find_node(nodes_, b.to)) next.push_back(id(*to));
    }
    if (!node.on_error.empty()) {
      if (const NodeSpec* to = find_node(nodes_, node.on_error)) next.push_back(id(*to));
    }
  }
  return out;
}

void Validator::check_reachability() {
  const NodeSpec* start = find_node(nodes_, file_.start);
  if (!start) return;  // reported; everything would be unreachable
  const std::vector<std::vector<std::size_t>>& next = successors();
  std::vector<bool> reached(file_.nodes.size());
  std::vector<std::size_t> todo{id(*start)};
  reached[todo.back()] = true;
  while (!todo.empty()) {
    const std::size_t from = todo.back();
    todo.pop_back();
    for (const std::size_t to : next[from]) {
      if (!reached[to]) reached[to] = true, todo.push_back(to);
    }
  }
  for (const NodeSpec& node : file_.nodes) {
    if (!reached[id(node)]) {
      warning(node.at, node_name(node) + " is unreachable from start '" + file_.start + "'",
              "unreachable_node");
    }
  }
}

void Validator::check_cycles() {
  if (file_.max_steps) return;
  const std::vector<std::vector<std::size_t>>& next = successors();
  enum class Mark { unseen, open, closed };
  std::vector<Mark> mark(file_.nodes.size(), Mark::unseen);
  for (const NodeSpec& root : file_.nodes) {
    const std::size_t first = id(root);
    if (mark[first] != Mark::unseen) continue;
    // Depth-first without recursion: the path from root, each with its next successor's index.
    std::vector<std::pair<std::size_t, std::size_t>> path{{first, 0}};
    mark[first] = Mark::open;
    while (!path.empty()) {
      auto& [from, i] = path.back();
      const std::vector<std::size_t>& to = next[from];
      if (i == to.size()) {
        mark[from] = Mark::closed;
        path.pop_back();
        continue;
      }
      const std::size_t target = to[i++];
      if (mark[target] == Mark::open) {
        std::string cycle;
        bool in = false;
        for (const auto& step : path) {
          in = in || step.first == target;
          if (in) cycle += file_.nodes[step.first].name + " -> ";
        }
        cycle += file_.nodes[target].name;
        error(file_.nodes[target].at,
              "the nodes " + cycle +
                  " form a cycle and max_steps is not given (set max_steps to bound each run)",
              "unbounded_cycle");
        return;
      }
      if (mark[target] == Mark::unseen) {
        mark[target] = Mark::open;
        path.emplace_back(target, 0);
      }
    }
  }
}

void Validator::check_state_keys() {
  // Every read of the state: the key it reads ("" for the whole state) and where.
  // Positions and nodes by address (they outlive this function): a message is built only
  // for a warning.
  struct Read {
    std::string key;
    const SourcePos* at;
    const NodeSpec* node;
  };
  std::vector<Read> reads;
  auto paths = [&](const std::vector<Path>& list, const SourcePos& at, const NodeSpec& node) {
    for (const Path& p : list) {
      if (!p.empty() && p.front() == "state")
        reads.push_back({p.size() > 1 ? p[1] : "", &at, &node});
    }
  };
  for (const NodeSpec& node : file_.nodes) {
    for (const Branch& b : node.next) {
      if (b.when) paths(b.when->reads(), b.when->where(), node);
    }
    for (const Assignment& a : node.assign) paths(a.value.reads(), a.at, node);
    paths(node.params.reads(), node.at, node);
    paths(node.output.reads(), node.at, node);
    if (node.approval) {
      paths(node.approval->request.reads(), node.approval->request.where(), node);
      paths(node.approval->proposed_input.reads(), node.at, node);
      if (node.approval->risk_reason)
        paths(node.approval->risk_reason->reads(), node.approval->risk_reason->where(), node);
    }
    if (node.foreach) {
      paths(node.foreach->over.reads(), node.foreach->over.where(), node);
      paths(node.foreach->params.reads(), node.at, node);
    }
    if (node.subgraph) paths(node.subgraph->inputs.reads(), node.at, node);
  }

  const auto assigned = assigned_roots(file_);
  std::set<std::pair<std::string_view, std::string_view>> reported;  // (key, node): once each
  bool whole_state_read = false;
  std::set<std::string, std::less<>> read_keys;
  for (const Read& r : reads) {
    if (r.key.empty()) {
      whole_state_read = true;
      continue;
    }
    read_keys.insert(r.key);
    const bool initial = file_.state.is_object() && file_.state.contains(r.key);
    if (r.key == "_last_error" || initial || assigned.contains(r.key)) continue;
    if (!reported.insert({r.key, r.node->name}).second) continue;
    warning(*r.at,
            node_name(*r.node) + " reads state." + r.key +
                ", which no node assigns and the initial state does not have",
            "read_never_assigned");
  }
  if (whole_state_read) return;
  std::set<std::string, std::less<>> warned;
  for (const NodeSpec& node : file_.nodes) {
    for (const Assignment& a : node.assign) {
      const std::string root = a.key.substr(0, a.key.find('.'));
      if (read_keys.contains(root) || !warned.insert(root).second) continue;
      warning(a.at, node_name(node) + " assigns state." + a.key + ", which no node reads",
              "assigned_never_read");
    }
  }
}

void Validator::check_subgraph(const NodeSpec& node) {
  const SubgraphSpec& spec = *node.subgraph;
  const std::filesystem::path child_path =
      std::filesystem::path(file_.path).parent_path() / spec.graph;
  const std::string id = identity(child_path.string());
  if (const auto it = std::find_if(shared_.stack.begin(), shared_.stack.end(),
                                   [&](const auto& file) { return file.first == id; });
      it != shared_.stack.end()) {
    std::string chain;
    for (auto i = it; i != shared_.stack.end(); ++i) chain += i->second + " -> ";
    chain += child_path.string();
    error(node.at,
          node_name(node) + " runs '" + spec.graph + "', which includes itself (" + chain + ")",
          "subgraph");
    return;
  }

  auto done = shared_.done.find(id);
  if (done == shared_.done.end()) {
    std::vector<Diagnostic> errors;
    try {
      auto child = std::make_shared<const GraphFile>(load_graph_file(child_path));
      shared_.stack.emplace_back(id, child->path);
      Validation v = Validator(*child, actions_, shared_).run();
      shared_.stack.pop_back();
      for (Diagnostic& d : v.diagnostics) {
        if (d.severity == Severity::error) errors.push_back(std::move(d));
      }
      shared_.files.emplace(id, std::move(child));
    } catch (const graph_file_error& e) {
      for (const Problem& p : e.problems())
        errors.push_back({Severity::error, p.at, p.message, "subgraph"});
    }
    done = shared_.done.emplace(id, std::move(errors)).first;
  }
  if (!done->second.empty()) {
    error(node.at,
          node_name(node) + " runs '" + spec.graph + "', which does not " +
              (shared_.files.contains(id) ? "validate" : "load") + " (" +
              std::to_string(done->second.size()) + " error" +
              (done->second.size() == 1 ? "" : "s") + " below)",
          "subgraph");
    const std::pair<int, int> anchor = keys_.back();  // listed under the node that runs it
    for (const Diagnostic& d : done->second) {
      keys_.push_back(anchor);
      out_.diagnostics.push_back({Severity::error, d.at, d.message, "subgraph"});
    }
    return;
  }

  // The inputs given against the child's declarations, when the names are written out.
  const auto child = shared_.files.find(id);
  if (child == shared_.files.end() || !spec.inputs.value().is_object()) return;
  for (const auto& member : spec.inputs.value().items()) {
    const std::string& name = member.key();  // (clang 14 cannot capture a structured binding)
    const auto& inputs = child->second->inputs;
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const InputSpec& in) { return in.name == name; })) {
      error(node.at,
            node_name(node) + " gives '" + spec.graph + "' the input '" + name +
                "', which it does not declare",
            "subgraph");
    }
  }
  for (const InputSpec& in : child->second->inputs) {
    if (in.required && !in.default_value && !spec.inputs.value().contains(in.name)) {
      error(node.at,
            node_name(node) + " does not give '" + spec.graph + "' its required input '" + in.name +
                "'",
            "subgraph");
    }
  }
}

Validation Validator::run() {
  check_structure();
  for (const NodeSpec& node : file_.nodes) check_node(node);
  check_reachability();
  check_cycles();
  check_state_keys();

  // File order: by position, the diagnostics of a subgraph's file under the node that runs it.
  std::vector<std::size_t> order(out_.diagnostics.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys_[a] < keys_[b]; });
  Validation sorted;
  for (std::size_t i : order) sorted.diagnostics.push_back(std::move(out_.diagnostics[i]));
  return sorted;
}

}  // namespace

Validation validate(const GraphFile& file, const ActionRegistry& actions) {
  Shared shared;
  shared.stack.emplace_back(identity(file.path), file.path);
  return Validator(file, actions, shared).run();
}

void check(const GraphFile& file, const ActionRegistry& actions) {
  const Validation v = validate(file, actions);
  if (!v.ok()) throw graph_file_error(v.errors());
}

Type scope_type(const GraphFile& file, const NodeSpec& node, const ActionRegistry& actions) {
  return after_scope(base_scope(file), node, actions);
}

}  // namespace trellis::flow
