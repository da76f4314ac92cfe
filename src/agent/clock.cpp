// The system clock and the time formats of checkpoints and events.

#include "trellis/agent/clock.hpp"

#include <condition_variable>
#include <ctime>
#include <mutex>
#include <string>

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

std::string format_time(Clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  const int millis = static_cast<int>(ms - static_cast<long long>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string now_iso8601(const Clock& clock) { return format_time(clock.now()); }

}  // namespace detail

}  // namespace trellis::agent
