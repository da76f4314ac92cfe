// SPDX-License-Identifier: MIT
#pragma once
// Private to trellis::flow: the expression language's tokens, syntax tree, parser, checker and
// evaluator, shared by Expression (expression.cpp) and Template (interpolation.cpp, whose
// `${...}` alternatives are paths and literals of the same language).
//
// Offsets are bytes into the text being parsed (the whole expression, or the whole template);
// `Source::pos` turns one into a file position. Recursion is bounded: the parser refuses more
// than `max_depth` levels of nesting and any tree deeper than that, so checking, evaluating and
// destroying a tree never exhausts the stack.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/flow/errors.hpp"
#include "trellis/flow/expression.hpp"
#include "trellis/flow/source.hpp"
#include "trellis/flow/value_type.hpp"

namespace trellis::flow::detail {

inline constexpr int max_depth = 256;

/// A text being parsed and where it starts in its file.
struct Source {
  std::string_view text;
  SourcePos at;
  SourcePos pos(std::size_t offset) const { return advance(at, text, offset); }
};

enum class Tok {
  end,
  number,
  string,
  identifier,
  lparen,
  rparen,
  lbracket,
  rbracket,
  comma,
  dot,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  plus,
  minus,
  star,
  slash,
  percent,
  pipe,   // `|`: a template's filter
  pipe2,  // `||`: a template's fallback
  rbrace  // `}`: the end of a template's `${...}`
};

struct Token {
  Tok kind = Tok::end;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string text;      ///< an identifier's name, a string literal's decoded value
  nlohmann::json value;  ///< a number literal's value
};

enum class Op { eq, ne, lt, le, gt, ge, in, contains, add, sub, mul, div, mod, and_, or_ };

enum class Fn {
  unknown,
  exists,
  length,
  lower,
  upper,
  trim,
  starts_with,
  ends_with,
  number,
  string,
  now
};

struct Node;
using NodePtr = std::unique_ptr<const Node>;

/// One step of a path: the root or a `.member` (name), or an `[index]`.
struct Step {
  std::string name;
  std::optional<std::int64_t> index;
  std::size_t offset = 0;  ///< the member's name, the `[` of an index
};

struct Node {
  enum class Kind { literal, list, path, negate, not_, binary, call };
  Kind kind = Kind::literal;
  std::size_t offset = 0;         ///< where errors about this node point (its operator or start)
  int depth = 1;                  ///< 1 + the deepest child's
  nlohmann::json value;           ///< literal
  std::vector<Step> steps;        ///< path: steps[0] is the root
  Op op = Op::eq;                 ///< binary
  Fn fn = Fn::unknown;            ///< call
  std::string name;               ///< call: the function's name as written
  std::vector<NodePtr> children;  ///< operands, a call's arguments, a list's elements
};

/// The tokenizer and recursive-descent parser. Throws graph_file_error at the first syntax error.
class Parser {
 public:
  explicit Parser(Source source, std::size_t offset = 0);

  /// A whole expression, up to the end of the text.
  NodePtr parse_expression();
  /// A template's alternative: a path, a literal, or `_now`.
  NodePtr parse_alternative();

  const Token& peek() const { return token_; }
  Token take();
  [[noreturn]] void fail(std::size_t offset, const std::string& message) const;
  /// "')'", "the end of the expression" ...: what a token is, for messages.
  std::string describe(const Token& token) const;

  /// The paths read so far, in order (duplicates included).
  std::vector<Path>& reads() { return reads_; }

 private:
  Token lex();
  void skip_space();
  NodePtr parse_or();
  NodePtr parse_and();
  NodePtr parse_not();
  NodePtr parse_comparison();
  NodePtr parse_additive();
  NodePtr parse_multiplicative();
  NodePtr parse_unary();
  NodePtr parse_primary();
  NodePtr parse_path(Token root);
  NodePtr parse_call(Token name);
  NodePtr parse_literal();
  NodePtr make(Node node) const;
  void enter(std::size_t offset);

  Source source_;
  std::size_t pos_ = 0;
  Token token_;
  int nesting_ = 0;
  std::vector<Path> reads_;

  friend struct Nesting;
};

/// The value a path leads to, or why it does not resolve.
struct Resolution {
  const nlohmann::json* value = nullptr;  ///< nullptr: it does not resolve
  std::size_t step = 0;                   ///< the step that failed
  std::string reason;                     ///< "state.a has no member 'b'"
};
Resolution resolve(const Node& path, const nlohmann::json& scope);
/// "state.sources[0].url": the path's text (its first `steps` steps; 0: all).
std::string path_text(const Node& path, std::size_t steps = 0);

/// Type-checks `node`, adding a problem for each type error; returns its type (any where it is
/// in error, so that one mistake is reported once).
Type check(const Node& node, const Type& scope, const Source& source,
           std::vector<Problem>& problems);
/// The type of path `node` (problems as above).
Type check_path(const Node& node, const Type& scope, const Source& source,
                std::vector<Problem>& problems);

/// Evaluates `node`. Throws expression_error.
nlohmann::json evaluate(const Node& node, const nlohmann::json& scope, const EvalContext& context,
                        const Source& source);

/// The current time for `_now`: context.now, else the system clock's.
std::string now_text(const EvalContext& context);
/// Compact JSON text (invalid UTF-8 replaced, never throwing).
std::string json_text(const nlohmann::json& value);
/// "null", "boolean", "number", "string", "list", "object".
std::string kind_name(const nlohmann::json& value);
/// UTF-8 characters in `s`.
std::size_t utf8_length(std::string_view s);
std::string ascii_lower(std::string s);
std::string ascii_upper(std::string s);

/// The least type of both (value_type.cpp): a list's element type.
Type join(const Type& a, const Type& b);

/// Removes duplicates, keeping the first of each.
std::vector<Path> unique_paths(std::vector<Path> paths);

}  // namespace trellis::flow::detail
