// SPDX-License-Identifier: MIT
/// @file
/// Issue 3, behaviours 1-7 and 10: one behavioural suite run over the three machines
/// (StateMachine on a Context, ThreadSafeStateMachine on a ThreadSafeContext,
/// AsyncStateMachine on an AsyncContext). Reads of the state and of signals such as
/// state_is() are checked right after send() on every kind, since they are synchronous
/// everywhere; what observers did is checked after settle(), because the asynchronous
/// machine runs its observers later on its executor. The threaded halves of behaviours 8-10
/// are in machine_concurrency_test.cpp.
#include "test_support.hpp"

#include <trellis/signals2/transitions.hpp>

#include <boost/signals2/connection.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

using trellis::SendResult;
using trellis_test::Counter;
using trellis_test::Log;
using trellis_test::test_failure;

namespace {

// The traffic light of the issue, with two more events: Hold (a self-transition, so
// Unchanged) and Jam (rejected in every state). Skip jumps from Green straight to Red.
enum class Light { Red, Green, Yellow };
enum class Tick { Advance, Skip, Hold, Jam };

const char* name(Light l) {
  switch (l) {
    case Light::Red:
      return "Red";
    case Light::Green:
      return "Green";
    case Light::Yellow:
      return "Yellow";
  }
  return "?";
}

std::optional<Light> step(const Light& s, const Tick& e) {
  switch (e) {
    case Tick::Advance:
      switch (s) {
        case Light::Red:
          return Light::Green;
        case Light::Green:
          return Light::Yellow;
        case Light::Yellow:
          return Light::Red;
      }
      return std::nullopt;
    case Tick::Skip:
      if (s == Light::Green) return Light::Red;
      return std::nullopt;
    case Tick::Hold:
      return s;
    case Tick::Jam:
      return std::nullopt;
  }
  return std::nullopt;
}

using Move = std::pair<Light, Light>;  // (from, to) as an observer saw it

/// What an observer saw, as "Red->Green, Green->Yellow" (readable when a check fails).
std::string trace(const Log<Move>& log) {
  std::string text;
  for (const auto& [from, to] : log.items()) {
    if (!text.empty()) text += ", ";
    text += name(from);
    text += "->";
    text += name(to);
  }
  return text;
}

// The three machine kinds: the context each one runs on, and its public alias.
struct SingleThreaded {
  using Context = trellis::Context;
  template <class S, class E>
  using Machine = trellis::StateMachine<S, E>;
};
struct ThreadSafe {
  using Context = trellis::ThreadSafeContext;
  template <class S, class E>
  using Machine = trellis::ThreadSafeStateMachine<S, E>;
};
struct Async {
  using Context = trellis::AsyncContext;
  template <class S, class E>
  using Machine = trellis::AsyncStateMachine<S, E>;
};

/// A traffic light machine of kind `K`, in Red, on its own context.
template <class K>
struct LightRig {
  typename K::Context ctx;
  typename K::template Machine<Light, Tick> m{ctx, Light::Red, step};

  /// Waits until the observers of every transition so far have run (a no-op unless Async).
  void settle() { trellis_test::settle(ctx); }
  /// An on_transition observer that appends to `log`.
  [[nodiscard]] trellis::Subscription record(Log<Move>& log) {
    return m.on_transition([&log](const Light& from, const Light& to) { log.push({from, to}); });
  }
};

}  // namespace

TYPE_TO_STRING(SingleThreaded);
TYPE_TO_STRING(ThreadSafe);
TYPE_TO_STRING(Async);

#define TRELLIS_MACHINE_KINDS SingleThreaded, ThreadSafe, Async

namespace doctest {
template <>
struct StringMaker<SendResult> {
  static String convert(SendResult r) { return std::string(r.name()).c_str(); }
};
}  // namespace doctest

// --- 1. legal and illegal events ------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: a legal event moves the state and returns Transitioned", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  CHECK(rig.m.state() == Light::Red);
  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
  CHECK(rig.m.state() == Light::Green);
  CHECK(rig.m.state_cell().get() == Light::Green);
  CHECK(rig.m.send(Tick::Skip) == SendResult::Transitioned);
  CHECK(rig.m.state() == Light::Red);
}

