#pragma once
/// @file
/// The clock a chart's delayed sends are timed by. The default reads the system clock (wall
/// time, so that a durable chart's delayed sends keep their due times across a restart);
/// `ManualChartClock` is moved by hand, for tests and the conformance runner.

#include <atomic>
#include <chrono>

namespace trellis {

class ChartClock {
 public:
  using time_point = std::chrono::system_clock::time_point;
  virtual ~ChartClock() = default;
  virtual time_point now() const = 0;

 protected:
  ChartClock() = default;
  ChartClock(const ChartClock&) = default;
  ChartClock& operator=(const ChartClock&) = default;
};

/// std::chrono::system_clock.
class SystemChartClock final : public ChartClock {
 public:
  time_point now() const override { return std::chrono::system_clock::now(); }
  /// The one instance charts use by default.
  static SystemChartClock& instance() {
    static SystemChartClock clock;
    return clock;
  }
};

/// A clock that moves only when told (thread-safe reads and moves).
class ManualChartClock final : public ChartClock {
 public:
  explicit ManualChartClock(time_point start = time_point{})
      : now_(start.time_since_epoch().count()) {}
  time_point now() const override { return time_point(time_point::duration(now_.load())); }
  void advance(std::chrono::milliseconds d) {
    now_ += std::chrono::duration_cast<time_point::duration>(d).count();
  }
  void set(time_point t) { now_ = t.time_since_epoch().count(); }

 private:
  std::atomic<time_point::rep> now_;
};

}  // namespace trellis
