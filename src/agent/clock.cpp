// The system clock and the time formats of checkpoints and events.

#include "trellis/agent/clock.hpp"

#include <condition_variable>
#include <mutex>
#include <string>

#include <trellis/io/utc_time.hpp>

#include "trellis/agent/graph.hpp"

namespace trellis::agent {

void SystemClock::sleep_for(duration d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

namespace detail {

std::string format_time(Clock::time_point t) { return trellis::detail::format_utc(t); }

std::string now_iso8601(const Clock& clock) { return format_time(clock.now()); }

}  // namespace detail

}  // namespace trellis::agent
