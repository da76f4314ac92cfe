// SPDX-License-Identifier: MIT
// Must not compile: exploring states that have no std::hash, without a hash in the options; the
// diagnostic must say how to give one.
#include <trellis/testing/explore.hpp>

#include <optional>

struct Counter {
  int n = 0;
  bool operator==(const Counter&) const = default;
};

std::optional<Counter> step(const Counter& c, const int& add) { return Counter{c.n + add}; }

int main() { (void)trellis::testing::explore<Counter, int>(step, Counter{}, {1}); }
