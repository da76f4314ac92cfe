#pragma once
/// @file
/// `ChartDefinition`: a built chart, immutable and independent of its data type (a `Chart<D>`
/// holds one). Diagrams, the SCXML writer, exploration and persistence read it; users build it
/// with `ChartBuilder` (trellis/statechart/builder.hpp) or load it from SCXML.
///
/// States are numbered in document order (preorder): 0 is the root (SCXML's `<scxml>`), a
/// state's descendants are the indices (index, last_descendant], entry order is ascending
/// index and exit order descending. Transitions are numbered in document order too.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "trellis/statechart/actions.hpp"
#include "trellis/statechart/event.hpp"
#include "trellis/statechart/state_set.hpp"

namespace trellis {

enum class StateKind : std::uint8_t {
  root,             ///< the chart itself (`<scxml>`)
  atomic,           ///< a `<state>` without child states
  compound,         ///< a `<state>` with child states, one of which is active
  parallel,         ///< a `<parallel>`: every child region is active
  final_state,      ///< a `<final>`
  shallow_history,  ///< `<history type="shallow">`
  deep_history,     ///< `<history type="deep">`
};

/// "atomic", "compound", ... (the names the docs and diagrams use).
std::string_view to_string(StateKind k) noexcept;

/// One executable-content item of an entry, exit or transition block.
struct ChartOp {
  enum class Kind : std::uint8_t { call, raise, send, cancel, log };
  Kind kind = Kind::call;
  /// call: the action's name; raise/send: the event name; cancel: the send id; log: the label.
  std::string name;
  /// call: the index into ChartDefinition::actions.
  int action = -1;
  /// send: the delay and the send's id ("" when it has none).
  std::chrono::milliseconds delay{0};
  std::string send_id;
};

/// A block of executable content (an `<onentry>`, `<onexit>` or a transition's content): an
/// action that throws ends its block (SCXML's rule), and the error becomes an internal
/// `error.execution` event.
using ChartBlock = std::vector<ChartOp>;

struct ChartState {
  std::string id;
  StateKind kind = StateKind::atomic;
  int parent = -1;               ///< -1 for the root
  int depth = 0;                 ///< the root is 0
  int last_descendant = -1;      ///< descendants are (index, last_descendant]
  std::vector<int> children;     ///< child states (no history), document order
  std::vector<int> histories;    ///< child history states
  std::vector<int> transitions;  ///< own transitions, document order
  /// compound and root: the initial transition (targets + content); history: its default
  /// transition; otherwise -1.
  int initial = -1;
  std::vector<ChartBlock> on_entry;
  std::vector<ChartBlock> on_exit;
  /// Whether this state or an ancestor has an eventless transition (set by finish()).
  bool eventless_chain = false;
  /// The transitions with an event (resp. eventless ones) of this state, then of its parent,
  /// and so on up to the root, in that order: what selection scans for an atomic state
  /// (set by finish()).
  std::vector<int> event_candidates;
  std::vector<int> eventless_candidates;

  bool is_atomic() const noexcept {
    return kind == StateKind::atomic || kind == StateKind::final_state;
  }
  bool is_history() const noexcept {
    return kind == StateKind::shallow_history || kind == StateKind::deep_history;
  }
  /// A `<state>` with children (SCXML's "compound"), or the root.
  bool is_compound() const noexcept {
    return kind == StateKind::compound || kind == StateKind::root;
  }
};

/// A guard: `fn(data, event, query)`, erased from the typed callable by the builder; or, with
/// no `fn`, SCXML's `In(in_id)` (the builder's `when_in`), resolved to `in_state` when built.
struct ChartGuard {
  std::string name;
  std::function<bool(const void* data, const ChartEvent& e, const ChartQuery& q)> fn;
  std::string in_id;
  int in_state = -1;
};

/// A named action: `fn(data, event, actions)`.
struct ChartAction {
  std::string name;
  std::function<void(void* data, const ChartEvent& e, ChartActions& actions)> fn;
};

struct ChartTransition {
  int source = -1;
  /// The `event` descriptors, space-separated as in SCXML; empty: an eventless transition.
  std::string event;
  /// `event`, split, each without its trailing `.*` or `.` (set by finish()).
  std::vector<std::string> descriptors;
  bool any_event = false;    ///< one descriptor is `*`
  std::vector<int> targets;  ///< empty: a targetless transition
  bool internal = false;     ///< type="internal"
  int guard = -1;            ///< index into ChartDefinition::guards, or -1
  ChartBlock content;
  /// Precomputed transition domain when no target is a history state (else -2: computed per
  /// use); -1 when targetless.
  int domain = -2;
  /// The descendants of `domain` when it is precomputed (the states the transition exits are
  /// the active ones among them; set by finish()).
  StateSet exit_mask;
  /// Whether this is a state's initial or a history's default transition (not selectable).
  bool pseudo = false;

  bool eventless() const noexcept { return descriptors.empty(); }
  /// Whether an event named `name` matches one of the descriptors (inline: selection calls it
  /// for every candidate transition).
  bool matches(std::string_view name) const noexcept {
    if (any_event) return true;
    for (const std::string& d : descriptors) {
      // normalized by finish(): a prefix on a '.' boundary
      const std::size_t n = d.size();
      if (name.size() < n || (name.size() > n && name[n] != '.')) continue;
      std::size_t i = 0;
      while (i < n && d[i] == name[i]) ++i;  // event names are short: cheaper than memcmp
      if (i == n) return true;
    }
    return false;
  }
};

class ChartDefinition {
 public:
  std::string name;
  std::vector<ChartState> states;  ///< document order; states[0] is the root
  std::vector<ChartTransition> transitions;
  std::vector<ChartGuard> guards;
  std::vector<ChartAction> actions;
  /// The atomic states (set by finish()).
  StateSet atomic_states;
  /// The states with exit blocks, and those whose entry does more than join the configuration
  /// (entry blocks, a final state, an initial transition with content) (set by finish()).
  StateSet exit_work;
  StateSet entry_work;
  /// The states that have history children (set by finish()).
  StateSet history_parents;
  /// Whether any transition is eventless (set by finish()).
  bool has_eventless = false;
  /// The data type the guards and actions were written for (nullptr: they use none, any
  /// `Chart<D>` may run it).
  const std::type_info* data_type = nullptr;

  /// The index of state `id`, or -1.
  int find(std::string_view id) const noexcept;
  /// The index of state `id`; unknown_state naming the chart when there is none.
  int index_of(std::string_view id) const;

  bool is_descendant(int s, int ancestor) const noexcept {
    return s > ancestor && s <= states[static_cast<std::size_t>(ancestor)].last_descendant;
  }
  const ChartState& state(int s) const noexcept { return states[static_cast<std::size_t>(s)]; }
  const ChartTransition& transition(int t) const noexcept {
    return transitions[static_cast<std::size_t>(t)];
  }
  /// The ids of the states in `set`, in document order.
  std::vector<std::string> ids(const StateSet& set) const;
  /// The atomic states of `set`.
  StateSet atomic(const StateSet& set) const;

  /// Fills the lookup table and the precomputed domains; the builder and loaders call it.
  void finish();

 private:
  std::vector<std::pair<std::string, int>> by_id_;  // sorted by id
};

}  // namespace trellis
