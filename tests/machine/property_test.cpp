// SPDX-License-Identifier: MIT
/// @file
/// Issue 12 §3, property tests with RapidCheck: the doctest adapter
/// (<trellis/testing/rapidcheck.hpp>) and generated event sequences run against a machine and a
/// hand-written model, for enumerated events (the traffic light) and for events that are a
/// std::variant of payload structs (a download). Every property runs 100 cases
/// (TRELLIS_TEST_SCALE scales that, RC_PARAMS="max_success=..." overrides it); the properties
/// that are expected to fail run quiet, so RapidCheck's exit summary names no failure.
#include "test_support.hpp"
#include "traffic_light.hpp"

#include <trellis/machine/state_machine.hpp>
#include <trellis/testing/rapidcheck.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tt = trellis::testing;

// RapidCheck shows a counterexample's values with showValue hooks that argument-dependent
// lookup finds: the traffic light's ticks by their TRELLIS_ENUM names.
namespace light {
template <std::same_as<Tick> T>
void showValue(const T& t, std::ostream& os) {
  tt::show_value(t, os);
}
}  // namespace light

namespace {

/// The number of cases each property of this suite runs.
tt::PropertyOptions cases() { return {.max_success = trellis_test::scaled(100, 10)}; }

/// For a property the test expects to fail: quiet, and 100 cases whatever the scale (the run
/// stops at the first failure, and fewer cases might miss it).
tt::PropertyOptions quiet_cases() { return {.max_success = 100, .quiet = true}; }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// --- the adapter ----------------------------------------------------------------------------

TEST_CASE("rapidcheck adapter: a false property fails with the minimal counterexample") {
  const auto failure = tt::property_failure(
      "every vector has fewer than 3 elements",
      [](const std::vector<int>& xs) { RC_ASSERT(xs.size() < 3u); }, quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "every vector has fewer than 3 elements"));
  CHECK(contains(*failure, "([0, 0, 0])"));  // shrunk: three elements, each shrunk to 0
  CHECK(contains(*failure, "RC_ASSERT(xs.size() < 3u)"));
}

TEST_CASE("rapidcheck adapter: a failure names the seed that reruns the same cases") {
  const auto seed = rc::detail::configuration().testParams.seed;
  const auto property = [](const std::vector<int>& xs) { RC_ASSERT(xs.size() < 3u); };
  const auto failure = tt::property_failure("every vector is short", property, quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "RC_PARAMS=\""));
  CHECK(contains(*failure, "seed=" + std::to_string(seed)));
  // The same seed runs the same cases: a second run fails the same way.
  CHECK(tt::property_failure("every vector is short", property, quiet_cases()) == failure);
}

TEST_CASE("rapidcheck adapter: a true property has no failure") {
  const auto failure = tt::property_failure(
      "reversing twice gives the vector back",
      [](const std::vector<int>& xs) {
        const std::vector<int> once(xs.rbegin(), xs.rend());
        RC_ASSERT(std::vector<int>(once.rbegin(), once.rend()) == xs);
      },
      cases());
  CHECK_MESSAGE(!failure, failure.value_or(""));
}

TEST_CASE("rapidcheck adapter: an exception inside a property is reported with its message") {
  const auto failure = tt::property_failure(
      "a property that throws", [](int) { throw std::runtime_error("the model broke"); },
      quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "the model broke"));
}

TEST_CASE("rapidcheck adapter: max_success sets the number of cases") {
  int calls = 0;
  const auto failure = tt::property_failure(
      "counts its cases", [&calls](int) { ++calls; }, tt::PropertyOptions{.max_success = 7});
  CHECK_MESSAGE(!failure, failure.value_or(""));
  if (std::getenv("RC_PARAMS") == nullptr) CHECK(calls == 7);
}

TEST_CASE("rapidcheck adapter: check_property returns true and passes when the property holds") {
  CHECK(tt::check_property(
      "addition of small ints commutes",
      [](short a, short b) { RC_ASSERT(int{a} + int{b} == int{b} + int{a}); }, cases()));
}

// The adapter's failing half: this case must fail (doctest::should_fail turns that into a pass),
// and its output shows the counterexample a user would read.
TEST_CASE("rapidcheck adapter: check_property fails the doctest case when the property fails" *
          doctest::should_fail()) {
  CHECK_FALSE(tt::check_property(
      "every vector is huge", [](const std::vector<int>& xs) { RC_ASSERT(xs.size() > 1000u); },
      quiet_cases()));
}

TRELLIS_PROPERTY("rapidcheck adapter: TRELLIS_PROPERTY checks a property as a test case",
                 (const std::vector<int>& xs)) {
  RC_ASSERT(std::vector<int>(xs.rbegin(), xs.rend()).size() == xs.size());
}

