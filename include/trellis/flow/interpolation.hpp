#pragma once
/// @file
/// `Template` and `ValueTemplate`: `${...}` interpolation in graph files' strings (params,
/// assign values, approval texts, return outputs). docs/graph-files.md, "Interpolation", is
/// its reference.
///
/// ```
/// "Report on ${inputs.topic}"                  -> a string
/// "${state.sources}"                           -> the list itself (exactly one ${...} keeps
///                                                 its type)
/// "${state.sources[0].url || inputs.url || 'none'}"   -> the first that resolves
/// "${result.items | length}"  "${state.doc | json}"   "${state | keys}"  "${inputs.x | upper}"
/// "${_now}"                                    -> the current time, ISO-8601 UTC
/// "$${not interpolated}"                       -> "${not interpolated}"
/// ```
///
/// Inside `${...}`: one or more alternatives separated by `||` (each a path as in
/// expression.hpp, a literal: a quoted string, a number (`-1` too), true, false, null, or
/// `_now` (or `_now()`): the current time as `_now()` gives it), then filters, each `| name`:
/// `json` (the value as compact JSON text), `length` (as `length()`), `keys` (an object's member
/// names, sorted), `upper`, `lower` (ASCII letters); filters apply in order, to the alternative
/// taken. The first alternative that is a literal or a path that resolves to a value other than
/// null is taken; when every path resolves to null or not at all, the value is null if one of them
/// resolved, and otherwise rendering throws expression_error naming the first path (an
/// interpolation of a missing path) and where it is. A template with text around its `${...}`
/// (or several of them) renders a string: strings as they are, other values as compact JSON.
/// `$${` is the text `${` (nothing else is an escape; a `}` outside `${...}` is text).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/flow/expression.hpp"
#include "trellis/flow/source.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow {

class Template {
 public:
  /// Parses `text`, which starts at `at` in its file. Throws graph_file_error (a syntax error:
  /// where, and what was expected).
  static Template parse(std::string_view text, SourcePos at);

  /// The type it renders to: exactly one `${...}` and nothing else: that value's type (after
  /// filters); otherwise string; no `${...}`: string. Throws graph_file_error (a filter on
  /// the wrong type known, an unknown root or filter).
  Type check(const Type& scope) const;
  /// Renders against `scope` (a JSON object: one member per root). Throws expression_error (a
  /// missing path, a filter on the wrong value, an unknown filter when not checked).
  nlohmann::json render(const nlohmann::json& scope, const EvalContext& context = {}) const;

  /// True when the text has no `${...}` (it renders to itself, `$${` unescaped).
  bool literal() const noexcept;
  const std::vector<Path>& reads() const noexcept;
  const std::string& text() const noexcept;
  const SourcePos& where() const noexcept;

  Template(const Template&);
  Template(Template&&) noexcept;
  Template& operator=(const Template&);
  Template& operator=(Template&&) noexcept;
  ~Template();

  struct Impl;

 private:
  explicit Template(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

/// A JSON value from a graph file whose strings may hold templates (a node's `params`, an
/// `output`, a `proposed_input`): rendered member by member, keys as written (keys are not
/// interpolated).
class ValueTemplate {
 public:
  ValueTemplate() = default;
  /// `value` as written; `where(pointer)` gives the position of the string at that JSON pointer
  /// ("/args/0") in the file. Throws graph_file_error (every template's syntax error).
  static ValueTemplate parse(const nlohmann::json& value,
                             const std::function<SourcePos(const std::string& pointer)>& where);

  /// The rendered value's type (objects and lists member by member). Throws graph_file_error
  /// listing every template's type error.
  Type check(const Type& scope) const;
  nlohmann::json render(const nlohmann::json& scope, const EvalContext& context = {}) const;
  /// True when no string in it holds a `${...}` (nor a `$${`): it renders to value() as written.
  bool literal() const noexcept { return templates_.empty(); }
  /// Every path its templates read, once each.
  std::vector<Path> reads() const;
  const nlohmann::json& value() const noexcept { return value_; }

 private:
  nlohmann::json value_;                       ///< as written (null when absent)
  std::map<std::string, Template> templates_;  ///< by JSON pointer, the strings with ${...}
};

}  // namespace trellis::flow
