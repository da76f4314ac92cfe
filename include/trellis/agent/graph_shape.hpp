#pragma once
/// @file
/// `GraphShape`: what can be known of a graph without running it: its nodes, its entry, the
/// edges its nodes declare (Graph::edges or Node::successors), which nodes are approval gates
/// and which effects they make. Graph::shape() gives it; run() stores it in the run's store
/// (Store::put_graph, under the graph's fingerprint), so a program that does not link the
/// graph (the `trellis` command) can draw a run over it (diagram.hpp).

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// The name that stands for "the run ends here" (Halt) in a node's declared successors.
inline constexpr std::string_view end_node = "__end__";

struct NodeShape {
  std::string name;
  /// Where the node may go (node names, and end_node when it may Halt), when it declares it.
  std::vector<std::string> successors = {};
  bool declared = false;                  ///< whether `successors` was declared (else: anywhere)
  bool approval = false;                  ///< an approval gate (it may Interrupt for a decision)
  std::vector<std::string> effects = {};  ///< the names of the effects it may make

  friend bool operator==(const NodeShape&, const NodeShape&) = default;
};

struct GraphShape {
  std::string fingerprint;
  std::string entry;
  std::vector<NodeShape> nodes;  ///< in the order they were added

  /// The node named `name`, or nullptr.
  const NodeShape* node(std::string_view name) const;
  friend bool operator==(const GraphShape&, const GraphShape&) = default;
};

void to_json(nlohmann::json& j, const NodeShape& n);
void from_json(const nlohmann::json& j, NodeShape& n);
void to_json(nlohmann::json& j, const GraphShape& g);
void from_json(const nlohmann::json& j, GraphShape& g);

}  // namespace trellis::agent
