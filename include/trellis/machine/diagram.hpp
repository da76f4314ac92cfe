#pragma once
/// @file
/// Diagrams of a machine: Mermaid (`stateDiagram-v2`) and Graphviz DOT, drawn from a
/// `TransitionTable` (what was declared) or from a `TransitionMatrix` (what any transition
/// function actually does). A table over a struct state is drawn over its phases: each edge is
/// labelled with its event type, its guard and its update, `Coin [accepted coin && credit
/// stays <= 500] / add credit`, and the phases declared `terminal()` are marked (Mermaid
/// `OutOfOrder --> [*]`, DOT a double border). Phases and events are named by their
/// enumerations and event type names, and the output is deterministic, so a diagram can itself
/// be a golden file.
///
/// ```cpp
/// std::cout << trellis::to_mermaid(vending::table(), vending::Phase::Idle);  // [*] --> Idle
/// std::ofstream("light.dot") << trellis::to_dot(trellis::testing::transition_matrix(step));
/// ```
///
/// Edges are listed by source phase, then event type, in enumeration order; the events that
/// lead from one phase to the same target share one edge, labelled "Advance, Skip". From a
/// table, a row hidden by an earlier unguarded row for the same phase and event (the first
/// match wins) is not drawn, so an unguarded table draws exactly the diagram of its matrix.
/// Names are escaped: Mermaid's ';', '#', '%' and '"' become entity codes and a line break a
/// space; DOT quotes every name and label, escaping '"' and '\' (a line break becomes `\n`);
/// a phase name that is not an identifier (possible with a hand-written enumeration hook) gets
/// a Mermaid id of its own and is shown as its label.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/machine/event_types.hpp"
#include "trellis/machine/transition_table.hpp"
#include "trellis/testing/transition_matrix.hpp"

namespace trellis::detail {

// A drawn edge between enumeration indices, with the labels of every event it stands for.
struct DiagramEdge {
  std::size_t from;
  std::size_t to;
  std::string label;
};

inline void add_edge(std::vector<DiagramEdge>& edges, std::size_t from, std::size_t to,
                     std::string_view label) {
  for (DiagramEdge& edge : edges) {
    if (edge.from == from && edge.to == to) {
      edge.label += ", ";
      edge.label += label;
      return;
    }
  }
  edges.push_back({from, to, std::string(label)});
}

template <class S, class E, class P>
std::vector<DiagramEdge> diagram_edges(const TransitionTable<S, E, P>& table) {
  static_assert(Enumerated<P>,
                "to_mermaid/to_dot: the phases need an enumeration to be drawn; declare "
                "TRELLIS_ENUM(P, ...) next to them");
  static_assert(event_types<E>::count > 0,
                "to_mermaid/to_dot: events need kinds to be drawn: a std::variant of event types, "
                "or an enum declared with TRELLIS_ENUM");
  table.check_complete();
  // A row naming a phase its enumeration does not list would silently vanish from the
  // drawing; the enumeration is incomplete, and that is worth an error.
  for (const auto& row : table.rows()) {
    for (const P& p : row.from) listed_index(p);
    if (row.to) listed_index(*row.to);
    if constexpr (!event_types<E>::by_type) {  // an on<T>() row names a type, not a value
      if (row.event) listed_index(*row.event);
    }
  }
  std::vector<DiagramEdge> edges;
  for (const P& p : enumeration<P>::values) {
    for (std::size_t k = 0; k < event_types<E>::count; ++k) {
      for (const auto& row : table.rows()) {
        if (row.kind != k || !row.covers(p)) continue;
        std::string label = row.event_name();
        if (row.has_guard()) label += " [" + row.guard_name + "]";
        if (row.has_update() && !row.update_name.empty()) label += " / " + row.update_name;
        add_edge(edges, listed_index(p), listed_index(row.target(p)), label);
        if (!row.has_guard()) break;  // later rows for (p, k) are never reached
      }
    }
  }
  return edges;
}

template <class S, class E>
std::vector<DiagramEdge> diagram_edges(const testing::TransitionMatrix<S, E>& matrix) {
  std::vector<DiagramEdge> edges;
  for (const S& s : enumeration<S>::values) {
    for (const E& e : enumeration<E>::values) {
      if (const auto& to = matrix.at(s, e)) {
        add_edge(edges, listed_index(s), listed_index(*to), enumeration<E>::name(e));
      }
    }
  }
  return edges;
}

// Mermaid ends a statement at ';' and at a line break, and starts a comment at '%%'; its
// entity codes keep a guard name such as "retries < 3; no budget" intact.
inline std::string mermaid_label(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == ';') {
      out += "#59;";
    } else if (c == '#') {
      out += "#35;";
    } else if (c == '%') {
      out += "#37;";
    } else if (c == '"') {
      out += "#quot;";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';  // a line break or tab would end the statement
    } else {
      out += c;
    }
  }
  return out;
}

