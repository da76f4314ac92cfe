#pragma once
/// @file
/// Testing statecharts without running them on a graph: `trellis::testing::explore(chart,
/// events)` walks every state a chart can reach over an alphabet of events, breadth first, and
/// reports which configurations it reached, which transitions were never taken, which states
/// were never entered, the dead ends, and the errors met, each with its shortest event
/// sequence; its `matrix` (also `configuration_matrix(chart, events)`) is the transition matrix
/// of the flat machines generalised to configurations, for a golden file.
///
/// ```cpp
/// namespace tt = trellis::testing;
/// const auto report = tt::explore(player, {"play", "pause", "stop", "loaded", "mute"});
/// CHECK_MESSAGE(report.ok(), report.summary());   // no dead end, no error, no invariant broken
/// CHECK(report.never_entered.empty());
/// CHECK(tt::check_golden("golden/player.md", tt::to_markdown(report.matrix)));
/// ```
///
/// - **What a state is.** The interpreter's whole state after a macrostep: the active
///   configuration, every history value (and whether it was recorded), whether the chart is
///   done, the pending delayed sends (event name, send id and time left; not their payloads),
///   and the chart's data. Two states are the same when all of these are equal. The data is
///   compared with `==` and hashed with `std::hash<D>` or the options' `Hash`; a data type
///   that is an empty class (`NoData`) is not compared, and `Hash = IgnoreData` leaves the
///   data out on purpose (then the data of the first path to reach a state is kept with it).
/// - **Moves.** From every stored state, each event of the alphabet, in the order given, is
///   sent as one external event (one macrostep, exactly as the runners do it). With
///   `fire_delayed_sends` (the default), a state with pending delayed sends has one more move:
///   time passes until the first of them is due and it is delivered, as `fire_due()` would
///   (shown as `loaded (delayed)` in sequences). The clock is the explorer's own: sends are
///   timed relative to the state, so "500 ms left" is the same state whatever the path.
/// - **Order.** Breadth first, events in alphabet order, the delayed move last: every sequence
///   reported is a shortest one, and two runs give equal reports.
/// - **Transitions** are the chart's own (document order, `ChartDefinition::transitions`),
///   described "transition 2 of 'playing' on 'pause'"; a state's initial transition and a
///   history's default are not selected by events and are not listed. A transition counts as
///   taken when a microstep of any move took it (eventless and raised-event ones included).
/// - **States never entered** are the states (not the root, not history pseudo-states) that no
///   move entered, even for a moment within a macrostep.
/// - **Dead ends** are stored states in which the chart is not done, every event of the
///   alphabet is ignored, and no delayed send is pending (when delayed sends fire).
/// - **Failures**: an invariant broken in a stored state (`options.invariant(name, f)` with
///   `f(const ChartConfiguration&, const D&)` or `f(const ChartConfiguration&)`), a
///   `chart_livelock` (the state reached is still stored, as the runners commit it), an
///   `error.execution` raised because an action or guard threw, or an exception out of the
///   interpreter. Each distinct one (kind and message) is reported once with a count and the
///   shortest sequence.
/// - **Bounds.** At most `max_states` states are stored and none deeper than `max_depth`
///   moves; every stored state still tries every move, so the matrix and coverage are complete
///   for the stored states; `partial()` says whether a bound cut the walk. A state that is not
///   stored is not judged a dead end.
/// - **Cost.** Each stored state keeps a copy of the interpreter and of the data.

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trellis/base/error.hpp"
#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/clock.hpp"
#include "trellis/statechart/configuration.hpp"
#include "trellis/statechart/definition.hpp"
#include "trellis/statechart/detail/chart_instance.hpp"
#include "trellis/statechart/state_set.hpp"
#include "trellis/testing/transition_matrix.hpp"

namespace trellis::detail::chart_explore {

template <class D>
concept std_hashable = std::is_default_constructible_v<std::hash<D>> &&
    requires(const std::hash<D>& h, const D& d) {
  { h(d) } -> std::convertible_to<std::size_t>;
};

/// The options' default hash when `D` has none: `explore` refuses it with a message.
template <class D>
struct no_data_hash {};

inline void combine(std::size_t& h, std::size_t v) noexcept {
  h ^= v + static_cast<std::size_t>(0x9e3779b97f4a7c15ULL) + (h << 6) + (h >> 2);
}

}  // namespace trellis::detail::chart_explore

