// The UTC time texts of the durable-I/O toolkit: the same text for the same instant in every
// layer, fixed-width so that text order is time order.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include <trellis/io/utc_time.hpp>

namespace {
using std::chrono::milliseconds;
using std::chrono::system_clock;
}  // namespace

TEST_CASE("utc time: ISO 8601 with milliseconds in UTC") {
  const system_clock::time_point t{milliseconds(1'700'000'000'123)};
  CHECK(trellis::detail::format_utc(t) == "2023-11-14T22:13:20.123Z");
  CHECK(trellis::detail::format_utc(system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
}

TEST_CASE("utc time: an instant before 1970 keeps its milliseconds positive") {
  const system_clock::time_point t{milliseconds(-1)};
  CHECK(trellis::detail::format_utc(t) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("utc time: text order is time order") {
  const system_clock::time_point a{milliseconds(999)};
  const system_clock::time_point b{milliseconds(1'000)};
  CHECK(trellis::detail::format_utc(a) < trellis::detail::format_utc(b));
}

TEST_CASE("utc time: the compact form for file names has whole seconds") {
  const system_clock::time_point t{milliseconds(1'700'000'000'999)};
  CHECK(trellis::detail::format_utc_compact(t) == "20231114T221320Z");
}

TEST_CASE("format_utc: writes what strftime and %03d milliseconds write, from 1900 to 2261") {
  int mismatches = 0;
  // Seconds from year 1900 to 2261 (a system_clock time ends in 2262) in uneven steps.
  for (long long s = -2208988800LL; s < 9200000000LL; s += 777601LL + 3607) {
    for (const int ms : {0, 7, 999}) {
      const auto t =
          system_clock::time_point{} + std::chrono::seconds(s) + std::chrono::milliseconds(ms);
      const std::time_t secs = static_cast<std::time_t>(s);
      std::tm parts{};
      ::gmtime_r(&secs, &parts);
      char date[32];
      std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &parts);
      char expected[48];
      std::snprintf(expected, sizeof expected, "%s.%03dZ", date, ms);
      if (trellis::detail::format_utc(t) != expected) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}
