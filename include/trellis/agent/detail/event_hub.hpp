#pragma once
/// @file
/// Internal: where a graph publishes its events besides the store's log. The hub holds at
/// most one sink, created the first time someone asks for it (Graph::events() creates the
/// Boost.Signals2 EventBus of <trellis/signals2/event_bus.hpp>), so a graph nobody observes
/// builds no bus-only event and the agent's headers need no Boost.

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>

#include "trellis/agent/run_event.hpp"

namespace trellis::agent::detail {

/// An observer of every event of a graph's runs.
class EventSink {
 public:
  virtual ~EventSink() = default;
  /// True when publishing would reach someone (events for observers only are not built
  /// otherwise).
  virtual bool observed() const noexcept = 0;
  /// Delivers `e`; an exception is the observer's and is swallowed by the graph.
  virtual void publish(const RunEventRecord& e) = 0;
};

class EventHub {
 public:
  /// The hub's sink, created as a default-constructed `Sink` by the first call (thread-safe,
  /// also while runs publish). Every call must name the same `Sink`.
  template <class Sink>
  Sink& sink() {
    std::call_once(once_, [this] {
      owned_ = std::make_unique<Sink>();
      sink_.store(owned_.get(), std::memory_order_release);
    });
    return static_cast<Sink&>(*owned_);
  }
  bool observed() const noexcept {
    const EventSink* s = sink_.load(std::memory_order_acquire);
    return s != nullptr && s->observed();
  }
  /// Delivers `e` to the sink, if there is one; an observer's std::exception is swallowed.
  void publish(const RunEventRecord& e) const {
    EventSink* s = sink_.load(std::memory_order_acquire);
    if (s == nullptr) return;
    try {
      s->publish(e);
    } catch (const std::exception&) {  // observability never fails a run
    }
  }

 private:
  std::once_flag once_;
  std::unique_ptr<EventSink> owned_;
  std::atomic<EventSink*> sink_{nullptr};
};

}  // namespace trellis::agent::detail
