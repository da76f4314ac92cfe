// SPDX-License-Identifier: MIT
// Must not compile: a row has one update; a second is a compile error that says to compose them.
#include <trellis/machine/transition_table.hpp>

#include <variant>

struct Coin {
  int cents = 0;
};
struct Cancel {};
enum class Phase { Idle, Paying };

int main() {
  trellis::TransitionTable<Phase, std::variant<Coin, Cancel>> t;
  t.from(Phase::Idle)
      .on<Coin>()
      .update([](Phase&, const Coin&) {})
      .update([](Phase&, const Coin&) {})
      .to(Phase::Paying);
  return t.rows().empty() ? 0 : 1;
}
