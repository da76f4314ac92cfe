// Pictures of agent graphs (diagram.hpp): one model of what is drawn, two writers.

#include "trellis/agent/diagram.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "trellis/json/enumeration.hpp"
#include "trellis/machine/detail/diagram_text.hpp"

namespace trellis::agent {

namespace {

// One line of a Mermaid label, inside "...": what Mermaid's parser or its HTML labels would
// read as syntax becomes an entity code; a line break becomes <br>.
std::string mermaid_text(std::string_view raw) {
  std::string out;
  for (const char c : trellis::detail::diagram_utf8(raw)) {
    switch (c) {
      case '"':
        out += "#34;";
        break;
      case '#':
        out += "#35;";
        break;
      case '%':
        out += "#37;";
        break;
      case '&':
        out += "#38;";
        break;
      case ':':
        out += "#58;";
        break;
      case ';':
        out += "#59;";
        break;
      case '<':
        out += "#60;";
        break;
      case '>':
        out += "#62;";
        break;
      case '`':
        out += "#96;";
        break;
      case '|':
        out += "#124;";
        break;
      case '\n':
        out += "<br>";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? ' ' : c;
    }
  }
  return out;
}

std::string dot_quoted(std::string_view text) {
  return "\"" + trellis::detail::dot_text(text) + "\"";
}

std::string joined(const std::vector<std::string>& items, std::string_view by = ", ") {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += by;
    out += s;
  }
  return out;
}

// A line of a comment: no line break may end it early.
std::string one_line(std::string_view raw) {
  std::string out = trellis::detail::diagram_utf8(raw);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  return out;
}

enum class Look { plain, taken, undeclared };

struct DrawnNode {
  std::string id;
  std::vector<std::string> lines;  // the label, line by line (raw text)
  bool approval = false;
  bool effect = false;
  bool unknown = false;  // not a node of the shape
  bool visited = false;
  bool current = false;
  bool failed = false;
  bool terminal_point = false;  // start or end
};

struct DrawnEdge {
  std::string from;  // ids
  std::string to;
  std::string label;
  Look look = Look::plain;
};

/// What both writers draw.
struct Picture {
  std::string title;  // the run, with a path
  DrawnNode start;
  DrawnNode end;
  std::vector<DrawnNode> nodes;  // the shape's, then the unknown ones
  std::vector<DrawnEdge> edges;
  std::map<std::string, std::size_t, std::less<>> by_name;  // index into nodes

  std::string id(const std::string& name) {
    if (name == end_node) return end.id;
    if (const auto it = by_name.find(name); it != by_name.end()) return nodes[it->second].id;
    DrawnNode n;
    n.id = "x" + std::to_string(nodes.size());
    n.lines = {name};
    n.unknown = true;
    by_name.emplace(name, nodes.size());
    nodes.push_back(std::move(n));
    return nodes.back().id;
  }
  DrawnNode* node(const std::string& name) {
    if (name == end_node) return &end;
    id(name);
    return &nodes[by_name.find(name)->second];
  }
};

std::string count_label(std::uint64_t count, bool pause) {
  return std::to_string(count) + (pause ? ", pause" : "");
}

Picture picture(const GraphShape& shape, const RunPath* path) {
  Picture p;
  p.start = {.id = "trellis_start", .lines = {"start"}, .terminal_point = true};
  p.end = {.id = "trellis_end", .lines = {"end"}, .terminal_point = true};
  for (const NodeShape& s : shape.nodes) {
    if (p.by_name.contains(s.name)) continue;  // a malformed shape: the first one counts
    DrawnNode n;
    n.id = "n" + std::to_string(p.nodes.size());
    n.lines = {s.name};
    if (!s.effects.empty()) n.lines.push_back("effects: " + joined(s.effects));
    n.approval = s.approval;
    n.effect = !s.effects.empty();
    p.by_name.emplace(s.name, p.nodes.size());
    p.nodes.push_back(std::move(n));
  }
  if (!shape.entry.empty()) p.edges.push_back({p.start.id, p.id(shape.entry), {}, Look::plain});

  const auto taken = [path](const std::string& from, const std::string& to,
                            bool pause) -> const RunPath::Edge* {
    if (path == nullptr) return nullptr;
    for (const RunPath::Edge& e : path->edges)
      if (e.from == from && e.to == to && e.pause == pause) return &e;
    return nullptr;
  };
  for (const NodeShape& s : shape.nodes) {
    if (!s.declared) continue;
    for (const std::string& to : s.successors) {
      const RunPath::Edge* e = taken(s.name, to, false);
      p.edges.push_back({p.id(s.name), p.id(to), e ? count_label(e->count, false) : "",
                         e ? Look::taken : Look::plain});
    }
  }
  if (path == nullptr) return p;

  p.title = "run " + path->run_id + ": " + std::string(enumeration<RunStatus>::name(path->status)) +
            ", " + std::to_string(path->steps) + (path->steps == 1 ? " step" : " steps");
  for (const RunPath::Edge& e : path->edges) {
    const NodeShape* from = shape.node(e.from);
    const bool declared =
        from != nullptr && from->declared &&
        ((e.pause && e.to == e.from) || std::find(from->successors.begin(), from->successors.end(),
                                                  e.to) != from->successors.end());
    if (declared && !e.pause) continue;  // drawn above, with its count
    p.edges.push_back({p.id(e.from), p.id(e.to), count_label(e.count, e.pause),
                       declared ? Look::taken : Look::undeclared});
  }
  for (const auto& [name, count] : path->visits) {
    DrawnNode* n = p.node(name);
    n->visited = true;
    n->lines.push_back("visits: " + std::to_string(count));
  }
  if (!path->current.empty()) {
    DrawnNode* n = p.node(path->current);
    n->current = true;
    n->failed = path->status == RunStatus::Failed;
  }
  return p;
}

// --- Mermaid ---------------------------------------------------------------------------------

std::string mermaid_label(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "<br>") + mermaid_text(line);
  return "\"" + out + "\"";
}

