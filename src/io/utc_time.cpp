// The UTC formatter of the durable-I/O toolkit.

#include <trellis/io/utc_time.hpp>

#include <cstdio>
#include <ctime>

namespace trellis::detail {

namespace {

// The calendar fields of `time` in UTC and its milliseconds (the seconds floored, so an
// instant before 1970 still has milliseconds in 0-999).
std::tm utc_parts(std::chrono::system_clock::time_point time, int& millis) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  millis = static_cast<int>(ms - static_cast<long long>(secs) * 1000);
  std::tm parts{};
  ::gmtime_r(&secs, &parts);
  return parts;
}

}  // namespace

std::string format_utc(std::chrono::system_clock::time_point time) {
  int millis = 0;
  const std::tm tm = utc_parts(time, millis);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return text;
}

std::string format_utc_compact(std::chrono::system_clock::time_point time) {
  int millis = 0;
  const std::tm tm = utc_parts(time, millis);
  char text[64];
  std::snprintf(text, sizeof text, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return text;
}

}  // namespace trellis::detail
