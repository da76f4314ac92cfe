#pragma once
/// @file
/// The Boost.Signals2 edge of the agent's events: `EventBus`, the bus Graph::events() returns,
/// and how a ProgressPrinter connects to it. The agent's own headers do not include Boost;
/// include this header (or <trellis/trellis.hpp>) to connect to a graph's events.
///
/// ```cpp
/// boost::signals2::scoped_connection c = graph.events().connect(
///     [](const trellis::agent::RunEventRecord& e) { if (e.is(EventKind::step_completed)) ...; });
/// const auto printer = trellis::agent::ProgressPrinter(std::cout).attach(graph.events());
/// ```
///
/// Observers are called on the thread that runs the graph, after the store's log (for the
/// durable kinds); an observer's exception is swallowed (observability never fails a run).

#include <boost/signals2/connection.hpp>
#include <boost/signals2/signal.hpp>

#include "trellis/agent/detail/event_hub.hpp"
#include "trellis/agent/progress_printer.hpp"
#include "trellis/agent/run_event.hpp"

namespace trellis::agent {

/// The signal type of a run's events.
using EventSignal = boost::signals2::signal<void(const RunEventRecord&)>;

/// The events of every run of a graph (Graph::events()): a Boost.Signals2 signal.
class EventBus : public EventSignal, public detail::EventSink {
 public:
  bool observed() const noexcept override { return !empty(); }
  void publish(const RunEventRecord& e) override { (*this)(e); }
};

/// Connects `printer` to `bus` for as long as the returned connection lives (what
/// ProgressPrinter::attach calls).
inline boost::signals2::scoped_connection connect_printer(EventSignal& bus,
                                                          const ProgressPrinter& printer) {
  return boost::signals2::scoped_connection(
      bus.connect([printer](const RunEventRecord& e) { printer(e); }));
}

}  // namespace trellis::agent