// A state's id in Mermaid: its name when that is an identifier (always, for TRELLIS_ENUM), or
// "trellis_state_<index>", declared with the name as its label (a hand-written enumeration
// hook may name values freely).
inline std::string mermaid_id(std::string_view name, std::size_t index) {
  if (is_identifier(name)) return std::string(name);
  return "trellis_state_" + std::to_string(index);
}

// DOT reads '"' and '\' as syntax inside a quoted string; a line break becomes DOT's "\n".
inline std::string dot_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class S>
bool is_terminal(const std::vector<S>& terminals, std::size_t index) {
  for (const S& t : terminals) {
    if (listed_index(t) == index) return true;
  }
  return false;
}

template <class S>
std::string render_mermaid(const std::vector<DiagramEdge>& edges, const std::optional<S>& initial,
                           const std::vector<S>& terminals) {
  using SE = enumeration<S>;
  const auto id = [](std::size_t i) { return mermaid_id(SE::names[i], i); };
  std::string out = "stateDiagram-v2\n";
  for (std::size_t i = 0; i < SE::size; ++i) {
    if (!is_identifier(SE::names[i])) {
      out += "    state \"" + mermaid_label(SE::names[i]) + "\" as " + id(i) + "\n";
    }
  }
  // States without edges would otherwise not appear at all.
  for (std::size_t i = 0; i < SE::size; ++i) {
    bool linked = (initial && listed_index(*initial) == i) || is_terminal(terminals, i);
    for (const DiagramEdge& edge : edges) linked = linked || edge.from == i || edge.to == i;
    if (!linked) out += "    " + id(i) + "\n";
  }
  if (initial) out += "    [*] --> " + id(listed_index(*initial)) + "\n";
  for (const DiagramEdge& edge : edges) {
    out +=
        "    " + id(edge.from) + " --> " + id(edge.to) + " : " + mermaid_label(edge.label) + "\n";
  }
  for (std::size_t i = 0; i < SE::size; ++i) {
    if (is_terminal(terminals, i)) out += "    " + id(i) + " --> [*]\n";
  }
  return out;
}

template <class S>
std::string render_dot(const std::vector<DiagramEdge>& edges, const std::optional<S>& initial,
                       const std::vector<S>& terminals) {
  using SE = enumeration<S>;
  std::string out = "digraph " + dot_quoted(SE::type_name) + " {\n";
  out += "  rankdir=LR;\n";
  out += "  node [shape=box, style=rounded];\n";
  if (initial) out += "  __initial [shape=point, label=\"\"];\n";
  for (std::size_t i = 0; i < SE::size; ++i) {
    out += "  " + dot_quoted(SE::names[i]) +
           (is_terminal(terminals, i) ? " [peripheries=2];\n" : ";\n");
  }
  if (initial) out += "  __initial -> " + dot_quoted(SE::name(*initial)) + ";\n";
  for (const DiagramEdge& edge : edges) {
    out += "  " + dot_quoted(SE::names[edge.from]) + " -> " + dot_quoted(SE::names[edge.to]) +
           " [label=" + dot_quoted(edge.label) + "];\n";
  }
  return out + "}\n";
}

}  // namespace trellis::detail

namespace trellis {

/// A Mermaid `stateDiagram-v2` of the declared rows; `initial`, when given, gets the `[*]`
/// arrow, and each phase declared `terminal()` an arrow to `[*]`.
template <class S, class E, class P>
std::string to_mermaid(const TransitionTable<S, E, P>& table,
                       const std::type_identity_t<std::optional<P>>& initial = std::nullopt) {
  return detail::render_mermaid<P>(detail::diagram_edges(table), initial, table.terminals());
}

/// A Mermaid `stateDiagram-v2` of every accepted (state, event) pair of the matrix; the
/// `terminals` get an arrow to `[*]`.
template <class S, class E>
std::string to_mermaid(const testing::TransitionMatrix<S, E>& matrix,
                       const std::type_identity_t<std::optional<S>>& initial = std::nullopt,
                       const std::type_identity_t<std::vector<S>>& terminals = {}) {
  return detail::render_mermaid<S>(detail::diagram_edges(matrix), initial, terminals);
}

/// A Graphviz DOT digraph of the declared rows; `initial`, when given, gets an entry arrow,
/// and each phase declared `terminal()` a double border (`peripheries=2`).
template <class S, class E, class P>
std::string to_dot(const TransitionTable<S, E, P>& table,
                   const std::type_identity_t<std::optional<P>>& initial = std::nullopt) {
  return detail::render_dot<P>(detail::diagram_edges(table), initial, table.terminals());
}

/// A Graphviz DOT digraph of every accepted (state, event) pair of the matrix; the
/// `terminals` get a double border.
template <class S, class E>
std::string to_dot(const testing::TransitionMatrix<S, E>& matrix,
                   const std::type_identity_t<std::optional<S>>& initial = std::nullopt,
                   const std::type_identity_t<std::vector<S>>& terminals = {}) {
  return detail::render_dot<S>(detail::diagram_edges(matrix), initial, terminals);
}

}  // namespace trellis
