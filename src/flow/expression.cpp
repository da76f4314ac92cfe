// SPDX-License-Identifier: MIT
// The condition language: a hand-written tokenizer and recursive-descent parser over the text
// (byte offsets, turned into file positions only for errors), a checker over Types and an
// evaluator over JSON. The syntax tree is immutable once parsed and shared by copies.
//
// Numbers: JSON keeps integers (int64, uint64) and doubles apart; the language has one number
// type. Comparisons are by value (1 == 1.0, exactly, also beyond 2^53). `+ - *` on two
// integers give an integer, or a double when the exact result does not fit in int64; `/` on
// two integers gives an integer when it divides exactly, else a double; `%` takes integers
// (doubles with an integral value too) and its result has the sign of the left side. A result
// that is not a finite number, and a division by zero, are expression_errors.
#include "trellis/flow/expression.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <compare>
#include <limits>
#include <set>
#include <utility>

#include <trellis/io/utc_time.hpp>

#include "expression_detail.hpp"

namespace trellis::flow {

namespace detail {

namespace {

using json = nlohmann::json;

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_keyword(std::string_view name) {
  return name == "and" || name == "or" || name == "not" || name == "in" || name == "contains" ||
         name == "true" || name == "false" || name == "null";
}

struct FnInfo {
  std::string_view name;
  Fn fn;
  std::size_t arity;
};

constexpr FnInfo functions[] = {
    {"exists", Fn::exists, 1},       {"length", Fn::length, 1},
    {"lower", Fn::lower, 1},         {"upper", Fn::upper, 1},
    {"trim", Fn::trim, 1},           {"starts_with", Fn::starts_with, 2},
    {"ends_with", Fn::ends_with, 2}, {"number", Fn::number, 1},
    {"string", Fn::string, 1},       {"_now", Fn::now, 0},
};

const FnInfo* find_function(std::string_view name) {
  for (const auto& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string function_names() {
  std::string names;
  for (const auto& f : functions) {
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

std::string_view op_text(Op op) {
  switch (op) {
    case Op::eq:
      return "==";
    case Op::ne:
      return "!=";
    case Op::lt:
      return "<";
    case Op::le:
      return "<=";
    case Op::gt:
      return ">";
    case Op::ge:
      return ">=";
    case Op::in:
      return "in";
    case Op::contains:
      return "contains";
    case Op::add:
      return "+";
    case Op::sub:
      return "-";
    case Op::mul:
      return "*";
    case Op::div:
      return "/";
    case Op::mod:
      return "%";
    case Op::and_:
      return "and";
    case Op::or_:
      return "or";
  }
  return "?";
}

// Parses a number's text (the language's syntax: digits, an optional fraction, an optional
// exponent; no sign). Integers that fit in int64 stay integers.
std::optional<json> number_value(std::string_view text) {
  const bool integral = text.find_first_of(".eE") == std::string_view::npos;
  if (integral) {
    std::int64_t i = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec == std::errc() && end == text.data() + text.size()) return json(i);
  }
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(d)) {
    return std::nullopt;
  }
  return json(d);
}

// The length of the number that starts `text` (0: none).
std::size_t number_length(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == 0) return 0;
  if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1])) {
    i += 2;
    while (i < text.size() && is_digit(text[i])) ++i;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (j < text.size() && is_digit(text[j])) {
      while (j < text.size() && is_digit(text[j])) ++j;
      i = j;
    }
  }
  return i;
}

}  // namespace

// --- parsing -------------------------------------------------------------------------------

