// SPDX-License-Identifier: MIT
// FileGraph (file_graph.hpp): a graph file's nodes as agent::Node<FlowState>, on the engine.

#include "trellis/flow/file_graph.hpp"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "trellis/agent/clock.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/subgraph.hpp"
#include "trellis/flow/capability.hpp"
#include "trellis/flow/errors.hpp"
#include "trellis/flow/validate.hpp"
#include "trellis/persist/errors.hpp"

namespace trellis::flow {

void to_json(nlohmann::json& j, const FlowState& s) {
  j = nlohmann::json{{"inputs", s.inputs}, {"state", s.state}, {"output", s.output}};
  if (!s.errors.empty()) j["errors"] = s.errors;
}

void from_json(const nlohmann::json& j, FlowState& s) {
  s.inputs = j.value("inputs", nlohmann::json::object());
  s.state = j.value("state", nlohmann::json::object());
  s.output = j.value("output", nlohmann::json());
  s.errors.clear();
  if (auto it = j.find("errors"); it != j.end())
    for (const auto& e : *it) s.errors.push_back(e);
}

namespace {

namespace ag = trellis::agent;
using nlohmann::json;

/// Whether `value` fits `type`: its kind, a list's elements, an object's known members.
bool fits(const Type& type, const json& value) {
  switch (type.kind) {
    case TypeKind::any:
      return true;
    case TypeKind::null:
      return value.is_null();
    case TypeKind::boolean:
      return value.is_boolean();
    case TypeKind::number:
      return value.is_number();
    case TypeKind::string:
      return value.is_string();
    case TypeKind::list:
      if (!value.is_array()) return false;
      if (type.element)
        for (const json& e : value)
          if (!fits(*type.element, e)) return false;
      return true;
    case TypeKind::object:
      if (!value.is_object()) return false;
      for (const auto& [name, member] : type.fields)
        if (auto it = value.find(name); it != value.end() && !fits(member, *it)) return false;
      return true;
  }
  return false;
}

/// Sets `target` at the dotted path `key` ("report.title"), making the objects on the way.
void assign_at(json& target, const std::string& key, json value, const SourcePos& at) {
  json* here = &target;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = key.find('.', from);
    const std::string part =
        key.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!here->is_object())
      throw expression_error(
          at, "cannot assign '" + key + "': '" + key.substr(0, from - 1) + "' is not an object");
    if (dot == std::string::npos) {
      (*here)[part] = std::move(value);
      return;
    }
    json& next = (*here)[part];
    if (next.is_null()) next = json::object();
    here = &next;
    from = dot + 1;
  }
}

/// The scope's value of a decision (validate.hpp: {kind, reviewer, comment, input}).
json decision_value(const ag::Resume& r) {
  if (const auto* a = std::get_if<ag::Approve>(&r))
    return {{"kind", "approve"}, {"reviewer", a->reviewer}, {"comment", a->comment}};
  if (const auto* in = std::get_if<ag::Input>(&r))
    return {{"kind", "input"}, {"reviewer", in->reviewer}, {"input", in->value}};
  return {{"kind", "reject"}};  // a Reject fails the run before the node reruns
}

/// A child run cancelled (with its parent): a cancellation, never routed.
bool cancelled_child(const std::exception& e) {
  const auto* failed = dynamic_cast<const ag::subgraph_failed*>(&e);
  return failed != nullptr && failed->cancelled();
}

/// Errors a node must let out: the engine's (infrastructure, a cancellation, a refused dry
/// step, an effect to reconcile), never routed as the node's failure.
bool engine_error(const std::exception& e) {
  return dynamic_cast<const ag::store_error*>(&e) != nullptr ||
         dynamic_cast<const trellis::persist_error*>(&e) != nullptr ||
         dynamic_cast<const trellis::unwritable_value*>(&e) != nullptr ||
         dynamic_cast<const ag::effect_refused*>(&e) != nullptr ||
         dynamic_cast<const ag::reconciliation_required*>(&e) != nullptr ||
         dynamic_cast<const ag::run_busy*>(&e) != nullptr || cancelled_child(e);
}

