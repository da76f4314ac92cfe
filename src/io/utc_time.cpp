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
  const int year = tm.tm_year + 1900;
  if (year < 0 || year > 9999) {  // as %04d writes it
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return text;
  }
  // Written digit by digit: every record and event of a run carries a time, and snprintf was a
  // good part of writing a fan-out's item.
  std::string text = "0000-00-00T00:00:00.000Z";
  const auto put = [&text](std::size_t at, int value, int digits) {
    for (int i = digits - 1; i >= 0; --i) {
      text[at + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  put(0, year, 4);
  put(5, tm.tm_mon + 1, 2);
  put(8, tm.tm_mday, 2);
  put(11, tm.tm_hour, 2);
  put(14, tm.tm_min, 2);
  put(17, tm.tm_sec, 2);
  put(20, millis, 3);
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
