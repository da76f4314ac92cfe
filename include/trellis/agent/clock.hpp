#pragma once
/// @file
/// The graph's view of time: injectable, so that backoff, jitter and approval expiry are
/// tested deterministically (ManualClock) and run for real otherwise (SystemClock).

#include <chrono>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace trellis::agent {

class Clock {
 public:
  using time_point = std::chrono::system_clock::time_point;
  using duration = std::chrono::system_clock::duration;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  /// Waits `d` or until `stop` is requested, whichever comes first.
  virtual void sleep_for(duration d, std::stop_token stop) = 0;
};

/// The wall clock; sleeping wakes early on a stop request.
class SystemClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::system_clock::now(); }
  void sleep_for(duration d, std::stop_token stop) override;
  static SystemClock& instance();
};

/// A clock that moves only when told: sleeping advances it and records the request.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(time_point start = time_point{}) : now_(start) {}
  time_point now() const override {
    std::lock_guard lock(m_);
    return now_;
  }
  void sleep_for(duration d, std::stop_token) override {
    std::lock_guard lock(m_);
    sleeps_.push_back(d);
    now_ += d;
  }
  void advance(duration d) {
    std::lock_guard lock(m_);
    now_ += d;
  }
  std::vector<duration> sleeps() const {
    std::lock_guard lock(m_);
    return sleeps_;
  }

 private:
  mutable std::mutex m_;
  time_point now_;
  std::vector<duration> sleeps_;
};

namespace detail {
/// `clock.now()` as the UTC text every checkpoint, event and decision carries
/// ("2026-11-24T01:08:51.123Z"); defined in src/agent/clock.cpp over the I/O toolkit.
std::string now_iso8601(const Clock& clock);
/// `t` as that same UTC text.
std::string format_time(Clock::time_point t);
}  // namespace detail

}  // namespace trellis::agent
