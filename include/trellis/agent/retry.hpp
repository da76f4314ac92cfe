#pragma once
/// @file
/// The retry policy for transient errors: capped exponential backoff with jitter.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace trellis::agent {

struct RetryPolicy {
  std::uint32_t attempts = 1;  ///< tries in all (1: no retry)
  std::chrono::milliseconds initial_backoff{100};
  double multiplier = 2.0;
  std::chrono::milliseconds max_backoff{5000};
  double jitter = 0.1;  ///< +/- this fraction of the backoff, drawn from the run's random source
};

/// The wait before try number `failed + 1`, after `failed` failed tries (failed >= 1);
/// `random01` is uniform in [0, 1). Never above max_backoff, never negative.
inline std::chrono::milliseconds backoff(const RetryPolicy& p, std::uint32_t failed,
                                         double random01) {
  const double base = std::min(static_cast<double>(p.max_backoff.count()),
                               static_cast<double>(p.initial_backoff.count()) *
                                   std::pow(p.multiplier, static_cast<double>(failed - 1)));
  const double factor = 1.0 - p.jitter + 2.0 * p.jitter * random01;
  const double ms = std::clamp(base * factor, 0.0, static_cast<double>(p.max_backoff.count()));
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

}  // namespace trellis::agent
