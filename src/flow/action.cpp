#include "trellis/flow/action.hpp"

#include <utility>

#include "trellis/base/error.hpp"
#include "trellis/flow/builtin_actions.hpp"

namespace trellis::flow {

namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

std::string Action::capability(const nlohmann::json& params) const {
  if (options.capability) {
    std::string named = options.capability(params);
    if (!named.empty()) return named;
  }
  return name;
}

ActionRegistry ActionRegistry::with_builtins() {
  ActionRegistry registry;
  add_builtin_actions(registry);
  return registry;
}

ActionRegistry& ActionRegistry::add(std::string name, ActionFn fn, agent::EffectPolicy policy,
                                    ActionOptions options) {
  if (name.empty()) throw invalid_option("trellis: action registry: an action name is empty");
  for (const char c : name) {
    if (!name_char(c)) {
      throw invalid_option("trellis: action registry: action name '" + name +
                           "' is malformed (letters, digits, '_', '-' and '.' only)");
    }
  }
  if (!fn) throw invalid_option("trellis: action registry: action '" + name + "' has no function");
  if (actions_.contains(name)) {
    throw invalid_option("trellis: action registry: action '" + name + "' is already registered");
  }
  Action action{name, std::move(fn), policy, std::move(options)};
  actions_.emplace(std::move(name), std::move(action));
  return *this;
}

const Action* ActionRegistry::find(std::string_view name) const {
  const auto it = actions_.find(name);
  return it == actions_.end() ? nullptr : &it->second;
}

std::vector<std::string> ActionRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(actions_.size());
  for (const auto& [name, action] : actions_) out.push_back(name);
  return out;
}

}  // namespace trellis::flow
