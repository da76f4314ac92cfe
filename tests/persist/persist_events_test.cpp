// SPDX-License-Identifier: MIT
/// @file
/// How a durable machine's lifecycle events reach listeners: the Boost-free hub
/// (PersistEventHub, DurableStateMachine::on_event) and the Boost.Signals2 view of the same
/// events (DurableStateMachine::events(), from <trellis/signals2/persist_events.hpp>).
#include <trellis/persist/detail/persist_event_hub.hpp>
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/reactive/context.hpp>
#include <trellis/signals2/persist_events.hpp>

#include <doctest/doctest.h>
#include <boost/signals2/connection.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "persist_test_support.hpp"

using persist_test::ScratchDir;
using trellis::PersistEvent;
using trellis::detail::PersistEventHub;
using Kind = PersistEvent::Kind;

namespace {

std::optional<int> add(const int& s, const int& e) { return s + e; }

}  // namespace

TEST_CASE("persist events: every listener hears each event, in subscription order") {
  PersistEventHub hub;
  std::vector<std::string> heard;
  auto a = hub.subscribe([&](const PersistEvent& e) { heard.push_back("a" + e.detail); });
  auto b = hub.subscribe([&](const PersistEvent& e) { heard.push_back("b" + e.detail); });
  hub.emit(Kind::persisted, "doc.json", 1, "1");
  hub.emit(Kind::persist_failed, "doc.json", 2, "2");
  CHECK(heard == std::vector<std::string>{"a1", "b1", "a2", "b2"});
}

TEST_CASE("persist events: a dropped subscription is not called again") {
  PersistEventHub hub;
  int calls = 0;
  auto sub = hub.subscribe([&](const PersistEvent&) { ++calls; });
  hub.emit(Kind::persisted, "doc.json", 1);
  sub.reset();
  hub.emit(Kind::persisted, "doc.json", 2);
  CHECK(calls == 1);
  CHECK(hub.empty());
}

TEST_CASE("persist events: a listener's exception neither reaches the emitter nor stops others") {
  PersistEventHub hub;
  int calls = 0;
  auto a = hub.subscribe([](const PersistEvent&) { throw std::runtime_error("listener"); });
  auto b = hub.subscribe([&](const PersistEvent&) { ++calls; });
  CHECK_NOTHROW(hub.emit(Kind::persisted, "doc.json", 1));
  CHECK(calls == 1);
}

TEST_CASE("persist events: a subscription may outlive its hub") {
  trellis::Subscription sub;
  {
    PersistEventHub hub;
    sub = hub.subscribe([](const PersistEvent&) {});
  }
  CHECK_NOTHROW(sub.reset());
}

TEST_CASE("persist events: on_event and the signals2 events() hear the same events") {
  ScratchDir dir;
  trellis::Context ctx;
  trellis::DurableStateMachine<int, int> m(ctx, dir / "doc.json", 0, add);
  std::vector<std::uint64_t> heard;
  std::vector<std::uint64_t> signalled;
  auto sub = m.on_event([&](const PersistEvent& e) {
    CHECK(e.kind == Kind::persisted);
    heard.push_back(e.epoch);
  });
  const boost::signals2::scoped_connection connection =
      m.events().connect([&](const PersistEvent& e) { signalled.push_back(e.epoch); });
  CHECK(&m.events() == &m.events());  // one signal per machine
  (void)m.send(1);
  (void)m.send(2);
  CHECK(heard == std::vector<std::uint64_t>{1, 2});
  CHECK(signalled == heard);
  sub.reset();
  (void)m.send(3);
  CHECK(heard.size() == 2);
  CHECK(signalled.size() == 3);
}
