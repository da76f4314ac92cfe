// compile_chart: checks a chart's spec tree, reporting every problem at once, and numbers it in
// document order into a ChartDefinition.

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trellis/statechart/detail/chart_spec.hpp"
#include "trellis/statechart/errors.hpp"

namespace trellis::detail {
namespace {

struct Flat {
  const StateSpec* spec;
  int parent;
  int depth;
};

std::string quoted(const std::string& id) { return "'" + id + "'"; }

class Compiler {
 public:
  Compiler(const StateSpec& root, const ChartRegistry& registry, const ChartBuildOptions& options)
      : root_(root), registry_(registry), options_(options) {}

  std::vector<std::string> problems;
  std::shared_ptr<ChartDefinition> def = std::make_shared<ChartDefinition>();

  void run() {
    if (!flatten()) return;
    number();
    kinds();
    transitions();
    def->finish();
    if (!options_.allow_unreachable) reachability();
  }

 private:
  // Preorder numbering with an explicit stack, refusing depth beyond max_depth before going on.
  bool flatten() {
    std::vector<Flat> stack{{&root_, -1, 0}};
    while (!stack.empty()) {
      Flat f = stack.back();
      stack.pop_back();
      if (f.depth > options_.max_depth) {
        problems.push_back("the chart is nested deeper than " + std::to_string(options_.max_depth) +
                           " levels (at state " + quoted(f.spec->id) + ")");
        return false;
      }
      const int index = static_cast<int>(flat_.size());
      flat_.push_back(f);
      for (auto it = f.spec->children.rbegin(); it != f.spec->children.rend(); ++it)
        stack.push_back(Flat{it->get(), index, f.depth + 1});
    }
    return true;
  }

  void number() {
    def->name = root_.id;
    def->states.resize(flat_.size());
    for (std::size_t i = 0; i < flat_.size(); ++i) {
      ChartState& st = def->states[i];
      const StateSpec& sp = *flat_[i].spec;
      st.id = sp.id.empty() ? "_state" + std::to_string(i) : sp.id;
      st.parent = flat_[i].parent;
      st.depth = flat_[i].depth;
      st.on_entry = sp.on_entry;
      st.on_exit = sp.on_exit;
      if (i > 0) {
        auto [it, fresh] = ids_.emplace(st.id, static_cast<int>(i));
        if (!fresh) problems.push_back("two states are named " + quoted(st.id));
        if (st.id == root_.id)
          problems.push_back("state " + quoted(st.id) + " has the chart's name");
      }
    }
    // last descendants: walk backwards, a parent's range ends where its last child's does
    for (std::size_t i = flat_.size(); i-- > 0;) {
      ChartState& st = def->states[i];
      if (st.last_descendant < static_cast<int>(i)) st.last_descendant = static_cast<int>(i);
      if (st.parent >= 0) {
        ChartState& p = def->states[static_cast<std::size_t>(st.parent)];
        p.last_descendant = std::max(p.last_descendant, st.last_descendant);
      }
    }
    for (std::size_t i = 1; i < flat_.size(); ++i) {
      ChartState& p = def->states[static_cast<std::size_t>(flat_[i].parent)];
      const StateSpec::Kind k = flat_[i].spec->kind;
      if (k == StateSpec::Kind::shallow_history || k == StateSpec::Kind::deep_history)
        p.histories.push_back(static_cast<int>(i));
      else
        p.children.push_back(static_cast<int>(i));
    }
    def->guards = registry_.guards;
    def->actions = registry_.actions;
    def->data_type = registry_.data_type;
  }