TEST_CASE_TEMPLATE("machine: an illegal event returns Rejected and changes nothing", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  auto red = rig.m.state_is(Light::Red);
  CHECK(rig.m.send(Tick::Skip) == SendResult::Rejected);  // Skip is legal from Green only
  CHECK(rig.m.send(Tick::Jam) == SendResult::Rejected);
  CHECK(rig.m.state() == Light::Red);
  CHECK(red.get());
  rig.settle();
  CHECK(seen.size() == 0);
}

TEST_CASE_TEMPLATE("machine: SendResult converts explicitly to bool, true unless Rejected", K,
                   TRELLIS_MACHINE_KINDS) {
  static_assert(!std::is_convertible_v<SendResult, bool>, "the conversion must be explicit");
  static_assert(std::is_constructible_v<bool, SendResult>);
  LightRig<K> rig;
  const SendResult rejected = rig.m.send(Tick::Jam);
  const SendResult unchanged = rig.m.send(Tick::Hold);
  const SendResult transitioned = rig.m.send(Tick::Advance);
  CHECK(rejected == SendResult::Rejected);
  CHECK(unchanged == SendResult::Unchanged);
  CHECK(transitioned == SendResult::Transitioned);
  CHECK_FALSE(static_cast<bool>(rejected));
  CHECK(static_cast<bool>(unchanged));
  CHECK(static_cast<bool>(transitioned));
  CHECK(rejected.name() == "Rejected");
  CHECK(unchanged.name() == "Unchanged");
  CHECK(transitioned.name() == "Transitioned");
}

// --- 2. self-transitions ----------------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: a self-transition returns Unchanged and re-evaluates nothing", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  auto& ctx = rig.ctx;
  const auto cell = rig.m.state_cell();
  Counter computed_runs;
  Counter signal_runs;
  Counter effect_runs;
  Counter observer_calls;
  auto lazy = ctx.computed([&] {
    computed_runs.bump();
    return cell.get() == Light::Green;
  });
  auto eager = ctx.signal([&] {
    signal_runs.bump();
    return cell.get() == Light::Green;
  });
  auto effect = ctx.effect([&] {
    effect_runs.bump();
    (void)cell.get();
  });
  const auto on_transition =
      rig.m.on_transition([&](const Light&, const Light&) { observer_calls.bump(); });
  const auto on_enter = rig.m.on_enter(Light::Red, [&] { observer_calls.bump(); });
  const auto on_exit = rig.m.on_exit(Light::Red, [&] { observer_calls.bump(); });
  const boost::signals2::scoped_connection slot =
      rig.m.transitions().connect([&](const Light&, const Light&) { observer_calls.bump(); });
  CHECK_FALSE(lazy.get());
  rig.settle();
  REQUIRE(computed_runs.value() == 1);
  REQUIRE(signal_runs.value() == 1);
  REQUIRE(effect_runs.value() == 1);

  CHECK(rig.m.send(Tick::Hold) == SendResult::Unchanged);
  rig.settle();
  CHECK_FALSE(lazy.get());
  CHECK_FALSE(eager.get());
  CHECK(computed_runs.value() == 1);
  CHECK(signal_runs.value() == 1);
  CHECK(effect_runs.value() == 1);
  CHECK(observer_calls.value() == 0);

  // The control: a real transition reaches every one of them.
  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
  rig.settle();
  CHECK(lazy.get());
  CHECK(eager.get());
  CHECK(computed_runs.value() == 2);
  CHECK(signal_runs.value() == 2);
  CHECK(effect_runs.value() == 2);
  CHECK(observer_calls.value() == 3);  // on_transition, on_exit(Red), the signals2 slot
}

// --- 3. on_transition -------------------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: on_transition is not called at registration", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  rig.settle();
  CHECK(seen.size() == 0);
}