std::string mermaid_node(const DrawnNode& n) {
  const std::string label = mermaid_label(n.lines);
  if (n.terminal_point) return n.id + "((" + label + "))";
  if (n.approval) return n.id + "{{" + label + "}}";
  if (n.effect) return n.id + "[[" + label + "]]";
  return n.id + "[" + label + "]";
}

std::vector<std::string> classes(const DrawnNode& n) {
  std::vector<std::string> out;
  if (n.approval) out.emplace_back("approval");
  if (n.effect) out.emplace_back("effect");
  if (n.unknown) out.emplace_back("unknown");
  if (n.visited) out.emplace_back("visited");
  if (n.current) out.emplace_back(n.failed ? "failed" : "current");
  return out;
}

constexpr std::pair<std::string_view, std::string_view> mermaid_styles[] = {
    {"approval", "fill:#fff4d6,stroke:#c99700"},
    {"effect", "fill:#fde2e1,stroke:#b3261e"},
    {"unknown", "stroke-dasharray:4 4"},
    {"visited", "stroke:#1d4ed8,stroke-width:2px"},
    {"current", "stroke:#111111,stroke-width:4px"},
    {"failed", "stroke:#b3261e,stroke-width:4px"},
};

// --- DOT -------------------------------------------------------------------------------------

std::string dot_attributes(const std::vector<std::pair<std::string, std::string>>& attrs) {
  if (attrs.empty()) return "";
  std::string out = " [";
  for (std::size_t i = 0; i < attrs.size(); ++i)
    out += (i == 0 ? "" : ", ") + attrs[i].first + "=" + dot_quoted(attrs[i].second);
  return out + "]";
}

std::string dot_label(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

std::string dot_node(const DrawnNode& n) {
  std::vector<std::pair<std::string, std::string>> a{{"label", dot_label(n.lines)}};
  if (n.terminal_point) {
    a.emplace_back("shape", n.id == "trellis_end" ? "doublecircle" : "circle");
  } else if (n.approval) {
    a.emplace_back("shape", "hexagon");
  }
  if (n.effect) a.emplace_back("peripheries", "2");
  std::vector<std::string> style;
  if (!n.terminal_point && !n.approval) style.emplace_back("rounded");
  if (n.approval || n.effect) style.emplace_back("filled");
  if (n.unknown) style.emplace_back("dashed");
  if (!style.empty()) a.emplace_back("style", joined(style, ","));
  if (n.approval)
    a.emplace_back("fillcolor", "#fff4d6");
  else if (n.effect)
    a.emplace_back("fillcolor", "#fde2e1");
  if (n.current) {
    a.emplace_back("color", n.failed ? "#b3261e" : "#111111");
    a.emplace_back("penwidth", "4");
  } else if (n.visited) {
    a.emplace_back("color", "#1d4ed8");
    a.emplace_back("penwidth", "2");
  }
  return "  " + n.id + dot_attributes(a) + ";\n";
}

}  // namespace

