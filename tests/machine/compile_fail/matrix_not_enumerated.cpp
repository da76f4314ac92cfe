// SPDX-License-Identifier: MIT
// Must not compile: the matrix needs every state listed; the diagnostic must name the fix.
#include <trellis/testing/transition_matrix.hpp>

#include <optional>

enum class Light { Red, Green };
enum class Tick { Advance };
TRELLIS_ENUM(Tick, Advance);

std::optional<Light> step(const Light& s, const Tick&) { return s; }

int main() { (void)trellis::testing::transition_matrix(step); }
