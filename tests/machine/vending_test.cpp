// SPDX-License-Identifier: MIT
// The vending machine (examples/vending_machine.hpp) tested exhaustively as far as its state
// can be: every sequence of up to 12 events over payloads at the rules' edges, with invariants
// at every reached state, every row and guard exercised both ways, and no state from which the
// machine cannot end. (The property test against a model is vending_property_test.cpp.)
#include <trellis/testing/explore.hpp>

#include <doctest/doctest.h>

#include <vector>

#include "vending_machine.hpp"

namespace {

struct MachineHash {
  std::size_t operator()(const vending::Machine& m) const {
    return trellis::testing::hash_values(m.phase, m.credit, m.slot, m.sold, m.refunded, m.faults);
  }
};

}  // namespace

TEST_CASE("vending: every sequence of up to 12 events keeps the machine's invariants") {
  namespace tt = trellis::testing;
  using namespace vending;
  tt::ExploreOptions<Machine, Event, MachineHash> options{.max_depth = 12};
  options.invariant("credit within 0..500",
                    [](const Machine& m) { return m.credit >= 0 && m.credit <= max_credit; });
  options.invariant("a slot is chosen exactly while vending",
                    [](const Machine& m) { return (m.slot >= 0) == (m.phase == Phase::Vending); });
  options.invariant("sales and refunds never go back",
                    [](const Machine& from, const Event&, const Machine& to) {
                      return to.sold >= from.sold && to.refunded >= from.refunded;
                    });
  const auto report = tt::explore(table(), Machine{},
                                  {Coin{5}, Coin{100}, Coin{3}, Select{0}, Select{3}, Select{4},
                                   Cancel{}, Dispensed{}, Fault{"jam"}},
                                  options);
  CHECK_MESSAGE(report.ok(), report.summary());  // the shortest failing sequence, if any
  CHECK(report.rows_never_fired().empty());
  CHECK(report.guards_never_true().empty());
  CHECK(report.guards_never_false().empty());
  CHECK(report.phases_never_reached().empty());
}

TEST_CASE("vending: exploration finds the shortest sequence that breaks a stricter invariant") {
  namespace tt = trellis::testing;
  using namespace vending;
  tt::ExploreOptions<Machine, Event, MachineHash> options{.max_depth = 8};
  options.invariant("never two sales", [](const Machine& m) { return m.sold < 2; });
  const auto report = tt::explore(table(), Machine{},
                                  {Coin{25}, Coin{100}, Select{0}, Cancel{}, Dispensed{}}, options);
  REQUIRE_FALSE(report.ok());
  const auto* failure = report.shortest_failure();
  REQUIRE(failure != nullptr);
  // Two sales need two coins of 100, two selections and two dispensings: six events, and no
  // shorter sequence; of those, breadth-first in sample order finds the coins first.
  CHECK(failure->path.events ==
        std::vector<Event>{Coin{100}, Coin{100}, Select{0}, Dispensed{}, Select{0}, Dispensed{}});
}
