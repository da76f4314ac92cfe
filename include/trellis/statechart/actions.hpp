#pragma once
/// @file
/// `ChartActions`: what an action (on entry, on exit, on a transition) may do besides changing
/// the chart's data: raise an internal event, send an event to the chart itself after a delay
/// (and cancel it by id), and ask which states are active. An action receives it as its last
/// argument; it is valid only during that call.

#include <chrono>
#include <string>
#include <string_view>

#include "trellis/statechart/event.hpp"

namespace trellis {

/// What a guard may ask of the running chart: which states are active, and the event.
class ChartQuery {
 public:
  /// Whether the state `id` is active now (SCXML's `In()`); unknown_state for an unknown id.
  virtual bool in(std::string_view id) const = 0;

  /// The event being processed (empty name while entering the initial configuration).
  virtual const ChartEvent& event() const = 0;

 protected:
  ChartQuery() = default;
  ChartQuery(const ChartQuery&) = default;
  ChartQuery& operator=(const ChartQuery&) = default;
  ~ChartQuery() = default;
};

class ChartActions : public ChartQuery {
 public:
  /// Queues `e` on the internal queue: it is processed within the current macrostep, after the
  /// current microstep and before any external event (SCXML `<raise>`).
  virtual void raise(ChartEvent e) = 0;

  /// Sends `e` to the chart itself after `delay` (SCXML `<send>` with no target): with a zero
  /// delay it joins the external queue and is processed after the current macrostep. A
  /// non-empty `id` names the send for `cancel`; a second send with the same id replaces
  /// nothing (both stay queued, as in SCXML).
  virtual void send(ChartEvent e, std::chrono::milliseconds delay = std::chrono::milliseconds{0},
                    std::string id = {}) = 0;

  /// Cancels every queued delayed send named `id` that has not been delivered yet (SCXML
  /// `<cancel sendid>`); an unknown id is ignored.
  virtual void cancel(std::string_view id) = 0;

  using ChartQuery::event;
  using ChartQuery::in;

 protected:
  ChartActions() = default;
  ChartActions(const ChartActions&) = default;
  ChartActions& operator=(const ChartActions&) = default;
  ~ChartActions() = default;
};

}  // namespace trellis
