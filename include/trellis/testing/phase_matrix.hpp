#pragma once
/// @file
/// `trellis::testing::PhaseMatrix<P, E>`: the declared rows of a `TransitionTable` laid out as
/// phases × event types. A table over a struct state cannot be evaluated on every state (there
/// are too many), but its rules can be read: each cell lists, in the order they are tried, the
/// rows that decide that (phase, event type), each as its target phase, its guard and its
/// update, so a golden file of the matrix turns every change of the rules into a reviewed diff.
///
/// ```cpp
/// namespace tt = trellis::testing;
/// const auto m = tt::table_matrix(vending::table());  // phases × event types
/// CHECK(tt::check_golden("golden/vending.md", tt::to_markdown(m)));
/// ```
///
/// The vending machine's cell for Vending on Dispensed reads `Paying [change due] / count sale;
/// Idle / count sale`: the guarded row is tried first, and the unguarded one decides otherwise.
///
/// A cell lists the rows covering the phase and handling the event type, in declaration order,
/// up to and including the first unguarded one (the rows after it can never decide there, and
/// `validate()` reports them); "—" marks a cell no row decides (the event is always rejected).
/// A guard shows as `[name]` (two `when` clauses as `[a && b]`, an unnamed one as `[guard]`),
/// a named update as `/ name`; a `stay()` row shows the phase it stays in. The matrix says
/// which rules apply, not which payloads their guards accept: that is for exploration and
/// property tests. For an enum state with enum events, `transition_matrix` (every state ×
/// every event, evaluated) remains the stronger check.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/base/error.hpp"
#include "trellis/machine/event_types.hpp"
#include "trellis/machine/transition_table.hpp"
#include "trellis/testing/transition_matrix.hpp"

namespace trellis::testing {

/// The rows of a table that decide each (phase, event type) cell, in the order they are tried.
template <class P, class E>
class PhaseMatrix {
  static_assert(Enumerated<P>,
                "PhaseMatrix<P, E>: the phases need an enumeration; declare TRELLIS_ENUM(P, ...) "
                "next to them so every phase can be listed");
  static_assert(event_types<E>::count > 0,
                "PhaseMatrix<P, E>: events need types to be listed: a std::variant of event "
                "structs, or an enum declared with TRELLIS_ENUM");

 public:
  using phase_type = P;
  using event_type = E;
  static constexpr std::size_t phase_count = [] {
    if constexpr (Enumerated<P>) return enumeration<P>::size;
    return std::size_t{0};
  }();
  static constexpr std::size_t event_count = event_types<E>::count;

  /// One row as a cell shows it: "Paying [change due] / count sale".
  struct Step {
    P to;                ///< The phase the row leads to (for a `stay()` row, the cell's phase).
    std::string guard;   ///< The guard's name; empty when the row has none.
    std::string update;  ///< The update's name; empty when the row has none or it is unnamed.

    /// "Paying [change due] / count sale": the step as a cell shows it.
    std::string text() const {
      std::string out = detail::describe_value(to);
      if (!guard.empty()) out += " [" + guard + "]";
      if (!update.empty()) out += " / " + update;
      return out;
    }

    friend bool operator==(const Step&, const Step&) = default;
  };
  /// The rows deciding one (phase, event type), in order; empty when the event is rejected.
  using Cell = std::vector<Step>;

  /// Cells in row-major order: `cells[i * event_count + k]` is the `i`-th phase (enumeration
  /// order) on the `k`-th event type (variant alternative or enumerated value).
  explicit PhaseMatrix(std::vector<Cell> cells) : cells_(std::move(cells)) {
    if (cells_.size() != phase_count * event_count) {
      throw error("trellis::testing: a PhaseMatrix needs " +
                  std::to_string(phase_count * event_count) +
                  " cells (phases × event types), got " + std::to_string(cells_.size()));
    }
  }

  /// The rows deciding event `e`'s type in phase `p`; throws `trellis::error` for a phase or
  /// event value that its enumeration does not list.
  const Cell& at(const P& p, const E& e) const {
    const std::size_t k = event_types<E>::index(e);
    if constexpr (!event_types<E>::by_type) {
      if (k >= event_count) detail::throw_unlisted(e);
    }
    return cells_[detail::listed_index(p) * event_count + k];
  }