TEST_CASE_TEMPLATE("machine: on_transition is not called for a rejected or unchanged event", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  CHECK(rig.m.send(Tick::Jam) == SendResult::Rejected);
  CHECK(rig.m.send(Tick::Hold) == SendResult::Unchanged);
  CHECK(rig.m.send(Tick::Skip) == SendResult::Rejected);
  rig.settle();
  CHECK(seen.size() == 0);
}

TEST_CASE_TEMPLATE("machine: on_transition receives (old, new) in commit order", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  for (const Tick t : {Tick::Advance, Tick::Jam, Tick::Advance, Tick::Hold, Tick::Advance,
                       Tick::Advance, Tick::Skip}) {
    (void)rig.m.send(t);
  }
  rig.settle();
  CHECK(trace(seen) == "Red->Green, Green->Yellow, Yellow->Red, Red->Green, Green->Red");
}

TEST_CASE_TEMPLATE("machine: inside a batch, A -> B -> C reaches on_transition as one (A, C)", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  rig.ctx.batch([&] {
    CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
    CHECK(rig.m.state() == Light::Green);  // the batch sees its own sends at once
    CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
  });
  rig.settle();
  CHECK(rig.m.state() == Light::Yellow);
  CHECK(trace(seen) == "Red->Yellow");
}

TEST_CASE_TEMPLATE("machine: inside a batch, A -> B -> A reaches on_transition not at all", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  rig.ctx.batch([&] {
    CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
    CHECK(rig.m.send(Tick::Skip) == SendResult::Transitioned);
  });
  rig.settle();
  CHECK(rig.m.state() == Light::Red);
  CHECK(seen.size() == 0);
  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);  // and it still observes
  rig.settle();
  CHECK(trace(seen) == "Red->Green");
}

// --- 10. batches and plain sends ------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: consecutive batches are collapsed each on its own", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  // No settle in between: on the asynchronous machine all of this is delivered in one go.
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);
    (void)rig.m.send(Tick::Advance);
  });
  (void)rig.m.send(Tick::Advance);
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);
    (void)rig.m.send(Tick::Advance);
  });
  rig.settle();
  CHECK(trace(seen) == "Red->Yellow, Yellow->Red, Red->Yellow");
}

TEST_CASE_TEMPLATE("machine: outside a batch every committed transition is delivered", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  const int sends = 300;
  for (int i = 0; i < sends; ++i) {
    CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
  }
  rig.settle();
  const std::vector<Move> moves = seen.items();
  REQUIRE(moves.size() == static_cast<std::size_t>(sends));
  Light expected = Light::Red;
  for (const auto& [from, to] : moves) {
    CHECK(from == expected);
    expected = *step(from, Tick::Advance);
    CHECK(to == expected);
  }
  CHECK(rig.m.state() == expected);
}

// --- 4. state_is ------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: state_is is fresh when send returns, without settling", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  auto red = rig.m.state_is(Light::Red);
  auto green = rig.m.state_is(Light::Green);
  CHECK(red.get());
  CHECK_FALSE(green.get());
  for (const Tick t : {Tick::Advance, Tick::Hold, Tick::Advance, Tick::Jam, Tick::Advance,
                       Tick::Advance, Tick::Skip, Tick::Skip}) {
    CAPTURE(static_cast<int>(t));
    (void)rig.m.send(t);
    CHECK(red.get() == (rig.m.state() == Light::Red));
    CHECK(green.get() == (rig.m.state() == Light::Green));
  }
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);
    CHECK(green.get());  // fresh inside a batch too
    CHECK_FALSE(red.get());
  });
}

TEST_CASE_TEMPLATE("machine: state_is flips exactly when entering or leaving its state", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  auto green = rig.m.state_is(Light::Green);
  Log<bool> flips;  // every value an effect reading the signal saw
  auto effect = rig.ctx.effect([&] { flips.push(green.get()); });
  rig.settle();
  // Red -> Green (enter), Hold, Green -> Yellow (leave), Jam, Yellow -> Red, Red -> Green
  // (enter), Green -> Red (leave): the effect runs on the flips only.
  for (const Tick t : {Tick::Advance, Tick::Hold, Tick::Advance, Tick::Jam, Tick::Advance,
                       Tick::Advance, Tick::Skip}) {
    (void)rig.m.send(t);
    rig.settle();
  }
  CHECK(flips.items() == std::vector<bool>{false, true, false, true, false});
}

