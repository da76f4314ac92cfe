// SPDX-License-Identifier: MIT
// Must not compile: a row that names no event cannot be ended; the diagnostic says what to add.
#include <trellis/machine/transition_table.hpp>

#include <variant>

struct Coin {};
struct Cancel {};
enum class Phase { Idle, Paying };

int main() {
  trellis::TransitionTable<Phase, std::variant<Coin, Cancel>> t;
  t.from(Phase::Idle).to(Phase::Paying);
  return t.rows().empty() ? 0 : 1;
}
