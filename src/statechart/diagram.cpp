// Mermaid and DOT diagrams of a chart definition (see trellis/statechart/diagram.hpp).

#include "trellis/statechart/diagram.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/machine/detail/diagram_text.hpp"

namespace trellis {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  const auto first = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(first) != 0 || first == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x80 && (std::isalnum(c) != 0 || c == '_');
  });
}

// --- labels --------------------------------------------------------------------------------

std::string block_text(const ChartBlock& block) {
  std::string out;
  for (const ChartOp& op : block) {
    if (!out.empty()) out += ", ";
    switch (op.kind) {
      case ChartOp::Kind::call:
        out += op.name;
        break;
      case ChartOp::Kind::raise:
        out += "raise " + op.name;
        break;
      case ChartOp::Kind::send:
        out += "send " + op.name;
        if (op.delay.count() != 0) out += " after " + std::to_string(op.delay.count()) + "ms";
        if (!op.send_id.empty()) out += " (id " + op.send_id + ")";
        break;
      case ChartOp::Kind::cancel:
        out += "cancel " + op.name;
        break;
      case ChartOp::Kind::log:
        out += "log " + op.name;
        break;
    }
  }
  return out;
}

std::string blocks_text(const std::vector<ChartBlock>& blocks) {
  std::string out;
  for (const ChartBlock& b : blocks) {
    const std::string text = block_text(b);
    if (text.empty()) continue;
    if (!out.empty()) out += ", ";
    out += text;
  }
  return out;
}