std::string error_code(const std::exception& e) {
  if (const auto* t = dynamic_cast<const trellis::error*>(&e)) return std::string(t->id());
  return "exception";
}

}  // namespace

struct FileGraph::Impl {
  GraphFile file;
  const ActionRegistry* actions = nullptr;
  FileGraphOptions options;
  ag::Graph<FlowState> graph;
  /// The graphs of the subgraph nodes, by node name (each loaded relative to this file).
  std::map<std::string, std::unique_ptr<FileGraph>, std::less<>> children;
  /// The permissions of the graphs that run this one as a subgraph (outermost first): a call
  /// must be granted by each of them too.
  std::vector<std::vector<std::string>> ceilings;

  std::filesystem::path work_dir(std::string_view run_id) const {
    const std::filesystem::path root =
        options.work_root.empty() ? std::filesystem::path("trellis-work") : options.work_root;
    return root / std::string(run_id);
  }

  std::map<std::string, std::string> environment() const {
    std::map<std::string, std::string> env;
    for (const std::string& name : file.env_requires)
      if (const char* v = std::getenv(name.c_str())) env.emplace(name, v);
    return env;
  }
};

namespace {

class FileNode final : public ag::Node<FlowState> {
 public:
  FileNode(const FileGraph::Impl& g, const NodeSpec& spec) : g_(g), spec_(spec) {}

  std::string_view name() const override { return spec_.name; }

  std::optional<std::vector<std::string>> successors() const override {
    std::set<std::string> to;
    for (const Branch& b : spec_.next) to.insert(b.to);
    if (!spec_.on_error.empty()) to.insert(spec_.on_error);
    if (spec_.kind == NodeKind::return_) to.insert(std::string(ag::end_node));
    return std::vector<std::string>(to.begin(), to.end());
  }
  bool approval_gate() const override { return spec_.kind == NodeKind::approval; }
  std::vector<std::string> effect_names() const override {
    if (spec_.kind == NodeKind::action) return {spec_.action};
    if (spec_.kind == NodeKind::foreach && spec_.foreach) return {spec_.foreach->action};
    return {};
  }

  ag::NextStep run(FlowState& s, ag::RunContext& ctx) override {
    const EvalContext ec{ag::detail::now_iso8601(ctx.clock())};
    // The scope holds the run's inputs and state (moved in, not copied: a step's cost), and
    // gives them back however the step ends.
    json scope = json::object();
    scope["inputs"] = std::move(s.inputs);
    scope["state"] = std::move(s.state);
    const auto give_back = [&] {
      s.inputs = std::move(scope["inputs"]);
      s.state = std::move(scope["state"]);
    };
    std::vector<json> tolerated;  // a foreach's item failures its policy lets go
    try {
      ag::NextStep next = step(s, scope, ec, ctx, tolerated);
      give_back();
      for (json& e : tolerated) s.errors.push_back(std::move(e));
      return next;
    } catch (const std::exception& e) {
      give_back();  // the state as it was before the step (step() undid its assign)
      if (ctx.stop_requested() || engine_error(e)) throw;
      if (dynamic_cast<const ag::transient_error*>(&e) != nullptr &&
          ctx.attempt() + 1 < retry_attempts())
        throw;  // the retry policy tries again first
      return on_failure(s, e, ctx, ec);
    } catch (...) {
      give_back();
      throw;
    }
  }

