#pragma once
/// @file
/// `ActionRegistry`: the actions a graph file may call, by canonical name, each declared as an
/// effect with its policy, so receipts and idempotency keys apply unchanged (agent/effect.hpp):
/// a file graph's action node calls its action through `RunContext::effect`, named by the
/// action's name, with the interpolated params as the effect's arguments.
///
/// ```cpp
/// trellis::flow::ActionRegistry actions = trellis::flow::ActionRegistry::with_builtins();
/// actions.add("payments.refund",
///             [&](const trellis::flow::ActionCall& call) {
///               return payments.refund(call.params.at("charge"), call.effect.key);
///             },
///             trellis::agent::EffectPolicy::at_most_once,
///             {.result_schema = {{"type", "object"},
///                                {"properties", {{"id", {{"type", "string"}}}}}}});
/// ```
///
/// Built in (`with_builtins()`, builtin_actions.hpp): `exec`, `read_file`, `write_file`,
/// `append_file`.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/effect.hpp"

namespace trellis::flow {

/// What an action is called with.
struct ActionCall {
  const agent::EffectCall& effect;  ///< its idempotency key (pass it on), run, node, step
  const nlohmann::json& params;     ///< the node's params, interpolated (= effect.args)
  /// The run's work directory (created before the call): built-in file actions and `exec` work
  /// in it.
  const std::filesystem::path& work_dir;
  /// The environment names the graph's `env_requires` lists, with their values in the calling
  /// process (a name that is not set is absent).
  const std::map<std::string, std::string>& env;
  std::stop_token stop;  ///< the run's cancellation (or lost lease): long actions check it
};

/// An action: returns its result (kept as the effect's receipt; `result` in the scope of the
/// node's `assign` and edges). Throwing fails the node (agent::transient_error: retried by the
/// graph's retry policy).
using ActionFn = std::function<nlohmann::json(const ActionCall&)>;

struct ActionOptions {
  /// Bumped when what the action returns for the same params changes: part of a cached
  /// result's key.
  std::string version = "1";
  /// False for an action whose result depends on more than its params and version (the
  /// built-in file actions read and write the run's own work directory): `cache: true` on it
  /// does not validate (`cache_not_cacheable`).
  bool cacheable = true;
  /// A JSON Schema (subset: type, properties, items) of the result: what the validator knows
  /// of `result` in the node's conditions and templates; null: any.
  nlohmann::json result_schema = nullptr;
  /// A JSON Schema of its params (checked by the validator when the params are literal; null:
  /// any).
  nlohmann::json params_schema = nullptr;
  std::string description = {};
  /// The canonical capability name of one call (capability.hpp), from its interpolated params;
  /// empty: the action's name. `exec` gives "exec:<command>".
  std::function<std::string(const nlohmann::json& params)> capability = {};
};

struct Action {
  std::string name;
  ActionFn fn;
  agent::EffectPolicy policy = agent::EffectPolicy::at_least_once;
  ActionOptions options;

  /// The capability one call with `params` needs (options.capability, or the name).
  std::string capability(const nlohmann::json& params) const;
};

class ActionRegistry {
 public:
  /// An empty registry (no built-ins).
  ActionRegistry() = default;
  /// A registry holding the built-in actions (builtin_actions.hpp).
  static ActionRegistry with_builtins();

  /// Adds action `name` (letters, digits, `_`, `-`, `.`; not empty): invalid_option when the
  /// name is malformed or taken, or `fn` is empty.
  ActionRegistry& add(std::string name, ActionFn fn, agent::EffectPolicy policy,
                      ActionOptions options = {});

  /// nullptr when there is none.
  const Action* find(std::string_view name) const;
  /// Every action's name, sorted.
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Action, std::less<>> actions_;
};

}  // namespace trellis::flow