// "event [guard] / actions", for a selectable transition.
std::string transition_label(const ChartDefinition& def, const ChartTransition& t) {
  std::string out;
  if (t.eventless()) {
    out = "(always)";
  } else {  // as written, whitespace runs as one space
    for (const char c : t.event) {
      const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      if (!space) {
        out += c;
      } else if (!out.empty() && out.back() != ' ') {
        out += ' ';
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  if (t.guard >= 0) {
    const std::string& name = def.guards[static_cast<std::size_t>(t.guard)].name;
    out += " [" + (name.empty() ? std::string("guard") : name) + "]";
  }
  if (const std::string content = block_text(t.content); !content.empty()) {
    out += " / " + content;
  }
  if (t.targets.empty()) {
    out += " (targetless)";
  } else if (t.internal) {
    out += " (internal)";
  }
  return out;
}

// "/ actions" for an initial or history-default transition with content, else "".
std::string pseudo_label(const ChartTransition& t) {
  const std::string content = block_text(t.content);
  return content.empty() ? std::string() : "/ " + content;
}

// The entry and exit lines of a state ("entry / a, b", "exit / c").
std::vector<std::string> entry_exit_lines(const ChartState& st) {
  std::vector<std::string> out;
  if (const std::string e = blocks_text(st.on_entry); !e.empty()) out.push_back("entry / " + e);
  if (const std::string x = blocks_text(st.on_exit); !x.empty()) out.push_back("exit / " + x);
  return out;
}

// One drawn arrow: a transition to one of its targets (or a loop for a targetless one), an
// initial transition from the start point of `from` (initial), or a history's default.
struct Edge {
  int from;
  int to;
  std::string label;
  enum class Kind { transition, history_default } kind = Kind::transition;
};

std::vector<Edge> transition_edges(const ChartDefinition& def) {
  std::vector<Edge> edges;
  for (const ChartTransition& t : def.transitions) {
    if (t.pseudo) continue;
    const std::string label = transition_label(def, t);
    if (t.targets.empty()) {
      edges.push_back({t.source, t.source, label});
    } else {
      for (const int x : t.targets) edges.push_back({t.source, x, label});
    }
  }
  for (std::size_t s = 0; s < def.states.size(); ++s) {
    const ChartState& st = def.states[s];
    if (!st.is_history() || st.initial < 0) continue;
    const ChartTransition& t = def.transition(st.initial);
    for (const int x : t.targets) {
      edges.push_back({static_cast<int>(s), x, pseudo_label(t), Edge::Kind::history_default});
    }
  }
  return edges;
}

// --- Mermaid -------------------------------------------------------------------------------

// Mermaid reads ':' ';' '#' '%' '"' '{' '}' '<' '>' '[' ']' as syntax in some places, and a
// line mentioning "direction" followed by TB/LR/... as a direction statement; entity codes keep
// the text as written.
std::string mermaid_text(std::string_view raw) {
  const std::string s = trellis::detail::diagram_utf8(raw);
  const std::string low = lower(s);
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (low.compare(i, 9, "direction") == 0) {
      out += c == 'D' ? "#68;" : "#100;";
      continue;
    }
    switch (c) {
      case ':':
        out += "#58;";
        break;
      case ';':
        out += "#59;";
        break;
      case '#':
        out += "#35;";
        break;
      case '%':
        out += "#37;";
        break;
      case '"':
        out += "#quot;";
        break;
      case '{':
        out += "#123;";
        break;
      case '}':
        out += "#125;";
        break;
      case '<':
        out += "#lt;";
        break;
      case '>':
        out += "#gt;";
        break;
      case '[':
        out += "#91;";
        break;
      case ']':
        out += "#93;";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? ' ' : c;
    }
  }
  return out;
}

// Whether Mermaid reads `id` as a plain state id: an identifier that is not one of its
// keywords and does not start a keyword rule ("default...", "direction").
bool mermaid_plain(std::string_view id) {
  if (!is_identifier(id)) return false;
  const std::string l = lower(id);
  if (l.starts_with("default") || l.find("direction") != std::string::npos ||
      l.starts_with("trellis_state_") || l.starts_with("acctitle") || l.starts_with("accdescr")) {
    return false;
  }
  static constexpr std::string_view reserved[] = {
      "state", "note", "class", "classdef", "scale", "statediagram", "hide",
      "end",   "as",   "style", "click",    "left",  "right",        "of"};
  return std::find(std::begin(reserved), std::end(reserved), l) == std::end(reserved);
}

class MermaidWriter {
 public:
  explicit MermaidWriter(const ChartDefinition& def) : def_(def), edges_(transition_edges(def)) {
    ids_.resize(def.states.size());
    for (std::size_t s = 0; s < def.states.size(); ++s) {
      const std::string& id = def.states[s].id;
      ids_[s] = mermaid_plain(id) ? id : "trellis_state_" + std::to_string(s);
    }
    place_.reserve(edges_.size());
    for (const Edge& e : edges_) place_.push_back(place(e));
  }

  std::string run() {
    out_ = "stateDiagram-v2\n";
    body(0, 1);
    return std::move(out_);
  }

 private:
  // The compound state (or the root) whose block the arrow is written in: the common parent
  // of two siblings, else the top level.
  int place(const Edge& e) const {
    const int p = def_.state(e.from).parent;
    if (p < 0 || def_.state(e.to).parent != p || !def_.state(p).is_compound()) return 0;
    return p;
  }

  void line(int indent, const std::string& text) {
    out_.append(static_cast<std::size_t>(indent) * 4, ' ');
    out_ += text;
    out_ += '\n';
  }

  const std::string& id(int s) const { return ids_[static_cast<std::size_t>(s)]; }

  // `state "label" as id` when the id is not the state's own.
  void alias(int s, int indent) {
    const std::string& own = def_.state(s).id;
    if (id(s) != own) line(indent, "state \"" + mermaid_text(own) + "\" as " + id(s));
  }

  void declare(int s, int indent) {
    const ChartState& st = def_.state(s);
    switch (st.kind) {
      case StateKind::shallow_history:
      case StateKind::deep_history:
        line(indent, std::string("state \"") + (st.kind == StateKind::deep_history ? "H*" : "H") +
                         "\" as " + id(s));
        return;
      case StateKind::atomic:
      case StateKind::final_state:
        alias(s, indent);
        if (id(s) == st.id) line(indent, id(s));
        for (const std::string& l : entry_exit_lines(st)) {
          line(indent, id(s) + " : " + mermaid_text(l));
        }
        return;
      case StateKind::compound:
      case StateKind::parallel:
      case StateKind::root:
        alias(s, indent);
        line(indent, "state " + id(s) + " {");
        body(s, indent + 1);
        line(indent, "}");
        return;
    }
  }

  void body(int s, int indent) {
    const ChartState& st = def_.state(s);
    if (st.kind == StateKind::parallel) {
      // Mermaid's regions are what lies between the `--` lines: each child is one; the
      // parallel state's own history states go with the first.
      for (const int h : st.histories) declare(h, indent);
      for (std::size_t i = 0; i < st.children.size(); ++i) {
        if (i > 0) line(indent, "--");
        declare(st.children[i], indent);
      }
      return;
    }
    if (st.initial >= 0) {
      const ChartTransition& t = def_.transition(st.initial);
      const std::string label = pseudo_label(t);
      for (const int x : t.targets) {
        line(indent, "[*] --> " + id(x) + (label.empty() ? "" : " : " + mermaid_text(label)));
      }
    }
    for (const int c : st.children) declare(c, indent);
    for (const int h : st.histories) declare(h, indent);
    for (const int c : st.children) {
      if (def_.state(c).kind == StateKind::final_state) line(indent, id(c) + " --> [*]");
    }
    for (std::size_t k = 0; k < edges_.size(); ++k) {
      if (place_[k] != s) continue;
      const Edge& e = edges_[k];
      line(indent, id(e.from) + " --> " + id(e.to) +
                       (e.label.empty() ? "" : " : " + mermaid_text(e.label)));
    }
  }

  const ChartDefinition& def_;
  std::vector<Edge> edges_;
  std::vector<int> place_;
  std::vector<std::string> ids_;
  std::string out_;
};

// --- DOT -----------------------------------------------------------------------------------

// A quoted DOT string.
std::string dot_quoted(std::string_view raw) {
  return "\"" + trellis::detail::dot_text(raw) + "\"";
}

// A label of several lines: each line escaped, joined by DOT's "\n".
std::string dot_lines(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\\n";
    const std::string q = dot_quoted(lines[i]);
    out.append(q, 1, q.size() - 2);
  }
  return out + "\"";
}

class DotWriter {
 public:
  explicit DotWriter(const ChartDefinition& def) : def_(def) {
    // The start points need node names no state has.
    std::set<std::string> used;
    for (const ChartState& st : def.states) used.insert(st.id);
    start_.resize(def.states.size());
    for (std::size_t s = 0; s < def.states.size(); ++s) {
      const ChartState& st = def.states[s];
      if (!st.is_compound()) continue;
      std::string name = s == 0 ? std::string("[*]") : st.id + " [*]";
      while (used.contains(name)) name += '\'';
      used.insert(name);
      start_[s] = name;
    }
  }

  std::string run() {
    out_ = "digraph " + dot_quoted(def_.name) + " {\n";
    out_ += "  compound=true;\n";
    out_ += "  node [shape=box, style=rounded];\n";
    body(0, 1);
    for (std::size_t s = 0; s < def_.states.size(); ++s) {
      const ChartState& st = def_.states[s];
      if (!st.is_compound() || st.initial < 0) continue;
      const ChartTransition& t = def_.transition(st.initial);
      for (const int x : t.targets) {
        edge(start_[s], -1, x, pseudo_label(t), "");
      }
    }
    for (const Edge& e : transition_edges(def_)) {
      edge(anchor(e.from), e.from, e.to, e.label,
           e.kind == Edge::Kind::history_default ? "style=dashed" : "");
    }
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  bool is_cluster(int s) const {
    const StateKind k = def_.state(s).kind;
    return k == StateKind::compound || k == StateKind::parallel;
  }

  // The node an arrow to or from `s` attaches to: the state's node, or one inside its cluster.
  std::string anchor(int s) const {
    const ChartState& st = def_.state(s);
    if (st.kind == StateKind::compound) return start_[static_cast<std::size_t>(s)];
    if (st.kind == StateKind::parallel) return anchor(st.children.front());
    return st.id;
  }

  std::string cluster(int s) const { return dot_quoted("cluster_" + def_.state(s).id); }

  bool inside_or_same(int s, int ancestor) const {
    return s == ancestor || def_.is_descendant(s, ancestor);
  }

  // `from` is -1 for a start point (never a cluster).
  void edge(const std::string& tail, int from, int to, const std::string& label,
            const std::string& extra) {
    std::string attrs;
    const auto add = [&](const std::string& a) {
      if (!attrs.empty()) attrs += ", ";
      attrs += a;
    };
    if (!label.empty()) add("label=" + dot_quoted(label));
    if (from >= 0 && from != to && is_cluster(from) && !inside_or_same(to, from)) {
      add("ltail=" + cluster(from));
    }
    if (is_cluster(to) && (from < 0 ? true : from != to && !inside_or_same(from, to))) {
      add("lhead=" + cluster(to));
    }
    if (!extra.empty()) add(extra);
    out_ += "  " + dot_quoted(tail) + " -> " + dot_quoted(anchor(to));
    out_ += attrs.empty() ? ";\n" : " [" + attrs + "];\n";
  }

  void line(int indent, const std::string& text) {
    out_.append(static_cast<std::size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  void node(int s, int indent, bool region) {
    const ChartState& st = def_.state(s);
    std::vector<std::string> label{st.id};
    for (std::string& l : entry_exit_lines(st)) label.push_back(std::move(l));
    switch (st.kind) {
      case StateKind::shallow_history:
      case StateKind::deep_history:
        line(indent, dot_quoted(st.id) + " [shape=circle, label=" +
                         (st.kind == StateKind::deep_history ? "\"H*\"" : "\"H\"") + "];");
        return;
      case StateKind::atomic:
      case StateKind::final_state: {
        std::string attrs;
        if (label.size() > 1) attrs = "label=" + dot_lines(label);
        if (st.kind == StateKind::final_state)
          attrs += (attrs.empty() ? "" : ", ") + std::string("peripheries=2");
        line(indent, dot_quoted(st.id) + (attrs.empty() ? ";" : " [" + attrs + "];"));
        return;
      }
      case StateKind::compound:
      case StateKind::parallel:
      case StateKind::root:
        line(indent, "subgraph " + cluster(s) + " {");
        line(indent + 1, "label=" + dot_lines(label) + ";");
        line(indent + 1, region ? "style=\"rounded,dashed\";" : "style=rounded;");
        body(s, indent + 1);
        line(indent, "}");
        return;
    }
  }

  void body(int s, int indent) {
    const ChartState& st = def_.state(s);
    if (st.is_compound()) {
      line(indent, dot_quoted(start_[static_cast<std::size_t>(s)]) +
                       " [shape=point, width=0.15, label=\"\"];");
    }
    const bool regions = st.kind == StateKind::parallel;
    for (const int c : st.children) node(c, indent, regions);
    for (const int h : st.histories) node(h, indent, false);
  }

  const ChartDefinition& def_;
  std::vector<std::string> start_;
  std::string out_;
};

}  // namespace

std::string to_mermaid(const ChartDefinition& chart) { return MermaidWriter(chart).run(); }

std::string to_dot(const ChartDefinition& chart) { return DotWriter(chart).run(); }

}  // namespace trellis