 private:
  /// The node's work on `scope` (its "state" is the run's state): on success the state there
  /// is the new one; when it throws, the state there is unchanged.
  ag::NextStep step(FlowState& s, json& scope, const EvalContext& ec, ag::RunContext& ctx,
                    std::vector<json>& tolerated) {
    switch (spec_.kind) {
      case NodeKind::action:
        scope["result"] = call(spec_.action, spec_.params, scope, ec, ctx);
        break;
      case NodeKind::gate:
        break;
      case NodeKind::approval:
        if (!ctx.resume()) return pause(scope, ec, ctx);
        scope["decision"] = decision_value(*ctx.resume());
        break;
      case NodeKind::return_: {
        s.output = spec_.output.render(scope, ec);
        if (s.errors.empty()) return ag::Halt{};
        return ag::Halt{.reason = ag::Reason::completed_with_errors, .detail = summary(s)};
      }
      case NodeKind::foreach:
        scope["result"] = fan_out(tolerated, scope, ec, ctx);
        break;
      case NodeKind::subgraph: {
        FileGraph& child = *g_.children.find(spec_.name)->second;
        FlowState input = child.initial(spec_.subgraph->inputs.render(scope, ec));
        auto r = ag::subgraph(ctx, child.graph(), std::move(input));
        if (!r.done()) return *r.wait;  // the parent waits with its child
        scope["result"] = std::move(r.output->output);
        break;
      }
    }
    if (spec_.assign.empty()) return ag::Goto{route(scope, ec)};
    // Every assign reads the state before the assign: all values are rendered first. Then they
    // are applied in place, the top-level members they touch saved, and the edges read the new
    // state; if applying or routing fails, the saved members are put back (the candidate is
    // discarded).
    std::vector<json> values;
    values.reserve(spec_.assign.size());
    for (const Assignment& a : spec_.assign) values.push_back(a.value.render(scope, ec));
    json& state = scope["state"];
    std::map<std::string, std::optional<json>, std::less<>> saved;
    for (const Assignment& a : spec_.assign) {
      const std::string top = a.key.substr(0, a.key.find('.'));
      if (saved.contains(top)) continue;
      const auto it = state.find(top);
      saved.emplace(top, it == state.end() ? std::nullopt : std::optional<json>(*it));
    }
    try {
      for (std::size_t i = 0; i < values.size(); ++i)
        assign_at(state, spec_.assign[i].key, std::move(values[i]), spec_.assign[i].at);
      return ag::Goto{route(scope, ec)};
    } catch (...) {
      for (auto& [key, old] : saved) {
        if (old)
          state[key] = std::move(*old);
        else
          state.erase(key);
      }
      throw;
    }
  }

  std::uint32_t retry_attempts() const {
    return g_.options.retry ? g_.options.retry->attempts : ag::RetryPolicy{}.attempts;
  }

  /// Calls action `name` with `params` rendered against `scope`, as an effect.
  json call(const std::string& name, const ValueTemplate& params, const json& scope,
            const EvalContext& ec, ag::RunContext& ctx) const {
    json args;
    const Action& action = resolve(name, params, scope, ec, args);
    if (spec_.cache && spec_.kind == NodeKind::action) {
      // Keyed by what decides the result: the graph (its canonical content), the node, the
      // interpolated params, the action and its version (cache_entry.hpp).
      const ag::EffectCache cache{
          ag::cache_key(g_.file.content_hash, spec_.name, args, name, action.options.version),
          g_.file.content_hash, action.options.version};
      return ctx.effect(name, std::move(args), action.policy, effect_fn(action, ctx), cache);
    }
    return ctx.effect(name, std::move(args), action.policy, effect_fn(action, ctx));
  }

  ag::NextStep pause(const json& scope, const EvalContext& ec, ag::RunContext& ctx) const {
    const ApprovalSpec& a = *spec_.approval;
    ag::ApprovalRequest request;
    request.action = text_of(a.request.render(scope, ec));
    request.proposed_input = a.proposed_input.render(scope, ec);
    if (a.risk_reason) request.risk_reason = text_of(a.risk_reason->render(scope, ec));
    if (a.expires_in) request.expires_at = ctx.clock().now() + *a.expires_in;
    return ag::Interrupt{"approval: " + spec_.name, std::move(request)};
  }

  static std::string text_of(const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  }

