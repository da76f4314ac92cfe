// Event descriptors and the lookups of a built chart.

#include "trellis/statechart/definition.hpp"

#include <algorithm>

#include "trellis/statechart/detail/chart_instance.hpp"
#include "trellis/statechart/errors.hpp"

namespace trellis {

bool descriptor_matches(std::string_view d, std::string_view name) noexcept {
  if (d == "*") return true;
  if (d.size() >= 2 && d.substr(d.size() - 2) == ".*") d.remove_suffix(2);
  while (!d.empty() && d.back() == '.') d.remove_suffix(1);
  if (d.empty()) return false;
  if (name.size() < d.size() || name.compare(0, d.size(), d) != 0) return false;
  return name.size() == d.size() || name[d.size()] == '.';
}

bool event_matches(std::string_view descriptors, std::string_view name) noexcept {
  std::size_t i = 0;
  while (i < descriptors.size()) {
    while (i < descriptors.size() && descriptors[i] == ' ') ++i;
    std::size_t j = i;
    while (j < descriptors.size() && descriptors[j] != ' ') ++j;
    if (j > i && descriptor_matches(descriptors.substr(i, j - i), name)) return true;
    i = j;
  }
  return false;
}

std::string_view to_string(StateKind k) noexcept {
  switch (k) {
    case StateKind::root:
      return "root";
    case StateKind::atomic:
      return "atomic";
    case StateKind::compound:
      return "compound";
    case StateKind::parallel:
      return "parallel";
    case StateKind::final_state:
      return "final";
    case StateKind::shallow_history:
      return "shallow history";
    case StateKind::deep_history:
      return "deep history";
  }
  return "?";
}

int ChartDefinition::find(std::string_view id) const noexcept {
  auto it = std::lower_bound(by_id_.begin(), by_id_.end(), id,
                             [](const auto& p, std::string_view k) { return p.first < k; });
  return it != by_id_.end() && it->first == id ? it->second : -1;
}

int ChartDefinition::index_of(std::string_view id) const {
  const int s = find(id);
  if (s < 0)
    throw unknown_state("trellis: chart '" + name + "' has no state '" + std::string(id) + "'");
  return s;
}

std::vector<std::string> ChartDefinition::ids(const StateSet& set) const {
  std::vector<std::string> out;
  for (int s = set.next(-1); s >= 0; s = set.next(s))
    if (s != 0) out.push_back(state(s).id);
  return out;
}

StateSet ChartDefinition::atomic(const StateSet& set) const {
  StateSet out(states.size());
  for (int s = set.next_in(atomic_states, -1); s >= 0; s = set.next_in(atomic_states, s))
    out.insert(s);
  return out;
}

namespace {

// The first proper ancestor of list[0] that is compound (or the root) and contains every
// other state of the list; -1 when list[0] is the root.
int lcca(const ChartDefinition& def, const std::vector<int>& list) {
  for (int a = def.state(list[0]).parent; a >= 0; a = def.state(a).parent) {
    if (!def.state(a).is_compound()) continue;
    bool all = true;
    for (std::size_t i = 1; i < list.size() && all; ++i) all = def.is_descendant(list[i], a);
    if (all) return a;
  }
  return -1;
}

}  // namespace

namespace detail {

int chart_domain(const ChartDefinition& def, const ChartTransition& t,
                 const std::vector<int>& effective) {
  if (effective.empty()) return -1;
  const ChartState& src = def.state(t.source);
  if (t.internal && src.kind == StateKind::compound &&
      std::all_of(effective.begin(), effective.end(),
                  [&](int x) { return def.is_descendant(x, t.source); }))
    return t.source;
  std::vector<int> list{t.source};
  list.insert(list.end(), effective.begin(), effective.end());
  return lcca(def, list);
}

}  // namespace detail

void ChartDefinition::finish() {
  by_id_.clear();
  for (std::size_t i = 0; i < states.size(); ++i) by_id_.emplace_back(states[i].id, int(i));
  std::sort(by_id_.begin(), by_id_.end());
  for (ChartTransition& t : transitions) {
    t.descriptors.clear();
    std::size_t i = 0;
    while (i < t.event.size()) {
      while (i < t.event.size() && t.event[i] == ' ') ++i;
      std::size_t j = i;
      while (j < t.event.size() && t.event[j] != ' ') ++j;
      if (j > i) {
        const std::string raw = t.event.substr(i, j - i);
        std::string d = raw;
        if (d.size() >= 2 && d.compare(d.size() - 2, 2, ".*") == 0) d.resize(d.size() - 2);
        while (!d.empty() && d.back() == '.') d.pop_back();
        if (raw == "*") t.any_event = true;
        // "*" stays as a descriptor (so the transition is not eventless); "." keeps its text
        t.descriptors.push_back(d.empty() || raw == "*" ? raw : d);
      }
      i = j;
    }
    const bool via_history = std::any_of(t.targets.begin(), t.targets.end(),
                                         [&](int x) { return state(x).is_history(); });
    t.domain = via_history ? -2 : detail::chart_domain(*this, t, t.targets);
  }
  for (ChartState& st : states) {
    st.event_candidates.clear();
    st.eventless_candidates.clear();
    for (int t : st.transitions)
      (transition(t).eventless() ? st.eventless_candidates : st.event_candidates).push_back(t);
    if (st.parent >= 0) {
      const ChartState& p = state(st.parent);  // earlier in preorder: already filled
      st.event_candidates.insert(st.event_candidates.end(), p.event_candidates.begin(),
                                 p.event_candidates.end());
      st.eventless_candidates.insert(st.eventless_candidates.end(), p.eventless_candidates.begin(),
                                     p.eventless_candidates.end());
    }
    st.eventless_chain = !st.eventless_candidates.empty();
  }
  for (ChartTransition& t : transitions) {
    t.exit_mask.resize(states.size());
    if (t.domain >= 0)
      for (int x = t.domain + 1; x <= state(t.domain).last_descendant; ++x) t.exit_mask.insert(x);
  }
  exit_work.resize(states.size());
  entry_work.resize(states.size());
  for (std::size_t i = 0; i < states.size(); ++i) {
    const ChartState& st = states[i];
    if (!st.on_exit.empty()) exit_work.insert(static_cast<int>(i));
    if (!st.on_entry.empty() || st.kind == StateKind::final_state ||
        (st.initial >= 0 && !transition(st.initial).content.empty()))
      entry_work.insert(static_cast<int>(i));
  }
  atomic_states.resize(states.size());
  history_parents.resize(states.size());
  has_eventless = false;
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (states[i].is_atomic()) atomic_states.insert(static_cast<int>(i));
    if (!states[i].histories.empty()) history_parents.insert(static_cast<int>(i));
    has_eventless = has_eventless || states[i].eventless_chain;
  }
}

}  // namespace trellis
