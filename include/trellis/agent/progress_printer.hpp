#pragma once
/// @file
/// `ProgressPrinter`: turns a run's events into terminal lines such as
/// `[run-7] step 3/50 review ✓ 1.2 ms`.
///
/// ```cpp
/// #include <trellis/signals2/event_bus.hpp>  // attach() connects to the Boost.Signals2 bus
/// const auto printer = ag::ProgressPrinter(std::cout, g.max_steps()).attach(g.events());
/// ```

#include <cstdint>
#include <ostream>

#include "trellis/agent/run_event.hpp"

namespace trellis::agent {

/// Prints one line per event of interest to `out`.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& out, std::uint64_t max_steps = 0)
      : out_(&out), max_steps_(max_steps) {}
  void operator()(const RunEventRecord& e) const;
  /// Connects to `bus` (an EventBus) for as long as the returned connection lives; needs
  /// <trellis/signals2/event_bus.hpp>, which defines the connection.
  template <class Bus>
  auto attach(Bus& bus) const {
    return connect_printer(bus, *this);  // found by argument-dependent lookup in the adapter
  }

 private:
  std::ostream* out_;
  std::uint64_t max_steps_;
};

}  // namespace trellis::agent