TEST_CASE("enumerated: a failing value shrinks to the first one listed") {
  const auto failure = tt::property_failure(
      "no tick is listed",
      [] {
        *tt::enumerated<light::Tick>();
        RC_FAIL("a tick");
      },
      quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "light::Tick:\nAdvance\n"));  // Advance is listed first
}

TEST_CASE("enumerated: generates every listed value") {
  // 200 ticks in one case: the chance that a listed value is missing is 2^-200.
  const auto all = tt::property_failure(
      "200 ticks hold both",
      [] {
        const auto ticks =
            *rc::gen::container<std::vector<light::Tick>>(200, tt::enumerated<light::Tick>());
        RC_ASSERT(std::count(ticks.begin(), ticks.end(), light::Tick::Advance) > 0);
        RC_ASSERT(std::count(ticks.begin(), ticks.end(), light::Tick::Skip) > 0);
      },
      cases());
  CHECK_MESSAGE(!all, all.value_or(""));
}

// --- a machine against a model: enumerated events -------------------------------------------

namespace {

using light::Light;
using light::Tick;

// The traffic light written another way: a position on the cycle Red -> Green -> Yellow -> Red.
// Advance moves one step on; Skip is accepted only on Green and goes back to the start.
class LightModel {
 public:
  std::optional<Light> on(Tick t) {
    if (t == Tick::Advance) {
      position_ = (position_ + 1) % 3;
    } else if (position_ == 1) {
      position_ = 0;
    } else {
      return std::nullopt;
    }
    return cycle_[position_];
  }

 private:
  static constexpr Light cycle_[] = {Light::Red, Light::Green, Light::Yellow};
  int position_ = 0;
};

// The same model with a bug: it also accepts Skip on Yellow.
class SkipsOnYellow {
 public:
  std::optional<Light> on(Tick t) {
    if (t == Tick::Skip && state_ == Light::Yellow) return state_ = Light::Red;
    const auto next = model_.on(t);
    if (next) state_ = *next;
    return next;
  }

 private:
  LightModel model_;
  Light state_ = Light::Red;
};

}  // namespace

TEST_CASE("traffic light: the machine agrees with a hand-written model after every event") {
  tt::check_property(
      "the traffic light agrees with its model",
      [] {
        const auto ticks = *tt::gen_events<Tick>();
        trellis::Context ctx;
        trellis::StateMachine<Light, Tick> machine{ctx, Light::Red, light::table()};
        LightModel model;
        tt::check_against_model(machine, ticks, [&model](Tick t) { return model.on(t); });
      },
      cases());
}

TEST_CASE("traffic light: a model that disagrees shrinks to the shortest failing sequence") {
  const auto failure = tt::property_failure(
      "the traffic light agrees with a wrong model",
      [] {
        const auto ticks = *tt::gen_events<Tick>();
        trellis::Context ctx;
        trellis::StateMachine<Light, Tick> machine{ctx, Light::Red, light::table()};
        SkipsOnYellow model;
        tt::check_against_model(machine, ticks, [&model](Tick t) { return model.on(t); });
      },
      quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "[Advance, Advance, Skip]"));
  CHECK(contains(*failure,
                 "after event 3 of 3 (Skip), the model accepts it (to Red) but the machine "
                 "rejected it and stays in Yellow"));
}

// --- a machine against a model: events that are a std::variant of payload structs ------------