// --- 5. on_enter, on_exit, handles ------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: on_enter and on_exit fire once per entry and exit of their state", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Counter entered_green;
  Counter left_green;
  Counter entered_red;
  Counter left_red;
  const auto a = rig.m.on_enter(Light::Green, [&] { entered_green.bump(); });
  const auto b = rig.m.on_exit(Light::Green, [&] { left_green.bump(); });
  const auto c = rig.m.on_enter(Light::Red, [&] { entered_red.bump(); });
  const auto d = rig.m.on_exit(Light::Red, [&] { left_red.bump(); });
  rig.settle();
  CHECK(entered_red.value() == 0);  // being in Red at registration is not an entry
  // Red -> Green -> Yellow -> Red -> Green -> Red -> Green, with a Hold and a Jam on the way.
  for (const Tick t : {Tick::Advance, Tick::Hold, Tick::Advance, Tick::Advance, Tick::Jam,
                       Tick::Advance, Tick::Skip, Tick::Advance}) {
    (void)rig.m.send(t);
  }
  rig.settle();
  CHECK(entered_green.value() == 3);
  CHECK(left_green.value() == 2);
  CHECK(entered_red.value() == 2);
  CHECK(left_red.value() == 3);
}

TEST_CASE_TEMPLATE("machine: dropping a handle stops its observer", K, TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Counter transitions;
  Counter entries;
  Counter exits;
  auto on_transition = rig.m.on_transition([&](const Light&, const Light&) { transitions.bump(); });
  std::optional<trellis::Subscription> on_enter(
      rig.m.on_enter(Light::Green, [&] { entries.bump(); }));
  auto on_exit = rig.m.on_exit(Light::Red, [&] { exits.bump(); });
  CHECK(static_cast<bool>(on_transition));
  (void)rig.m.send(Tick::Advance);  // Red -> Green
  rig.settle();
  CHECK(transitions.value() == 1);
  CHECK(entries.value() == 1);
  CHECK(exits.value() == 1);

  on_transition.reset();
  CHECK_FALSE(static_cast<bool>(on_transition));
  on_enter.reset();                   // destroys the handle
  on_exit = trellis::Subscription{};  // move-assigning over it drops it too
  (void)rig.m.send(Tick::Skip);       // Green -> Red
  (void)rig.m.send(Tick::Advance);    // Red -> Green
  rig.settle();
  CHECK(transitions.value() == 1);
  CHECK(entries.value() == 1);
  CHECK(exits.value() == 1);
}

TEST_CASE_TEMPLATE("machine: a handle dropped before its observer ran stops it", K,
                   TRELLIS_MACHINE_KINDS) {
  // On the asynchronous machine the observer of this transition is still pending when the
  // handle goes; on the others it has already run, before send() returned.
  LightRig<K> rig;
  Counter calls;
  auto kept = rig.m.on_transition([&](const Light&, const Light&) { calls.bump(); });
  auto dropped = rig.m.on_transition([&](const Light&, const Light&) { calls.bump(); });
  (void)rig.m.send(Tick::Advance);
  const int already = calls.value();
  dropped.reset();
  rig.settle();
  CHECK(calls.value() == (trellis_test::is_async_v<typename K::Context> ? 1 : 2));
  CHECK(already == (trellis_test::is_async_v<typename K::Context> ? 0 : 2));
}

TEST_CASE_TEMPLATE("machine: a handle may outlive its machine", K, TRELLIS_MACHINE_KINDS) {
  typename K::Context ctx;
  Counter calls;
  trellis::Subscription handle;
  {
    typename K::template Machine<Light, Tick> m{ctx, Light::Red, step};
    handle = m.on_transition([&](const Light&, const Light&) { calls.bump(); });
    (void)m.send(Tick::Advance);
    trellis_test::settle(ctx);
  }
  CHECK(static_cast<bool>(handle));
  handle.reset();  // the machine is gone: nothing to stop, nothing to crash
  CHECK(calls.value() == 1);
}

