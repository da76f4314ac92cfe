// SPDX-License-Identifier: MIT
// Must not compile: on<T>() with a T that is not one of the event variant's alternatives.
#include <trellis/machine/transition_table.hpp>

#include <variant>

struct Coin {};
struct Cancel {};
struct Refund {};
enum class Phase { Idle, Paying };

int main() {
  trellis::TransitionTable<Phase, std::variant<Coin, Cancel>> t;
  t.from(Phase::Idle).on<Refund>().to(Phase::Paying);
  return t.rows().empty() ? 0 : 1;
}
