#pragma once
/// @file
/// Pictures of agent graphs: `to_mermaid` (a Mermaid flowchart) and `to_dot` (Graphviz) draw a
/// GraphShape (graph_shape.hpp: Graph::shape(), or Store::graph(fingerprint) in a program that
/// does not link the graph), optionally with a run's path over it (`run_path(history)`).
///
/// ```cpp
/// std::cout << graph.to_mermaid();                                    // the graph
/// const auto path = trellis::agent::run_path(store.history("run-7"));
/// std::ofstream("run-7.dot") << trellis::agent::to_dot(graph.shape(), &path);  // dot -Tsvg
/// ```
///
/// What is drawn: a start point with an edge to the entry node, and the end (end_node); every
/// node in the order it was added, labelled with its name and, on a second line, the effects it
/// declares ("effects: refund"); an approval gate as a hexagon (class `approval`), a node that
/// makes effects with a double border (DOT) or as a subroutine box (Mermaid; class `effect`);
/// every declared edge. A node without declared successors is drawn without edges.
///
/// With a path: each visited node has a line "visits: N" and class `visited` (DOT: a blue
/// border); the current node (where the run stands: its next node, end when it succeeded) is
/// drawn thick (class `current`; `failed` in red when the run failed there); each edge the
/// run took is labelled with how many steps took it and drawn bold, or dashed when the node
/// does not declare it (a graph without declarations); a step that paused the run (an
/// Interrupt) is an edge of its own labelled "N, pause" (to the node that runs after the
/// decision: the node itself when it reruns). Names the shape does not know (the path of a
/// run stored by an older graph) are drawn as dashed nodes.
///
/// Node names are free text: Mermaid labels are quoted with `"`, `<`, `>`, `&`, `#`, `;`,
/// `:`, `%`, `|` and '`' as Mermaid entity codes and a line break as `<br>`; DOT strings are
/// quoted with `"` and `\` escaped and a line break as `\n`; other control characters become
/// spaces and bytes that are not UTF-8 '?'. Node ids are generated (n0, n1, ...), never names.
/// The output is deterministic (golden-file friendly).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trellis/agent/checkpoint.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

/// A run's way through its graph, from its checkpoints.
struct RunPath {
  struct Edge {
    std::string from;
    std::string to;      ///< a node name, or end_node
    bool pause = false;  ///< the step paused the run (an Interrupt); `to` runs after the decision
    std::uint64_t count = 0;  ///< steps that took it

    friend bool operator==(const Edge&, const Edge&) = default;
  };

  std::string run_id;
  std::map<std::string, std::uint64_t> visits;  ///< node -> steps it completed
  std::vector<Edge> edges;                      ///< in the order first taken
  std::string current;  ///< the newest checkpoint's next node; end_node when it succeeded
  RunStatus status = RunStatus::Queued;  ///< the newest checkpoint's
  std::uint64_t steps = 0;               ///< steps completed

  friend bool operator==(const RunPath&, const RunPath&) = default;
};

/// The path of the run whose checkpoints are `history` (oldest first, as Store::history gives
/// them). Each step is a pair of consecutive checkpoints whose step count grows by one: the
/// node that ran is the earlier one's next node, the step's destination the later one's next
/// node (end_node when it succeeded). Checkpoints that are not steps (decisions, retries,
/// cancellations, failures) add no edge. Empty history: an empty path.
RunPath run_path(const std::vector<Checkpoint>& history);

/// A Mermaid flowchart of `shape` (with `path` over it when not null).
std::string to_mermaid(const GraphShape& shape, const RunPath* path = nullptr);
/// A Graphviz digraph of `shape` (with `path` over it when not null).
std::string to_dot(const GraphShape& shape, const RunPath* path = nullptr);

}  // namespace trellis::agent