namespace trellis::testing {

/// A data "hash" that leaves the chart's data out of the explored state (see the file comment).
struct IgnoreData {
  template <class D>
  std::size_t operator()(const D&) const noexcept {
    return 0;
  }
};

/// `IgnoreData` for an empty data type, else `std::hash<D>` when it exists, else a marker that
/// `explore` refuses with a message.
template <class D>
using default_data_hash =
    std::conditional_t<std::is_empty_v<D>, IgnoreData,
                       std::conditional_t<detail::chart_explore::std_hashable<D>, std::hash<D>,
                                          detail::chart_explore::no_data_hash<D>>>;

/// A named check over a stored state's configuration and data; it holds when it returns true.
template <class D>
struct ChartInvariant {
  std::string name;
  std::function<bool(const ChartConfiguration&, const D&)> check;
};

/// How `explore` on a chart is bounded and what it checks; an aggregate (`{.max_states = 500}`).
template <class D, class Hash = default_data_hash<D>>
struct ChartExploreOptions {
  /// At most this many distinct states are stored (the initial one included).
  std::size_t max_states = 100'000;
  /// No state further than this many moves from the initial one is stored.
  std::size_t max_depth = std::numeric_limits<std::size_t>::max();
  /// Whether the first pending delayed send may fire as a move of its own.
  bool fire_delayed_sends = true;
  /// Checked at every stored state.
  std::vector<ChartInvariant<D>> invariants{};
  /// Hashes the data (equal data, equal hashes); `IgnoreData` leaves the data out.
  Hash hash{};
  /// The interpreter's microstep budget per macrostep (as `ChartOptions::microstep_budget`).
  std::size_t microstep_budget = 100'000;
  /// Distinct failures kept with their sequence (more are only counted).
  std::size_t max_failures = 16;
  /// Dead ends kept with their sequence (all are counted).
  std::size_t max_examples = 16;

  /// Adds a named invariant: `f(const ChartConfiguration&, const D&)` or
  /// `f(const ChartConfiguration&)`, true when it holds.
  template <class F>
  ChartExploreOptions& invariant(std::string name, F f) & {
    if constexpr (std::is_invocable_r_v<bool, const F&, const ChartConfiguration&, const D&>) {
      invariants.push_back({std::move(name), std::move(f)});
    } else if constexpr (std::is_invocable_r_v<bool, const F&, const ChartConfiguration&>) {
      invariants.push_back(
          {std::move(name), [f = std::move(f)](const ChartConfiguration& c, const D&) {
             return static_cast<bool>(f(c));
           }});
    } else {
      static_assert(sizeof(F) == 0,
                    "trellis::testing::ChartExploreOptions::invariant: the check must be callable "
                    "as bool(const ChartConfiguration&, const D&) or "
                    "bool(const ChartConfiguration&)");
    }
    return *this;
  }
};

/// A sequence of moves from the initial state: `configurations[0]` is the initial
/// configuration and `configurations[i + 1]` the one after `events[i]`; each configuration is
/// its active atomic states' ids in document order. A delayed send that fired reads
/// "name (delayed)".
struct ChartPath {
  std::vector<std::string> events;
  std::vector<std::vector<std::string>> configurations;
  bool operator==(const ChartPath&) const = default;
};

/// A configuration `explore` reached.
struct ReachedConfiguration {
  std::vector<std::string> states;  ///< the active atomic states' ids, document order
  bool done = false;                ///< a top-level final state is active
  std::size_t stored = 0;           ///< stored states in this configuration
  ChartPath path;                   ///< the shortest sequence reaching it
  bool operator==(const ReachedConfiguration&) const = default;
};

/// How often one transition was taken.
struct TransitionCoverage {
  int index = -1;           ///< its index in `ChartDefinition::transitions` (document order)
  std::string description;  ///< "transition 2 of 'playing' on 'pause'"
  std::size_t taken = 0;    ///< microsteps that took it
  bool operator==(const TransitionCoverage&) const = default;
};

enum class ChartFailureKind {
  invariant,        ///< a stored state broke an invariant
  livelock,         ///< a macrostep did not become stable (chart_livelock)
  execution_error,  ///< an action or a guard threw (error.execution was raised)
  exception,        ///< the interpreter threw
};

/// One distinct failure.
struct ChartFailure {
  ChartFailureKind kind = ChartFailureKind::invariant;
  /// The invariant's name, or the exception's message.
  std::string what;
  /// How many stored states (invariant) or moves (otherwise) failed this way.
  std::size_t count = 0;
  /// The shortest failing sequence (for an exception out of the interpreter, the last event
  /// has no configuration after it).
  ChartPath path;
  bool operator==(const ChartFailure&) const = default;
};

/// For every reached configuration (rows, in order of discovery) and every event of the
/// alphabet (columns), what the event does there: the configuration it leads to (its atomic
/// ids, ", "-separated), "ignored", "livelock" or "throws". A cell lists each distinct outcome
/// once, in order of discovery: several outcomes mean that history, data or pending sends
/// decide (the configuration alone does not).
class ConfigurationMatrix {
 public:
  struct Row {
    std::string configuration;                    ///< "buffering, loud"
    std::vector<std::vector<std::string>> cells;  ///< per event, its outcomes
    bool operator==(const Row&) const = default;
  };

