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
/// - literals: numbers (`3`, `-2.5`, `1e3`), strings ('single' or "double" quoted, `\`
///   escapes either quote and itself: any other escape is a syntax error), `true`, `false`,
///   `null`, lists `[1, 2]`;
/// - paths: a root (`state`, `inputs`, `result`, `item`, `index`, `decision`, `error`: those
///   the scope has) then `.member` (a name of letters, digits and `_`, a keyword too) and
///   `[index]` (an integer literal; negative counts from the end), e.g. `state.sources[0].url`;
/// - comparison `==` `!=` (any two values, JSON equality; 1 == 1.0), `<` `<=` `>` `>=` (two
///   numbers or two strings, strings by their bytes); comparisons do not chain (`a < b < c` is
///   a syntax error); `and`, `or` (short-circuit), `not`; `a in b` (b a list: an element
///   equals a; b an object: a, a string, is a key; b a string: a, a string, is a substring),
///   `a contains b` (the same with the sides swapped); `exists(path)` (its argument a path; true
///   when the path resolves, whatever the value); arithmetic `+ - * / %` on numbers (`+` also joins
///   two strings), unary `-`;
/// - functions: `length(x)` (string: UTF-8 characters; list; object: members), `lower(s)`,
///   `upper(s)`, `trim(s)` (ASCII letters and whitespace; other characters stay),
///   `starts_with(s, p)`, `ends_with(s, p)`, `number(s)` (a string holding a number, blanks
///   around it allowed; a number stays), `string(x)` (a string stays, other values as compact
///   JSON), `_now()` (EvalContext::now, else the system clock's time:
///   "YYYY-MM-DDTHH:MM:SS.mmmZ", ISO-8601 UTC);
/// - precedence, low to high: `or`, `and`, `not`, comparisons and `in`/`contains`, `+ -`,
///   `* / %`, unary `-`, postfix `.`/`[]`; parentheses group. More than 256 levels of nesting
///   (parentheses, operators, lists, calls) is a syntax error ("nested too deeply").
///
/// Numbers: integers (within int64) and doubles are one type, compared by value, exactly.
/// `+ - *` and unary `-` on integers give an integer, or a double when the result does not fit
/// int64; `/` on integers gives an integer when it divides exactly, else a double; `%` takes
/// integers (a double with an integral value too), its result has the sign of the left side.
/// A division by zero and a result that is not a finite number are expression_errors.
///
/// Types: `check()` computes each sub-expression's type from the scope's types (value_type.hpp)
/// and refuses what cannot work with the types known (a number compared with a string, `and` on
/// a non-boolean, an unknown root, a member of a number, an unknown function, a wrong argument
/// count): a graph_file_error at the offending token (an operator for its operands, the
/// argument of a function, the member or `[` of a path, the function's name for its arity).
/// What is `any` is checked by `evaluate()`: an expression_error, at the same position; a
/// missing path is an expression_error at the member that is missing, naming the whole path.
/// A condition must have type boolean (or any).

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
  /// (Without a check() first, an unknown function or a wrong argument count is one too.)
  nlohmann::json evaluate(const nlohmann::json& scope, const EvalContext& context = {}) const;
  /// evaluate(), which must give a boolean (else expression_error "is not a boolean", at the
  /// expression's start).
  bool test(const nlohmann::json& scope, const EvalContext& context = {}) const;

  /// Every path the expression reads, once each, in the order written (for the validator's
  /// "read but never assigned" warning; a path inside `exists()` included).
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
