#pragma once
/// @file
/// The interpreter of one running chart: W3C SCXML 1.0, Appendix D, over a ChartDefinition.
/// Not thread-safe: the runners call it with their graph's lock held. The chart's data lives
/// with the runner; the instance reaches it through a pointer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trellis/statechart/actions.hpp"
#include "trellis/statechart/clock.hpp"
#include "trellis/statechart/definition.hpp"
#include "trellis/statechart/state_set.hpp"

namespace trellis {

/// A delayed send waiting for its time (persisted by durable charts).
struct DelayedSend {
  ChartClock::time_point due;
  std::uint64_t seq = 0;  ///< order among sends due at the same time
  ChartEvent event;
  std::string id;  ///< the send's id ("" when it has none)
};

namespace detail {

/// What one run of the interpreter did, for exploration and coverage (trellis/statechart/
/// testing.hpp): set with `ChartInstance::set_trace`; the runners leave it unset.
struct ChartTrace {
  /// The transitions taken by microsteps, in order (a state's initial transition and a
  /// history's default are not selected, so they are not listed).
  std::vector<int> taken;
  /// How many `error.execution` events were raised (an action or a guard threw).
  std::size_t execution_errors = 0;
  /// The first exception behind them.
  std::exception_ptr first_error;

  void clear() noexcept {
    taken.clear();
    execution_errors = 0;
    first_error = nullptr;
  }
};

/// SCXML's getTransitionDomain for `t` with the effective targets `effective` (-1: none).
int chart_domain(const ChartDefinition& def, const ChartTransition& t,
                 const std::vector<int>& effective);

class ChartInstance final : public ChartActions {
 public:
  ChartInstance(std::shared_ptr<const ChartDefinition> def, void* data, const ChartClock* clock,
                std::size_t microstep_budget);
  ChartInstance(const ChartInstance& o);  // exploration copies it (then set_data)
  ChartInstance& operator=(const ChartInstance&) = delete;
  ~ChartInstance() = default;

  void set_data(void* data) noexcept { data_ = data; }
  /// Records what the following calls do into `trace` (nullptr: nothing is recorded). A copy
  /// of the instance records nothing until told.
  void set_trace(ChartTrace* trace) noexcept { trace_ = trace; }

  /// Enters the initial configuration and runs to the first stable one.
  void start();

  /// Processes one external event (one macrostep): false when no transition was enabled (the
  /// event is discarded, nothing ran) or the chart is done.
  bool process(const ChartEvent& e);

  /// Whether `e` would enable a transition now (guards are evaluated; nothing runs).
  bool enabled(const ChartEvent& e);

  const ChartDefinition& definition() const noexcept { return *def_; }
  const std::shared_ptr<const ChartDefinition>& shared_definition() const noexcept { return def_; }
  const StateSet& configuration() const noexcept { return config_; }
  /// The states entered and exited since `clear_changes()` (a state both exited and entered
  /// again is in both).
  const StateSet& entered() const noexcept { return entered_; }
  const StateSet& exited() const noexcept { return exited_; }
  void clear_changes() noexcept {
    entered_.clear();
    exited_.clear();
  }
  /// False once a top-level final state was entered (the chart is done).
  bool running() const noexcept { return running_; }

  bool has_error() const noexcept { return error_ != nullptr; }
  /// The error the last macrostep stopped on (chart_livelock), taken once.
  std::exception_ptr take_error() noexcept { return std::exchange(error_, nullptr); }

  // --- delayed sends -------------------------------------------------------------------------
  /// The pending delayed sends, ordered by (due, seq).
  const std::vector<DelayedSend>& pending_sends() const noexcept { return timers_; }
  /// Removes and returns the first send due at `now`, if any.
  std::optional<ChartEvent> take_due(ChartClock::time_point now);
  std::optional<ChartClock::time_point> next_due() const;

  // --- what a durable chart saves and restores -----------------------------------------------
  /// history_values()[i]: what history state i recorded (empty when nothing yet, or i is not a
  /// history state).
  const std::vector<std::vector<int>>& history_values() const noexcept { return history_; }
  std::vector<bool> history_recorded() const;
  /// Replaces the configuration, history values and pending sends (no action runs); the
  /// caller has checked them against the definition.
  void restore(StateSet configuration, std::vector<std::vector<int>> history,
               std::vector<bool> recorded, std::vector<DelayedSend> sends, bool running);

  // ChartActions
  void raise(ChartEvent e) override;
  void send(ChartEvent e, std::chrono::milliseconds delay, std::string id) override;
  void cancel(std::string_view id) override;
  bool in(std::string_view id) const override;
  const ChartEvent& event() const override { return *current_; }

 private:
  void macrostep();
  void select(const ChartEvent* e, std::vector<int>& out);
  void remove_conflicts(std::vector<int>& ts);
  bool guard_holds(const ChartTransition& t, const ChartEvent& e);
  void microstep(const std::vector<int>& ts);
  void exit_states(const std::vector<int>& ts);
  void enter_states(const std::vector<int>& ts);
  void enter_set(const StateSet& to_enter, const StateSet& default_entry);
  void exit_set(int t, StateSet& out);
  int domain(int t);
  void effective_targets(int t, std::vector<int>& out) const;
  void add_descendants(int s, int depth);
  void add_ancestors(int s, int ancestor, int depth);
  bool in_final(int s) const;
  void run_block(const ChartBlock& block);
  void run_blocks(const std::vector<ChartBlock>& blocks);
  void execution_error();
  void schedule(ChartEvent e, std::chrono::milliseconds delay, std::string id);

  std::shared_ptr<const ChartDefinition> def_;
  void* data_;
  const ChartClock* clock_;
  std::size_t budget_;
  StateSet config_;
  StateSet entered_;
  StateSet exited_;
  std::vector<std::vector<int>> history_;
  std::vector<bool> recorded_;
  std::deque<ChartEvent> internal_;
  std::vector<DelayedSend> timers_;
  std::uint64_t send_seq_ = 0;
  bool running_ = false;
  bool probing_ = false;  // enabled(): guards are evaluated, nothing is raised
  std::exception_ptr error_;
  ChartTrace* trace_ = nullptr;
  ChartEvent none_;
  ChartEvent internal_event_;
  const ChartEvent* current_ = &none_;
  // scratch space, kept between calls so that a warm send allocates nothing
  std::vector<int> enabled_;
  std::vector<int> step_;
  std::vector<int> effective_;
  std::vector<int> filtered_;
  std::vector<int> removed_;
  std::vector<int> targets_;
  StateSet set_a_;
  StateSet set_b_;
  StateSet exit_all_;
  StateSet to_enter_;
  StateSet default_entry_;
  std::vector<int> history_content_;
  struct EntryCache {
    int known = 0;  // 0: not computed yet, 1: cached, 2: depends on history
    StateSet to_enter;
    StateSet default_entry;
  };
  std::vector<EntryCache> entry_cache_;  // by transition, filled on first use
  bool met_history_ = false;
  bool history_content_set_ = false;  // a history default content waits for its entry
};

}  // namespace detail
}  // namespace trellis
