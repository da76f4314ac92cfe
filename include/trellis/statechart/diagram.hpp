#pragma once
/// @file
/// Diagrams of a statechart, drawn from its definition: Mermaid `stateDiagram-v2` and Graphviz
/// DOT. The output is deterministic (document order throughout), so a diagram can be a golden
/// file.
///
/// ```cpp
/// std::cout << trellis::to_mermaid(chart);              // paste into Markdown
/// std::ofstream("player.dot") << trellis::to_dot(chart);  // dot -Tsvg player.dot
/// ```
///
/// What is drawn, in both formats:
/// - A compound state is a box holding its children (Mermaid `state X { ... }`, DOT
///   `subgraph "cluster_X"`) with its initial transition from a start point (Mermaid
///   `[*] --> child`, DOT a point node); a parallel state holds one region per child (Mermaid
///   regions separated by `--`; DOT a cluster per compound region, drawn dashed).
/// - A final state is a state with an arrow to the end point of its parent (Mermaid
///   `done --> [*]`), in DOT a double border.
/// - A history state is a small state labelled `H` (shallow) or `H*` (deep), UML's notation
///   (Mermaid has none of its own), inside the state whose history it records, with an arrow
///   to its default targets; a transition to the history state points at it.
/// - A transition is one arrow per target, labelled `event [guard] / actions`: the event
///   descriptors as written (`(always)` for an eventless transition), the guard's name (`In('x')`
///   for `when_in`), and its content in order: an action's name, `raise e`, `send e` (with
///   `after 500ms` for a delay), `cancel id`, `log label`. A targetless transition is a loop on
///   its source labelled `... (targetless)`; an internal one ends in `(internal)`.
/// - An atomic state's entry and exit blocks are listed on it (`entry / a, b`, `exit / c`); DOT
///   also lists them under a compound or parallel state's label.
///
/// Mermaid specifics: a state whose id is a plain identifier keeps it (`buffering`); any other
/// id (`s1.1`, `media-player`, `default`, Mermaid keywords, hostile text) gets the id
/// `trellis_state_<index>` and is declared as `state "its id" as trellis_state_<index>`.
/// Labels are escaped with Mermaid's entity codes (`:`, `;`, `#`, `%`, `"`, `{`, `}`, `<`, `>`,
/// `[`, `]`, and the `d` of "direction"); a line break or control character becomes a space.
/// Every state is declared inside its parent before any arrow is written; an arrow between two
/// children of one compound state is written inside it, every other arrow at the top level (so
/// that no Mermaid version moves a state out of its parent when an outer arrow names it).
///
/// DOT specifics: `compound=true`; an arrow to or from a compound or parallel state starts or
/// ends at its cluster's border (`lhead`/`ltail`, anchored on a node inside the cluster);
/// every name and label is quoted, with `"` and `\` escaped and a line break written `\n`;
/// bytes that are not UTF-8 become `?` in both formats.

#include <string>

#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/definition.hpp"

namespace trellis {

/// The chart as a Mermaid `stateDiagram-v2` (see the file comment).
std::string to_mermaid(const ChartDefinition& chart);

/// The chart as a Graphviz DOT digraph named after the chart (see the file comment).
std::string to_dot(const ChartDefinition& chart);

/// The same, from a `Chart<D>`.
template <class D>
std::string to_mermaid(const Chart<D>& chart) {
  return to_mermaid(chart.definition());
}

template <class D>
std::string to_dot(const Chart<D>& chart) {
  return to_dot(chart.definition());
}

}  // namespace trellis
