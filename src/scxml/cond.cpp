// The condition parser and evaluator (see cond.hpp).

#include "cond.hpp"

#include <utility>

namespace trellis::scxml::detail {
namespace {

bool word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool word_char(char c) { return word_start(c) || (c >= '0' && c <= '9') || c == '.'; }

bool reserved(std::string_view w) {
  return w == "In" || w == "true" || w == "false" || w == "and" || w == "or" || w == "not";
}

}  // namespace

bool is_cond_name(std::string_view name) noexcept {
  if (name.empty() || !word_start(name.front())) return false;
  for (char c : name)
    if (!word_char(c)) return false;
  return !reserved(name);
}

std::shared_ptr<CondNode> CondParser::parse(std::string& error) {
  std::unique_ptr<CondNode> root = disjunction(0);
  if (root) {
    skip_space();
    if (pos_ != text_.size()) root = refuse("unexpected text");
  }
  if (!root) {
    error = error_;
    return nullptr;
  }
  return std::shared_ptr<CondNode>(std::move(root));
}

void CondParser::skip_space() {
  while (pos_ < text_.size() &&
         (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
    ++pos_;
}

bool CondParser::take(std::string_view token) {
  skip_space();
  if (text_.substr(pos_, token.size()) != token) return false;
  pos_ += token.size();
  return true;
}

std::string_view CondParser::peek_word() const {
  std::size_t end = pos_;
  if (end < text_.size() && word_start(text_[end])) {
    while (end < text_.size() && word_char(text_[end])) ++end;
  }
  return text_.substr(pos_, end - pos_);
}

bool CondParser::take_word(std::string_view word) {
  skip_space();
  if (peek_word() != word) return false;
  pos_ += word.size();
  return true;
}

std::unique_ptr<CondNode> CondParser::refuse(std::string why) {
  if (error_.empty()) {
    error_ = "is not supported: " + std::move(why) + " at offset " + std::to_string(pos_) +
             (names_ ? " (trellis reads bound guard names, In('id'), true, false, !, &&, ||, "
                       "not, and, or and parentheses)"
                     : " (with datamodel=\"ecmascript\" trellis reads In('id'), true, false, "
                       "!, &&, || and parentheses)");
  }
  return nullptr;
}

std::unique_ptr<CondNode> CondParser::disjunction(int depth) {
  std::unique_ptr<CondNode> first = conjunction(depth);
  if (!first) return nullptr;
  std::unique_ptr<CondNode> node;
  while (take("||") || (names_ && take_word("or"))) {
    if (!node) {
      node = std::make_unique<CondNode>();
      node->kind = CondNode::Kind::disjunction;
      node->args.push_back(std::move(first));
    }
    std::unique_ptr<CondNode> next = conjunction(depth);
    if (!next) return nullptr;
    node->args.push_back(std::move(next));
  }
  return node ? std::move(node) : std::move(first);
}

std::unique_ptr<CondNode> CondParser::conjunction(int depth) {
  std::unique_ptr<CondNode> first = unary(depth);
  if (!first) return nullptr;
  std::unique_ptr<CondNode> node;
  while (take("&&") || (names_ && take_word("and"))) {
    if (!node) {
      node = std::make_unique<CondNode>();
      node->kind = CondNode::Kind::conjunction;
      node->args.push_back(std::move(first));
    }
    std::unique_ptr<CondNode> next = unary(depth);
    if (!next) return nullptr;
    node->args.push_back(std::move(next));
  }
  return node ? std::move(node) : std::move(first);
}

std::unique_ptr<CondNode> CondParser::unary(int depth) {
  skip_space();
  // "!=" is a comparison, not a negation
  const bool bang = text_.substr(pos_, 1) == "!" && text_.substr(pos_, 2) != "!=";
  if (bang || (names_ && peek_word() == "not")) {
    if (depth >= max_cond_depth)
      return refuse("nested deeper than " + std::to_string(max_cond_depth) + " levels");
    pos_ += bang ? 1 : 3;
    std::unique_ptr<CondNode> arg = unary(depth + 1);
    if (!arg) return nullptr;
    auto node = std::make_unique<CondNode>();
    node->kind = CondNode::Kind::negation;
    node->args.push_back(std::move(arg));
    return node;
  }
  return primary(depth);
}

std::unique_ptr<CondNode> CondParser::primary(int depth) {
  skip_space();
  if (take("(")) {
    if (depth >= max_cond_depth)
      return refuse("nested deeper than " + std::to_string(max_cond_depth) + " levels");
    std::unique_ptr<CondNode> inner = disjunction(depth + 1);
    if (!inner) return nullptr;
    if (!take(")")) return refuse("expected ')'");
    return inner;
  }
  const std::string_view word = peek_word();
  if (word.empty())
    return refuse(pos_ == text_.size() ? "expected a condition" : "unexpected text");
  if (word == "true" || word == "false") {
    pos_ += word.size();
    auto node = std::make_unique<CondNode>();
    node->kind = CondNode::Kind::literal;
    node->value = word == "true";
    return node;
  }
  if (word == "In") {
    pos_ += word.size();
    if (!take("(")) return refuse("expected '(' after In");
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return refuse("expected a quoted state id in In()");
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return refuse("unterminated string in In()");
    auto node = std::make_unique<CondNode>();
    node->kind = CondNode::Kind::in;
    node->text = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    if (node->text.empty()) return refuse("an empty state id in In()");
    if (!take(")")) return refuse("expected ')' after In's state id");
    return node;
  }
  if (!names_) return refuse("the name '" + std::string(word) + "' would be ECMAScript");
  if (reserved(word)) return refuse("unexpected '" + std::string(word) + "'");
  pos_ += word.size();
  skip_space();
  if (pos_ < text_.size() && text_[pos_] == '(')
    return refuse("a call of '" + std::string(word) + "' (name a bound guard without '()')");
  auto node = std::make_unique<CondNode>();
  node->kind = CondNode::Kind::name;
  node->text = std::string(word);
  return node;
}

bool evaluate(const CondNode& c, const void* data, const ChartEvent& e, const ChartQuery& q) {
  switch (c.kind) {
    case CondNode::Kind::name:
      return c.guard(data, e, q);
    case CondNode::Kind::in:
      return q.in(c.text);
    case CondNode::Kind::literal:
      return c.value;
    case CondNode::Kind::negation:
      return !evaluate(*c.args.front(), data, e, q);
    case CondNode::Kind::conjunction:
      for (const auto& a : c.args)
        if (!evaluate(*a, data, e, q)) return false;
      return true;
    case CondNode::Kind::disjunction:
      for (const auto& a : c.args)
        if (evaluate(*a, data, e, q)) return true;
      return false;
  }
  return false;
}

}  // namespace trellis::scxml::detail
