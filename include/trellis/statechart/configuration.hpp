#pragma once
/// @file
/// `ChartConfiguration`: what a running chart's cell holds after each macrostep: the active
/// states, the states the macrostep exited and entered again (an external self-transition), a
/// step number, and whether the chart is done. What a step entered or exited otherwise is the
/// difference of two configurations (`on_transition` gets both).
/// Two configurations are equal when they have the same step and active states, so every
/// macrostep that took a transition is committed and observed, even one that ends where it
/// started.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trellis/statechart/definition.hpp"
#include "trellis/statechart/state_set.hpp"

namespace trellis {

class ChartConfiguration {
 public:
  ChartConfiguration() = default;
  ChartConfiguration(const ChartDefinition* def, StateSet active, StateSet reentered,
                     std::uint64_t step, bool done)
      : def_(def),
        active_(std::move(active)),
        reentered_(std::move(reentered)),
        step_(step),
        done_(done) {}

  /// Whether state `id` is active (unknown_state for an id the chart does not have).
  bool contains(std::string_view id) const { return active_.contains(def_->index_of(id)); }
  bool contains(int state) const noexcept { return active_.contains(state); }

  /// The active states' ids in document order (compound and parallel ones included; the
  /// chart's root is not listed).
  std::vector<std::string> ids() const { return def_->ids(active_); }
  /// The active atomic states' ids in document order (SCXML's "basic configuration").
  std::vector<std::string> atomic_ids() const { return def_->ids(def_->atomic(active_)); }

  const StateSet& active() const noexcept { return active_; }
  /// The states the macrostep leading here exited and entered again (active again now).
  const StateSet& reentered() const noexcept { return reentered_; }
  /// How many macrosteps that took transitions led here (0: the initial configuration).
  std::uint64_t step() const noexcept { return step_; }
  /// Whether a top-level final state was entered: the chart takes no more events.
  bool done() const noexcept { return done_; }
  /// The chart this configuration belongs to (it must outlive the configuration's use of it:
  /// any Chart or running chart of that definition keeps it).
  const ChartDefinition& definition() const noexcept { return *def_; }

  friend bool operator==(const ChartConfiguration& a, const ChartConfiguration& b) noexcept {
    return a.step_ == b.step_ && a.done_ == b.done_ && a.active_ == b.active_;
  }

 private:
  const ChartDefinition* def_ = nullptr;
  StateSet active_;
  StateSet reentered_;
  std::uint64_t step_ = 0;
  bool done_ = false;
};

}  // namespace trellis
