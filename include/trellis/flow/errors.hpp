#pragma once
/// @file
/// The flow layer's errors (codes "flow.*", listed in docs/errors.md): graph files (the format,
/// docs/graph-files.md), their expressions and templates, their actions.
///
/// Every error about a file names the file, the line and the column (1-based) where the bad
/// input starts: `what()` reads "<file>:<line>:<column>: <reason>".

#include <string>
#include <string_view>
#include <vector>

#include "trellis/base/error.hpp"
#include "trellis/flow/source.hpp"

namespace trellis::flow {

/// One problem found in a graph file, where it is.
struct Problem {
  SourcePos at;
  std::string message;  ///< the reason, without the position

  friend bool operator==(const Problem&, const Problem&) = default;
};

/// A graph file that cannot be loaded or does not validate: malformed YAML or JSON, a foreign or
/// newer format, a member of the wrong type, an unknown node, action or capability, a type error
/// in a condition. `problems()` lists every error found (at least one; the first is also in
/// `what()`, followed by "(and N more)" when there are more). Nothing has been run or written.
/// Code "flow.graph_file".
class graph_file_error : public error {
 public:
  explicit graph_file_error(std::vector<Problem> problems);
  std::string_view id() const noexcept override;
  const std::vector<Problem>& problems() const noexcept { return problems_; }

 private:
  std::vector<Problem> problems_;
};

/// An expression or a template that cannot be evaluated on the values a run has: a path that is
/// missing (with no `||` fallback), a value of the wrong type for an operator, a division by
/// zero. `what()` names the file, line and column of the expression and the path or operator.
/// Raised inside a node, it is the node's error (routed by `on_error`). Code "flow.expression".
class expression_error : public error {
 public:
  expression_error(SourcePos at, std::string reason);
  std::string_view id() const noexcept override;
  const SourcePos& where() const noexcept { return at_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  SourcePos at_;
  std::string reason_;
};

/// An action the graph's `permissions` do not grant (fail-closed): `what()` names the action's
/// canonical capability and the node. Raised inside a node, it is the node's error (routed by
/// `on_error`). Code "flow.capability_denied".
class capability_denied : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// An action failed in a way its result cannot carry: bad parameters (a path with "..", an
/// absolute path, a missing command), an action name the registry does not have at run time.
/// Code "flow.action".
class action_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

}  // namespace trellis::flow