struct Nesting {
  Nesting(Parser& parser, std::size_t offset) : parser_(parser) { parser_.enter(offset); }
  ~Nesting() { --parser_.nesting_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;

 private:
  Parser& parser_;
};

Parser::Parser(Source source, std::size_t offset) : source_(source), pos_(offset) {
  token_ = lex();
}

void Parser::fail(std::size_t offset, const std::string& message) const {
  throw graph_file_error({Problem{source_.pos(offset), message}});
}

void Parser::enter(std::size_t offset) {
  if (++nesting_ > max_depth) {
    --nesting_;
    fail(offset, "nested too deeply (more than " + std::to_string(max_depth) + " levels)");
  }
}

NodePtr Parser::make(Node node) const {
  for (const auto& child : node.children) node.depth = std::max(node.depth, child->depth + 1);
  if (node.depth > max_depth) {
    fail(node.offset, "nested too deeply (more than " + std::to_string(max_depth) + " levels)");
  }
  return std::make_unique<const Node>(std::move(node));
}

void Parser::skip_space() {
  while (pos_ < source_.text.size()) {
    const char c = source_.text[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

Token Parser::lex() {
  skip_space();
  const auto text = source_.text;
  Token t;
  t.begin = pos_;
  if (pos_ >= text.size()) {
    t.end = pos_;
    return t;
  }
  const char c = text[pos_];
  const auto single = [&](Tok kind, std::size_t length = 1) {
    t.kind = kind;
    pos_ += length;
    t.end = pos_;
    return t;
  };
  const auto next_is = [&](char n) { return pos_ + 1 < text.size() && text[pos_ + 1] == n; };
  if (is_digit(c)) {
    const auto length = number_length(text.substr(pos_));
    const auto value = number_value(text.substr(pos_, length));
    if (!value) fail(pos_, "number out of range: " + std::string(text.substr(pos_, length)));
    t.value = *value;
    return single(Tok::number, length);
  }
  if (is_identifier_start(c)) {
    std::size_t end = pos_;
    while (end < text.size() && is_identifier_char(text[end])) ++end;
    t.text = std::string(text.substr(pos_, end - pos_));
    return single(Tok::identifier, end - pos_);
  }
  if (c == '\'' || c == '"') {
    std::size_t i = pos_ + 1;
    std::string value;
    for (;;) {
      if (i >= text.size())
        fail(pos_, "unterminated string (no closing " + std::string(1, c) + ")");
      const char d = text[i];
      if (d == c) break;
      if (d == '\\') {
        if (i + 1 >= text.size())
          fail(pos_, "unterminated string (no closing " + std::string(1, c) + ")");
        const char e = text[i + 1];
        if (e != '\'' && e != '"' && e != '\\') {
          fail(i, std::string("unknown escape '\\") + e + "' in a string (only \\' \\\" and \\\\)");
        }
        value += e;
        i += 2;
        continue;
      }
      value += d;
      ++i;
    }
    t.text = std::move(value);
    return single(Tok::string, i + 1 - pos_);
  }
  switch (c) {
    case '(':
      return single(Tok::lparen);
    case ')':
      return single(Tok::rparen);
    case '[':
      return single(Tok::lbracket);
    case ']':
      return single(Tok::rbracket);
    case ',':
      return single(Tok::comma);
    case '.':
      return single(Tok::dot);
    case '+':
      return single(Tok::plus);
    case '-':
      return single(Tok::minus);
    case '*':
      return single(Tok::star);
    case '/':
      return single(Tok::slash);
    case '%':
      return single(Tok::percent);
    case '}':
      return single(Tok::rbrace);
    case '|':
      return next_is('|') ? single(Tok::pipe2, 2) : single(Tok::pipe);
    case '<':
      return next_is('=') ? single(Tok::le, 2) : single(Tok::lt);
    case '>':
      return next_is('=') ? single(Tok::ge, 2) : single(Tok::gt);
    case '=':
      if (next_is('=')) return single(Tok::eq, 2);
      fail(pos_, "unexpected '=' (compare with '==')");
    case '!':
      if (next_is('=')) return single(Tok::ne, 2);
      fail(pos_, "unexpected '!' (negate with 'not')");
    case '&':
      fail(pos_, "unexpected '&' (use 'and')");
    default:
      break;
  }
  const auto byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte >= 0x7f) {
    static constexpr char hex[] = "0123456789abcdef";
    fail(pos_,
         std::string("unexpected character (byte 0x") + hex[byte >> 4] + hex[byte & 0xf] + ")");
  }
  fail(pos_, std::string("unexpected character '") + c + "'");
}

Token Parser::take() {
  Token t = std::move(token_);
  token_ = lex();
  return t;
}

std::string Parser::describe(const Token& token) const {
  if (token.kind == Tok::end) return "the end of the text";
  if (token.kind == Tok::string) return "a string";
  if (token.kind == Tok::number) {
    return "the number " + std::string(source_.text.substr(token.begin, token.end - token.begin));
  }
  return "'" + std::string(source_.text.substr(token.begin, token.end - token.begin)) + "'";
}

NodePtr Parser::parse_expression() {
  auto node = parse_or();
  if (token_.kind != Tok::end) {
    std::string hint;
    if (token_.kind == Tok::pipe2) hint = " ('||' is for templates; use 'or')";
    fail(token_.begin,
         "expected an operator or the end of the expression, found " + describe(token_) + hint);
  }
  return node;
}

NodePtr Parser::parse_or() {
  Nesting nesting(*this, token_.begin);
  auto left = parse_and();
  while (token_.kind == Tok::identifier && token_.text == "or") {
    Node node;
    node.kind = Node::Kind::binary;
    node.op = Op::or_;
    node.offset = take().begin;
    node.children.push_back(std::move(left));
    node.children.push_back(parse_and());
    left = make(std::move(node));
  }
  return left;
}

NodePtr Parser::parse_and() {
  auto left = parse_not();
  while (token_.kind == Tok::identifier && token_.text == "and") {
    Node node;
    node.kind = Node::Kind::binary;
    node.op = Op::and_;
    node.offset = take().begin;
    node.children.push_back(std::move(left));
    node.children.push_back(parse_not());
    left = make(std::move(node));
  }
  return left;
}

NodePtr Parser::parse_not() {
  if (token_.kind == Tok::identifier && token_.text == "not") {
    Nesting nesting(*this, token_.begin);
    Node node;
    node.kind = Node::Kind::not_;
    node.offset = take().begin;
    node.children.push_back(parse_not());
    return make(std::move(node));
  }
  return parse_comparison();
}

NodePtr Parser::parse_comparison() {
  auto left = parse_additive();
  const auto comparison = [&]() -> std::optional<Op> {
    switch (token_.kind) {
      case Tok::eq:
        return Op::eq;
      case Tok::ne:
        return Op::ne;
      case Tok::lt:
        return Op::lt;
      case Tok::le:
        return Op::le;
      case Tok::gt:
        return Op::gt;
      case Tok::ge:
        return Op::ge;
      case Tok::identifier:
        if (token_.text == "in") return Op::in;
        if (token_.text == "contains") return Op::contains;
        return std::nullopt;
      default:
        return std::nullopt;
    }
  };
  const auto op = comparison();
  if (!op) return left;
  Node node;
  node.kind = Node::Kind::binary;
  node.op = *op;
  node.offset = take().begin;
  node.children.push_back(std::move(left));
  node.children.push_back(parse_additive());
  if (comparison()) {
    fail(token_.begin,
         "comparisons do not chain: group them with parentheses or join them "
         "with 'and'");
  }
  return make(std::move(node));
}

NodePtr Parser::parse_additive() {
  auto left = parse_multiplicative();
  while (token_.kind == Tok::plus || token_.kind == Tok::minus) {
    Node node;
    node.kind = Node::Kind::binary;
    node.op = token_.kind == Tok::plus ? Op::add : Op::sub;
    node.offset = take().begin;
    node.children.push_back(std::move(left));
    node.children.push_back(parse_multiplicative());
    left = make(std::move(node));
  }
  return left;
}

NodePtr Parser::parse_multiplicative() {
  auto left = parse_unary();
  while (token_.kind == Tok::star || token_.kind == Tok::slash || token_.kind == Tok::percent) {
    Node node;
    node.kind = Node::Kind::binary;
    node.op = token_.kind == Tok::star ? Op::mul : token_.kind == Tok::slash ? Op::div : Op::mod;
    node.offset = take().begin;
    node.children.push_back(std::move(left));
    node.children.push_back(parse_unary());
    left = make(std::move(node));
  }
  return left;
}

NodePtr Parser::parse_unary() {
  if (token_.kind == Tok::minus) {
    Nesting nesting(*this, token_.begin);
    Node node;
    node.kind = Node::Kind::negate;
    node.offset = take().begin;
    node.children.push_back(parse_unary());
    return make(std::move(node));
  }
  return parse_primary();
}

NodePtr Parser::parse_literal() {
  Node node;
  node.kind = Node::Kind::literal;
  node.offset = token_.begin;
  if (token_.kind == Tok::number) {
    node.value = take().value;
  } else if (token_.kind == Tok::string) {
    node.value = take().text;
  } else if (token_.kind == Tok::identifier && token_.text == "true") {
    take();
    node.value = true;
  } else if (token_.kind == Tok::identifier && token_.text == "false") {
    take();
    node.value = false;
  } else if (token_.kind == Tok::identifier && token_.text == "null") {
    take();
    node.value = nullptr;
  } else {
    return nullptr;
  }
  return make(std::move(node));
}

NodePtr Parser::parse_primary() {
  if (auto literal = parse_literal()) return literal;
  switch (token_.kind) {
    case Tok::lparen: {
      take();
      auto inner = parse_or();
      if (token_.kind != Tok::rparen) fail(token_.begin, "expected ')', found " + describe(token_));
      take();
      return inner;
    }
    case Tok::lbracket: {
      Nesting nesting(*this, token_.begin);
      Node node;
      node.kind = Node::Kind::list;
      node.offset = take().begin;
      if (token_.kind != Tok::rbracket) {
        for (;;) {
          node.children.push_back(parse_or());
          if (token_.kind == Tok::rbracket) break;
          if (token_.kind != Tok::comma) {
            fail(token_.begin, "expected ',' or ']' in a list, found " + describe(token_));
          }
          take();
        }
      }
      take();
      return make(std::move(node));
    }
    case Tok::identifier: {
      if (is_keyword(token_.text)) {
        fail(token_.begin, "expected a value, found the keyword '" + token_.text + "'");
      }
      auto name = take();
      if (token_.kind == Tok::lparen) return parse_call(std::move(name));
      return parse_path(std::move(name));
    }
    default:
      fail(token_.begin, "expected a value (a literal, a path, a function call or '('), found " +
                             describe(token_));
  }
}

NodePtr Parser::parse_path(Token root) {
  Node node;
  node.kind = Node::Kind::path;
  node.offset = root.begin;
  node.steps.push_back(Step{std::move(root.text), std::nullopt, root.begin});
  for (;;) {
    if (token_.kind == Tok::dot) {
      take();
      if (token_.kind != Tok::identifier) {
        fail(token_.begin, "expected a member name after '.', found " + describe(token_));
      }
      auto member = take();
      node.steps.push_back(Step{std::move(member.text), std::nullopt, member.begin});
    } else if (token_.kind == Tok::lbracket) {
      const auto open = take().begin;
      bool negative = false;
      if (token_.kind == Tok::minus) {
        take();
        negative = true;
      }
      if (token_.kind != Tok::number || !token_.value.is_number_integer()) {
        fail(token_.begin, "expected an integer index in '[]', found " + describe(token_));
      }
      auto index = take().value.get<std::int64_t>();
      if (negative) index = -index;  // never INT64_MIN: the literal is not negative
      if (token_.kind != Tok::rbracket) {
        fail(token_.begin, "expected ']' after an index, found " + describe(token_));
      }
      take();
      node.steps.push_back(Step{std::to_string(index), index, open});
    } else {
      break;
    }
  }
  Path path;
  for (const auto& step : node.steps) path.push_back(step.name);
  reads_.push_back(std::move(path));
  return make(std::move(node));
}

NodePtr Parser::parse_call(Token name) {
  Nesting nesting(*this, name.begin);
  Node node;
  node.kind = Node::Kind::call;
  node.offset = name.begin;
  node.name = std::move(name.text);
  if (const auto* f = find_function(node.name)) node.fn = f->fn;
  take();  // (
  if (node.fn == Fn::exists) {
    if (token_.kind != Tok::identifier || is_keyword(token_.text)) {
      fail(token_.begin, "exists() takes a path, found " + describe(token_));
    }
    auto root = take();
    if (token_.kind == Tok::lparen) fail(token_.begin, "exists() takes a path, not a call");
    node.children.push_back(parse_path(std::move(root)));
  } else if (token_.kind != Tok::rparen) {
    for (;;) {
      node.children.push_back(parse_or());
      if (token_.kind != Tok::comma) break;
      take();
    }
  }
  if (token_.kind != Tok::rparen) {
    fail(token_.begin,
         "expected ')' after the arguments of " + node.name + "(), found " + describe(token_));
  }
  take();
  return make(std::move(node));
}

NodePtr Parser::parse_alternative() {
  if (auto literal = parse_literal()) return literal;
  if (token_.kind == Tok::minus) {
    const auto minus = take().begin;
    if (token_.kind != Tok::number) fail(token_.begin, "expected a number after '-'");
    Node node;
    node.kind = Node::Kind::literal;
    node.offset = minus;
    const auto value = take().value;
    if (value.is_number_integer()) {
      node.value = -value.get<std::int64_t>();
    } else {
      node.value = -value.get<double>();
    }
    return make(std::move(node));
  }
  if (token_.kind == Tok::identifier && !is_keyword(token_.text)) {
    auto name = take();
    if (name.text == "_now") {
      Node node;
      node.kind = Node::Kind::call;
      node.fn = Fn::now;
      node.name = "_now";
      node.offset = name.begin;
      if (token_.kind == Tok::lparen) {
        take();
        if (token_.kind != Tok::rparen) fail(token_.begin, "expected ')' after '_now('");
        take();
      }
      return make(std::move(node));
    }
    if (token_.kind == Tok::lparen) {
      fail(token_.begin, "a template takes paths and literals, not calls (filters follow '|')");
    }
    return parse_path(std::move(name));
  }
  fail(token_.begin,
       "expected a path or a literal (a quoted string, a number, true, false, null), found " +
           describe(token_));
}

// --- paths ---------------------------------------------------------------------------------

std::string path_text(const Node& path, std::size_t steps) {
  if (steps == 0 || steps > path.steps.size()) steps = path.steps.size();
  std::string text;
  for (std::size_t i = 0; i < steps; ++i) {
    const auto& step = path.steps[i];
    if (step.index) {
      text += '[' + step.name + ']';
    } else {
      if (i > 0) text += '.';
      text += step.name;
    }
  }
  return text;
}

Resolution resolve(const Node& path, const json& scope) {
  Resolution r;
  const auto& root = path.steps.front().name;
  if (!scope.is_object() || !scope.contains(root)) {
    r.reason = "no root '" + root + "' in the scope";
    return r;
  }
  const json* at = &scope[root];
  for (std::size_t i = 1; i < path.steps.size(); ++i) {
    const auto& step = path.steps[i];
    r.step = i;
    if (step.index) {
      if (!at->is_array()) {
        r.reason = path_text(path, i) + " is " + a_kind(*at) + ", not a list: it has no element " +
                   step.name;
        return r;
      }
      const auto size = static_cast<std::int64_t>(at->size());
      const auto index = *step.index < 0 ? size + *step.index : *step.index;
      if (index < 0 || index >= size) {
        r.reason = path_text(path, i) + " has no element " + step.name + " (it has " +
                   std::to_string(size) + ")";
        return r;
      }
      at = &(*at)[static_cast<std::size_t>(index)];
    } else {
      if (!at->is_object()) {
        r.reason = path_text(path, i) + " is " + a_kind(*at) +
                   ", not an object: it has no member '" + step.name + "'";
        return r;
      }
      const auto member = at->find(step.name);
      if (member == at->end()) {
        r.reason = path_text(path, i) + " has no member '" + step.name + "'";
        return r;
      }
      at = &*member;
    }
  }
  r.value = at;
  return r;
}

// --- types ---------------------------------------------------------------------------------

namespace {

class Checker {
 public:
  Checker(const Type& scope, const Source& source, std::vector<Problem>& problems)
      : scope_(scope), source_(source), problems_(problems) {}

  Type path(const Node& node) {
    const auto& root = node.steps.front();
    const Type* at = scope_.member(root.name);
    if (!at) {
      std::string roots;
      for (const auto& [name, type] : scope_.fields) roots += (roots.empty() ? "" : ", ") + name;
      error(root.offset, "unknown root '" + root.name + "'" +
                             (roots.empty() ? std::string() : " (the scope has " + roots + ")"));
      return Type::any();
    }
    for (std::size_t i = 1; i < node.steps.size(); ++i) {
      const auto& step = node.steps[i];
      if (step.index) {
        if (at->kind == TypeKind::any) return Type::any();
        if (at->kind != TypeKind::list) {
          error(step.offset, path_text(node, i) + " is " + a_kind(at->kind) +
                                 ", not a list: it has no element " + step.name);
          return Type::any();
        }
        if (!at->element) return Type::any();
        at = at->element.get();
      } else {
        const Type* member = at->member(step.name);
        if (!member) {
          if (at->kind == TypeKind::object) {
            error(step.offset, path_text(node, i) + " has no member '" + step.name + "'");
          } else {
            error(step.offset, path_text(node, i) + " is " + a_kind(at->kind) +
                                   ", not an object: it has no member '" + step.name + "'");
          }
          return Type::any();
        }
        at = member;
      }
    }
    return *at;
  }

  Type check(const Node& node) {
    switch (node.kind) {
      case Node::Kind::literal:
        return Type::of(node.value);
      case Node::Kind::list: {
        Type t = Type::of_kind(TypeKind::list);
        std::optional<Type> element;
        for (const auto& child : node.children) {
          auto type = check(*child);
          element = element ? join(*element, type) : type;
        }
        if (element && !(*element == Type::any())) {
          t.element = std::make_shared<const Type>(std::move(*element));
        }
        return t;
      }
      case Node::Kind::path:
        return path(node);
      case Node::Kind::negate: {
        const auto operand = check(*node.children[0]);
        expect(node.offset, operand, TypeKind::number, "'-'");
        return Type::of_kind(TypeKind::number);
      }
      case Node::Kind::not_: {
        const auto operand = check(*node.children[0]);
        expect(node.offset, operand, TypeKind::boolean, "'not'");
        return Type::of_kind(TypeKind::boolean);
      }
      case Node::Kind::binary:
        return binary(node);
      case Node::Kind::call:
        return call(node);
    }
    return Type::any();
  }

 private:
  void error(std::size_t offset, std::string message) {
    problems_.push_back(Problem{source_.pos(offset), std::move(message)});
  }

  // `what` takes `kind` (or any); else a type error at `offset`.
  bool expect(std::size_t offset, const Type& type, TypeKind kind, std::string_view what) {
    if (type.kind == TypeKind::any || type.kind == kind) return true;
    error(offset, std::string(what) + " takes " + a_kind(kind) + ", not " + a_kind(type.kind));
    return false;
  }

  Type binary(const Node& node) {
    const auto left = check(*node.children[0]);
    const auto right = check(*node.children[1]);
    const auto l = left.kind;
    const auto r = right.kind;
    const bool known = l != TypeKind::any && r != TypeKind::any;
    const auto op = "'" + std::string(op_text(node.op)) + "'";
    switch (node.op) {
      case Op::eq:
      case Op::ne:
        return Type::of_kind(TypeKind::boolean);
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge: {
        const auto comparable = [](TypeKind k) {
          return k == TypeKind::any || k == TypeKind::number || k == TypeKind::string;
        };
        if (!comparable(l) || !comparable(r) || (known && l != r)) {
          error(node.offset, op + " compares two numbers or two strings, not " + a_kind(l) +
                                 " and " + a_kind(r));
        }
        return Type::of_kind(TypeKind::boolean);
      }
      case Op::in:
      case Op::contains: {
        const auto& container = node.op == Op::in ? right : left;
        const auto& needle = node.op == Op::in ? left : right;
        const auto side = node.op == Op::in ? "right" : "left";
        const auto c = container.kind;
        if (c == TypeKind::object || c == TypeKind::string) {
          if (needle.kind != TypeKind::any && needle.kind != TypeKind::string) {
            error(node.offset,
                  op + " looks for a string in " + a_kind(c) + ", not for " + a_kind(needle.kind));
          }
        } else if (c != TypeKind::any && c != TypeKind::list) {
          error(node.offset,
                op + " takes a list, an object or a string on its " + side + ", not " + a_kind(c));
        }
        return Type::of_kind(TypeKind::boolean);
      }
      case Op::add: {
        const auto addable = [](TypeKind k) {
          return k == TypeKind::any || k == TypeKind::number || k == TypeKind::string;
        };
        if (!addable(l) || !addable(r) || (known && l != r)) {
          error(node.offset, "'+' adds two numbers or joins two strings, not " + a_kind(l) +
                                 " and " + a_kind(r));
          return Type::any();
        }
        return l != TypeKind::any ? Type::of_kind(l) : Type::of_kind(r);
      }
      case Op::sub:
      case Op::mul:
      case Op::div:
      case Op::mod:
        if ((l != TypeKind::any && l != TypeKind::number) ||
            (r != TypeKind::any && r != TypeKind::number)) {
          error(node.offset, op + " takes two numbers, not " + a_kind(l) + " and " + a_kind(r));
        }
        return Type::of_kind(TypeKind::number);
      case Op::and_:
      case Op::or_:
        if ((l != TypeKind::any && l != TypeKind::boolean) ||
            (r != TypeKind::any && r != TypeKind::boolean)) {
          error(node.offset, op + " takes two booleans, not " + a_kind(l) + " and " + a_kind(r));
        }
        return Type::of_kind(TypeKind::boolean);
    }
    return Type::any();
  }

  Type call(const Node& node) {
    const auto* f = find_function(node.name);
    if (!f) {
      error(node.offset,
            "unknown function '" + node.name + "' (the functions are " + function_names() + ")");
      for (const auto& child : node.children) check(*child);
      return Type::any();
    }
    if (node.children.size() != f->arity) {
      error(node.offset, node.name + "() takes " + std::to_string(f->arity) + " argument" +
                             (f->arity == 1 ? "" : "s") + ", not " +
                             std::to_string(node.children.size()));
      for (const auto& child : node.children) check(*child);
      return Type::any();
    }
    std::vector<Type> args;
    for (const auto& child : node.children) args.push_back(check(*child));
    const auto what = "'" + node.name + "()'";
    switch (node.fn) {
      case Fn::exists:
        return Type::of_kind(TypeKind::boolean);
      case Fn::length: {
        const auto k = args[0].kind;
        if (k != TypeKind::any && k != TypeKind::string && k != TypeKind::list &&
            k != TypeKind::object) {
          error(node.children[0]->offset,
                what + " takes a string, a list or an object, not " + a_kind(k));
        }
        return Type::of_kind(TypeKind::number);
      }
      case Fn::lower:
      case Fn::upper:
      case Fn::trim:
        expect(node.children[0]->offset, args[0], TypeKind::string, what);
        return Type::of_kind(TypeKind::string);
      case Fn::starts_with:
      case Fn::ends_with:
        expect(node.children[0]->offset, args[0], TypeKind::string, what);
        expect(node.children[1]->offset, args[1], TypeKind::string, what);
        return Type::of_kind(TypeKind::boolean);
      case Fn::number: {
        const auto k = args[0].kind;
        if (k != TypeKind::any && k != TypeKind::string && k != TypeKind::number) {
          error(node.children[0]->offset, what + " takes a string or a number, not " + a_kind(k));
        }
        return Type::of_kind(TypeKind::number);
      }
      case Fn::string:
      case Fn::now:
        return Type::of_kind(TypeKind::string);
      case Fn::unknown:
        break;
    }
    return Type::any();
  }

  const Type& scope_;
  const Source& source_;
  std::vector<Problem>& problems_;
};

}  // namespace

Type check(const Node& node, const Type& scope, const Source& source,
           std::vector<Problem>& problems) {
  return Checker(scope, source, problems).check(node);
}

Type check_path(const Node& node, const Type& scope, const Source& source,
                std::vector<Problem>& problems) {
  return Checker(scope, source, problems).path(node);
}

// --- values --------------------------------------------------------------------------------

namespace {

// A JSON number as the arithmetic sees it. uint64 values above int64's range are exact only
// in comparisons (as `big`); the arithmetic takes them as doubles.
struct Num {
  enum class Rep { integer, big, real } rep = Rep::integer;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;

  double as_double() const {
    return rep == Rep::integer ? static_cast<double>(i)
           : rep == Rep::big   ? static_cast<double>(u)
                               : d;
  }
};

Num num(const json& value) {
  Num n;
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    n.i = value.get<std::int64_t>();
  } else if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      n.i = static_cast<std::int64_t>(u);
    } else {
      n.rep = Num::Rep::big;
      n.u = u;
    }
  } else {
    n.rep = Num::Rep::real;
    n.d = value.get<double>();
  }
  return n;
}

constexpr double two_63 = 9223372036854775808.0;  // 2^63
constexpr double two_64 = 18446744073709551616.0;

// i <=> d, exactly.
std::partial_ordering compare_int_real(std::int64_t i, double d) {
  if (std::isnan(d)) return std::partial_ordering::unordered;
  if (d >= two_63) return std::partial_ordering::less;
  if (d < -two_63) return std::partial_ordering::greater;
  const double whole = std::trunc(d);
  const auto w = static_cast<std::int64_t>(whole);
  if (i != w) return i <=> w;
  return 0.0 <=> d - whole;
}

// u (at least 2^63) <=> d, exactly.
std::partial_ordering compare_big_real(std::uint64_t u, double d) {
  if (std::isnan(d)) return std::partial_ordering::unordered;
  if (d < two_63) return std::partial_ordering::greater;
  if (d >= two_64) return std::partial_ordering::less;
  const double whole = std::trunc(d);
  const auto w = static_cast<std::uint64_t>(whole);
  if (u != w) return u <=> w;
  return 0.0 <=> d - whole;
}

std::partial_ordering compare(const Num& a, const Num& b) {
  using R = Num::Rep;
  if (a.rep == R::integer && b.rep == R::integer) return a.i <=> b.i;
  if (a.rep == R::big && b.rep == R::big) return a.u <=> b.u;
  if (a.rep == R::real && b.rep == R::real) return a.d <=> b.d;
  if (a.rep == R::integer && b.rep == R::big) return std::partial_ordering::less;
  if (a.rep == R::big && b.rep == R::integer) return std::partial_ordering::greater;
  if (a.rep == R::integer) return compare_int_real(a.i, b.d);
  if (b.rep == R::integer) return 0 <=> compare_int_real(b.i, a.d);
  if (a.rep == R::big) return compare_big_real(a.u, b.d);
  return 0 <=> compare_big_real(b.u, a.d);
}

// JSON equality with numbers compared by value, without recursion (values may be deep).
bool equal(const json& a, const json& b) {
  std::vector<std::pair<const json*, const json*>> pending{{&a, &b}};
  while (!pending.empty()) {
    const auto [x, y] = pending.back();
    pending.pop_back();
    if (x->is_number() && y->is_number()) {
      if (compare(num(*x), num(*y)) != 0) return false;
      continue;
    }
    if (x->type() != y->type()) return false;
    if (x->is_array()) {
      if (x->size() != y->size()) return false;
      for (std::size_t i = 0; i < x->size(); ++i) pending.emplace_back(&(*x)[i], &(*y)[i]);
    } else if (x->is_object()) {
      if (x->size() != y->size()) return false;
      for (auto it = x->begin(); it != x->end(); ++it) {
        const auto other = y->find(it.key());
        if (other == y->end()) return false;
        pending.emplace_back(&*it, &*other);
      }
    } else if (*x != *y) {
      return false;
    }
  }
  return true;
}

class Evaluator {
 public:
  Evaluator(const json& scope, const EvalContext& context, const Source& source)
      : scope_(scope), context_(context), source_(source) {}