  ConfigurationMatrix() = default;
  ConfigurationMatrix(std::vector<std::string> events, std::vector<Row> rows)
      : events_(std::move(events)), rows_(std::move(rows)) {}

  /// The column headers: the alphabet's event names (with " (sample k)" for repeats).
  const std::vector<std::string>& events() const noexcept { return events_; }
  const std::vector<Row>& rows() const noexcept { return rows_; }

  /// The outcomes of `event` in `configuration` ("buffering, loud"); `trellis::error` when
  /// either is not in the matrix.
  const std::vector<std::string>& at(std::string_view configuration, std::string_view event) const {
    const auto col = std::find(events_.begin(), events_.end(), event);
    if (col == events_.end()) {
      throw error("trellis::testing: the configuration matrix has no event '" + std::string(event) +
                  "'");
    }
    for (const Row& r : rows_) {
      if (r.configuration == configuration) {
        return r.cells[static_cast<std::size_t>(col - events_.begin())];
      }
    }
    throw error("trellis::testing: the configuration matrix has no configuration '" +
                std::string(configuration) + "'");
  }

  bool operator==(const ConfigurationMatrix&) const = default;

 private:
  std::vector<std::string> events_;
  std::vector<Row> rows_;
};

/// What `explore` found on a chart (see the file comment).
struct ChartExploreReport {
  std::size_t states = 0;       ///< distinct states stored
  std::size_t moves = 0;        ///< moves tried (events sent and delayed sends fired)
  std::size_t transitions = 0;  ///< moves that took at least one transition
  std::size_t depth = 0;        ///< moves from the initial state to the farthest stored state
  bool cut_by_states = false;   ///< a state was not stored because of max_states
  bool cut_by_depth = false;    ///< a state was not stored because of max_depth
  /// Every configuration reached, in order of discovery (so by length of `path`).
  std::vector<ReachedConfiguration> configurations;
  /// Every selectable transition, in document order.
  std::vector<TransitionCoverage> coverage;
  /// The states no move entered (ids, document order; no root, no history states).
  std::vector<std::string> never_entered;
  /// Stored states where nothing can happen (see the file comment): how many, and the first
  /// `max_examples` with their shortest sequence, nearest first.
  std::size_t dead_ends = 0;
  std::vector<ChartPath> dead_end_examples;
  /// Distinct failures, in order of discovery (so shortest sequence first).
  std::vector<ChartFailure> failures;
  std::size_t more_failures = 0;
  /// The configuration matrix of the alphabet over the reached configurations.
  ConfigurationMatrix matrix;
  /// The text `summary()` returns.
  std::string text;

  bool partial() const noexcept { return cut_by_states || cut_by_depth; }
  bool complete() const noexcept { return !partial(); }
  /// No failure and no dead end.
  bool ok() const noexcept { return failures.empty() && more_failures == 0 && dead_ends == 0; }
  const std::string& summary() const noexcept { return text; }

