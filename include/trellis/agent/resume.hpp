#pragma once
/// @file
/// How a paused run is resumed: Approve, Reject (the run fails with approval_rejected: a
/// business failure, not an error) or Input (data for the interrupting node).

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace trellis::agent {

struct Approve {
  std::string reviewer = {};
};
struct Reject {
  std::string reason = {};
  std::string reviewer = {};
};
struct Input {
  nlohmann::json value;
};

using Resume = std::variant<Approve, Reject, Input>;

}  // namespace trellis::agent