TEST_CASE_TEMPLATE("machine: a new observer starts from the current state", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> early;
  const auto first = rig.record(early);
  (void)rig.m.send(Tick::Advance);  // Red -> Green
  (void)rig.m.send(Tick::Advance);  // Green -> Yellow
  rig.settle();
  Log<Move> late;
  const auto second = rig.record(late);
  Counter entered_yellow;
  const auto enter = rig.m.on_enter(Light::Yellow, [&] { entered_yellow.bump(); });
  rig.settle();
  CHECK(late.size() == 0);
  CHECK(entered_yellow.value() == 0);
  (void)rig.m.send(Tick::Advance);  // Yellow -> Red
  rig.settle();
  CHECK(trace(late) == "Yellow->Red");
  CHECK(early.size() == 3);
  CHECK(entered_yellow.value() == 0);
}

TEST_CASE_TEMPLATE(
    "machine: an observer registered after a transition inside a batch is not told it", K,
    TRELLIS_MACHINE_KINDS) {
  // The batch's transitions reach observers when it ends; one registered in between, when
  // the machine is already in the new state, starts from that state like any new observer.
  LightRig<K> rig;
  Log<Move> early;
  const auto first = rig.record(early);
  Log<Move> late;
  trellis::Subscription second;
  Counter entered_green;
  trellis::Subscription enter;
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);  // Red -> Green
    second = rig.record(late);
    enter = rig.m.on_enter(Light::Green, [&] { entered_green.bump(); });
  });
  rig.settle();
  CHECK(trace(early) == "Red->Green");
  CHECK(trace(late) == "");
  CHECK(entered_green.value() == 0);
  (void)rig.m.send(Tick::Advance);  // Green -> Yellow
  rig.settle();
  CHECK(trace(late) == "Green->Yellow");
}

TEST_CASE_TEMPLATE("machine: an observer added by an observer is not told the current transition",
                   K, TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> added_saw;
  std::vector<trellis::Subscription> added;  // touched only by observers, one at a time
  const auto adder = rig.m.on_transition([&](const Light&, const Light&) {
    if (added.empty()) added.push_back(rig.record(added_saw));
  });
  (void)rig.m.send(Tick::Advance);  // Red -> Green: adds the second observer
  rig.settle();
  CHECK(trace(added_saw) == "");
  (void)rig.m.send(Tick::Advance);  // Green -> Yellow
  rig.settle();
  CHECK(trace(added_saw) == "Green->Yellow");
}

TEST_CASE_TEMPLATE("machine: an observer may drop its own or a later handle while it is called", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Counter self_calls;
  Counter victim_calls;
  trellis::Subscription self;
  trellis::Subscription victim;
  self = rig.m.on_transition([&](const Light&, const Light&) {
    self_calls.bump();
    self.reset();    // itself, while running
    victim.reset();  // and one registered after it, not yet called for this transition
  });
  victim = rig.m.on_transition([&](const Light&, const Light&) { victim_calls.bump(); });
  (void)rig.m.send(Tick::Advance);
  (void)rig.m.send(Tick::Advance);
  rig.settle();
  CHECK(self_calls.value() == 1);
  CHECK(victim_calls.value() == 0);
}

TEST_CASE_TEMPLATE("machine: destroying a machine with observers still to run is safe", K,
                   TRELLIS_MACHINE_KINDS) {
  typename K::Context ctx;
  Counter calls;
  {
    typename K::template Machine<Light, Tick> m{ctx, Light::Red, step};
    const auto observer = m.on_transition([&](const Light&, const Light&) { calls.bump(); });
    for (int i = 0; i < 50; ++i) (void)m.send(Tick::Advance);
  }  // on the asynchronous machine, runs may still be pending here
  trellis_test::settle(ctx);
  CHECK(calls.value() <= 50);
  // The context outlives the machine and stays usable.
  auto cell = ctx.cell(1);
  cell.set(2);
  CHECK(cell.get() == 2);
}

// --- a throwing transition function ---------------------------------------------------------

