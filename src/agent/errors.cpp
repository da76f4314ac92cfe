// The agent layer's error codes; anchors the classes' vtables in the library.

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

std::string_view transient_error::id() const noexcept { return "agent.transient"; }

std::string_view run_busy::id() const noexcept { return "agent.run_busy"; }

std::string_view unknown_run::id() const noexcept { return "agent.unknown_run"; }

std::string_view run_finished::id() const noexcept { return "agent.run_finished"; }

std::string_view graph_mismatch::id() const noexcept { return "agent.graph_mismatch"; }

std::string_view invalid_run_id::id() const noexcept { return "agent.invalid_run_id"; }

std::string_view graph_error::id() const noexcept { return "agent.graph"; }

std::string_view store_error::id() const noexcept { return "agent.store"; }

std::string_view not_a_store::id() const noexcept { return "agent.not_a_store"; }

std::string_view request_superseded::id() const noexcept { return "agent.request_superseded"; }

std::string_view request_expired::id() const noexcept { return "agent.request_expired"; }

std::string_view unknown_request::id() const noexcept { return "agent.unknown_request"; }

std::string_view run_conflict::id() const noexcept { return "agent.run_conflict"; }

std::string_view effect_refused::id() const noexcept { return "agent.effect_refused"; }

std::string_view effect_failed::id() const noexcept { return "agent.effect_failed"; }

std::string_view reconciliation_required::id() const noexcept {
  return "agent.reconciliation_required";
}

std::string_view subgraph_failed::id() const noexcept { return "agent.subgraph_failed"; }

}  // namespace trellis::agent
