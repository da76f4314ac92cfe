// The agent layer's failpoint set: its names, and persist_error for an injected error (the
// run meets it as it would meet a failed store write).

#include "trellis/agent/failpoint.hpp"

#include <string>
#include <system_error>

#include "trellis/persist/errors.hpp"

namespace trellis::agent {

namespace {

void raise_persist_error(std::string_view name, int error_number,
                         const std::filesystem::path& run_id) {
  throw persist_error(run_id, "injected failure at failpoint " + std::string(name),
                      std::error_code(error_number, std::generic_category()));
}

constexpr FailpointSet agent_set{
    .layer = "agent",
    .boundaries = failpoint_names,
    .system_calls = {},
    .raise = raise_persist_error,
};

}  // namespace

void register_failpoints() {
  static const bool registered = (trellis::register_failpoints(agent_set), true);
  (void)registered;
}

}  // namespace trellis::agent
