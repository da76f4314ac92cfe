// SPDX-License-Identifier: MIT
// Must compile: with the adapter header, events() is a Boost.Signals2 signal (the control of
// events_without_signals2.cpp); on_event() needs no adapter.
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/signals2/persist_events.hpp>

#include <optional>

std::optional<int> add(const int& s, const int& e) { return s + e; }

int main() {
  trellis::Context ctx;
  trellis::DurableStateMachine<int, int> m{ctx, "doc.json", 0, add};
  m.events().connect([](const trellis::PersistEvent&) {});
  const trellis::Subscription sub = m.on_event([](const trellis::PersistEvent&) {});
}