namespace download {

enum class Phase { Idle, Downloading, Done };
TRELLIS_ENUM(Phase, Idle, Downloading, Done);

struct State {
  Phase phase = Phase::Idle;
  std::size_t received = 0;
  std::size_t size = 0;
  friend bool operator==(const State&, const State&) = default;
};

struct Start {
  std::size_t size;
};
struct Chunk {
  std::size_t bytes;
};
struct Cancel {};
using Event = std::variant<Start, Chunk, Cancel>;

std::ostream& operator<<(std::ostream& os, const Start& s) {
  return os << "Start{" << s.size << "}";
}
std::ostream& operator<<(std::ostream& os, const Chunk& c) {
  return os << "Chunk{" << c.bytes << "}";
}
std::ostream& operator<<(std::ostream& os, const Cancel&) { return os << "Cancel{}"; }
std::ostream& operator<<(std::ostream& os, const State& s) {
  tt::show_value(s.phase, os);
  return os << " " << s.received << "/" << s.size;
}
// Found by argument-dependent lookup through the variant's alternatives. A template, so that
// it takes an Event only: a plain showValue(const Event&, ...) would take a Start too, by
// conversion, and show_value(Start) would call it again.
template <std::same_as<Event> T>
void showValue(const T& e, std::ostream& os) {
  tt::show_value(e, os);
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

// The machine: Start from Idle; chunks that fit while downloading (Done when the size is
// reached); Cancel while downloading goes back to Idle.
std::optional<State> step(const State& s, const Event& e) {
  using Next = std::optional<State>;
  return std::visit(
      Overloaded{
          [&](const Start& st) -> Next {
            if (s.phase != Phase::Idle) return std::nullopt;
            return State{Phase::Downloading, 0, st.size};
          },
          [&](const Chunk& c) -> Next {
            if (s.phase != Phase::Downloading || s.received + c.bytes > s.size) return std::nullopt;
            const std::size_t received = s.received + c.bytes;
            return State{received == s.size ? Phase::Done : Phase::Downloading, received, s.size};
          },
          [&](const Cancel&) -> Next {
            if (s.phase != Phase::Downloading) return std::nullopt;
            return State{};
          },
      },
      e);
}

// The model, written as a user would check it by hand: how many bytes are missing, if any
// download is open. `clamp` is a bug to find: an oversized chunk is accepted and cut to fit.
class Model {
 public:
  explicit Model(bool clamp = false) : clamp_(clamp) {}

  std::optional<State> on(const Event& e) {
    if (const auto* start = std::get_if<Start>(&e)) {
      if (open_ || done_) return std::nullopt;
      open_ = true;
      size_ = start->size;
      missing_ = start->size;
    } else if (const auto* chunk = std::get_if<Chunk>(&e)) {
      if (!open_) return std::nullopt;
      if (chunk->bytes > missing_ && !clamp_) return std::nullopt;
      missing_ -= std::min(chunk->bytes, missing_);
      if (missing_ == 0) {
        open_ = false;
        done_ = true;
      }
    } else {
      if (!open_) return std::nullopt;
      open_ = false;
      size_ = 0;
      missing_ = 0;
    }
    if (done_) return State{Phase::Done, size_, size_};
    if (open_) return State{Phase::Downloading, size_ - missing_, size_};
    return State{};
  }

 private:
  bool clamp_;
  bool open_ = false;
  bool done_ = false;
  std::size_t size_ = 0;
  std::size_t missing_ = 0;
};

// Small sizes and chunks, so that downloads finish within a generated sequence.
rc::Gen<Event> event() {
  return tt::one_of_variant<Event>(
      rc::gen::map(rc::gen::inRange<std::size_t>(0, 20), [](std::size_t n) { return Start{n}; }),
      rc::gen::map(rc::gen::inRange<std::size_t>(0, 10), [](std::size_t n) { return Chunk{n}; }),
      rc::gen::just(Cancel{}));
}

}  // namespace download

TEST_CASE("download: the machine agrees with a hand-written model for variant events") {
  tt::check_property(
      "the download agrees with its model",
      [] {
        const auto events = *tt::gen_events(download::event());
        trellis::Context ctx;
        trellis::StateMachine<download::State, download::Event> machine{ctx, download::State{},
                                                                        download::step};
        download::Model model;
        tt::check_against_model(machine, events,
                                [&model](const download::Event& e) { return model.on(e); });
      },
      cases());
}

TEST_CASE(
    "download: a model that disagrees shrinks to the shortest sequence and smallest payload") {
  const auto failure = tt::property_failure(
      "the download agrees with a model that clamps chunks",
      [] {
        const auto events = *tt::gen_events(download::event());
        trellis::Context ctx;
        trellis::StateMachine<download::State, download::Event> machine{ctx, download::State{},
                                                                        download::step};
        download::Model model(/*clamp=*/true);
        tt::check_against_model(machine, events,
                                [&model](const download::Event& e) { return model.on(e); });
      },
      quiet_cases());
  REQUIRE(failure);
  INFO(*failure);
  CHECK(contains(*failure, "[Start{0}, Chunk{1}]"));
  CHECK(contains(*failure, "after event 2 of 2 (Chunk{1}), the model accepts it (to Done 0/0)"));
}

TEST_CASE("one_of_variant: generates each alternative it has a generator for") {
  // 300 events in one case: the chance that an alternative is missing is below 2^-175.
  const auto failure = tt::property_failure(
      "300 events hold every alternative",
      [] {
        const auto events =
            *rc::gen::container<std::vector<download::Event>>(300, download::event());
        std::size_t seen[3] = {0, 0, 0};
        for (const auto& e : events) ++seen[e.index()];
        RC_ASSERT(seen[0] > 0u);
        RC_ASSERT(seen[1] > 0u);
        RC_ASSERT(seen[2] > 0u);
      },
      cases());
  CHECK_MESSAGE(!failure, failure.value_or(""));
}
