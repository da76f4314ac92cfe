#pragma once
/// @file
/// How a paused run is resumed: Approve, Reject (the run fails with approval_rejected: a
/// business failure, not an error) or Input (data for the interrupting node). The graph commits
/// the decision (checkpoint.hpp's Decision: who, when, the request it answers) as soon as it is
/// given, before the step it lets run; a rerun of that step after a crash gets the same one.

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace trellis::agent {

struct Approve {
  std::string reviewer = {};
  std::string comment = {};

  friend bool operator==(const Approve&, const Approve&) = default;
};
struct Reject {
  std::string reason = {};
  std::string reviewer = {};

  friend bool operator==(const Reject&, const Reject&) = default;
};
struct Input {
  nlohmann::json value;
  std::string reviewer = {};  ///< who gave it, for the record

  friend bool operator==(const Input&, const Input&) = default;
};

using Resume = std::variant<Approve, Reject, Input>;

}  // namespace trellis::agent
