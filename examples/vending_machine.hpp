// SPDX-License-Identifier: MIT
/// @file
/// A vending machine with real data, declared as one typed transition table: the state is a
/// struct (a phase plus credit, the chosen slot and counters), the events carry payloads, the
/// guards check the payload against the state ("credit >= price") and the updates compute the
/// new state. The table is the only authority: examples/vending_machine.cpp runs it and draws
/// it; tests/machine/typed_table_test.cpp, phase_test.cpp and vending_test.cpp test, explore and
/// property-test it.
#pragma once

#include <trellis/base/enumeration.hpp>
#include <trellis/machine/transition_table.hpp>

#include <string>
#include <variant>

namespace vending {

enum class Phase { Idle, Paying, Vending, OutOfOrder };
TRELLIS_ENUM(Phase, Idle, Paying, Vending, OutOfOrder);

struct Coin {
  int cents = 0;
  bool operator==(const Coin&) const = default;
};
struct Select {
  int slot = 0;
  bool operator==(const Select&) const = default;
};
struct Cancel {
  bool operator==(const Cancel&) const = default;
};
struct Dispensed {
  bool operator==(const Dispensed&) const = default;
};
struct Fault {
  std::string why;
  bool operator==(const Fault&) const = default;
};
using Event = std::variant<Coin, Select, Cancel, Dispensed, Fault>;

struct Machine {
  Phase phase = Phase::Idle;
  int credit = 0;    ///< cents inserted and not yet spent
  int slot = -1;     ///< the slot being dispensed, -1 when none
  int sold = 0;      ///< items dispensed
  int refunded = 0;  ///< cents given back by Cancel
  int faults = 0;
  std::string last_fault;
  bool operator==(const Machine&) const = default;
};

/// The phase hook: tables, observers and diagrams speak about phases.
constexpr Phase phase_of(const Machine& m) { return m.phase; }

inline constexpr int slots = 4;
inline constexpr int max_credit = 500;
/// 100, 125, 150 and 175 cents.
constexpr int price(int slot) { return 100 + 25 * slot; }
constexpr bool accepted_coin(int cents) {
  return cents == 5 || cents == 10 || cents == 25 || cents == 100;
}

/// The table: every rule of the machine, and nothing else decides.
inline trellis::TransitionTable<Machine, Event, Phase> table() {
  trellis::TransitionTable<Machine, Event, Phase> t;
  t.from(Phase::Idle, Phase::Paying)
      .on<Coin>()
      .when("accepted coin", [](const Machine&, const Coin& c) { return accepted_coin(c.cents); })
      .when("credit stays <= 500",
            [](const Machine& m, const Coin& c) { return m.credit + c.cents <= max_credit; })
      .update("add credit",
              [](Machine m, const Coin& c) {
                m.credit += c.cents;
                m.phase = Phase::Paying;
                return m;
              })
      .to(Phase::Paying);
  t.from(Phase::Paying)
      .on<Select>()
      .when("slot exists",
            [](const Machine&, const Select& s) { return s.slot >= 0 && s.slot < slots; })
      .when("credit >= price",
            [](const Machine& m, const Select& s) { return m.credit >= price(s.slot); })
      .update("vend",
              [](Machine m, const Select& s) {
                m.credit -= price(s.slot);
                m.slot = s.slot;
                m.phase = Phase::Vending;
                return m;
              })
      .to(Phase::Vending);
  t.from(Phase::Paying)
      .on<Cancel>()
      .update("refund",
              [](Machine& m, const Cancel&) {
                m.refunded += m.credit;
                m.credit = 0;
                m.phase = Phase::Idle;
              })
      .to(Phase::Idle);
  // Two rows for one phase and event: the first whose guard holds wins.
  t.from(Phase::Vending)
      .on<Dispensed>()
      .when("change due", [](const Machine& m) { return m.credit > 0; })
      .update("count sale",
              [](Machine& m, const Dispensed&) {
                ++m.sold;
                m.slot = -1;
                m.phase = Phase::Paying;
              })
      .to(Phase::Paying);
  t.from(Phase::Vending)
      .on<Dispensed>()
      .update("count sale",
              [](Machine& m, const Dispensed&) {
                ++m.sold;
                m.slot = -1;
                m.phase = Phase::Idle;
              })
      .to(Phase::Idle);
  t.any()
      .on<Fault>()
      .update("record fault",
              [](Machine& m, const Fault& f) {
                ++m.faults;
                m.last_fault = f.why;
                m.slot = -1;  // a vend under way is abandoned
                m.phase = Phase::OutOfOrder;
              })
      .to(Phase::OutOfOrder);
  t.terminal(Phase::OutOfOrder);
  return t;
}

}  // namespace vending