  json eval(const Node& node) {
    switch (node.kind) {
      case Node::Kind::literal:
        return node.value;
      case Node::Kind::list: {
        json list = json::array();
        for (const auto& child : node.children) list.push_back(eval(*child));
        return list;
      }
      case Node::Kind::path: {
        const auto r = resolve(node, scope_);
        if (!r.value) {
          fail(node.steps[r.step].offset, "missing path " + path_text(node) + ": " + r.reason);
        }
        return *r.value;
      }
      case Node::Kind::negate: {
        const auto operand = eval(*node.children[0]);
        if (!operand.is_number()) fail(node.offset, "'-' takes a number, not " + a_kind(operand));
        const auto n = num(operand);
        if (n.rep == Num::Rep::integer && n.i != std::numeric_limits<std::int64_t>::min()) {
          return -n.i;
        }
        return -n.as_double();
      }
      case Node::Kind::not_: {
        const auto operand = eval(*node.children[0]);
        if (!operand.is_boolean()) {
          fail(node.offset, "'not' takes a boolean, not " + a_kind(operand));
        }
        return !operand.get<bool>();
      }
      case Node::Kind::binary:
        return binary(node);
      case Node::Kind::call:
        return call(node);
    }
    return nullptr;
  }

 private:
  [[noreturn]] void fail(std::size_t offset, std::string reason) const {
    throw expression_error(source_.pos(offset), std::move(reason));
  }