RunPath run_path(const std::vector<Checkpoint>& history) {
  RunPath path;
  if (history.empty()) return path;
  path.run_id = history.back().run_id;
  for (std::size_t i = 1; i < history.size(); ++i) {
    const Checkpoint& before = history[i - 1];
    const Checkpoint& after = history[i];
    if (after.step != before.step + 1) continue;  // not a step (or a gap in the history)
    const std::string& from = before.next_node;
    const bool pause = after.status == RunStatus::WaitingApproval;
    const std::string to =
        after.status == RunStatus::Succeeded ? std::string(end_node) : after.next_node;
    ++path.visits[from];
    const auto it = std::find_if(path.edges.begin(), path.edges.end(), [&](const auto& e) {
      return e.from == from && e.to == to && e.pause == pause;
    });
    if (it != path.edges.end())
      ++it->count;
    else
      path.edges.push_back({from, to, pause, 1});
  }
  const Checkpoint& newest = history.back();
  path.status = newest.status;
  path.steps = newest.step;
  path.current = newest.status == RunStatus::Succeeded ? std::string(end_node) : newest.next_node;
  return path;
}

std::string to_mermaid(const GraphShape& shape, const RunPath* path) {
  const Picture p = picture(shape, path);
  std::string out;
  out += "flowchart TD\n";
  if (!p.title.empty()) out += "    %% " + one_line(p.title) + "\n";
  out += "    " + mermaid_node(p.start) + "\n";
  for (const DrawnNode& n : p.nodes) out += "    " + mermaid_node(n) + "\n";
  out += "    " + mermaid_node(p.end) + "\n";
  for (const DrawnEdge& e : p.edges) {
    const char* arrow = e.look == Look::taken ? "==>" : e.look == Look::undeclared ? "-.->" : "-->";
    out += "    " + e.from + " " + arrow;
    if (!e.label.empty()) out += "|\"" + mermaid_text(e.label) + "\"|";
    out += " " + e.to + "\n";
  }
  std::map<std::string, std::vector<std::string>> members;  // class -> ids
  const auto add = [&members](const DrawnNode& n) {
    for (const std::string& c : classes(n)) members[c].push_back(n.id);
  };
  for (const DrawnNode& n : p.nodes) add(n);
  add(p.end);
  for (const auto& [name, style] : mermaid_styles) {
    const auto it = members.find(std::string(name));
    if (it == members.end()) continue;
    out += "    classDef " + std::string(name) + " " + std::string(style) + "\n";
    out += "    class " + joined(it->second, ",") + " " + std::string(name) + "\n";
  }
  return out;
}

std::string to_dot(const GraphShape& shape, const RunPath* path) {
  const Picture p = picture(shape, path);
  std::string out = "digraph \"trellis agent graph\" {\n";
  if (!p.title.empty()) out += "  graph [label=" + dot_quoted(p.title) + ", labelloc=\"t\"];\n";
  out += "  node [shape=\"box\", fontname=\"Helvetica\"];\n";
  out += "  edge [fontname=\"Helvetica\"];\n";
  out += dot_node(p.start);
  for (const DrawnNode& n : p.nodes) out += dot_node(n);
  out += dot_node(p.end);
  for (const DrawnEdge& e : p.edges) {
    std::vector<std::pair<std::string, std::string>> a;
    if (!e.label.empty()) a.emplace_back("label", e.label);
    if (e.look == Look::taken) {
      a.emplace_back("color", "#1d4ed8");
      a.emplace_back("penwidth", "2");
    } else if (e.look == Look::undeclared) {
      a.emplace_back("style", "dashed");
    }
    out += "  " + e.from + " -> " + e.to + dot_attributes(a) + ";\n";
  }
  return out + "}\n";
}

}  // namespace trellis::agent
