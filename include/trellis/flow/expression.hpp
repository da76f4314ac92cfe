#pragma once
/// @file
/// `Expression`: the condition language of graph files (a `when:` of an edge), small, typed and
/// without side effects: no general scripting. docs/graph-files.md, "Conditions", is its
/// reference.
///
/// ```
/// state.score >= 0.8 and inputs.mode == 'fast'
/// not exists(state.report) or length(state.sources) > 3
/// 'urgent' in state.tags and lower(result.status) contains 'ok'
/// ```
///
/// - literals: numbers (`3`, `-2.5`), strings ('single' or "double" quoted, `\` escapes the
///   quote and itself), `true`, `false`, `null`, lists `[1, 2]`;
/// - paths: a root (`state`, `inputs`, `result`, `item`, `index`, `decision`, `error`: those
///   the scope has) then `.member` and `[index]` (an integer literal; negative counts from the
///   end), e.g. `state.sources[0].url`;
/// - comparison `==` `!=` (any two values, JSON equality; 1 == 1.0), `<` `<=` `>` `>=` (two
///   numbers or two strings); `and`, `or` (short-circuit), `not`; `a in b` (b a list: an
///   element equals a; b an object: a key; b a string: a substring), `a contains b` (the same
///   with the sides swapped); `exists(path)` (true when the path resolves, whatever the value);
///   arithmetic `+ - * / %` on numbers (`+` also joins two strings), unary `-`;
/// - functions: `length(x)` (string: UTF-8 characters; list; object: members), `lower(s)`,
///   `upper(s)`, `trim(s)`, `starts_with(s, p)`, `ends_with(s, p)`, `number(s)`, `string(x)`,
///   `_now()` (the current time, ISO-8601 UTC text);
/// - precedence, low to high: `or`, `and`, `not`, comparisons and `in`/`contains`, `+ -`,
///   `* / %`, unary `-`, postfix `.`/`[]`; parentheses group.
///
/// Types: `check()` computes each sub-expression's type from the scope's types (value_type.hpp)
/// and refuses what cannot work with the types known (a number compared with a string, `and` on
/// a non-boolean, an unknown root, a member of a number, an unknown function, a wrong argument
/// count): a graph_file_error at the offending token. What is `any` is checked by `evaluate()`:
/// an expression_error, at the same position. A condition must have type boolean (or any).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/flow/errors.hpp"
#include "trellis/flow/source.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow {

/// A path an expression or template reads: its root then members ("state", "sources", "0").
/// Indices are kept as their decimal text.
using Path = std::vector<std::string>;

/// What evaluation needs beyond the scope's values.
struct EvalContext {
  std::string now;  ///< `_now` (ISO-8601 UTC); empty: the system clock's time when used
};

class Expression {
 public:
  /// Parses `text`, which starts at `at` in its file (errors point inside it). Throws
  /// graph_file_error (a syntax error: where, and what was expected).
  static Expression parse(std::string_view text, SourcePos at);

  /// Type-checks against `scope` (an object type: one member per root) and returns the
  /// expression's type. Throws graph_file_error listing every type error found.
  Type check(const Type& scope) const;

  /// Evaluates against `scope` (a JSON object: one member per root). Throws expression_error.
  nlohmann::json evaluate(const nlohmann::json& scope, const EvalContext& context = {}) const;
  /// evaluate(), which must give a boolean (else expression_error "is not a boolean").
  bool test(const nlohmann::json& scope, const EvalContext& context = {}) const;

  /// Every path the expression reads (for the validator's "read but never assigned" warning;
  /// a path inside `exists()` included).
  const std::vector<Path>& reads() const noexcept;
  const std::string& text() const noexcept;
  const SourcePos& where() const noexcept;

  Expression(const Expression&);
  Expression(Expression&&) noexcept;
  Expression& operator=(const Expression&);
  Expression& operator=(Expression&&) noexcept;
  ~Expression();

  struct Impl;

 private:
  explicit Expression(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;  ///< immutable once parsed: copies share it
};

}  // namespace trellis::flow
