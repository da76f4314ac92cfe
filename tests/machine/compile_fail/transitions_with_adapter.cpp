// SPDX-License-Identifier: MIT
// Must compile: transitions() with the Boost.Signals2 adapter's header, on the three machines.
#include <trellis/signals2/transitions.hpp>

#include <boost/signals2/connection.hpp>

#include <optional>

enum class Light { Red, Green };
enum class Tick { Advance };

std::optional<Light> step(const Light&, const Tick&) { return Light::Green; }

template <class Machine, class Ctx>
void connect_to(Ctx& ctx) {
  Machine m{ctx, Light::Red, step};
  typename Machine::TransitionSignal& signal = m.transitions();
  boost::signals2::signal<void(const Light&, const Light&)>& base = signal;
  const boost::signals2::scoped_connection c = base.connect([](const Light&, const Light&) {});
}

int main() {
  trellis::Context plain;
  connect_to<trellis::StateMachine<Light, Tick>>(plain);
  trellis::ThreadSafeContext shared;
  connect_to<trellis::ThreadSafeStateMachine<Light, Tick>>(shared);
  trellis::AsyncContext async;  // only compiled here, never linked
  connect_to<trellis::AsyncStateMachine<Light, Tick>>(async);
}