  /// The rows deciding events of alternative type `T` in phase `p` (a variant `E` only).
  template <class T>
  requires(event_types<E>::by_type) const Cell& at(const P& p) const {
    return cells_[detail::listed_index(p) * event_count + event_types<E>::template of<T>()];
  }

  const std::vector<Cell>& cells() const noexcept { return cells_; }

  /// Equal when every cell lists the same targets, guard names and update names in the same
  /// order.
  friend bool operator==(const PhaseMatrix&, const PhaseMatrix&) = default;

 private:
  std::vector<Cell> cells_;
};

/// The declared-rows matrix of `table`: for every phase and event type, the rows that decide
/// it (see the file comment). Throws `trellis::table_error` when a row was left unfinished, and
/// `trellis::error` when a row names a phase its enumeration does not list.
template <class S, class E, class P>
PhaseMatrix<P, E> table_matrix(const TransitionTable<S, E, P>& table) {
  using M = PhaseMatrix<P, E>;
  std::vector<typename M::Cell> cells(M::phase_count * M::event_count);
  if constexpr (Enumerated<P> && event_types<E>::count > 0) {
    table.check_complete();
    for (const auto& row : table.rows()) {
      for (const P& p : row.from) detail::listed_index(p);
      if (row.to) detail::listed_index(*row.to);
    }
    for (std::size_t i = 0; i < M::phase_count; ++i) {
      const P& p = enumeration<P>::values[i];
      for (std::size_t k = 0; k < M::event_count; ++k) {
        auto& cell = cells[i * M::event_count + k];
        for (const auto& row : table.rows()) {
          if (row.kind != k || !row.covers(p)) continue;
          cell.push_back({row.target(p), row.has_guard() ? row.guard_name : std::string(),
                          row.has_update() ? row.update_name : std::string()});
          if (!row.has_guard()) break;  // the rows after it never decide here
        }
      }
    }
  }
  return M(std::move(cells));
}

}  // namespace trellis::testing

namespace trellis::testing {

/// The matrix as a Markdown table: one row per phase, one column per event type, each cell its
/// steps joined by "; " (or "—" where the event is rejected); columns padded to line up.
template <class P, class E>
std::string to_markdown(const PhaseMatrix<P, E>& matrix) {
  using M = PhaseMatrix<P, E>;
  constexpr std::string_view corner = "phase \\ event";
  constexpr std::string_view rejected = "—";

  // Every text of the table first, then the widths.
  std::vector<std::string> text((M::phase_count + 1) * (M::event_count + 1));
  const auto at = [&](std::size_t r, std::size_t c) -> std::string& {
    return text[r * (M::event_count + 1) + c];
  };
  at(0, 0) = std::string(corner);
  for (std::size_t k = 0; k < M::event_count; ++k) {
    at(0, k + 1) = detail::markdown_cell(event_types<E>::name(k));
  }
  for (std::size_t i = 0; i < M::phase_count; ++i) {
    at(i + 1, 0) = detail::markdown_cell(enumeration<P>::names[i]);
    for (std::size_t k = 0; k < M::event_count; ++k) {
      const auto& cell = matrix.cells()[i * M::event_count + k];
      std::string joined;
      for (const auto& step : cell) {
        if (!joined.empty()) joined += "; ";
        joined += step.text();
      }
      at(i + 1, k + 1) = cell.empty() ? std::string(rejected) : detail::markdown_cell(joined);
    }
  }
  std::vector<std::size_t> widths(M::event_count + 1, 3);  // "---" at least
  for (std::size_t r = 0; r <= M::phase_count; ++r) {
    for (std::size_t c = 0; c <= M::event_count; ++c) {
      widths[c] = std::max(widths[c], detail::display_width(at(r, c)));
    }
  }

  std::string out;
  for (std::size_t r = 0; r <= M::phase_count; ++r) {
    out += "|";
    for (std::size_t c = 0; c <= M::event_count; ++c) {
      out += " ";
      detail::append_padded(out, at(r, c), widths[c]);
      out += " |";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (const std::size_t w : widths) out += std::string(w + 2, '-') + "|";
      out += "\n";
    }
  }
  return out;
}

/// Prints the matrix as Markdown, so a failed `CHECK(a == b)` shows both tables.
template <class P, class E>
std::ostream& operator<<(std::ostream& os, const PhaseMatrix<P, E>& matrix) {
  return os << "\n" << to_markdown(matrix);
}

}  // namespace trellis::testing