  void kinds() {
    for (std::size_t i = 0; i < flat_.size(); ++i) {
      ChartState& st = def->states[i];
      const StateSpec& sp = *flat_[i].spec;
      const std::string name = quoted(st.id);
      switch (sp.kind) {
        case StateSpec::Kind::state:
          st.kind = i == 0 ? StateKind::root
                           : (st.children.empty() ? StateKind::atomic : StateKind::compound);
          if (st.children.empty() && !st.histories.empty())
            problems.push_back("history state " + quoted(def->state(st.histories[0]).id) +
                               " is inside " + name +
                               ", which has no child states (history belongs in a compound or "
                               "parallel state)");
          if (st.children.empty() && sp.initial)
            problems.push_back("state " + name + " has an initial but no child states");
          if (i == 0 && st.children.empty()) problems.push_back("the chart has no states");
          break;
        case StateSpec::Kind::parallel:
          st.kind = StateKind::parallel;
          if (st.children.size() < 2 && !options_.allow_single_region)
            problems.push_back("parallel state " + name + " has " +
                               std::to_string(st.children.size()) +
                               (st.children.size() == 1 ? " region" : " regions") +
                               " (a parallel state needs at least two)");
          if (sp.initial) problems.push_back("parallel state " + name + " has an initial");
          for (int c : st.children)
            if (flat_[static_cast<std::size_t>(c)].spec->kind == StateSpec::Kind::final_state)
              problems.push_back("final state " + quoted(def->state(c).id) +
                                 " is a region of parallel state " + name);
          break;
        case StateSpec::Kind::final_state:
          st.kind = StateKind::final_state;
          if (!st.children.empty() || !st.histories.empty())
            problems.push_back("final state " + name + " has child states");
          if (!sp.transitions.empty())
            problems.push_back("final state " + name + " has transitions");
          break;
        case StateSpec::Kind::shallow_history:
        case StateSpec::Kind::deep_history:
          st.kind = sp.kind == StateSpec::Kind::deep_history ? StateKind::deep_history
                                                             : StateKind::shallow_history;
          if (!st.children.empty() || !st.histories.empty())
            problems.push_back("history state " + name + " has child states");
          if (!sp.transitions.empty())
            problems.push_back("history state " + name + " has transitions (only a default)");
          if (st.parent == 0)
            problems.push_back("history state " + name +
                               " is at the chart's top level (history belongs in a compound or "
                               "parallel state)");
          if (!sp.initial || sp.initial->targets.empty())
            problems.push_back("history state " + name + " has no default target");
          break;
      }
    }
  }

  int resolve(const std::string& id, const std::string& where) {
    const auto it = ids_.find(id);
    if (it == ids_.end()) {
      problems.push_back(where + " targets unknown state " + quoted(id));
      return -1;
    }
    return it->second;
  }

  int add_transition(int source, const TransitionSpec& ts, const std::string& where, bool pseudo) {
    ChartTransition t;
    t.source = source;
    t.event = ts.event;
    t.internal = ts.internal;
    t.guard = ts.guard;
    t.content = ts.content;
    t.pseudo = pseudo;
    for (const std::string& id : ts.targets) {
      const int x = resolve(id, where);
      if (x >= 0) t.targets.push_back(x);
    }
    if (t.guard >= static_cast<int>(def->guards.size())) {
      problems.push_back(where + " has an unknown guard");
      t.guard = -1;
    }
    def->transitions.push_back(std::move(t));
    return static_cast<int>(def->transitions.size()) - 1;
  }

