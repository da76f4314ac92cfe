// The SCXML writer: a ChartDefinition as an SCXML document (null datamodel, trellis:call for
// actions) that the loader reads back to the same chart.

#include "trellis/scxml/save.hpp"

#include <algorithm>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cond.hpp"
#include "trellis/scxml/bindings.hpp"

namespace trellis::scxml {
namespace {

using problem = scxml_error::problem;

class Writer {
 public:
  explicit Writer(const ChartDefinition& def) : def_(def) {}

  std::string run() {
    pugi::xml_document doc;
    pugi::xml_node decl = doc.append_child(pugi::node_declaration);
    decl.append_attribute("version") = "1.0";
    decl.append_attribute("encoding") = "UTF-8";
    pugi::xml_node root = doc.append_child("scxml");
    root.append_attribute("xmlns") = "http://www.w3.org/2005/07/scxml";
    if (!def_.actions.empty())
      root.append_attribute("xmlns:trellis") = std::string(trellis_namespace).c_str();
    root.append_attribute("version") = "1.0";
    root.append_attribute("datamodel") = "null";
    root.append_attribute("name") = def_.name.c_str();

    const ChartState& top = def_.state(0);
    if (!top.on_entry.empty() || !top.on_exit.empty())
      refuse("scxml", "the chart's root has entry or exit blocks, which <scxml> cannot hold");
    if (top.initial >= 0) {
      const ChartTransition& init = def_.transition(top.initial);
      if (!init.content.empty())
        refuse("scxml", "the chart's initial transition has content, which <scxml> cannot hold");
      if (!is_first_child(top, init)) root.append_attribute("initial") = targets(init).c_str();
    }
    children(root, 0);

    std::ostringstream out;
    doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
    return out.str();
  }

 private:
  [[noreturn]] void refuse(std::string element, std::string reason) const {
    throw scxml_error(problem::unsupported, "chart '" + def_.name + "'", std::move(element), 0, 0,
                      std::move(reason));
  }

  const std::string& id(int s) const {
    const std::string& x = def_.state(s).id;
    if (x.empty() || std::any_of(x.begin(), x.end(), [](char c) {
          return c == ' ' || c == '\t' || c == '\n' || c == '\r';
        }))
      refuse("state", "state id '" + x + "' is empty or holds whitespace, which SCXML ids cannot");
    return x;
  }

  std::string targets(const ChartTransition& t) const {
    std::string out;
    for (int x : t.targets) {
      if (!out.empty()) out += ' ';
      out += id(x);
    }
    return out;
  }

  bool is_first_child(const ChartState& st, const ChartTransition& init) const {
    return !st.children.empty() && init.targets.size() == 1 &&
           init.targets.front() == st.children.front();
  }

  /// The child states and histories of `s`, in document order.
  void children(pugi::xml_node parent, int s) {
    const ChartState& st = def_.state(s);
    std::vector<int> kids = st.children;
    kids.insert(kids.end(), st.histories.begin(), st.histories.end());
    std::sort(kids.begin(), kids.end());
    for (int k : kids) state(parent, k);
  }

  void state(pugi::xml_node parent, int s) {
    const ChartState& st = def_.state(s);
    const char* element = "state";
    switch (st.kind) {
      case StateKind::parallel:
        element = "parallel";
        break;
      case StateKind::final_state:
        element = "final";
        break;
      case StateKind::shallow_history:
      case StateKind::deep_history:
        element = "history";
        break;
      case StateKind::root:
      case StateKind::atomic:
      case StateKind::compound:
        break;
    }
    pugi::xml_node n = parent.append_child(element);
    n.append_attribute("id") = id(s).c_str();
    if (st.is_history()) {
      n.append_attribute("type") = st.kind == StateKind::deep_history ? "deep" : "shallow";
      pugi::xml_node t = n.append_child("transition");
      const ChartTransition& def = def_.transition(st.initial);
      t.append_attribute("target") = targets(def).c_str();
      block(t, def.content);
      return;
    }
    if (st.kind == StateKind::compound && st.initial >= 0) {
      const ChartTransition& init = def_.transition(st.initial);
      if (!init.content.empty()) {
        pugi::xml_node t = n.append_child("initial").append_child("transition");
        t.append_attribute("target") = targets(init).c_str();
        block(t, init.content);
      } else if (!is_first_child(st, init)) {
        n.append_attribute("initial") = targets(init).c_str();
      }
    }
    for (const ChartBlock& b : st.on_entry) block(n.append_child("onentry"), b);
    for (const ChartBlock& b : st.on_exit) block(n.append_child("onexit"), b);
    for (int t : st.transitions) transition(n, def_.transition(t));
    children(n, s);
  }

  void transition(pugi::xml_node parent, const ChartTransition& t) {
    pugi::xml_node n = parent.append_child("transition");
    if (!t.event.empty()) n.append_attribute("event") = t.event.c_str();
    if (t.guard >= 0)
      n.append_attribute("cond") = cond(def_.guards[static_cast<std::size_t>(t.guard)]).c_str();
    if (!t.targets.empty()) n.append_attribute("target") = targets(t).c_str();
    if (t.internal) n.append_attribute("type") = "internal";
    block(n, t.content);
  }

  std::string cond(const ChartGuard& g) const {
    if (!g.fn && !g.in_id.empty()) {
      const char quote = g.in_id.find('\'') == std::string::npos ? '\'' : '"';
      if (g.in_id.find(quote) != std::string::npos)
        refuse("transition", "In() of a state id with both kinds of quotes");
      return std::string("In(") + quote + g.in_id + quote + ")";
    }
    std::string error;
    if (!detail::CondParser(g.name, true).parse(error))
      refuse("transition", "guard '" + g.name +
                               "' is not a name a cond can hold (a letter or '_', then letters, "
                               "digits, '_' or '.')");
    return g.name;
  }

  void block(pugi::xml_node n, const ChartBlock& ops) {
    for (const ChartOp& op : ops) {
      if (op.name.empty() && op.kind != ChartOp::Kind::log)
        refuse("onentry", "an action, event or send id with no name, which SCXML requires");
      switch (op.kind) {
        case ChartOp::Kind::call:
          n.append_child("trellis:call").append_attribute("name") = op.name.c_str();
          break;
        case ChartOp::Kind::raise:
          n.append_child("raise").append_attribute("event") = op.name.c_str();
          break;
        case ChartOp::Kind::send: {
          pugi::xml_node s = n.append_child("send");
          s.append_attribute("event") = op.name.c_str();
          if (op.delay.count() < 0) refuse("send", "a negative delay");
          if (op.delay.count() > 0) s.append_attribute("delay") = delay(op.delay).c_str();
          if (!op.send_id.empty()) s.append_attribute("id") = op.send_id.c_str();
          break;
        }
        case ChartOp::Kind::cancel:
          n.append_child("cancel").append_attribute("sendid") = op.name.c_str();
          break;
        case ChartOp::Kind::log: {
          pugi::xml_node l = n.append_child("log");
          if (!op.name.empty()) l.append_attribute("label") = op.name.c_str();
          break;
        }
      }
    }
  }

  static std::string delay(std::chrono::milliseconds d) {
    const auto ms = d.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
  }

  const ChartDefinition& def_;
};

}  // namespace

std::string save(const ChartDefinition& chart) { return Writer(chart).run(); }

}  // namespace trellis::scxml