  bool boolean(const Node& node, const Node& operand) {
    const auto value = eval(operand);
    if (!value.is_boolean()) {
      fail(node.offset,
           "'" + std::string(op_text(node.op)) + "' takes two booleans, not " + a_kind(value));
    }
    return value.get<bool>();
  }

  json finite(const Node& node, double d) const {
    if (!std::isfinite(d)) {
      fail(node.offset,
           "the result of '" + std::string(op_text(node.op)) + "' is not a finite number");
    }
    return d;
  }

  json arithmetic(const Node& node, const json& left, const json& right) const {
    if (!left.is_number() || !right.is_number()) {
      fail(node.offset, "'" + std::string(op_text(node.op)) + "' takes two numbers, not " +
                            a_kind(left) + " and " + a_kind(right));
    }
    const auto a = num(left);
    const auto b = num(right);
    const bool integers = a.rep == Num::Rep::integer && b.rep == Num::Rep::integer;
    std::int64_t r = 0;
    switch (node.op) {
      case Op::add:
        if (integers && !__builtin_add_overflow(a.i, b.i, &r)) return r;
        return finite(node, a.as_double() + b.as_double());
      case Op::sub:
        if (integers && !__builtin_sub_overflow(a.i, b.i, &r)) return r;
        return finite(node, a.as_double() - b.as_double());
      case Op::mul:
        if (integers && !__builtin_mul_overflow(a.i, b.i, &r)) return r;
        return finite(node, a.as_double() * b.as_double());
      case Op::div:
        if (b.as_double() == 0) fail(node.offset, "division by zero");
        if (integers && a.i % b.i == 0 &&
            !(a.i == std::numeric_limits<std::int64_t>::min() && b.i == -1)) {
          return a.i / b.i;
        }
        return finite(node, a.as_double() / b.as_double());
      case Op::mod: {
        const auto whole = [&](const json& value, const Num& n) {
          if (n.rep == Num::Rep::integer) return n.i;
          if (n.rep == Num::Rep::real && std::trunc(n.d) == n.d && n.d >= -two_63 && n.d < two_63) {
            return static_cast<std::int64_t>(n.d);
          }
          fail(node.offset, "'%' takes integers, not " + json_text(value));
        };
        const auto x = whole(left, a);
        const auto y = whole(right, b);
        if (y == 0) fail(node.offset, "division by zero");
        if (y == -1) return std::int64_t{0};
        return x % y;
      }
      default:
        return nullptr;
    }
  }

