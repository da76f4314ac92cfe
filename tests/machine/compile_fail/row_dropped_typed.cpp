// SPDX-License-Identifier: MIT
// Must not compile (warnings are errors here): a typed row dropped after its guard and update,
// before .to() or .stay(), is never added; the diagnostic says how a row is added. (Kept in a
// variable instead, the table refuses to be used: tests/machine/typed_table_test.cpp.)
#include <trellis/machine/transition_table.hpp>

#include <variant>

struct Coin {
  int cents = 0;
};
struct Cancel {};
enum class Phase { Idle, Paying };

int main() {
  trellis::TransitionTable<Phase, std::variant<Coin, Cancel>> t;
  t.from(Phase::Idle).on<Coin>().when("big", [](const Phase&, const Coin& c) {
    return c.cents > 5;
  });
  return t.rows().empty() ? 0 : 1;
}
