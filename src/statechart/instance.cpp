// The SCXML interpretation algorithm (W3C SCXML 1.0, Appendix D), procedure by procedure; the
// names in the comments are the specification's.

#include "trellis/statechart/detail/chart_instance.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "trellis/statechart/errors.hpp"

namespace trellis::detail {

ChartInstance::ChartInstance(std::shared_ptr<const ChartDefinition> def, void* data,
                             const ChartClock* clock, std::size_t microstep_budget)
    : def_(std::move(def)),
      data_(data),
      clock_(clock),
      budget_(microstep_budget),
      config_(def_->states.size()),
      entered_(def_->states.size()),
      exited_(def_->states.size()),
      history_(def_->states.size()),
      recorded_(def_->states.size(), false),
      set_a_(def_->states.size()),
      set_b_(def_->states.size()),
      to_enter_(def_->states.size()),
      default_entry_(def_->states.size()),
      history_content_(def_->states.size(), -1) {}

ChartInstance::ChartInstance(const ChartInstance& o)
    : ChartActions(o),
      def_(o.def_),
      data_(o.data_),
      clock_(o.clock_),
      budget_(o.budget_),
      config_(o.config_),
      entered_(o.entered_),
      exited_(o.exited_),
      history_(o.history_),
      recorded_(o.recorded_),
      internal_(o.internal_),
      timers_(o.timers_),
      send_seq_(o.send_seq_),
      running_(o.running_),
      set_a_(o.set_a_),
      set_b_(o.set_b_),
      to_enter_(o.to_enter_),
      default_entry_(o.default_entry_),
      history_content_(o.history_content_),
      entry_cache_(o.entry_cache_) {}

// interpret(): enter the document's initial transition, then run to a stable configuration.
void ChartInstance::start() {
  config_.clear();
  running_ = true;
  current_ = &none_;
  enabled_.assign(1, def_->state(0).initial);
  enter_states(enabled_);
  macrostep();
}

bool ChartInstance::process(const ChartEvent& e) {
  if (!running_) return false;
  current_ = &e;
  select(&e, enabled_);
  if (enabled_.empty()) {
    current_ = &none_;
    return false;
  }
  step_.swap(enabled_);  // microstep reuses the scratch lists
  microstep(step_);
  // Stable already (no eventless transition anywhere, nothing raised): the common case.
  if (running_ && (def_->has_eventless || !internal_.empty())) macrostep();
  current_ = &none_;
  return true;
}

bool ChartInstance::enabled(const ChartEvent& e) {
  if (!running_) return false;
  probing_ = true;
  current_ = &e;
  select(&e, enabled_);
  probing_ = false;
  current_ = &none_;
  return !enabled_.empty();
}

// The inner loop of mainEventLoop: eventless transitions, then internal events, until stable.
void ChartInstance::macrostep() {
  std::size_t steps = 0;
  while (running_) {
    select(nullptr, enabled_);
    if (enabled_.empty()) {
      if (internal_.empty()) break;
      internal_event_ = std::move(internal_.front());
      internal_.pop_front();
      current_ = &internal_event_;
      select(&internal_event_, enabled_);
    }
    if (!enabled_.empty()) {
      step_.swap(enabled_);
      microstep(step_);
    }
    if (++steps > budget_) {
      internal_.clear();
      error_ = std::make_exception_ptr(chart_livelock(
          "trellis: chart '" + def_->name + "' did not become stable within " +
          std::to_string(budget_) +
          " microsteps (eventless transitions or raised events keep firing each other); "
          "its internal queue was dropped"));
      break;
    }
  }
}

bool ChartInstance::guard_holds(const ChartTransition& t, const ChartEvent& e) {
  if (t.guard < 0) return true;
  const ChartGuard& g = def_->guards[static_cast<std::size_t>(t.guard)];
  if (!g.fn) return config_.contains(g.in_state);
  try {
    return g.fn(data_, e, *this);
  } catch (...) {
    // SCXML 5.9: a condition that cannot be evaluated is false, and error.execution is raised.
    if (!probing_) execution_error();
    return false;
  }
}

// selectEventlessTransitions / selectTransitions: for each atomic state in document order,
// the first enabled transition of it or its nearest ancestor; then the conflicts removed.
void ChartInstance::select(const ChartEvent* e, std::vector<int>& out) {
  out.clear();
  if (e == nullptr && !def_->has_eventless) return;
  const ChartEvent& ev = e != nullptr ? *e : *current_;
  const StateSet& atomic = def_->atomic_states;
  for (int s = config_.next_in(atomic, -1); s >= 0; s = config_.next_in(atomic, s)) {
    const ChartState& st = def_->state(s);
    // [s] + its proper ancestors, each one's transitions in document order, flattened: the
    // first enabled one wins for this atomic state
    const std::vector<int>& candidates =
        e == nullptr ? st.eventless_candidates : st.event_candidates;
    for (const int t : candidates) {
      const ChartTransition& tr = def_->transition(t);
      if (e != nullptr && !tr.matches(ev.name)) continue;
      if (tr.guard >= 0 && !guard_holds(tr, ev)) continue;
      if (out.empty() || std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      break;
    }
  }
  if (out.size() > 1) remove_conflicts(out);
}

// removeConflictingTransitions: two transitions conflict when their exit sets intersect; the
// one whose source is a descendant of the other's wins, otherwise the earlier one.
void ChartInstance::remove_conflicts(std::vector<int>& ts) {
  filtered_.clear();
  for (int t1 : ts) {
    bool preempted = false;
    exit_set(t1, set_a_);
    removed_.clear();
    for (int t2 : filtered_) {
      exit_set(t2, set_b_);
      if (!set_a_.intersects(set_b_)) continue;
      if (def_->is_descendant(def_->transition(t1).source, def_->transition(t2).source)) {
        removed_.push_back(t2);
      } else {
        preempted = true;
        break;
      }
    }
    if (preempted) continue;
    std::erase_if(filtered_, [&](int t) {
      return std::find(removed_.begin(), removed_.end(), t) != removed_.end();
    });
    filtered_.push_back(t1);
  }
  ts.swap(filtered_);
}

// getEffectiveTargetStates: a history target stands for what it recorded, or its default.
void ChartInstance::effective_targets(int t, std::vector<int>& out) const {
  for (int x : def_->transition(t).targets) {
    const ChartState& xs = def_->state(x);
    if (!xs.is_history()) {
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    } else if (recorded_[static_cast<std::size_t>(x)]) {
      for (int y : history_[static_cast<std::size_t>(x)])
        if (std::find(out.begin(), out.end(), y) == out.end()) out.push_back(y);
    } else {
      effective_targets(xs.initial, out);
    }
  }
}

// getTransitionDomain (precomputed unless a target is a history state).
int ChartInstance::domain(int t) {
  const ChartTransition& tr = def_->transition(t);
  if (tr.domain != -2) return tr.domain;
  targets_.clear();
  effective_targets(t, targets_);
  return chart_domain(*def_, tr, targets_);
}

// computeExitSet for one transition: the active descendants of its domain.
void ChartInstance::exit_set(int t, StateSet& out) {
  const ChartTransition& tr = def_->transition(t);
  if (tr.domain >= 0) {  // precomputed: the active descendants of the domain, word by word
    out.assign_and(config_, tr.exit_mask);
    return;
  }
  out.resize(def_->states.size());  // (clears it)
  if (tr.targets.empty()) return;
  const int d = domain(t);
  if (d < 0) return;
  const int last = def_->state(d).last_descendant;
  for (int s = config_.next(d); s >= 0 && s <= last; s = config_.next(s)) out.insert(s);
}

void ChartInstance::microstep(const std::vector<int>& ts) {
  if (trace_ != nullptr) trace_->taken.insert(trace_->taken.end(), ts.begin(), ts.end());
  exit_states(ts);
  for (int t : ts) run_block(def_->transition(t).content);
  enter_states(ts);
}

// exitStates: record history first, then exit in exit order (reverse document order).
void ChartInstance::exit_states(const std::vector<int>& ts) {
  StateSet& leaving = exit_all_;
  if (ts.size() == 1) {
    exit_set(ts[0], leaving);
  } else {
    leaving.resize(def_->states.size());
    for (int t : ts) {
      exit_set(t, set_b_);
      leaving |= set_b_;
    }
  }
  const StateSet& with_history = def_->history_parents;
  for (int s = leaving.next_in(with_history, -1); s >= 0; s = leaving.next_in(with_history, s)) {
    const ChartState& st = def_->state(s);
    for (int h : st.histories) {
      std::vector<int>& value = history_[static_cast<std::size_t>(h)];
      value.clear();
      const bool deep = def_->state(h).kind == StateKind::deep_history;
      for (int x = config_.next(s); x >= 0 && x <= st.last_descendant; x = config_.next(x)) {
        const ChartState& xs = def_->state(x);
        if (deep ? xs.is_atomic() : xs.parent == s) value.push_back(x);
      }
      recorded_[static_cast<std::size_t>(h)] = true;
    }
  }
  if (!leaving.intersects(def_->exit_work)) {  // no exit actions: leave them all at once
    config_ -= leaving;
    exited_ |= leaving;
    return;
  }
  for (int s = leaving.prev(leaving.capacity()); s >= 0; s = leaving.prev(s)) {
    run_blocks(def_->state(s).on_exit);
    config_.erase(s);
    exited_.insert(s);
  }
}

// addDescendantStatesToEnter
void ChartInstance::add_descendants(int s, int depth) {
  if (depth > static_cast<int>(def_->states.size()))
    return;  // defensive: the builder refuses cycles
  const ChartState& st = def_->state(s);
  if (st.is_history()) {
    met_history_ = true;
    if (recorded_[static_cast<std::size_t>(s)]) {
      const std::vector<int> value = history_[static_cast<std::size_t>(s)];
      for (int x : value) add_descendants(x, depth + 1);
      for (int x : value) add_ancestors(x, st.parent, depth + 1);
    } else {
      history_content_set_ = true;
      history_content_[static_cast<std::size_t>(st.parent)] = st.initial;
      for (int x : def_->transition(st.initial).targets) add_descendants(x, depth + 1);
      for (int x : def_->transition(st.initial).targets) add_ancestors(x, st.parent, depth + 1);
    }
    return;
  }
  to_enter_.insert(s);
  if (st.kind == StateKind::compound) {
    default_entry_.insert(s);
    for (int x : def_->transition(st.initial).targets) add_descendants(x, depth + 1);
    for (int x : def_->transition(st.initial).targets) add_ancestors(x, s, depth + 1);
  } else if (st.kind == StateKind::parallel) {
    for (int c : st.children)
      if (!to_enter_.any_in(c + 1, def_->state(c).last_descendant)) add_descendants(c, depth + 1);
  }
}

// addAncestorStatesToEnter: the proper ancestors of s up to (not including) `ancestor` (-1:
// all of them, the root included); a parallel one gets its other regions' defaults.
void ChartInstance::add_ancestors(int s, int ancestor, int depth) {
  for (int a = def_->state(s).parent; a >= 0 && a != ancestor; a = def_->state(a).parent) {
    to_enter_.insert(a);
    const ChartState& as = def_->state(a);
    if (as.kind != StateKind::parallel) continue;
    for (int c : as.children)
      if (!to_enter_.any_in(c + 1, def_->state(c).last_descendant)) add_descendants(c, depth + 1);
  }
}

// enterStates: computeEntrySet, then enter in document order, running onentry, the initial
// transition's content and the history default content; finals raise done.state.*.
void ChartInstance::enter_states(const std::vector<int>& ts) {
  // One transition without history targets, whose entry met no history state before: its
  // entry set depends on nothing else, so it is computed once and kept.
  EntryCache* cache = nullptr;
  if (ts.size() == 1 && def_->transition(ts[0]).domain != -2) {
    if (entry_cache_.empty()) entry_cache_.resize(def_->transitions.size());
    cache = &entry_cache_[static_cast<std::size_t>(ts[0])];
    if (cache->known == 2) cache = nullptr;
  }
  if (cache != nullptr && cache->known == 1) {
    enter_set(cache->to_enter, cache->default_entry);
    return;
  }
  to_enter_.clear();
  default_entry_.clear();
  met_history_ = false;
  std::vector<int>& effective = effective_;
  for (int t : ts) {
    const ChartTransition& tr = def_->transition(t);
    for (int x : tr.targets) add_descendants(x, 0);
    const int d = domain(t);
    if (tr.domain != -2) {  // no history target: the declared targets are the effective ones
      for (int x : tr.targets) add_ancestors(x, d, 0);
      continue;
    }
    effective.clear();
    effective_targets(t, effective);
    for (int x : effective) add_ancestors(x, d, 0);
  }
  if (cache != nullptr) {
    cache->known = met_history_ ? 2 : 1;
    if (!met_history_) {
      cache->to_enter = to_enter_;
      cache->default_entry = default_entry_;
    }
  }
  enter_set(to_enter_, default_entry_);
  // defaultHistoryContent belongs to this call: a default whose parent was not entered (an
  // internal transition into its own history) must not run at the parent's next entry.
  if (met_history_) std::fill(history_content_.begin(), history_content_.end(), -1);
}

// The second half of enterStates: enter `to_enter` in document order.
void ChartInstance::enter_set(const StateSet& to_enter, const StateSet& default_entry) {
  if (!history_content_set_ && !to_enter.intersects(def_->entry_work)) {
    config_ |= to_enter;  // nothing runs on entry: enter them all at once
    entered_ |= to_enter;
    return;
  }
  history_content_set_ = false;
  for (int s = to_enter.next(-1); s >= 0; s = to_enter.next(s)) {
    const ChartState& st = def_->state(s);
    config_.insert(s);
    entered_.insert(s);
    run_blocks(st.on_entry);
    if (default_entry.contains(s)) run_block(def_->transition(st.initial).content);
    if (const int h = history_content_[static_cast<std::size_t>(s)]; h >= 0) {
      history_content_[static_cast<std::size_t>(s)] = -1;
      run_block(def_->transition(h).content);
    }
    if (st.kind != StateKind::final_state) continue;
    if (st.parent == 0) {
      running_ = false;  // a top-level final: the chart is done
      continue;
    }
    const ChartState& parent = def_->state(st.parent);
    internal_.emplace_back("done.state." + parent.id);
    if (parent.parent >= 0) {
      const ChartState& grand = def_->state(parent.parent);
      if (grand.kind == StateKind::parallel &&
          std::all_of(grand.children.begin(), grand.children.end(),
                      [&](int c) { return in_final(c); }))
        internal_.emplace_back("done.state." + grand.id);
    }
  }
}

// isInFinalState
bool ChartInstance::in_final(int s) const {
  const ChartState& st = def_->state(s);
  if (st.kind == StateKind::compound)
    return std::any_of(st.children.begin(), st.children.end(), [&](int c) {
      return def_->state(c).kind == StateKind::final_state && config_.contains(c);
    });
  if (st.kind == StateKind::parallel)
    return std::all_of(st.children.begin(), st.children.end(), [&](int c) { return in_final(c); });
  return false;
}

void ChartInstance::run_blocks(const std::vector<ChartBlock>& blocks) {
  for (const ChartBlock& b : blocks) run_block(b);
}

// Executable content: an action that throws ends its block and raises error.execution.
void ChartInstance::run_block(const ChartBlock& block) {
  for (const ChartOp& op : block) {
    switch (op.kind) {
      case ChartOp::Kind::call:
        try {
          def_->actions[static_cast<std::size_t>(op.action)].fn(data_, *current_, *this);
        } catch (...) {
          execution_error();
          return;
        }
        break;
      case ChartOp::Kind::raise:
        internal_.emplace_back(op.name);
        break;
      case ChartOp::Kind::send:
        schedule(ChartEvent(op.name), op.delay, op.send_id);
        break;
      case ChartOp::Kind::cancel:
        cancel(op.name);
        break;
      case ChartOp::Kind::log:
        break;
    }
  }
}

void ChartInstance::execution_error() {
  if (trace_ != nullptr) {
    if (trace_->execution_errors++ == 0) trace_->first_error = std::current_exception();
  }
  internal_.emplace_back("error.execution", std::current_exception());
}

void ChartInstance::raise(ChartEvent e) { internal_.push_back(std::move(e)); }

void ChartInstance::send(ChartEvent e, std::chrono::milliseconds delay, std::string id) {
  schedule(std::move(e), delay, std::move(id));
}

void ChartInstance::schedule(ChartEvent e, std::chrono::milliseconds delay, std::string id) {
  DelayedSend d{clock_->now() + delay, ++send_seq_, std::move(e), std::move(id)};
  auto it = std::upper_bound(timers_.begin(), timers_.end(), d,
                             [](const DelayedSend& a, const DelayedSend& b) {
                               return a.due != b.due ? a.due < b.due : a.seq < b.seq;
                             });
  timers_.insert(it, std::move(d));
}

void ChartInstance::cancel(std::string_view id) {
  std::erase_if(timers_, [&](const DelayedSend& d) { return !d.id.empty() && d.id == id; });
}

bool ChartInstance::in(std::string_view id) const { return config_.contains(def_->index_of(id)); }

std::optional<ChartEvent> ChartInstance::take_due(ChartClock::time_point now) {
  if (timers_.empty() || timers_.front().due > now) return std::nullopt;
  ChartEvent e = std::move(timers_.front().event);
  timers_.erase(timers_.begin());
  return e;
}

std::optional<ChartClock::time_point> ChartInstance::next_due() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.front().due;
}

std::vector<bool> ChartInstance::history_recorded() const { return recorded_; }

void ChartInstance::restore(StateSet configuration, std::vector<std::vector<int>> history,
                            std::vector<bool> recorded, std::vector<DelayedSend> sends,
                            bool running) {
  config_ = std::move(configuration);
  history_ = std::move(history);
  recorded_ = std::move(recorded);
  history_.resize(def_->states.size());
  recorded_.resize(def_->states.size(), false);
  timers_ = std::move(sends);
  std::stable_sort(timers_.begin(), timers_.end(), [](const DelayedSend& a, const DelayedSend& b) {
    return a.due != b.due ? a.due < b.due : a.seq < b.seq;
  });
  for (const DelayedSend& d : timers_) send_seq_ = std::max(send_seq_, d.seq);
  running_ = running;
  internal_.clear();
}

}  // namespace trellis::detail
