#pragma once
/// @file
/// `trellis::testing::TransitionMatrix<S, E>`: a transition function evaluated on every
/// (state, event) pair of enumerated `S` and `E`. Two functions with equal matrices behave the
/// same on every input, so the matrix is what exhaustive tests compare, print as Markdown, check
/// properties on and draw.
///
/// ```cpp
/// auto m = trellis::testing::transition_matrix(table);               // a TransitionTable
/// auto n = trellis::testing::transition_matrix(step);                // a plain function
/// auto k = trellis::testing::transition_matrix<Light, Tick>(lambda);  // anything else
/// std::cout << trellis::testing::to_markdown(m);
/// ```

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/base/error.hpp"
#include "trellis/machine/transition_function.hpp"

namespace trellis::detail {

// A cell's text in a Markdown table: '|' would end the cell and a line break the row.
inline std::string markdown_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace trellis::detail

namespace trellis::testing {

/// The outcome of every (state, event) pair: a cell holds the target state, or nullopt where
/// the event is rejected. It is itself a transition function (a tabulated one).
template <class S, class E>
class TransitionMatrix {
  static_assert(Enumerated<S>,
                "TransitionMatrix<S, E>: S has no enumeration; declare TRELLIS_ENUM(S, values...) "
                "next to it so every state can be listed (for a table over a struct state, "
                "trellis::testing::table_matrix(table) lists its rows by phase and event type)");
  static_assert(Enumerated<E>,
                "TransitionMatrix<S, E>: E has no enumeration; declare TRELLIS_ENUM(E, values...) "
                "next to it so every event can be listed");

 public:
  using state_type = S;
  using event_type = E;
  // Zero for a type without an enumeration, so that the static_assert above is the only
  // error such a type produces.
  static constexpr std::size_t state_count = [] {
    if constexpr (Enumerated<S>) return enumeration<S>::size;
    return std::size_t{0};
  }();
  static constexpr std::size_t event_count = [] {
    if constexpr (Enumerated<E>) return enumeration<E>::size;
    return std::size_t{0};
  }();
  using cells_type = std::array<std::optional<S>, state_count * event_count>;

  /// Cells in row-major order: `cells[i * event_count + j]` is the outcome of the `i`-th state
  /// on the `j`-th event, in enumeration order.
  explicit TransitionMatrix(cells_type cells) : cells_(std::move(cells)) {}

  /// The outcome of `s` on `e`; throws `trellis::error` for a value that is not enumerated.
  const std::optional<S>& at(const S& s, const E& e) const {
    return cells_[detail::listed_index(s) * event_count + detail::listed_index(e)];
  }

  /// The matrix as a transition function: the same as `at(s, e)`.
  std::optional<S> operator()(const S& s, const E& e) const { return at(s, e); }

  const cells_type& cells() const noexcept { return cells_; }

  friend bool operator==(const TransitionMatrix&, const TransitionMatrix&) = default;

 private:
  cells_type cells_;
};

/// Evaluates `fn` once on every (state, event) pair. Throws `trellis::error` when `fn` returns
/// a state that the enumeration of `S` does not list (every cell must be printable and drawable).
template <class S, class E, class F>
TransitionMatrix<S, E> transition_matrix(const F& fn) {
  static_assert(TransitionFunction<F, S, E>,
                "transition_matrix<S, E>(fn): fn must be callable as "
                "std::optional<S>(const S&, const E&)");
  typename TransitionMatrix<S, E>::cells_type cells;
  if constexpr (Enumerated<S> && Enumerated<E> && TransitionFunction<F, S, E>) {
    std::size_t k = 0;
    for (const S& s : enumeration<S>::values) {
      for (const E& e : enumeration<E>::values) {
        std::optional<S> to = fn(s, e);
        if (to && !enumeration<S>::index_of(*to)) {
          throw error("trellis::testing: " + detail::describe_value(s) + " on " +
                      detail::describe_value(e) + " returned " + detail::describe_value(*to) +
                      ", which the enumeration of " + std::string(enumeration<S>::type_name) +
                      " does not list");
        }
        cells[k++] = std::move(to);
      }
    }
  }
  return TransitionMatrix<S, E>(std::move(cells));
}

/// The matrix of a transition table or of anything else that names its `state_type` and
/// `event_type`.
template <class F>
requires requires {
  typename F::state_type;
  typename F::event_type;
}
TransitionMatrix<typename F::state_type, typename F::event_type> transition_matrix(const F& fn) {
  return transition_matrix<typename F::state_type, typename F::event_type>(fn);
}

/// The matrix of a plain function `std::optional<S> step(const S&, const E&)`.
template <class S, class E>
TransitionMatrix<S, E> transition_matrix(std::optional<S> (*fn)(const S&, const E&)) {
  return transition_matrix<S, E, std::optional<S> (*)(const S&, const E&)>(fn);
}

}  // namespace trellis::testing

namespace trellis::detail {

// Columns are padded to the widest cell so the Markdown reads as a table in a diff as well;
// "—" is one column wide but three bytes, hence code points rather than bytes.
inline std::size_t display_width(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0U) != 0x80U) ++n;
  }
  return n;
}

inline void append_padded(std::string& out, std::string_view s, std::size_t width) {
  out += s;
  out.append(width - display_width(s), ' ');
}

}  // namespace trellis::detail

namespace trellis::testing {

/// The matrix as a Markdown table: one row per state, one column per event, each cell the
/// target's name or "—" where the event is rejected; columns padded to line up.
template <class S, class E>
std::string to_markdown(const TransitionMatrix<S, E>& matrix) {
  using SE = enumeration<S>;
  using EE = enumeration<E>;
  constexpr std::string_view corner = "state \\ event";
  constexpr std::string_view rejected = "—";

  std::vector<std::size_t> widths(EE::size + 1);
  widths[0] = detail::display_width(corner);
  for (const std::string_view n : SE::names) widths[0] = std::max(widths[0], n.size());
  for (std::size_t j = 0; j < EE::size; ++j) {
    widths[j + 1] = std::max<std::size_t>(EE::names[j].size(), 3);  // "---" at least
    for (std::size_t i = 0; i < SE::size; ++i) {
      const auto& cell = matrix.cells()[i * EE::size + j];
      widths[j + 1] =
          std::max(widths[j + 1], cell ? SE::name(*cell).size() : detail::display_width(rejected));
    }
  }

  std::string out;
  const auto row = [&](auto&& text_of) {
    out += "|";
    for (std::size_t c = 0; c < widths.size(); ++c) {
      out += " ";
      detail::append_padded(out, text_of(c), widths[c]);
      out += " |";
    }
    out += "\n";
  };
  row([&](std::size_t c) { return c == 0 ? corner : EE::names[c - 1]; });
  out += "|";
  for (const std::size_t w : widths) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (std::size_t i = 0; i < SE::size; ++i) {
    row([&](std::size_t c) -> std::string_view {
      if (c == 0) return SE::names[i];
      const auto& cell = matrix.cells()[i * EE::size + (c - 1)];
      return cell ? SE::name(*cell) : rejected;
    });
  }
  return out;
}

/// Prints the matrix as Markdown, so a failed `CHECK(a == b)` shows both tables.
template <class S, class E>
std::ostream& operator<<(std::ostream& os, const TransitionMatrix<S, E>& matrix) {
  return os << "\n" << to_markdown(matrix);
}

}  // namespace trellis::testing
