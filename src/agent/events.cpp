// Event records as JSON, and the terminal progress printer.

#include <cstdio>

#include "trellis/agent/progress_printer.hpp"
#include "trellis/agent/run_event.hpp"

namespace trellis::agent {

void to_json(nlohmann::json& j, const RunEventRecord& e) {
  j = {{"kind", e.kind}, {"run_id", e.run_id},           {"step", e.step},    {"node", e.node},
       {"at", e.at},     {"duration_ms", e.duration_ms}, {"detail", e.detail}};
}

void ProgressPrinter::operator()(const RunEventRecord& e) const {
  const std::optional<EventKind> kind = e.kind_id();
  if (!kind) return;
  std::ostream& out = *out_;
  std::string of;  // appended, not "/" + text: GCC 12 -O3 raises a false -Wrestrict on that
  if (max_steps_ > 0) {
    of += '/';
    of += std::to_string(max_steps_);
  }
  switch (*kind) {
    case EventKind::step_completed: {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.1f ms", e.duration_ms);
      out << "[" << e.run_id << "] step " << e.step << of << " " << e.node << " \u2713 " << ms
          << "\n";
      break;
    }
    case EventKind::retry_scheduled:
      out << "[" << e.run_id << "] step " << (e.step + 1) << of << " " << e.node << " retry "
          << e.detail.value("attempt", 0) << " in " << e.detail.value("backoff_ms", 0)
          << " ms: " << e.detail.value("error", std::string()) << "\n";
      break;
    case EventKind::interrupted:
      out << "[" << e.run_id << "] paused at " << e.node << ": "
          << e.detail.value("reason", std::string()) << "\n";
      break;
    case EventKind::resumed:
      out << "[" << e.run_id << "] resumed at " << e.node << "\n";
      break;
    case EventKind::graph_completed:
      out << "[" << e.run_id << "] succeeded after " << e.step << " steps\n";
      break;
    case EventKind::graph_failed:
      out << "[" << e.run_id << "] failed (" << e.detail.value("reason", std::string())
          << "): " << e.detail.value("detail", std::string()) << "\n";
      break;
    case EventKind::cancelled:
      out << "[" << e.run_id << "] cancelled at step " << e.step << "\n";
      break;
    default:  // the other kinds print nothing
      return;
  }
  out.flush();
}

}  // namespace trellis::agent