  /// The action of node `spec_` (or its foreach), and the params rendered against `scope`,
  /// with the capability checked.
  const Action& resolve(const std::string& name, const ValueTemplate& params, const json& scope,
                        const EvalContext& ec, json& args) const {
    const Action* action = g_.actions->find(name);
    if (action == nullptr)
      throw action_error("trellis: " + to_string(spec_.at) + ": node '" + spec_.name +
                         "': no action named '" + name + "' is registered");
    args = params.render(scope, ec);
    if (args.is_null()) args = json::object();
    const std::string capability = action->capability(args);
    if (!granted(g_.file.permissions.value_or(std::vector<std::string>{}), capability))
      throw capability_denied("trellis: " + to_string(spec_.at) + ": node '" + spec_.name +
                              "': the graph's permissions do not grant capability '" + capability +
                              "' (action '" + name + "')");
    for (const std::vector<std::string>& ceiling : g_.ceilings)
      if (!granted(ceiling, capability))
        throw capability_denied("trellis: " + to_string(spec_.at) + ": node '" + spec_.name +
                                "': a graph that runs this one as a subgraph does not grant "
                                "capability '" +
                                capability + "' (action '" + name + "')");
    return *action;
  }

  /// The action's function as an effect's: in the run's work directory, with the environment
  /// `env_requires` names.
  /// Computed once per node call (a foreach's items share them): the directory is made by the
  /// first call that runs (a fan-out's items may be on several threads), so a node whose
  /// effects all replay makes nothing.
  ag::EffectFn effect_fn(const Action& action, const ag::RunContext& ctx) const {
    struct Shared {
      std::filesystem::path dir;
      std::map<std::string, std::string> env;
      std::mutex m;
      std::atomic<bool> made{false};  // (not call_once: a throwing call must let the next try)
    };
    auto shared = std::make_shared<Shared>();
    shared->dir = g_.work_dir(ctx.run_id());
    shared->env = g_.environment();
    return [shared, &action, stop = ctx.stop_token()](const ag::EffectCall& effect) -> json {
      if (!shared->made.load()) {
        std::lock_guard lock(shared->m);
        if (!shared->made.load()) {
          std::filesystem::create_directories(shared->dir);
          shared->made.store(true);
        }
      }
      const ActionCall c{effect, effect.args, shared->dir, shared->env, stop};
      return action.fn(c);
    };
  }