  json binary(const Node& node) {
    const auto& lhs = *node.children[0];
    const auto& rhs = *node.children[1];
    if (node.op == Op::and_) return boolean(node, lhs) && boolean(node, rhs);
    if (node.op == Op::or_) return boolean(node, lhs) || boolean(node, rhs);
    const auto left = eval(lhs);
    const auto right = eval(rhs);
    const auto op = "'" + std::string(op_text(node.op)) + "'";
    switch (node.op) {
      case Op::eq:
        return equal(left, right);
      case Op::ne:
        return !equal(left, right);
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge: {
        std::partial_ordering order = std::partial_ordering::unordered;
        if (left.is_number() && right.is_number()) {
          order = compare(num(left), num(right));
        } else if (left.is_string() && right.is_string()) {
          order =
              left.get_ref<const std::string&>().compare(right.get_ref<const std::string&>()) <=> 0;
        } else {
          fail(node.offset, op + " compares two numbers or two strings, not " + a_kind(left) +
                                " and " + a_kind(right));
        }
        switch (node.op) {
          case Op::lt:
            return order < 0;
          case Op::le:
            return order <= 0;
          case Op::gt:
            return order > 0;
          default:
            return order >= 0;
        }
      }
      case Op::in:
      case Op::contains: {
        const auto& container = node.op == Op::in ? right : left;
        const auto& needle = node.op == Op::in ? left : right;
        if (container.is_array()) {
          return std::any_of(container.begin(), container.end(),
                             [&](const json& element) { return equal(element, needle); });
        }
        if (container.is_object() || container.is_string()) {
          if (!needle.is_string()) {
            fail(node.offset, op + " looks for a string in " + a_kind(container) + ", not for " +
                                  a_kind(needle));
          }
          const auto& s = needle.get_ref<const std::string&>();
          if (container.is_object()) return container.contains(s);
          return container.get_ref<const std::string&>().find(s) != std::string::npos;
        }
        fail(node.offset, op + " takes a list, an object or a string on its " +
                              (node.op == Op::in ? "right" : "left") + ", not " +
                              a_kind(container));
      }
      case Op::add:
        if (left.is_string() && right.is_string()) {
          return left.get_ref<const std::string&>() + right.get_ref<const std::string&>();
        }
        if (!left.is_number() || !right.is_number()) {
          fail(node.offset, "'+' adds two numbers or joins two strings, not " + a_kind(left) +
                                " and " + a_kind(right));
        }
        return arithmetic(node, left, right);
      default:
        return arithmetic(node, left, right);
    }
  }