  /// The transitions no move took, in document order.
  std::vector<TransitionCoverage> never_taken() const {
    std::vector<TransitionCoverage> out;
    for (const TransitionCoverage& c : coverage) {
      if (c.taken == 0) out.push_back(c);
    }
    return out;
  }
  /// The reached configuration whose active atomic states are `states` (document order), or
  /// nullptr.
  const ReachedConfiguration* find(const std::vector<std::string>& states) const {
    for (const ReachedConfiguration& c : configurations) {
      if (c.states == states) return &c;
    }
    return nullptr;
  }
  bool reached(const std::vector<std::string>& states) const { return find(states) != nullptr; }

  bool operator==(const ChartExploreReport&) const = default;
};

/// The report's summary.
inline std::string to_string(const ChartExploreReport& report) { return report.text; }

}  // namespace trellis::testing

namespace trellis::detail::chart_explore {

using testing::ChartExploreReport;
using testing::ChartFailure;
using testing::ChartFailureKind;
using testing::ChartPath;
using testing::ConfigurationMatrix;
using testing::IgnoreData;

inline std::string exception_text(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

template <class D, class Hash>
class Explorer {
  static constexpr bool compare_data = !std::is_empty_v<D> && !std::is_same_v<Hash, IgnoreData>;

  struct Node {
    Node(const D& d, const ChartInstance& i) : data(d), inst(i) { inst.set_data(&data); }
    D data;
    ChartInstance inst;
    ChartClock::time_point now{};
    std::size_t parent = none;
    std::size_t depth = 0;
    std::string via;  // the move that reached it
    std::size_t hash = 0;
  };

 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  Explorer(const Chart<D>& chart, const std::vector<ChartEvent>& events,
           const testing::ChartExploreOptions<D, Hash>& options)
      : shared_(chart.shared_definition()), def_(*shared_), events_(events), opts_(options) {
    for (std::size_t k = 0; k < events_.size(); ++k) {
      std::size_t same = 0;
      std::size_t nth = 0;
      for (std::size_t j = 0; j < events_.size(); ++j) {
        if (events_[j].name != events_[k].name) continue;
        ++same;
        if (j <= k) ++nth;
      }
      labels_.push_back(same > 1 ? events_[k].name + " (sample " + std::to_string(nth) + ")"
                                 : events_[k].name);
    }
    entered_.resize(def_.states.size());
    for (std::size_t t = 0; t < def_.transitions.size(); ++t) {
      const ChartTransition& tr = def_.transitions[t];
      if (tr.pseudo) continue;
      const ChartState& src = def_.state(tr.source);
      const auto pos =
          std::find(src.transitions.begin(), src.transitions.end(), static_cast<int>(t)) -
          src.transitions.begin();
      std::string text = "transition " + std::to_string(pos + 1) + " of '" + src.id + "'";
      text += tr.eventless() ? std::string(" (eventless)") : " on '" + tr.event + "'";
      report_.coverage.push_back({static_cast<int>(t), std::move(text), 0});
    }
  }

  ChartExploreReport run(const D& initial) {
    {
      D data = initial;
      ChartInstance first(shared_, &data, &clock_, opts_.microstep_budget);
      auto node = std::make_unique<Node>(data, first);
      node->inst.set_trace(&trace_);
      trace_.clear();
      try {
        node->inst.start();
      } catch (...) {
        fail(ChartFailureKind::exception, exception_text(std::current_exception()), none, "");
        finish();
        return std::move(report_);
      }
      node->inst.set_trace(nullptr);
      after_move(*node, none, "");
      node->hash = hash_of(*node);
      store(std::move(node));
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) expand(i);
    finish();
    return std::move(report_);
  }

 private:
  // --- states --------------------------------------------------------------------------------

  std::size_t hash_of(const Node& n) const {
    std::size_t h = 0;
    const StateSet& c = n.inst.configuration();
    for (int s = c.next(-1); s >= 0; s = c.next(s)) combine(h, static_cast<std::size_t>(s));
    combine(h, n.inst.running() ? 1 : 2);
    const auto& hist = n.inst.history_values();
    for (std::size_t s = 0; s < hist.size(); ++s) {
      if (hist[s].empty()) continue;
      combine(h, s);
      for (int x : hist[s]) combine(h, static_cast<std::size_t>(x));
    }
    for (const DelayedSend& d : n.inst.pending_sends()) {
      combine(h, std::hash<std::string>{}(d.event.name));
      combine(h, std::hash<std::string>{}(d.id));
      combine(h, static_cast<std::size_t>((d.due - n.now).count()));
    }
    if constexpr (compare_data) combine(h, static_cast<std::size_t>(opts_.hash(n.data)));
    return h;
  }

  static bool same(const Node& a, const Node& b) {
    if (!(a.inst.configuration() == b.inst.configuration()) ||
        a.inst.running() != b.inst.running() ||
        a.inst.history_values() != b.inst.history_values() ||
        a.inst.history_recorded() != b.inst.history_recorded()) {
      return false;
    }
    const auto& x = a.inst.pending_sends();
    const auto& y = b.inst.pending_sends();
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (x[k].event.name != y[k].event.name || x[k].id != y[k].id ||
          x[k].due - a.now != y[k].due - b.now) {
        return false;
      }
    }
    if constexpr (compare_data) {
      return a.data == b.data;
    } else {
      return true;
    }
  }

  std::size_t find(const Node& n) const {
    const auto [lo, hi] = index_.equal_range(n.hash);
    for (auto it = lo; it != hi; ++it) {
      if (same(*nodes_[it->second], n)) return it->second;
    }
    return none;
  }

  std::size_t configuration_of(const Node& n) {
    std::vector<int> key = n.inst.configuration().members();
    const auto it = config_index_.find(key);
    if (it != config_index_.end()) return it->second;
    const std::size_t c = report_.configurations.size();
    config_index_.emplace(std::move(key), c);
    testing::ReachedConfiguration r;
    r.states = def_.ids(def_.atomic(n.inst.configuration()));
    r.done = !n.inst.running();
    report_.configurations.push_back(std::move(r));
    cells_.emplace_back(events_.size());
    return c;
  }

  void store(std::unique_ptr<Node> node) {
    const std::size_t i = nodes_.size();
    index_.emplace(node->hash, i);
    nodes_.push_back(std::move(node));
    const Node& n = *nodes_.back();
    report_.depth = std::max(report_.depth, n.depth);
    const std::size_t c = configuration_of(n);
    testing::ReachedConfiguration& r = report_.configurations[c];
    if (r.stored++ == 0) r.path = path_to(i);
    configs_.push_back(c);
    if (!opts_.invariants.empty()) {
      StateSet reentered;
      reentered.assign_and(n.inst.entered(), n.inst.exited());
      const ChartConfiguration view(&def_, n.inst.configuration(), std::move(reentered), n.depth,
                                    !n.inst.running());
      for (const auto& inv : opts_.invariants) {
        bool holds = false;
        try {
          holds = inv.check(view, n.data);
        } catch (...) {
          holds = false;
        }
        if (!holds) fail(ChartFailureKind::invariant, inv.name, i, "");
      }
    }
  }

  // --- moves ---------------------------------------------------------------------------------

  // What a move did besides its configuration: coverage, entered states, errors.
  void after_move(Node& n, std::size_t parent, const std::string& via) {
    for (int t : trace_.taken) {
      for (auto& c : report_.coverage) {
        if (c.index == t) ++c.taken;
      }
    }
    entered_ |= n.inst.entered();
    if (trace_.execution_errors > 0) {
      fail(ChartFailureKind::execution_error,
           "error.execution: " + exception_text(trace_.first_error), parent, via, &n);
    }
    if (auto err = n.inst.take_error()) {
      fail(ChartFailureKind::livelock, exception_text(err), parent, via, &n);
    }
  }

  void expand(std::size_t i) {
    const Node& from = *nodes_[i];
    std::size_t row = configs_[i];
    bool anything = false;
    const std::size_t moves = events_.size() + (opts_.fire_delayed_sends ? 1 : 0);
    for (std::size_t k = 0; k < moves; ++k) {
      const bool delayed = k == events_.size();
      if (delayed && from.inst.pending_sends().empty()) break;
      auto child = std::make_unique<Node>(from.data, from.inst);
      child->now = from.now;
      child->parent = i;
      child->depth = from.depth + 1;
      clock_.set(from.now);
      child->inst.clear_changes();
      trace_.clear();
      child->inst.set_trace(&trace_);
      ++report_.moves;
      bool took = false;
      try {
        if (delayed) {
          const ChartClock::time_point due = child->inst.pending_sends().front().due;
          clock_.set(due);
          child->now = due;
          std::optional<ChartEvent> e = child->inst.take_due(due);
          child->via = e->name + " (delayed)";
          took = child->inst.process(*e);
        } else {
          child->via = labels_[k];
          took = child->inst.process(events_[k]);
        }
      } catch (...) {
        const std::string what = exception_text(std::current_exception());
        fail(ChartFailureKind::exception, what, i, child->via);
        if (!delayed) outcome(row, k, "throws");
        anything = true;
        continue;
      }
      child->inst.set_trace(nullptr);
      const bool livelock = child->inst.has_error();
      after_move(*child, i, child->via);
      if (!delayed) {
        if (!took) {
          outcome(row, k, "ignored");
          continue;
        }
        outcome(row, k,
                livelock ? std::string("livelock")
                         : join(def_.ids(def_.atomic(child->inst.configuration())), ", "));
      }
      anything = true;
      if (took) ++report_.transitions;
      child->hash = hash_of(*child);
      if (find(*child) != none) continue;
      if (child->depth > opts_.max_depth) {
        report_.cut_by_depth = true;
        continue;
      }
      if (nodes_.size() >= opts_.max_states) {
        report_.cut_by_states = true;
        continue;
      }
      store(std::move(child));
    }
    if (!anything && from.inst.running()) {
      ++report_.dead_ends;
      if (report_.dead_end_examples.size() < opts_.max_examples) {
        report_.dead_end_examples.push_back(path_to(i));
      }
    }
  }

  void outcome(std::size_t row, std::size_t k, std::string text) {
    auto& cell = cells_[row][k];
    if (std::find(cell.begin(), cell.end(), text) == cell.end()) cell.push_back(std::move(text));
  }

  // --- findings ------------------------------------------------------------------------------

  ChartPath path_to(std::size_t at) const {
    std::vector<std::size_t> chain;
    for (std::size_t j = at; j != none; j = nodes_[j]->parent) chain.push_back(j);
    std::reverse(chain.begin(), chain.end());
    ChartPath path;
    for (std::size_t n = 0; n < chain.size(); ++n) {
      const Node& node = *nodes_[chain[n]];
      if (n > 0) path.events.push_back(node.via);
      path.configurations.push_back(def_.ids(def_.atomic(node.inst.configuration())));
    }
    return path;
  }

  // `at`: the stored state that failed (invariant), or the state the failing move started
  // from, with `via` the move and `after` the node it led to (nullptr: none).
  void fail(ChartFailureKind kind, const std::string& what, std::size_t at, const std::string& via,
            const Node* after = nullptr) {
    for (ChartFailure& f : report_.failures) {
      if (f.kind == kind && f.what == what) {
        ++f.count;
        return;
      }
    }
    if (report_.failures.size() >= opts_.max_failures) {
      ++report_.more_failures;
      return;
    }
    ChartFailure f;
    f.kind = kind;
    f.what = what;
    f.count = 1;
    if (at != none) f.path = path_to(at);
    if (!via.empty()) {
      f.path.events.push_back(via);
      if (after != nullptr) {
        f.path.configurations.push_back(def_.ids(def_.atomic(after->inst.configuration())));
      }
    } else if (at == none && after != nullptr) {  // while entering the initial configuration
      f.path.configurations.push_back(def_.ids(def_.atomic(after->inst.configuration())));
    }
    report_.failures.push_back(std::move(f));
  }

  void finish() {
    report_.states = nodes_.size();
    for (std::size_t s = 1; s < def_.states.size(); ++s) {
      const ChartState& st = def_.states[s];
      if (st.is_history() || entered_.contains(static_cast<int>(s))) continue;
      report_.never_entered.push_back(st.id);
    }
    std::vector<ConfigurationMatrix::Row> rows;
    for (std::size_t c = 0; c < report_.configurations.size(); ++c) {
      rows.push_back({join(report_.configurations[c].states, ", "), cells_[c]});
    }
    report_.matrix = ConfigurationMatrix(labels_, std::move(rows));
    report_.text = summary();
  }

  static std::string plural(std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  }

  static std::string path_text(const ChartPath& p) {
    std::string out;
    for (std::size_t n = 0; n < p.configurations.size() || n < p.events.size() + 1; ++n) {
      if (n == 0) {
        out +=
            "      {" + (p.configurations.empty() ? "" : join(p.configurations[0], ", ")) + "}\n";
        continue;
      }
      out += "      --" + p.events[n - 1] + "--> ";
      out += n < p.configurations.size() ? "{" + join(p.configurations[n], ", ") + "}"
                                         : std::string("throws");
      out += "\n";
    }
    return out;
  }

  std::string summary() const {
    const ChartExploreReport& r = report_;
    std::string out = "explore '" + def_.name + "': " + plural(r.states, "state") + " in " +
                      plural(r.configurations.size(), "configuration") + ", " +
                      plural(r.moves, "move") + " (" + std::to_string(r.transitions) +
                      " took transitions), depth " + std::to_string(r.depth) + "; ";
    if (r.complete()) {
      out += "complete\n";
    } else {
      out += "PARTIAL:";
      if (r.cut_by_states) out += " stopped at max_states = " + std::to_string(opts_.max_states);
      if (r.cut_by_states && r.cut_by_depth) out += ",";
      if (r.cut_by_depth) out += " stopped at max_depth = " + std::to_string(opts_.max_depth);
      out += "\n";
    }
    const auto never = r.never_taken();
    out += "transitions: " + std::to_string(r.coverage.size() - never.size()) + " of " +
           std::to_string(r.coverage.size()) + " taken\n";
    for (const auto& c : never) out += "  never taken: " + c.description + "\n";
    if (!r.never_entered.empty()) {
      out += "states never entered: " + join(r.never_entered, ", ") + "\n";
    }
    if (r.dead_ends == 0) {
      out += "dead ends: none\n";
    } else {
      out += "dead ends: " + std::to_string(r.dead_ends) + "; nearest:\n";
      for (const ChartPath& p : r.dead_end_examples) {
        out += "    after " + plural(p.events.size(), "event") + ":\n" + path_text(p);
      }
    }
    if (r.failures.empty() && r.more_failures == 0) {
      out += "failures: none\n";
    } else {
      out += "failures: " + std::to_string(r.failures.size() + r.more_failures) + "\n";
      for (const ChartFailure& f : r.failures) {
        switch (f.kind) {
          case ChartFailureKind::invariant:
            out += "  invariant \"" + f.what + "\" broken in " + plural(f.count, "state");
            break;
          case ChartFailureKind::livelock:
            out += "  livelock " + f.what + ", in " + plural(f.count, "move");
            break;
          case ChartFailureKind::execution_error:
            out += "  " + f.what + ", in " + plural(f.count, "move");
            break;
          case ChartFailureKind::exception:
            out += "  exception " + f.what + ", thrown by " + plural(f.count, "move");
            break;
        }
        out += "; shortest sequence (" + plural(f.path.events.size(), "event") + "):\n";
        out += path_text(f.path);
      }
      if (r.more_failures > 0) {
        out +=
            "  and " + std::to_string(r.more_failures) + " more (raise max_failures to see them)\n";
      }
    }
    out += r.ok() ? "ok\n" : "NOT OK\n";
    return out;
  }

  std::shared_ptr<const ChartDefinition> shared_;
  const ChartDefinition& def_;
  const std::vector<ChartEvent>& events_;
  const testing::ChartExploreOptions<D, Hash>& opts_;
  std::vector<std::string> labels_;
  ManualChartClock clock_;
  ChartTrace trace_;
  ChartExploreReport report_;
  StateSet entered_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_multimap<std::size_t, std::size_t> index_;
  std::vector<std::size_t> configs_;  // the configuration (row) of each stored state
  std::map<std::vector<int>, std::size_t> config_index_;
  std::vector<std::vector<std::vector<std::string>>> cells_;  // [row][event] outcomes
};

template <class D, class Hash>
constexpr bool explorable() {
  static_assert(std::copy_constructible<D>,
                "trellis::testing::explore: the chart's data must be copyable (each explored "
                "state keeps a copy)");
  static_assert(!std::is_same_v<Hash, no_data_hash<D>>,
                "trellis::testing::explore: the chart's data D has no std::hash<D>; give the "
                "options a hash: `struct H { std::size_t operator()(const D& d) const { return "
                "trellis::testing::hash_values(d.a, d.b); } };` and pass "
                "`trellis::testing::ChartExploreOptions<D, H>`, or leave the data out with "
                "`ChartExploreOptions<D, trellis::testing::IgnoreData>`");
  constexpr bool data_compared = !std::is_empty_v<D> && !std::is_same_v<Hash, IgnoreData>;
  static_assert(!data_compared || std::equality_comparable<D>,
                "trellis::testing::explore: the chart's data must have == (explored states are "
                "told apart by it), or leave it out with "
                "`ChartExploreOptions<D, trellis::testing::IgnoreData>`");
  return std::copy_constructible<D> && !std::is_same_v<Hash, no_data_hash<D>> &&
         (!data_compared || std::equality_comparable<D>);
}

}  // namespace trellis::detail::chart_explore