  /// One effect per item (ctx.effects: item i keyed by its index), up to max_concurrency at a
  /// time, each recorded as soon as it finishes, so a crash re-runs only the items without a
  /// receipt. The results in input order (null for a failed item); the failures a policy
  /// tolerates are recorded in FlowState::errors.
  json fan_out(std::vector<json>& tolerated, json& scope, const EvalContext& ec,
               ag::RunContext& ctx) {
    const ForeachSpec& f = *spec_.foreach;
    const json items = f.over.render(scope, ec);
    if (!items.is_array())
      throw expression_error(f.over.where(), "foreach '" + spec_.name +
                                                 "': `over` is not a list but " +
                                                 std::string(items.type_name()));
    // Every item's params are rendered and granted before any item runs.
    const Action* action = nullptr;
    std::vector<json> args(items.size());
    // The item and its index join the scope in place (a copy of the scope per item would copy
    // the list itself each time), and leave it after.
    for (std::size_t i = 0; i < items.size(); ++i) {
      scope[f.as] = items[i];
      scope["index"] = i;
      try {
        action = &resolve(f.action, f.params, scope, ec, args[i]);
      } catch (...) {
        scope.erase(f.as);
        scope.erase("index");
        throw;
      }
    }
    scope.erase(f.as);
    scope.erase("index");
    if (action == nullptr) return json::array();  // no items
    ag::FanoutOptions options;
    options.concurrency = f.max_concurrency.value_or(g_.file.max_concurrency);
    options.max_failures = f.max_failures;
    options.max_failure_ratio = f.max_failure_ratio;
    std::vector<ag::EffectOutcome> outs =
        ctx.effects(f.action, std::move(args), action->policy, effect_fn(*action, ctx), options);
    if (ctx.stop_requested())
      throw action_error("trellis: foreach '" + spec_.name + "' stopped (cancelled)");
    json results = json::array();
    std::vector<json> failures;
    std::string first;
    bool skipped = false;
    const auto record = [&](std::size_t i, const std::exception& e) {
      if (first.empty()) first = "item " + std::to_string(i) + ": " + e.what();
      failures.push_back({{"node", spec_.name},
                          {"item", i},
                          {"error", e.what()},
                          {"code", error_code(e)},
                          {"step", ctx.step()}});
    };
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].ok()) {
        results.push_back(std::move(outs[i].result));
        continue;
      }
      results.push_back(nullptr);
      if (outs[i].skipped) {
        skipped = true;
        continue;
      }
      try {
        std::rethrow_exception(outs[i].error);
      } catch (const ag::transient_error& e) {
        // Retried by the graph's policy while tries remain: the items that finished replay.
        if (ctx.attempt() + 1 < retry_attempts()) throw;
        record(i, e);
      } catch (const std::exception& e) {
        if (engine_error(e)) throw;
        record(i, e);
      }
    }
    const bool over_count = f.max_failures && failures.size() > *f.max_failures;
    const bool over_ratio =
        f.max_failure_ratio && static_cast<double>(failures.size()) >
                                   *f.max_failure_ratio * static_cast<double>(outs.size());
    if (skipped || over_count || over_ratio)  // more failures than the policy allows
      throw action_error("trellis: foreach '" + spec_.name + "': " +
                         std::to_string(failures.size()) + " of " + std::to_string(outs.size()) +
                         " items failed, more than its failure policy allows; " + first);
    tolerated = std::move(failures);
    return results;
  }

  std::string route(const json& scope, const EvalContext& ec) const {
    for (const Branch& b : spec_.next)
      if (!b.when || b.when->test(scope, ec)) return b.to;
    throw expression_error(spec_.at, "node '" + spec_.name + "': no edge's condition holds");
  }

  ag::NextStep on_failure(FlowState& s, const std::exception& e, ag::RunContext& ctx,
                          const EvalContext&) {
    const json last = {{"node", spec_.name}, {"error", e.what()}, {"code", error_code(e)}};
    if (!spec_.on_error.empty()) {
      s.state["_last_error"] = last;
      return ag::Goto{spec_.on_error};
    }
    if (g_.file.on_error == OnError::continue_) {
      for (const Branch& b : spec_.next) {
        if (b.when) continue;
        json suppressed = last;
        suppressed["step"] = ctx.step();
        s.errors.push_back(std::move(suppressed));
        s.state["_last_error"] = last;
        return ag::Goto{b.to};
      }
    }
    throw;  // fails the run (node_error), with the node's message
  }

  static std::string summary(const FlowState& s) {
    std::string text = std::to_string(s.errors.size()) + " error(s) let go: ";
    for (std::size_t i = 0; i < s.errors.size() && i < 3; ++i) {
      const json& e = s.errors[i];
      text += (i > 0 ? "; " : "") + std::string("node '") + e.value("node", "") +
              "': " + e.value("error", "");
    }
    if (s.errors.size() > 3) text += "; ...";
    return text;
  }

  const FileGraph::Impl& g_;
  const NodeSpec& spec_;
};

}  // namespace

FileGraph::FileGraph(GraphFile file, const ActionRegistry& actions, FileGraphOptions options)
    : FileGraph(std::move(file), actions, std::move(options), {}) {}

