#include "trellis/flow/builtin_actions.hpp"

#include "trellis/flow/errors.hpp"

namespace trellis::flow {

namespace {

nlohmann::json not_yet(const ActionCall& call) {
  throw action_error("trellis: action '" + call.effect.name + "' is not implemented yet");
}

}  // namespace

void add_builtin_actions(ActionRegistry& registry) {
  ActionOptions exec;
  exec.capability = [](const nlohmann::json& params) {
    const auto* command =
        params.is_object() && params.contains("command") ? &params["command"] : nullptr;
    return std::string("exec:") +
           (command && command->is_string() ? command->get<std::string>() : std::string());
  };
  registry.add("exec", not_yet, agent::EffectPolicy::at_least_once, std::move(exec));
  registry.add("read_file", not_yet, agent::EffectPolicy::idempotent);
  registry.add("write_file", not_yet, agent::EffectPolicy::idempotent);
}

}  // namespace trellis::flow
