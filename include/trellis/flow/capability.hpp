#pragma once
/// @file
/// Capabilities, fail-closed: every action a graph file calls has a canonical capability name
/// (the action's name, e.g. "payments.refund", "read_file"; for `exec`, "exec:" and the
/// command's name as given, "exec:git"), and the graph's `permissions` are glob patterns over
/// those names: `*` matches any run of characters (dots included), `?` one character, and
/// anything else itself ("payments.*", "exec:*", "*"). An action no pattern grants is a node
/// error (capability_denied, routable by `on_error`); a graph without `permissions` does not
/// validate (an empty list grants nothing).

#include <string>
#include <string_view>
#include <vector>

namespace trellis::flow {

/// Whether glob `pattern` matches all of `name`.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

/// Whether one of `permissions` grants capability `name`.
bool granted(const std::vector<std::string>& permissions, std::string_view name) noexcept;

}  // namespace trellis::flow
