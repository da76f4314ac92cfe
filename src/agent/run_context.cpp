// RunContext::effect's way into the run call's effect runner.

#include "trellis/agent/run_context.hpp"

#include "trellis/agent/detail/effect_runner.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent {

nlohmann::json RunContext::run_effect(std::string_view name, nlohmann::json args,
                                      EffectPolicy policy, EffectFn fn, CompensateFn compensate) {
  if (effects_ == nullptr)
    throw graph_error("trellis: effect '" + std::string(name) +
                      "' called outside a run (this RunContext has no store)");
  return effects_->run(name, std::move(args), policy, fn, std::move(compensate));
}

nlohmann::json RunContext::run_cached_effect(std::string_view name, nlohmann::json args,
                                             EffectPolicy policy, EffectFn fn,
                                             const EffectCache& cache) {
  if (effects_ == nullptr)
    throw graph_error("trellis: effect '" + std::string(name) +
                      "' called outside a run (this RunContext has no store)");
  return effects_->run_cached(name, std::move(args), policy, fn, cache);
}

std::vector<EffectOutcome> RunContext::run_effects(std::string_view name,
                                                   std::vector<nlohmann::json> args,
                                                   EffectPolicy policy, EffectFn fn,
                                                   const FanoutOptions& options) {
  if (effects_ == nullptr)
    throw graph_error("trellis: effects '" + std::string(name) +
                      "' called outside a run (this RunContext has no store)");
  return effects_->run_many(name, std::move(args), policy, fn, options, stop_);
}

}  // namespace trellis::agent
