// SPDX-License-Identifier: MIT
// Must not compile: a machine's state_cell() is a read-only CellView; the diagnostic must say so
// (and point to send()).
#include <trellis/machine/state_machine.hpp>

#include <optional>

enum class Door { Open, Closed };
enum class Push { Toggle };

std::optional<Door> toggle(const Door& d, const Push&) {
  return d == Door::Open ? Door::Closed : Door::Open;
}

int main() {
  trellis::Context ctx;
  trellis::StateMachine<Door, Push> m{ctx, Door::Closed, toggle};
  m.state_cell().set(Door::Open);
}