FileGraph::FileGraph(GraphFile file, const ActionRegistry& actions, FileGraphOptions options,
                     std::vector<std::vector<std::string>> ceilings)
    : impl_(std::make_unique<Impl>()) {
  check(file, actions);  // subgraph files included (and no file includes itself)
  impl_->file = std::move(file);
  impl_->actions = &actions;
  impl_->options = std::move(options);
  impl_->ceilings = std::move(ceilings);
  const GraphFile& f = impl_->file;
  // Each subgraph node's graph, under this graph's permissions as well as its own.
  std::vector<std::vector<std::string>> inner = impl_->ceilings;
  inner.push_back(f.permissions.value_or(std::vector<std::string>{}));
  std::uint64_t child_steps = 0;
  for (const NodeSpec& n : f.nodes) {
    if (n.kind != NodeKind::subgraph || !n.subgraph) continue;
    const std::filesystem::path path =
        std::filesystem::path(f.path).parent_path() / n.subgraph->graph;
    auto child = std::unique_ptr<FileGraph>(
        new FileGraph(load_graph_file(path), actions, impl_->options, inner));
    child_steps += child->graph().max_steps();
    impl_->children.emplace(n.name, std::move(child));
  }
  ag::Graph<FlowState>& g = impl_->graph;
  for (const NodeSpec& n : f.nodes) g.add(std::make_unique<FileNode>(*impl_, n));
  g.entry(f.start).version(f.version).resume_across_edits();
  // Without max_steps the graph has no cycle (validate): each node runs at most once, an
  // approval twice (its pause and its rerun), and a subgraph node once more for each step its
  // child may take (each may pause the parent).
  g.max_steps(f.max_steps ? *f.max_steps : 2 * f.nodes.size() + 1 + child_steps);
  if (impl_->options.retry) g.retry(*impl_->options.retry);
}

FileGraph FileGraph::load(const std::filesystem::path& path, const ActionRegistry& actions,
                          FileGraphOptions options) {
  return FileGraph(load_graph_file(path), actions, std::move(options));
}

FileGraph::FileGraph(FileGraph&&) noexcept = default;
FileGraph& FileGraph::operator=(FileGraph&&) noexcept = default;
FileGraph::~FileGraph() = default;

const GraphFile& FileGraph::file() const noexcept { return impl_->file; }
agent::Graph<FlowState>& FileGraph::graph() noexcept { return impl_->graph; }

FlowState FileGraph::initial(const nlohmann::json& inputs) const {
  const GraphFile& f = impl_->file;
  std::vector<Problem> problems;
  FlowState s;
  s.state = f.state;
  if (!inputs.is_object() && !inputs.is_null()) {
    problems.push_back({SourcePos{f.path, 0, 0},
                        "the inputs are not an object but " + std::string(inputs.type_name())});
    throw graph_file_error(std::move(problems));
  }
  for (const InputSpec& in : f.inputs) {
    const json* given = nullptr;
    if (inputs.is_object())
      if (auto it = inputs.find(in.name); it != inputs.end()) given = &*it;
    if (given == nullptr) {
      if (in.default_value)
        s.inputs[in.name] = *in.default_value;
      else if (in.required)
        problems.push_back({in.at, "input '" + in.name + "' is required and was not given"});
      continue;
    }
    if (!fits(in.type, *given)) {
      problems.push_back({in.at, "input '" + in.name + "' must be " + to_string(in.type) +
                                     ", not " + std::string(given->type_name())});
      continue;
    }
    s.inputs[in.name] = *given;
  }
  if (inputs.is_object())
    for (const auto& [name, value] : inputs.items()) {
      bool declared = false;
      for (const InputSpec& in : f.inputs) declared = declared || in.name == name;
      if (!declared)
        problems.push_back({SourcePos{f.path, 0, 0},
                            "input '" + name + "' is not declared in the graph's `inputs`"});
    }
  if (!problems.empty()) throw graph_file_error(std::move(problems));
  return s;
}

agent::Outcome<FlowState> FileGraph::run(const std::string& run_id, const nlohmann::json& inputs,
                                         agent::Store& store, agent::RunOptions options) {
  return impl_->graph.run(run_id, initial(inputs), store, std::move(options));
}

}  // namespace trellis::flow