namespace trellis::testing {

/// Explores `chart` from the initial configuration with `initial` data over the alphabet
/// `events` (see the file comment).
template <class D, class Hash = default_data_hash<D>>
ChartExploreReport explore(const Chart<D>& chart, const std::type_identity_t<D>& initial,
                           const std::vector<ChartEvent>& events,
                           const ChartExploreOptions<D, Hash>& options = {}) {
  if constexpr (!detail::chart_explore::explorable<D, Hash>()) {
    return {};
  } else {
    return detail::chart_explore::Explorer<D, Hash>(chart, events, options).run(initial);
  }
}

/// The same with default-constructed data.
template <class D, class Hash = default_data_hash<D>>
ChartExploreReport explore(const Chart<D>& chart, const std::vector<ChartEvent>& events,
                           const ChartExploreOptions<D, Hash>& options = {}) {
  return explore(chart, D{}, events, options);
}

/// The configuration matrix of `chart` over `events`: `explore(...).matrix`.
template <class D, class Hash = default_data_hash<D>>
ConfigurationMatrix configuration_matrix(const Chart<D>& chart,
                                         const std::vector<ChartEvent>& events,
                                         const ChartExploreOptions<D, Hash>& options = {}) {
  return explore(chart, events, options).matrix;
}

/// The matrix as a Markdown table: one row per configuration, one column per event, each cell
/// its outcomes joined by " \| " (`|` and line breaks in names escaped); columns padded.
inline std::string to_markdown(const ConfigurationMatrix& m) {
  const auto cell_text = [](std::string_view s) { return detail::markdown_cell(s); };
  const auto width = [](std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) {
      if ((static_cast<unsigned char>(c) & 0xC0U) != 0x80U) ++n;
    }
    return n;
  };
  std::vector<std::vector<std::string>> table;
  table.emplace_back();
  table.back().push_back("configuration \\ event");
  for (const std::string& e : m.events()) table.back().push_back(cell_text(e));
  for (const ConfigurationMatrix::Row& r : m.rows()) {
    table.emplace_back();
    table.back().push_back(cell_text(r.configuration));
    for (const auto& cell : r.cells) {
      std::string joined;
      for (const std::string& o : cell) {
        if (!joined.empty()) joined += " \\| ";
        joined += cell_text(o);
      }
      table.back().push_back(joined);
    }
  }
  std::vector<std::size_t> widths(m.events().size() + 1, 3);
  for (const auto& row : table) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], width(row[c]));
  }
  std::string out;
  for (std::size_t r = 0; r < table.size(); ++r) {
    out += "|";
    for (std::size_t c = 0; c < table[r].size(); ++c) {
      out += " " + table[r][c] + std::string(widths[c] - width(table[r][c]), ' ') + " |";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (const std::size_t w : widths) out += std::string(w + 2, '-') + "|";
      out += "\n";
    }
  }
  return out;
}

/// Prints the matrix as Markdown, so a failed `CHECK(a == b)` shows both tables.
inline std::ostream& operator<<(std::ostream& os, const ConfigurationMatrix& m) {
  return os << "\n" << to_markdown(m);
}

/// Prints the report's summary.
inline std::ostream& operator<<(std::ostream& os, const ChartExploreReport& r) {
  return os << "\n" << r.text;
}

}  // namespace trellis::testing