  const std::string& string_arg(const Node& call, std::size_t i, const json& value) const {
    if (!value.is_string()) {
      fail(call.children[i]->offset, "'" + call.name + "()' takes a string, not " + a_kind(value));
    }
    return value.get_ref<const std::string&>();
  }

  json call(const Node& node) {
    const auto* f = find_function(node.name);
    if (!f) fail(node.offset, "unknown function '" + node.name + "'");
    if (node.children.size() != f->arity) {
      fail(node.offset, node.name + "() takes " + std::to_string(f->arity) + " argument" +
                            (f->arity == 1 ? "" : "s") + ", not " +
                            std::to_string(node.children.size()));
    }
    if (node.fn == Fn::exists) return resolve(*node.children[0], scope_).value != nullptr;
    if (node.fn == Fn::now) return now_text(context_);
    std::vector<json> args;
    for (const auto& child : node.children) args.push_back(eval(*child));
    switch (node.fn) {
      case Fn::length:
        if (args[0].is_string()) return utf8_length(args[0].get_ref<const std::string&>());
        if (args[0].is_array() || args[0].is_object()) return args[0].size();
        fail(node.children[0]->offset,
             "'length()' takes a string, a list or an object, not " + a_kind(args[0]));
      case Fn::lower:
        return ascii_lower(string_arg(node, 0, args[0]));
      case Fn::upper:
        return ascii_upper(string_arg(node, 0, args[0]));
      case Fn::trim: {
        const auto& s = string_arg(node, 0, args[0]);
        constexpr std::string_view space = " \t\n\r\f\v";
        const auto first = s.find_first_not_of(space);
        if (first == std::string::npos) return "";
        return s.substr(first, s.find_last_not_of(space) - first + 1);
      }
      case Fn::starts_with:
        return string_arg(node, 0, args[0]).starts_with(string_arg(node, 1, args[1]));
      case Fn::ends_with:
        return string_arg(node, 0, args[0]).ends_with(string_arg(node, 1, args[1]));
      case Fn::number: {
        if (args[0].is_number()) return args[0];
        if (!args[0].is_string()) {
          fail(node.children[0]->offset,
               "'number()' takes a string or a number, not " + a_kind(args[0]));
        }
        const auto& s = args[0].get_ref<const std::string&>();
        constexpr std::string_view space = " \t\n\r\f\v";
        const auto first = s.find_first_not_of(space);
        if (first != std::string::npos) {
          auto text = std::string_view(s).substr(first, s.find_last_not_of(space) - first + 1);
          const bool negative = text.starts_with('-');
          if (negative) text.remove_prefix(1);
          if (number_length(text) == text.size()) {
            if (auto value = number_value(text)) {
              if (!negative) return *value;
              if (value->is_number_integer()) return -value->get<std::int64_t>();
              return -value->get<double>();
            }
          }
        }
        fail(node.children[0]->offset, "'number()': " + json_text(args[0]) + " is not a number");
      }
      case Fn::string:
        if (args[0].is_string()) return args[0];
        return json_text(args[0]);
      default:
        return nullptr;
    }
  }

