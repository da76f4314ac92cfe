// SPDX-License-Identifier: MIT
// The vending machine (examples/vending_machine.hpp) against a model written another way, with
// generated event sequences and payloads: after every event, the machine driven by the table
// and the model agree on acceptance and on the whole state. RapidCheck shrinks a disagreement
// to a minimal sequence (see trellis_property_tests for the adapter's own tests).
#include <trellis/machine/state_machine.hpp>
#include <trellis/testing/rapidcheck.hpp>

#include <doctest/doctest.h>

#include <concepts>
#include <optional>
#include <ostream>
#include <string>
#include <variant>

#include "test_support.hpp"
#include "vending_machine.hpp"

namespace tt = trellis::testing;

namespace vending {

std::ostream& operator<<(std::ostream& os, const Coin& c) {
  return os << "Coin{" << c.cents << "}";
}
std::ostream& operator<<(std::ostream& os, const Select& s) {
  return os << "Select{" << s.slot << "}";
}
std::ostream& operator<<(std::ostream& os, const Cancel&) { return os << "Cancel{}"; }
std::ostream& operator<<(std::ostream& os, const Dispensed&) { return os << "Dispensed{}"; }
std::ostream& operator<<(std::ostream& os, const Fault& f) {
  return os << "Fault{" << f.why << "}";
}
std::ostream& operator<<(std::ostream& os, const Machine& m) {
  tt::show_value(m.phase, os);
  return os << " credit " << m.credit << " slot " << m.slot << " sold " << m.sold << " refunded "
            << m.refunded << " faults " << m.faults;
}
template <std::same_as<Event> T>
void showValue(const T& e, std::ostream& os) {
  tt::show_value(e, os);
}

namespace {

// The model: the machine's rules as an operator would state them, one event at a time, with
// money kept as a till (inserted - spent - refunded) rather than a credit field.
class Model {
 public:
  explicit Model(bool free_cancel = false) : free_cancel_(free_cancel) {}

  std::optional<Machine> on(const Event& e) {
    if (broken_ && !std::holds_alternative<Fault>(e)) return std::nullopt;
    if (const auto* c = std::get_if<Coin>(&e)) {
      const bool known = c->cents == 5 || c->cents == 10 || c->cents == 25 || c->cents == 100;
      if (vending_ || !known || balance() + c->cents > 500) return std::nullopt;
      inserted_ += c->cents;
    } else if (const auto* s = std::get_if<Select>(&e)) {
      if (vending_ || balance() == 0 || s->slot < 0 || s->slot > 3) return std::nullopt;
      const int cost = 100 + 25 * s->slot;
      if (balance() < cost) return std::nullopt;
      spent_ += cost;
      vending_ = true;
      slot_ = s->slot;
    } else if (std::holds_alternative<Cancel>(e)) {
      if (vending_ || (balance() == 0 && !free_cancel_)) return std::nullopt;
      refunded_ += balance();
    } else if (std::holds_alternative<Dispensed>(e)) {
      if (!vending_) return std::nullopt;
      vending_ = false;
      slot_ = -1;
      ++sold_;
    } else {
      broken_ = true;
      vending_ = false;
      slot_ = -1;
      ++faults_;
      last_fault_ = std::get<Fault>(e).why;
    }
    return state();
  }

 private:
  int balance() const { return inserted_ - spent_ - refunded_; }
  Machine state() const {
    Machine m;
    m.phase = broken_         ? Phase::OutOfOrder
              : vending_      ? Phase::Vending
              : balance() > 0 ? Phase::Paying
                              : Phase::Idle;
    m.credit = balance();
    m.slot = slot_;
    m.sold = sold_;
    m.refunded = refunded_;
    m.faults = faults_;
    m.last_fault = last_fault_;
    return m;
  }

  bool free_cancel_;
  bool broken_ = false;
  bool vending_ = false;
  int inserted_ = 0, spent_ = 0, refunded_ = 0, sold_ = 0, faults_ = 0, slot_ = -1;
  std::string last_fault_;
};

// Payloads near the rules' edges: coins the machine takes and one it does not, slots from -1 to
// 4; faults are rare, since a fault ends the interesting part of a sequence.
rc::Gen<Event> event() {
  const auto some = tt::one_of_variant<Event>(
      rc::gen::map(rc::gen::element(5, 10, 25, 100, 3), [](int c) { return Coin{c}; }),
      rc::gen::map(rc::gen::inRange(-1, 5), [](int s) { return Select{s}; }),
      rc::gen::just(Cancel{}), rc::gen::just(Dispensed{}));
  return rc::gen::weightedOneOf<Event>(
      {{19, some},
       {1, rc::gen::map(rc::gen::element<std::string>("jam", "power"),
                        [](std::string why) { return Event{Fault{std::move(why)}}; })}});
}

}  // namespace
}  // namespace vending

TEST_CASE("vending: the table-driven machine agrees with its model after every event") {
  tt::check_property("vending agrees with its model",
                     [] {
                       const auto events = *tt::gen_events(vending::event());
                       trellis::Context ctx;
                       trellis::StateMachine<vending::Machine, vending::Event> machine{
                           ctx, vending::Machine{}, vending::table()};
                       vending::Model model;
                       tt::check_against_model(machine, events, [&model](const vending::Event& e) {
                         return model.on(e);
                       });
                     },
                     {.max_success = trellis_test::scaled(200, 20)});
}

TEST_CASE("vending: a model that disagrees is caught with a minimal sequence") {
  // The model also takes Cancel with no credit (the table rejects it in Idle): the shortest
  // disagreement is that one event.
  const auto failure = tt::property_failure(
      "vending agrees with a model that cancels for free",
      [] {
        const auto events = *tt::gen_events(vending::event());
        trellis::Context ctx;
        trellis::StateMachine<vending::Machine, vending::Event> machine{ctx, vending::Machine{},
                                                                        vending::table()};
        vending::Model model(/*free_cancel=*/true);
        tt::check_against_model(machine, events,
                                [&model](const vending::Event& e) { return model.on(e); });
      },
      {.max_success = 200, .quiet = true});
  REQUIRE(failure.has_value());
  CHECK(failure->find("[Cancel{}]") != std::string::npos);
}