TEST_CASE_TEMPLATE("machine: a transition function that throws leaves the state unchanged", K,
                   TRELLIS_MACHINE_KINDS) {
  typename K::Context ctx;
  const auto jams = [](const Light& s, const Tick& e) -> std::optional<Light> {
    if (e == Tick::Jam) throw test_failure("jammed");
    return step(s, e);
  };
  typename K::template Machine<Light, Tick> m{ctx, Light::Red, jams};
  Log<Move> seen;
  const auto observer = m.on_transition([&](const Light& from, const Light& to) {
    seen.push({from, to});
  });
  CHECK_THROWS_AS((void)m.send(Tick::Jam), test_failure);
  CHECK(m.state() == Light::Red);
  CHECK(m.send(Tick::Advance) == SendResult::Transitioned);
  trellis_test::settle(ctx);
  CHECK(trace(seen) == "Red->Green");
}

// --- a machine whose context has ended ------------------------------------------------------

TEST_CASE_TEMPLATE("machine: a send after its context has ended throws disposed_error", K,
                   TRELLIS_MACHINE_KINDS) {
  std::optional<typename K::Context> ctx(std::in_place);
  typename K::template Machine<Light, Tick> m{*ctx, Light::Red, step};
  ctx.reset();
  CHECK_THROWS_AS((void)m.send(Tick::Advance), trellis::disposed_error);
  CHECK_THROWS_AS((void)m.send(Tick::Jam), trellis::disposed_error);  // even one it would reject
}

// --- 6. computeds over the state --------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: a computed reading state_cell() updates after a transition only", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  const trellis::CellView<Light> cell = rig.m.state_cell();
  Counter runs;
  auto label = rig.ctx.computed([&] {
    runs.bump();
    return cell.read(
        [](const Light& l) { return l == Light::Red ? std::string("stop") : std::string("go"); });
  });
  CHECK(label.get() == "stop");
  CHECK(runs.value() == 1);
  CHECK(rig.m.send(Tick::Jam) == SendResult::Rejected);
  CHECK(rig.m.send(Tick::Skip) == SendResult::Rejected);
  CHECK(label.get() == "stop");
  CHECK(runs.value() == 1);  // a rejection does not even invalidate it
  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);
  CHECK(label.get() == "go");  // fresh right after send, on every kind
  CHECK(runs.value() == 2);
}

TEST_CASE_TEMPLATE("machine: state() read inside a computed is tracked", K, TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  auto is_yellow = rig.ctx.computed([&] { return rig.m.state() == Light::Yellow; });
  CHECK_FALSE(is_yellow.get());
  (void)rig.m.send(Tick::Advance);
  (void)rig.m.send(Tick::Advance);
  CHECK(is_yellow.get());
}

TEST_CASE_TEMPLATE("machine: state_cell() views the same state as the machine", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  const auto a = rig.m.state_cell();
  const auto b = rig.m.state_cell();
  CHECK(a == b);
  CHECK_FALSE(a.disposed());
  (void)rig.m.send(Tick::Advance);
  CHECK(a.get() == Light::Green);
  CHECK(b.read([](const Light& l) { return l; }) == Light::Green);
}

// --- 7. observers that throw --------------------------------------------------------------------

namespace {

/// Sends `e`, whose observers throw test_failure: the error reaches send() on the synchronous
/// machines, and the next drain() on the asynchronous one.
template <class K>
void send_expecting_observer_error(LightRig<K>& rig, Tick e) {
  if constexpr (trellis_test::is_async_v<typename K::Context>) {
    CHECK(rig.m.send(e) == SendResult::Transitioned);
    CHECK_THROWS_AS(rig.m.drain(), test_failure);
  } else {
    CHECK_THROWS_AS((void)rig.m.send(e), test_failure);
  }
}

}  // namespace