  const json& scope_;
  const EvalContext& context_;
  const Source& source_;
};

}  // namespace

json evaluate(const Node& node, const json& scope, const EvalContext& context,
              const Source& source) {
  return Evaluator(scope, context, source).eval(node);
}

std::string now_text(const EvalContext& context) {
  if (!context.now.empty()) return context.now;
  return trellis::detail::format_utc(std::chrono::system_clock::now());
}

std::string json_text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string kind_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "object";
    default:
      return "value";
  }
}

std::size_t utf8_length(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string ascii_lower(std::string s) {
  for (auto& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string ascii_upper(std::string s) {
  for (auto& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::vector<Path> unique_paths(std::vector<Path> paths) {
  std::set<Path> seen;
  std::vector<Path> unique;
  for (auto& path : paths) {
    if (seen.insert(path).second) unique.push_back(std::move(path));
  }
  return unique;
}

}  // namespace detail

// --- Expression ----------------------------------------------------------------------------

struct Expression::Impl {
  std::string text;
  SourcePos at;
  detail::NodePtr root;
  std::vector<Path> reads;

  detail::Source source() const { return detail::Source{text, at}; }
};

Expression Expression::parse(std::string_view text, SourcePos at) {
  auto impl = std::make_shared<Impl>();
  impl->text = std::string(text);
  impl->at = std::move(at);
  detail::Parser parser(impl->source());
  if (parser.peek().kind == detail::Tok::end) parser.fail(0, "empty expression");
  impl->root = parser.parse_expression();
  impl->reads = detail::unique_paths(std::move(parser.reads()));
  return Expression(std::move(impl));
}

Type Expression::check(const Type& scope) const {
  std::vector<Problem> problems;
  auto type = detail::check(*impl_->root, scope, impl_->source(), problems);
  if (!problems.empty()) throw graph_file_error(std::move(problems));
  return type;
}

nlohmann::json Expression::evaluate(const nlohmann::json& scope, const EvalContext& context) const {
  return detail::evaluate(*impl_->root, scope, context, impl_->source());
}

bool Expression::test(const nlohmann::json& scope, const EvalContext& context) const {
  const auto value = evaluate(scope, context);
  if (!value.is_boolean()) {
    throw expression_error(impl_->at, "the condition '" + impl_->text +
                                          "' is not a boolean (it is " + a_kind(value) + ")");
  }
  return value.get<bool>();
}

const std::vector<Path>& Expression::reads() const noexcept { return impl_->reads; }
const std::string& Expression::text() const noexcept { return impl_->text; }
const SourcePos& Expression::where() const noexcept { return impl_->at; }

Expression::Expression(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Expression::Expression(const Expression&) = default;
Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(const Expression&) = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

}  // namespace trellis::flow
