// SPDX-License-Identifier: MIT
#include <trellis/testing/explore.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "vending_machine.hpp"

// This file's names, apart from the other files of its suite (a unity build compiles
// them together).
namespace explore_test {

namespace tt = trellis::testing;

// A combination lock: the code is 4, 7, 2. Opening it breaks the invariant "stays locked", and
// only the three right digits in a row do.
namespace lock {

enum class Phase { Locked, Open };
TRELLIS_ENUM(Phase, Locked, Open);

struct Digit {
  int d = 0;
  bool operator==(const Digit&) const = default;
};
inline std::ostream& operator<<(std::ostream& os, const Digit& digit) {
  return os << "Digit " << digit.d;
}
struct Reset {
  bool operator==(const Reset&) const = default;
};
using Event = std::variant<Digit, Reset>;

struct State {
  Phase phase = Phase::Locked;
  int progress = 0;  ///< right digits entered so far
  bool operator==(const State&) const = default;
};
constexpr Phase phase_of(const State& s) { return s.phase; }

struct Hash {
  std::size_t operator()(const State& s) const { return tt::hash_values(s.phase, s.progress); }
};

constexpr int code[] = {4, 7, 2};

inline trellis::TransitionTable<State, Event, Phase> table() {
  trellis::TransitionTable<State, Event, Phase> t;
  t.from(Phase::Locked)
      .on<Digit>()
      .when("last right digit",
            [](const State& s, const Digit& d) { return s.progress == 2 && d.d == code[2]; })
      .update("open",
              [](State s, const Digit&) {
                s.phase = Phase::Open;
                s.progress = 0;
                return s;
              })
      .to(Phase::Open);
  t.from(Phase::Locked)
      .on<Digit>()
      .when("right digit", [](const State& s, const Digit& d) { return d.d == code[s.progress]; })
      .update("advance",
              [](State s, const Digit&) {
                ++s.progress;
                return s;
              })
      .stay();
  t.from(Phase::Locked)
      .on<Digit>()
      .update("start over",
              [](State s, const Digit&) {
                s.progress = 0;
                return s;
              })
      .stay();
  t.any()
      .on<Reset>()
      .update("lock",
              [](State s, const Reset&) {
                s.phase = Phase::Locked;
                s.progress = 0;
                return s;
              })
      .to(Phase::Locked);
  return t;
}

inline tt::Samples<State, Event> samples() {
  return {Digit{1}, Digit{2}, Digit{4}, Digit{7}, Reset{}};
}

inline tt::ExploreOptions<State, Event, Hash> stays_locked() {
  tt::ExploreOptions<State, Event, Hash> options;
  options.invariant("stays locked", [](const State& s) { return s.phase == Phase::Locked; });
  return options;
}

}  // namespace lock

// Start -Finish-> Done (terminal), Start -Slip-> Trap, and Trap only waits.
namespace trap {

enum class Phase { Start, Trap, Done };
TRELLIS_ENUM(Phase, Start, Trap, Done);
enum class Ev { Finish, Slip, Wait };
TRELLIS_ENUM(Ev, Finish, Slip, Wait);

inline trellis::TransitionTable<Phase, Ev> table() {
  trellis::TransitionTable<Phase, Ev> t;
  t.from(Phase::Start).on(Ev::Finish).to(Phase::Done);
  t.from(Phase::Start).on(Ev::Slip).to(Phase::Trap);
  t.from(Phase::Trap).on(Ev::Wait).stay();
  t.terminal(Phase::Done);
  return t;
}

}  // namespace trap

// A counter whose update forgets the row's target: the third Tick moves it to Busy from a row
// that stays in Idle, which the table refuses with phase_error.
namespace faulty {

enum class Phase { Idle, Busy };
TRELLIS_ENUM(Phase, Idle, Busy);
struct Tick {
  bool operator==(const Tick&) const = default;
};
struct Clear {
  bool operator==(const Clear&) const = default;
};
using Event = std::variant<Tick, Clear>;
struct State {
  Phase phase = Phase::Idle;
  int n = 0;
  bool operator==(const State&) const = default;
};
constexpr Phase phase_of(const State& s) { return s.phase; }
struct Hash {
  std::size_t operator()(const State& s) const { return tt::hash_values(s.phase, s.n); }
};

inline trellis::TransitionTable<State, Event, Phase> table() {
  trellis::TransitionTable<State, Event, Phase> t;
  t.from(Phase::Idle)
      .on<Tick>()
      .update("count",
              [](State s, const Tick&) {
                if (++s.n == 3) s.phase = Phase::Busy;  // the bug
                return s;
              })
      .stay();
  t.from(Phase::Idle)
      .on<Clear>()
      .update("clear",
              [](State s, const Clear&) {
                s.n = 0;
                return s;
              })
      .stay();
  return t;
}

}  // namespace faulty

namespace {

enum class Move { Left, Right };
TRELLIS_ENUM(Move, Left, Right);

// -2 .. 2, walking left and right.
std::optional<int> walk(const int& at, const Move& m) {
  const int next = m == Move::Left ? at - 1 : at + 1;
  if (next < -2 || next > 2) return std::nullopt;
  return next;
}

// Adds the event to the state, modulo 4: many sequences reach each of the four states.
std::optional<int> add_mod4(const int& at, const int& add) { return (at + add) % 4; }

// Counts up without end.
std::optional<int> count_up(const int& at, const int&) { return at + 1; }

// Every state hashes alike: only == tells them apart.
struct Colliding {
  int v = 0;
  bool operator==(const Colliding&) const = default;
};
struct CollidingHash {
  std::size_t operator()(const Colliding&) const { return 42; }
};
std::optional<Colliding> add_mod5(const Colliding& at, const int& add) {
  return Colliding{(at.v + add) % 5};
}

struct VendingHash {
  std::size_t operator()(const vending::Machine& m) const {
    return tt::hash_values(m.phase, m.credit, m.slot, m.sold, m.refunded, m.faults, m.last_fault);
  }
};

}  // namespace

TEST_CASE("explore: reports exactly the shortest event sequence that breaks an invariant") {
  const auto report =
      tt::explore(lock::table(), lock::State{}, lock::samples(), lock::stays_locked());
  REQUIRE(report.failures.size() == 1);
  const auto& f = report.failures.front();
  CHECK(f.kind == tt::FailureKind::state_invariant);
  CHECK(f.what == "stays locked");
  CHECK(f.path.events == std::vector<lock::Event>{lock::Digit{4}, lock::Digit{7}, lock::Digit{2}});
  REQUIRE(f.path.states.size() == 4);
  CHECK(f.path.states[0] == lock::State{});
  CHECK(f.path.states[2] == lock::State{lock::Phase::Locked, 2});
  CHECK(f.path.states[3].phase == lock::Phase::Open);
  CHECK_FALSE(report.ok());
}

TEST_CASE("explore: the summary names each failure and prints its sequence") {
  const auto report =
      tt::explore(lock::table(), lock::State{}, lock::samples(), lock::stays_locked());
  const std::string& text = report.summary();
  CHECK(text.find("invariant \"stays locked\" broken in 1 state; shortest sequence (3 events)") !=
        std::string::npos);
  CHECK(text.find("--Digit 4--> state in Locked\n      --Digit 7--> state in Locked\n      "
                  "--Digit 2--> state in Open") != std::string::npos);
  CHECK(text.find("NOT OK") != std::string::npos);
  CHECK(tt::to_string(report) == text);
}

TEST_CASE("explore: tries events in sample order, so the reported sequence follows it") {
  tt::ExploreOptions<int, Move> options;
  options.invariant("stays at 0", [](const int& at) { return at == 0; });
  const auto right_first = tt::explore(walk, 0, {Move::Right, Move::Left}, options);
  const auto left_first = tt::explore(walk, 0, {Move::Left, Move::Right}, options);
  REQUIRE(right_first.failures.size() == 1);
  REQUIRE(left_first.failures.size() == 1);
  CHECK(right_first.failures[0].path.events == std::vector<Move>{Move::Right});
  CHECK(left_first.failures[0].path.events == std::vector<Move>{Move::Left});
  CHECK(right_first.failures[0].count == 4);  // -2, -1, 1 and 2
}

TEST_CASE("explore: checks invariants over transitions (from, event, to)") {
  const auto bounded = [](const int& at, const Move& m) -> std::optional<int> {
    const int next = m == Move::Right ? at + 1 : at - 1;
    if (next < 0 || next > 3) return std::nullopt;
    return next;
  };
  tt::ExploreOptions<int, Move> options;
  options.invariant("never goes back",
                    [](const int& from, const Move&, const int& to) { return to >= from; });
  const auto report = tt::explore(bounded, 0, {Move::Right, Move::Left}, options);
  REQUIRE(report.failures.size() == 1);
  const auto& f = report.failures.front();
  CHECK(f.kind == tt::FailureKind::transition_invariant);
  CHECK(f.count == 3);  // 1 -> 0, 2 -> 1, 3 -> 2
  CHECK(f.path.events == std::vector<Move>{Move::Right, Move::Left});
  CHECK(f.path.states == std::vector<int>{0, 1, 0});
}

TEST_CASE("explore: reports a phase_error thrown by an update as a failure with its sequence") {
  const auto report =
      tt::explore(faulty::table(), faulty::State{}, {faulty::Clear{}, faulty::Tick{}},
                  tt::ExploreOptions<faulty::State, faulty::Event, faulty::Hash>{});
  REQUIRE(report.failures.size() == 1);
  const auto& f = report.failures.front();
  CHECK(f.kind == tt::FailureKind::exception);
  CHECK(f.what.find("[machine.phase]") == 0);
  CHECK(f.what.find("row 1") != std::string::npos);
  CHECK(f.path.events ==
        std::vector<faulty::Event>{faulty::Tick{}, faulty::Tick{}, faulty::Tick{}});
  CHECK(f.path.states.size() == 3);  // the third Tick threw: no state after it
  CHECK(f.path.states.back() == faulty::State{faulty::Phase::Idle, 2});
  CHECK(report.states == 3);
  CHECK_FALSE(report.ok());
}

TEST_CASE("explore: reports the rows that never fired") {
  using namespace vending;
  const auto report = tt::explore(table(), Machine{}, {Coin{5}, Coin{7}, Select{9}},
                                  tt::ExploreOptions<Machine, Event, VendingHash>{});
  CHECK(report.complete());
  CHECK(report.has_rows);
  CHECK(report.rows.size() == 6);
  CHECK(report.rows_never_fired() == std::vector<std::size_t>{2, 3, 4, 5, 6});
  CHECK(report.rows[0].fired == 100);  // Coin{5} from credit 0, 5, ..., 495
  CHECK(report.summary().find("rows: 1 of 6 fired") != std::string::npos);
}

TEST_CASE("explore: reports guards never seen true and never seen false") {
  using namespace vending;
  const auto report = tt::explore(table(), Machine{}, {Coin{5}, Coin{7}, Select{9}},
                                  tt::ExploreOptions<Machine, Event, VendingHash>{});
  // Row 2's guard (slot exists && credit >= price) always fails for slot 9; row 4's is never
  // asked (Vending is never reached); row 1's holds for Coin{5} and fails for Coin{7}.
  CHECK(report.guards_never_true() == std::vector<std::size_t>{2, 4});
  CHECK(report.guards_never_false() == std::vector<std::size_t>{4});
  CHECK(report.rows[0].guard_true == 100);
  CHECK(report.rows[0].guard_false == 101 + 1);  // Coin{7} everywhere, Coin{5} at 500
  CHECK(report.rows[1].guard_false == 100);      // Select{9} in every Paying state
}

TEST_CASE("explore: reports states and phases reached, and phases never reached") {
  using namespace vending;
  const auto report = tt::explore(table(), Machine{}, {Coin{5}, Coin{7}, Select{9}},
                                  tt::ExploreOptions<Machine, Event, VendingHash>{});
  CHECK(report.states == 101);  // Idle with 0, Paying with 5 .. 500
  CHECK(report.depth == 100);
  CHECK(report.states_in(Phase::Idle) == 1);
  CHECK(report.states_in(Phase::Paying) == 100);
  CHECK(report.phases_never_reached() == std::vector<Phase>{Phase::Vending, Phase::OutOfOrder});
}

TEST_CASE("explore: a generator gives events whose payload depends on the state") {
  using namespace vending;
  // Select the dearest slot the credit pays for: "credit >= price" then never fails.
  const auto samples =
      tt::Samples<Machine, Event>{Coin{25}, Coin{100}, Dispensed{}}.generate([](const Machine& m) {
        std::vector<Select> out;
        for (int slot = slots - 1; slot >= 0; --slot) {
          if (m.credit >= price(slot)) {
            out.push_back(Select{slot});
            break;
          }
        }
        return out;
      });
  const auto report =
      tt::explore(table(), Machine{}, samples,
                  tt::ExploreOptions<Machine, Event, VendingHash>{.max_states = 3000});
  CHECK(report.rows[1].fired > 0);
  CHECK(report.guards_never_false() == std::vector<std::size_t>{2});
  CHECK(report.states_in(Phase::Vending) > 0);
}

TEST_CASE("explore: finds the states from which no terminal phase can be reached") {
  const auto report = tt::explore(trap::table(), trap::Phase::Start,
                                  {trap::Ev::Finish, trap::Ev::Slip, trap::Ev::Wait});
  CHECK(report.complete());
  CHECK(report.terminal_checked);
  CHECK(report.no_terminal == 1);
  REQUIRE(report.no_terminal_examples.size() == 1);
  CHECK(report.no_terminal_examples[0].events == std::vector<trap::Ev>{trap::Ev::Slip});
  CHECK(report.no_terminal_examples[0].states ==
        std::vector<trap::Phase>{trap::Phase::Start, trap::Phase::Trap});
  CHECK_FALSE(report.ok());
  CHECK(report.summary().find("1 state cannot reach one") != std::string::npos);
}

TEST_CASE("explore: options.terminal replaces the table's terminal phases") {
  tt::ExploreOptions<trap::Phase, trap::Ev> options;
  options.terminal = {trap::Phase::Done, trap::Phase::Trap};
  const auto report = tt::explore(trap::table(), trap::Phase::Start,
                                  {trap::Ev::Finish, trap::Ev::Slip, trap::Ev::Wait}, options);
  CHECK(report.no_terminal == 0);
  CHECK(report.ok());
}

TEST_CASE("explore: stores each distinct state once") {
  const auto report = tt::explore<int, int>(add_mod4, 0, {1, 2, 3});
  CHECK(report.states == 4);
  CHECK(report.transitions == 12);  // every state tried with every sample, once
  CHECK(report.rejected == 0);
  CHECK(report.complete());
}

TEST_CASE("explore: states with equal hashes are told apart by ==") {
  const auto report = tt::explore(add_mod5, Colliding{}, {1, 2},
                                  tt::ExploreOptions<Colliding, int, CollidingHash>{});
  CHECK(report.states == 5);
  CHECK(report.transitions == 10);
}

TEST_CASE("explore: stops storing states at max_states and says the report is partial") {
  const auto report = tt::explore<int, int>(count_up, 0, {1}, {.max_states = 100});
  CHECK(report.states == 100);
  CHECK(report.cut_by_states);
  CHECK_FALSE(report.cut_by_depth);
  CHECK(report.partial());
  CHECK(report.summary().find("PARTIAL: stopped at max_states = 100") != std::string::npos);
}

TEST_CASE(
    "explore: in a partial exploration, states that may reach a terminal beyond the cut are "
    "not reported") {
  tt::ExploreOptions<int, int> options{.max_states = 50};
  options.terminal = {1000};
  const auto report = tt::explore(count_up, 0, {1}, options);
  CHECK(report.partial());
  CHECK(report.terminal_checked);
  CHECK(report.no_terminal == 0);
  CHECK(report.ok());
}

TEST_CASE("explore: stops at max_depth and says the report is partial") {
  const auto report = tt::explore<int, int>(count_up, 0, {1}, {.max_depth = 3});
  CHECK(report.states == 4);  // 0 .. 3
  CHECK(report.depth == 3);
  CHECK(report.cut_by_depth);
  CHECK(report.partial());
}

TEST_CASE("explore: a max_depth that hides no state leaves the report complete") {
  const auto report = tt::explore<int, int>(add_mod4, 0, {1}, {.max_depth = 3});
  CHECK(report.states == 4);
  CHECK(report.complete());
}

TEST_CASE("explore: two runs give equal reports") {
  using namespace vending;
  tt::Samples<Machine, Event> samples{Coin{25}, Coin{100},   Select{0},   Select{3},
                                      Cancel{}, Dispensed{}, Fault{"jam"}};
  tt::ExploreOptions<Machine, Event, VendingHash> options{.max_states = 2000};
  options.invariant("credit below 300", [](const Machine& m) { return m.credit < 300; });
  const auto first = tt::explore(table(), Machine{}, samples, options);
  const auto second = tt::explore(table(), Machine{}, samples, options);
  CHECK(first == second);
  CHECK(first.summary() == second.summary());
  CHECK(first.failures.size() == 1);  // there is something to compare beyond counts
}

TEST_CASE("explore: explores a plain transition function, with no rows to cover") {
  const auto report = tt::explore(walk, 0, tt::Samples<int, Move>{Move::Left, Move::Right});
  CHECK(report.states == 5);
  CHECK_FALSE(report.has_rows);
  CHECK(report.rows.empty());
  CHECK(report.rows_never_fired().empty());
  CHECK(report.ok());
  CHECK_FALSE(report.terminal_checked);
}

TEST_CASE("explore: the vending machine explored as the header shows") {
  namespace tt = trellis::testing;
  using namespace vending;
  struct MachineHash {
    std::size_t operator()(const Machine& m) const {
      return tt::hash_values(m.phase, m.credit, m.slot, m.sold, m.refunded, m.faults);
    }
  };
  tt::ExploreOptions<Machine, Event, MachineHash> options{.max_states = 20'000};
  options.invariant("credit within 0..500",
                    [](const Machine& m) { return m.credit >= 0 && m.credit <= max_credit; });
  options.invariant("sales never go back", [](const Machine& from, const Event&,
                                              const Machine& to) { return to.sold >= from.sold; });
  const auto report = tt::explore(
      table(), Machine{},
      {Coin{25}, Coin{100}, Select{0}, Select{3}, Cancel{}, Dispensed{}, Fault{"jam"}}, options);
  CHECK_MESSAGE(report.ok(), report.summary());  // prints the shortest failing sequence
  CHECK(report.rows_never_fired().empty());
  CHECK(report.states == 20'000);
}

TEST_CASE("explore: the summary tells apart samples of one event type that print alike") {
  using namespace vending;
  tt::ExploreOptions<Machine, Event, VendingHash> options;
  options.invariant("credit below 30", [](const Machine& m) { return m.credit < 30; });
  const auto report = tt::explore(table(), Machine{}, {Coin{5}, Coin{25}}, options);
  REQUIRE(report.failures.size() == 1);
  CHECK(report.failures[0].path.events == std::vector<Event>{Coin{5}, Coin{25}});
  CHECK(report.summary().find("--Coin (sample 1)--> state in Paying\n      --Coin (sample 2)--> "
                              "state in Paying") != std::string::npos);
}

TEST_CASE("explore: refuses a table with a row left unfinished") {
  auto t = trap::table();
  { auto unfinished = t.from(trap::Phase::Trap).on(trap::Ev::Finish); }
  CHECK_THROWS_AS(tt::explore(t, trap::Phase::Start, {trap::Ev::Finish}), trellis::table_error);
}

TEST_CASE("explore: a generator that answers differently for the same state is refused") {
  auto calls = std::make_shared<int>(0);
  tt::Samples<int, int> samples;
  samples.generate([calls](const int&) { return std::vector<int>(++*calls == 1 ? 1 : 0, 1); });
  tt::ExploreOptions<int, int> options;
  options.invariant("stays at 0", [](const int& n) { return n == 0; });
  CHECK_THROWS_AS(tt::explore(count_up, 0, samples, options), trellis::invalid_option);
}

}  // namespace explore_test
