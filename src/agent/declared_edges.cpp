// Declared edges, approval gates and effect names of a graph (graph.hpp, "Declared edges"):
// the checks of the run loop and the graph's shape (graph_shape.hpp).

#include <algorithm>

#include "trellis/agent/detail/run_loop.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent::detail {

namespace {

std::string listed(const std::vector<std::string>& names) {
  if (names.empty()) return "nothing";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::string>* GraphSpec::successors(std::string_view node) const {
  if (const auto g = by_graph.find(node); g != by_graph.end() && g->second.successors)
    return &*g->second.successors;
  if (const auto n = by_node.find(node); n != by_node.end() && n->second.successors)
    return &*n->second.successors;
  return nullptr;
}

void GraphSpec::check_declarations() const {
  for (const auto& [name, declared] : by_graph)
    if (!nodes.contains(name))
      throw graph_error("trellis: the graph declares edges, an approval gate or effects of '" +
                        name + "', which is not one of its nodes");
  for (const auto& entry : nodes) {
    const std::vector<std::string>* to = successors(entry.first);
    if (to == nullptr) continue;
    for (const std::string& s : *to)
      if (s != end_node && !nodes.contains(s))
        throw graph_error("trellis: node '" + entry.first + "' declares a successor '" + s +
                          "' that is not a node of the graph (nor " + std::string(end_node) + ")");
  }
}

std::optional<std::string> GraphSpec::undeclared_edge(std::string_view node,
                                                      const NextStep& next) const {
  const std::vector<std::string>* to = successors(node);
  if (to == nullptr) return std::nullopt;
  const std::string from(node);
  const std::string declared = " (it declares " + listed(*to) + ")";
  if (const auto* go = std::get_if<Goto>(&next)) {
    if (contains(*to, go->node)) return std::nullopt;
    return "node '" + from + "' went to '" + go->node + "', an edge it does not declare" + declared;
  }
  if (std::holds_alternative<Halt>(next)) {
    if (contains(*to, end_node)) return std::nullopt;
    return "node '" + from + "' halted, and it does not declare " + std::string(end_node) +
           declared;
  }
  if (const auto* sleep = std::get_if<Sleep>(&next)) {
    if (sleep->then.empty() || contains(*to, sleep->then)) return std::nullopt;
    return "node '" + from + "' slept to continue at '" + sleep->then +
           "', an edge it does not declare" + declared;
  }
  const Interrupt& pause = std::get<Interrupt>(next);
  if (pause.then.empty() || contains(*to, pause.then)) return std::nullopt;
  return "node '" + from + "' paused to continue at '" + pause.then +
         "', an edge it does not declare" + declared;
}

GraphShape GraphSpec::shape() const {
  GraphShape out;
  out.fingerprint = fingerprint();
  out.entry = entry;
  std::vector<const std::string*> ordered(nodes.size());
  for (const auto& entry : nodes) ordered[entry.second] = &entry.first;
  out.nodes.reserve(ordered.size());
  for (const std::string* name : ordered) {
    NodeShape n;
    n.name = *name;
    if (const std::vector<std::string>* to = successors(*name)) {
      n.successors = *to;
      n.declared = true;
    }
    const auto own = by_node.find(*name);
    const auto given = by_graph.find(*name);
    n.approval = (own != by_node.end() && own->second.approval) ||
                 (given != by_graph.end() && given->second.approval);
    if (given != by_graph.end() && given->second.effects)
      n.effects = *given->second.effects;
    else if (own != by_node.end() && own->second.effects)
      n.effects = *own->second.effects;
    out.nodes.push_back(std::move(n));
  }
  return out;
}

}  // namespace trellis::agent::detail
