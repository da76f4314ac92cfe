#pragma once
// The conditions an SCXML document may hold (private to the scxml target): bound guard names,
// In('id'), true, false, combined with !/not, &&/and, ||/or and parentheses. The parser is
// recursive descent with a depth cap, so hostile input gets an error, not a deep stack.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/scxml/bindings.hpp"

namespace trellis::scxml::detail {

/// The deepest nesting of `!` and parentheses a condition may have.
inline constexpr int max_cond_depth = 32;

struct CondNode {
  enum class Kind { name, in, literal, negation, conjunction, disjunction };
  Kind kind = Kind::literal;
  std::string text;                             ///< name: the guard's name; in: the state id
  bool value = false;                           ///< literal
  std::vector<std::unique_ptr<CondNode>> args;  ///< negation: one; and/or: two or more
  ErasedBindings::Guard guard;                  ///< name: the bound guard (set by the loader)
};

class CondParser {
 public:
  /// `names`: bound guard names and the words and/or/not are allowed (not in an ECMAScript
  /// document, where a name would be ECMAScript).
  CondParser(std::string_view text, bool names) : text_(text), names_(names) {}

  /// The parsed condition, or nullptr with `error` saying why ("is not supported ...").
  std::shared_ptr<CondNode> parse(std::string& error);

 private:
  std::unique_ptr<CondNode> disjunction(int depth);
  std::unique_ptr<CondNode> conjunction(int depth);
  std::unique_ptr<CondNode> unary(int depth);
  std::unique_ptr<CondNode> primary(int depth);
  void skip_space();
  bool take(std::string_view token);
  bool take_word(std::string_view word);
  std::string_view peek_word() const;
  std::unique_ptr<CondNode> refuse(std::string why);

  std::string_view text_;
  bool names_;
  std::size_t pos_ = 0;
  std::string error_;
};

/// The value of `c` for a guard's arguments.
bool evaluate(const CondNode& c, const void* data, const ChartEvent& e, const ChartQuery& q);

/// A name a cond can hold: a letter or '_', then letters, digits, '_' or '.', not a reserved
/// word (In, true, false, and, or, not).
bool is_cond_name(std::string_view name) noexcept;

}  // namespace trellis::scxml::detail
