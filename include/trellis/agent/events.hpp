#pragma once
/// @file
/// A run's events: appended to the store's per-run JSONL log after each commit (observability,
/// not part of the commit: a crash may lose the last events, never state) and published on a
/// Boost.Signals2 bus. `ProgressPrinter` turns them into terminal lines such as
/// `[run-7] step 3/50 review ✓ 1.2 ms`.

#include <boost/signals2/signal.hpp>

#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace trellis::agent {

/// graph_started, step_started, step_completed, retry_scheduled, interrupted,
/// decision_recorded (who decided on a pause, when, and which pause), resumed, graph_completed,
/// graph_failed, cancelled.
struct RunEventRecord {
  std::string kind;
  std::string run_id;
  std::uint64_t step = 0;  ///< steps committed when the event happened
  std::string node;
  std::string at;            ///< ISO-8601 UTC
  double duration_ms = 0.0;  ///< the step's (or the run call's) duration, when it has one
  nlohmann::json detail = nlohmann::json::object();
};

void to_json(nlohmann::json& j, const RunEventRecord& e);

using EventBus = boost::signals2::signal<void(const RunEventRecord&)>;

/// Prints one line per event of interest to `out`; connect it with `attach(bus)`.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::ostream& out, std::uint64_t max_steps = 0)
      : out_(&out), max_steps_(max_steps) {}
  void operator()(const RunEventRecord& e) const;
  /// Connects to `bus` for as long as the returned connection lives.
  boost::signals2::scoped_connection attach(EventBus& bus) const {
    return boost::signals2::scoped_connection(
        bus.connect([self = *this](const RunEventRecord& e) { self(e); }));
  }

 private:
  std::ostream* out_;
  std::uint64_t max_steps_;
};

}  // namespace trellis::agent
