// SPDX-License-Identifier: MIT
#include <trellis/testing/phase_matrix.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include <trellis/testing/golden.hpp>

#include "traffic_light.hpp"
#include "vending_machine.hpp"

#ifndef TRELLIS_MACHINE_GOLDEN_DIR
#error \
    "TRELLIS_MACHINE_GOLDEN_DIR must name tests/machine/golden (tests/machine/tests.cmake sets it)"
#endif

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace phase_matrix_test {

namespace tt = trellis::testing;
using vending::Cancel;
using vending::Coin;
using vending::Dispensed;
using vending::Fault;
using vending::Machine;
using vending::Phase;
using vending::Select;
using Table = trellis::TransitionTable<Machine, vending::Event, Phase>;
using Matrix = tt::PhaseMatrix<Phase, vending::Event>;
using Step = Matrix::Step;

namespace {
const std::filesystem::path golden_dir{TRELLIS_MACHINE_GOLDEN_DIR};
const auto to_idle = [](Machine m, const Cancel&) {
  m.phase = Phase::Idle;
  return m;
};
}  // namespace

TEST_CASE("table_matrix: a cell lists the rows that decide it, in order, with guards and updates") {
  const auto m = tt::table_matrix(vending::table());
  CHECK(m.at<Dispensed>(Phase::Vending) ==
        Matrix::Cell{Step{Phase::Paying, "change due", "count sale"},
                     Step{Phase::Idle, "", "count sale"}});
  CHECK(m.at(Phase::Paying, vending::Event{Select{2}}) ==
        Matrix::Cell{Step{Phase::Vending, "slot exists && credit >= price", "vend"}});
}

TEST_CASE("table_matrix: a cell that no row decides is empty") {
  const auto m = tt::table_matrix(vending::table());
  CHECK(m.at<Select>(Phase::Idle).empty());
  CHECK(m.at<Coin>(Phase::Vending).empty());
}

TEST_CASE("table_matrix: an any() row fills its event type's column") {
  const auto m = tt::table_matrix(vending::table());
  for (const Phase p : trellis::enumeration<Phase>::values) {
    CAPTURE(trellis::enumeration<Phase>::name(p));
    CHECK(m.at<Fault>(p) == Matrix::Cell{Step{Phase::OutOfOrder, "", "record fault"}});
  }
}

TEST_CASE("table_matrix: rows after an unguarded row for the same cell are not listed") {
  Table t;
  t.from(Phase::Paying).on<Cancel>().update("refund", to_idle).to(Phase::Idle);
  t.any().on<Cancel>().update("late", to_idle).to(Phase::Idle);
  const auto m = tt::table_matrix(t);
  CHECK(m.at<Cancel>(Phase::Paying) == Matrix::Cell{Step{Phase::Idle, "", "refund"}});
  CHECK(m.at<Cancel>(Phase::Idle) == Matrix::Cell{Step{Phase::Idle, "", "late"}});
}

TEST_CASE("table_matrix: a stay() row shows the phase it stays in, an unnamed guard as guard") {
  Table t;
  t.from(Phase::Idle, Phase::Paying).on<Select>().when([](const Machine&) { return true; }).stay();
  const auto m = tt::table_matrix(t);
  CHECK(m.at<Select>(Phase::Idle) == Matrix::Cell{Step{Phase::Idle, "guard", ""}});
  CHECK(m.at<Select>(Phase::Paying) == Matrix::Cell{Step{Phase::Paying, "guard", ""}});
}

TEST_CASE("table_matrix: tables with the same rules give equal matrices") {
  CHECK(tt::table_matrix(vending::table()) == tt::table_matrix(vending::table()));
}

TEST_CASE("table_matrix: a renamed guard makes the matrices differ") {
  Table a;
  a.from(Phase::Paying)
      .on<Cancel>()
      .when("a", [](const Machine&) { return true; })
      .update(to_idle)
      .to(Phase::Idle);
  Table b;
  b.from(Phase::Paying)
      .on<Cancel>()
      .when("b", [](const Machine&) { return true; })
      .update(to_idle)
      .to(Phase::Idle);
  CHECK(tt::table_matrix(a) != tt::table_matrix(b));
}

TEST_CASE("table_matrix: an enum state with enum events has one column per event value") {
  const auto m = tt::table_matrix(light::table());
  using LightMatrix = tt::PhaseMatrix<light::Light, light::Tick>;
  CHECK(m.at(light::Light::Green, light::Tick::Skip) ==
        LightMatrix::Cell{LightMatrix::Step{light::Light::Red, "", ""}});
  CHECK(m.at(light::Light::Red, light::Tick::Skip).empty());
  CHECK(tt::to_markdown(m) ==
        "| phase \\ event | Advance | Skip |\n"
        "|---------------|---------|------|\n"
        "| Red           | Green   | —    |\n"
        "| Green         | Yellow  | Red  |\n"
        "| Yellow        | Red     | —    |\n");
}

TEST_CASE("table_matrix: a row left unfinished is an error naming it") {
  Table t;
  { auto pending = t.from(Phase::Idle).on<Coin>(); }
  CHECK_THROWS_AS((void)tt::table_matrix(t), trellis::table_error);
}

TEST_CASE("PhaseMatrix: at() of a phase its enumeration does not list is an error") {
  const auto m = tt::table_matrix(vending::table());
  CHECK_THROWS_WITH_AS((void)m.at<Coin>(static_cast<Phase>(9)),
                       "trellis: Phase value 9 is not listed in the enumeration of Phase "
                       "(expected one of Idle, Paying, Vending, OutOfOrder)",
                       trellis::error);
}

TEST_CASE("to_markdown(PhaseMatrix): a '|' in a name is escaped so the table keeps its columns") {
  Table t;
  t.from(Phase::Paying).on<Cancel>().update("refund | log", to_idle).to(Phase::Idle);
  const std::string text = tt::to_markdown(tt::table_matrix(t));
  CHECK(text.find("| Idle / refund \\| log |") != std::string::npos);
}

TEST_CASE("PhaseMatrix: operator<< prints the Markdown table, for failure messages") {
  const auto m = tt::table_matrix(light::table());
  std::ostringstream os;
  os << m;
  CHECK(os.str() == "\n" + tt::to_markdown(m));
}

TEST_CASE("vending: its phase matrix matches the hand-written golden file") {
  const auto m = tt::table_matrix(vending::table());
  CHECK(tt::check_golden(golden_dir / "vending.md", tt::to_markdown(m)));
}

}  // namespace phase_matrix_test
