// The persist layer's failpoint set: its names, and persist_error for an injected error.

#include "trellis/persist/failpoint.hpp"

#include <string>
#include <system_error>

#include "trellis/persist/errors.hpp"

namespace trellis {

namespace {

void raise_persist_error(std::string_view name, int error_number,
                         const std::filesystem::path& file) {
  throw persist_error(file, "injected failure at failpoint " + std::string(name),
                      std::error_code(error_number, std::generic_category()));
}

constexpr FailpointSet persist_set{
    .layer = "persist",
    .boundaries = failpoint_names,
    .system_calls = io_failpoint_names,
    .raise = raise_persist_error,
};

}  // namespace

void register_persist_failpoints() {
  static const bool registered = (register_failpoints(persist_set), true);
  (void)registered;
}

}  // namespace trellis