TEST_CASE_TEMPLATE(
    "machine: an observer that throws leaves the committed state and later "
    "sends and observers work",
    K, TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> before;
  Log<Move> after;
  Counter thrower_calls;
  const auto first = rig.record(before);
  const auto thrower = rig.m.on_transition([&](const Light&, const Light&) {
    thrower_calls.bump();
    if (thrower_calls.value() == 1) throw test_failure("observer failed");
  });
  const auto last = rig.record(after);
  auto green = rig.m.state_is(Light::Green);

  send_expecting_observer_error(rig, Tick::Advance);  // Red -> Green
  CHECK(rig.m.state() == Light::Green);
  CHECK(green.get());
  CHECK(trace(before) == "Red->Green");
  CHECK(trace(after) == "Red->Green");  // the others were still told

  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);  // Green -> Yellow
  rig.settle();
  CHECK(rig.m.state() == Light::Yellow);
  CHECK_FALSE(green.get());
  CHECK(thrower_calls.value() == 2);
  CHECK(trace(before) == "Red->Green, Green->Yellow");
  CHECK(trace(after) == "Red->Green, Green->Yellow");
  Log<Move> newcomer;
  const auto fresh = rig.record(newcomer);
  (void)rig.m.send(Tick::Advance);  // Yellow -> Red
  rig.settle();
  CHECK(trace(newcomer) == "Yellow->Red");
}

// --- events that carry payloads -----------------------------------------------------------------

namespace {

struct Deposit {
  int amount;
};
struct Withdraw {
  int amount;
};
struct Freeze {};
using AccountEvent = std::variant<Deposit, Withdraw, Freeze>;

struct Account {
  int balance = 0;
  bool frozen = false;
  friend bool operator==(const Account&, const Account&) = default;
};

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::optional<Account> bank(const Account& a, const AccountEvent& e) {
  return std::visit(Overloaded{
                        [&](const Deposit& d) -> std::optional<Account> {
                          if (a.frozen || d.amount < 0) return std::nullopt;
                          return Account{a.balance + d.amount, false};
                        },
                        [&](const Withdraw& w) -> std::optional<Account> {
                          if (a.frozen || w.amount < 0 || w.amount > a.balance) return std::nullopt;
                          return Account{a.balance - w.amount, false};
                        },
                        [&](const Freeze&) -> std::optional<Account> {
                          return Account{a.balance, true};
                        },
                    },
                    e);
}

}  // namespace

TEST_CASE_TEMPLATE("machine: an event type may be a std::variant of payload structs", K,
                   TRELLIS_MACHINE_KINDS) {
  typename K::Context ctx;
  typename K::template Machine<Account, AccountEvent> m{ctx, Account{}, bank};
  Log<std::pair<int, int>> balances;
  const auto observer = m.on_transition([&](const Account& from, const Account& to) {
    balances.push({from.balance, to.balance});
  });
  auto frozen = m.state_is(Account{30, true});

  CHECK(m.send(Deposit{50}) == SendResult::Transitioned);
  CHECK(m.send(Withdraw{80}) == SendResult::Rejected);  // more than the balance
  CHECK(m.send(Withdraw{20}) == SendResult::Transitioned);
  CHECK(m.send(Deposit{0}) == SendResult::Unchanged);
  CHECK(m.send(Freeze{}) == SendResult::Transitioned);
  CHECK(frozen.get());
  CHECK(m.send(Freeze{}) == SendResult::Unchanged);
  CHECK(m.send(Deposit{5}) == SendResult::Rejected);
  CHECK(m.state() == Account{30, true});
  trellis_test::settle(ctx);
  CHECK(balances.items() == std::vector<std::pair<int, int>>{{0, 50}, {50, 30}, {30, 30}});
}

// --- Boost.Signals2 ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("machine: transitions() is a Boost.Signals2 signal of (old, new)", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> from_signal;
  Log<Move> from_observer;
  const auto observer = rig.record(from_observer);
  {
    const boost::signals2::scoped_connection connection =
        rig.m.transitions().connect([&](const Light& from, const Light& to) {
          from_signal.push({from, to});
        });
    rig.settle();
    CHECK(from_signal.size() == 0);  // not called at connection
    (void)rig.m.send(Tick::Jam);
    (void)rig.m.send(Tick::Hold);
    (void)rig.m.send(Tick::Advance);
    rig.settle();
    CHECK(trace(from_signal) == "Red->Green");
  }
  // The scoped_connection is gone: the slot is disconnected, the on_transition observer is not.
  (void)rig.m.send(Tick::Advance);
  rig.settle();
  CHECK(trace(from_signal) == "Red->Green");
  CHECK(trace(from_observer) == "Red->Green, Green->Yellow");
  CHECK(rig.m.transitions().num_slots() == 0);
}

