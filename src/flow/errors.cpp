#include "trellis/flow/errors.hpp"

#include <utility>

namespace trellis::flow {

namespace {

std::string problems_text(const std::vector<Problem>& problems) {
  if (problems.empty()) return "trellis: graph file error";
  std::string text = to_string(problems.front().at) + ": " + problems.front().message;
  if (problems.size() > 1) text += " (and " + std::to_string(problems.size() - 1) + " more)";
  return text;
}

}  // namespace

graph_file_error::graph_file_error(std::vector<Problem> problems)
    : error(problems_text(problems)), problems_(std::move(problems)) {}
std::string_view graph_file_error::id() const noexcept { return "flow.graph_file"; }

expression_error::expression_error(SourcePos at, std::string reason)
    : error(to_string(at) + ": " + reason), at_(std::move(at)), reason_(std::move(reason)) {}
std::string_view expression_error::id() const noexcept { return "flow.expression"; }

std::string_view capability_denied::id() const noexcept { return "flow.capability_denied"; }
std::string_view action_error::id() const noexcept { return "flow.action"; }

}  // namespace trellis::flow
