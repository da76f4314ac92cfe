// SPDX-License-Identifier: MIT
// Must not compile: events() is the Boost.Signals2 view of the events, which lives in its
// adapter header; the diagnostic must say, in one line, which header to include.
#include <trellis/persist/durable_state_machine.hpp>

#include <optional>

std::optional<int> add(const int& s, const int& e) { return s + e; }

int main() {
  trellis::Context ctx;
  trellis::DurableStateMachine<int, int> m{ctx, "doc.json", 0, add};
  m.events().connect([](const trellis::PersistEvent&) {});
}