TEST_CASE_TEMPLATE("machine: transitions() collapses a batch like on_transition", K,
                   TRELLIS_MACHINE_KINDS) {
  LightRig<K> rig;
  Log<Move> seen;
  const boost::signals2::scoped_connection connection =
      rig.m.transitions().connect([&](const Light& from, const Light& to) {
        seen.push({from, to});
      });
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);
    (void)rig.m.send(Tick::Advance);
  });
  rig.ctx.batch([&] {
    (void)rig.m.send(Tick::Advance);
    (void)rig.m.send(Tick::Advance);
    (void)rig.m.send(Tick::Advance);
  });
  rig.settle();
  CHECK(trace(seen) == "Red->Yellow");
}

// --- sends made by effects and failing flushes ------------------------------------------------

TEST_CASE_TEMPLATE(
    "machine: observers hear a transition an effect sends after the transition that caused it", K,
    TRELLIS_MACHINE_KINDS) {
  // An automatic transition: an effect on the state moves Green on to Yellow by itself. The
  // effect's send is committed after Red -> Green, and observers hear the two in that order.
  LightRig<K> rig;
  Log<Move> seen;
  const auto observer = rig.record(seen);
  Log<Move> from_signal;
  const boost::signals2::scoped_connection connection =
      rig.m.transitions().connect([&](const Light& from, const Light& to) {
        from_signal.push({from, to});
      });
  const trellis::CellView<Light> cell = rig.m.state_cell();
  auto automatic = rig.ctx.effect([&rig, cell] {
    if (cell.get() == Light::Green) (void)rig.m.send(Tick::Advance);
  });
  rig.settle();
  REQUIRE(seen.size() == 0);

  CHECK(rig.m.send(Tick::Advance) == SendResult::Transitioned);  // Red -> Green -> Yellow
  rig.settle();
  CHECK(rig.m.state() == Light::Yellow);
  CHECK(trace(seen) == "Red->Green, Green->Yellow");
  CHECK(trace(from_signal) == "Red->Green, Green->Yellow");

  (void)rig.m.send(Tick::Advance);  // Yellow -> Red
  (void)rig.m.send(Tick::Advance);  // Red -> Green -> Yellow
  rig.settle();
  CHECK(rig.m.state() == Light::Yellow);
  CHECK(trace(seen) == "Red->Green, Green->Yellow, Yellow->Red, Red->Green, Green->Yellow");
  CHECK(trace(from_signal) == trace(seen));
}

TEST_CASE("machine: async: observers hear a transition whose flush threw") {
  // A signal over the state throws on Green: send() reports that error, but the transition is
  // committed, so observers are told of it at the next drain, not only after a later send.
  trellis::AsyncContext ctx;
  trellis::AsyncStateMachine<Light, Tick> m{ctx, Light::Red, step};
  Log<Move> seen;
  const auto observer = m.on_transition([&](const Light& from, const Light& to) {
    seen.push({from, to});
  });
  const trellis::CellView<Light> cell = m.state_cell();
  auto failing = ctx.signal([cell] {
    if (cell.get() == Light::Green) throw test_failure("signal failed on Green");
    return cell.get();
  });
  ctx.drain();  // the dispatcher's first run is over

  CHECK_THROWS_WITH_AS((void)m.send(Tick::Advance), "signal failed on Green", test_failure);
  CHECK(m.state() == Light::Green);
  ctx.drain();
  CHECK(trace(seen) == "Red->Green");

  CHECK(m.send(Tick::Advance) == SendResult::Transitioned);  // Green -> Yellow
  ctx.drain();
  CHECK(m.state() == Light::Yellow);
  CHECK(failing.get() == Light::Yellow);
  CHECK(trace(seen) == "Red->Green, Green->Yellow");
}