  void transitions() {
    // own transitions first in document order (their numbers are document order), then the
    // pseudo transitions (initials, history defaults)
    for (std::size_t i = 0; i < flat_.size(); ++i) {
      const StateSpec& sp = *flat_[i].spec;
      for (std::size_t k = 0; k < sp.transitions.size(); ++k) {
        const TransitionSpec& ts = sp.transitions[k];
        const std::string where = !ts.where.empty() ? ts.where
                                                    : "transition " + std::to_string(k + 1) +
                                                          " of state " + quoted(def->states[i].id);
        if (i == 0) {
          problems.push_back("the chart's root has a transition (" + where + ")");
          continue;
        }
        def->states[i].transitions.push_back(add_transition(static_cast<int>(i), ts, where, false));
      }
    }
    for (std::size_t i = 0; i < flat_.size(); ++i) {
      ChartState& st = def->states[i];
      const StateSpec& sp = *flat_[i].spec;
      const int self = static_cast<int>(i);
      if (st.is_compound() || st.is_history()) {
        TransitionSpec ts;
        if (sp.initial) {
          ts = *sp.initial;
        } else if (!st.children.empty()) {
          ts.targets.push_back(def->state(st.children.front()).id);
        }
        const std::string where = st.is_history() ? "the default of history state " + quoted(st.id)
                                                  : "the initial of " + quoted(st.id);
        const int t = add_transition(self, ts, where, true);
        def->states[i].initial = t;
        // where the targets may be: a compound's descendants; a history's parent's
        const int scope = st.is_history() ? st.parent : self;
        for (int x : def->transition(t).targets) {
          if (x == self || def->is_descendant(scope, x) || x == scope) {
            problems.push_back(where + " targets " + quoted(def->state(x).id) +
                               ", itself or an ancestor: a cycle of initial states");
          } else if (!def->is_descendant(x, scope)) {
            problems.push_back(where + " targets " + quoted(def->state(x).id) +
                               ", which is not a descendant of " + quoted(def->state(scope).id));
          }
          // A shallow history's default may name deeper descendants too (SCXML 3.10 asks
          // only for descendants of the parent; SCION's history2 relies on it).
        }
      }
    }
    for (ChartGuard& g : def->guards) {
      if (g.fn || g.in_id.empty()) continue;
      const auto it = ids_.find(g.in_id);
      if (it == ids_.end())
        problems.push_back("guard " + g.name + " names unknown state " + quoted(g.in_id));
      else
        g.in_state = it->second;
    }
  }

  // Over-approximates what can ever be active; a state outside it is reported.
  void reachability() {
    const std::size_t n = def->states.size();
    std::vector<bool> seen(n, false);
    std::vector<int> work;
    auto mark = [&](int s) {
      if (s >= 0 && !seen[static_cast<std::size_t>(s)]) {
        seen[static_cast<std::size_t>(s)] = true;
        work.push_back(s);
      }
    };
    mark(0);
    while (!work.empty()) {
      const int s = work.back();
      work.pop_back();
      const ChartState& st = def->state(s);
      mark(st.parent);
      if (st.initial >= 0)
        for (int x : def->transition(st.initial).targets) mark(x);
      if (st.kind == StateKind::parallel)
        for (int c : st.children) mark(c);
      for (int t : st.transitions)
        for (int x : def->transition(t).targets) mark(x);
    }
    for (std::size_t i = 1; i < n; ++i) {
      const ChartState& st = def->states[i];
      if (!seen[i] && !st.is_history())
        problems.push_back("state " + quoted(st.id) +
                           " is unreachable: no transition or default entry leads to it");
    }
  }

  const StateSpec& root_;
  const ChartRegistry& registry_;
  const ChartBuildOptions& options_;
  std::vector<Flat> flat_;
  std::map<std::string, int> ids_;  // the states below the root
};

}  // namespace

std::vector<std::string> chart_problems(const StateSpec& root, const ChartRegistry& registry,
                                        const ChartBuildOptions& options) {
  Compiler c(root, registry, options);
  c.run();
  return c.problems;
}

std::shared_ptr<const ChartDefinition> compile_chart(const StateSpec& root, ChartRegistry registry,
                                                     const ChartBuildOptions& options) {
  Compiler c(root, registry, options);
  c.run();
  if (!c.problems.empty()) {
    std::string msg = "trellis: chart '" + root.id + "' cannot be built (" +
                      std::to_string(c.problems.size()) +
                      (c.problems.size() == 1 ? " problem):" : " problems):");
    for (const std::string& p : c.problems) msg += "\n  - " + p;
    throw chart_error(msg);
  }
  return c.def;
}

}  // namespace trellis::detail
