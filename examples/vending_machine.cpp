// A vending machine with real data (examples/vending_machine.hpp): a struct state, events that
// carry payloads, and one transition table whose guards and updates are the only rules. The
// program observes it by phase, asks can() before sending, shows a guard turning an event
// down, and prints the table's Mermaid diagram.
#include <trellis/machine/diagram.hpp>
#include <trellis/machine/state_machine.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

#include "vending_machine.hpp"

using namespace vending;

namespace {

std::string_view name(Phase p) { return trellis::enumeration<Phase>::name(p); }

void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("check failed: ") + what);
}

}  // namespace

int main() try {
  trellis::Context ctx;
  trellis::StateMachine<Machine, Event> vm{ctx, Machine{}, table()};
  auto vending = vm.state_is(Phase::Vending);  // Signal<bool> over the phase only
  auto phase = vm.phase();                     // Signal<Phase>: changes only with the phase
  auto has_credit = vm.state_is([](const Machine& m) { return m.credit > 0; });  // any projection
  auto shown = ctx.effect([&] {  // runs now, then whenever the phase changes
    std::cout << "phase " << name(phase.get()) << (vending.get() ? " (vending)" : "") << "\n";
  });
  auto paying = vm.on_enter(Phase::Paying, [&] {  // after the effects of the same send
    std::cout << "  entered Paying with " << vm.state().credit << " cents\n";
  });
  const auto send = [&](const char* label, const Event& e) {
    const trellis::SendResult r = vm.send(e);
    std::cout << label << ": " << r.name() << ", credit " << vm.state().credit << "\n";
    return r;
  };

  std::cout << "can Select{0} while Idle: " << vm.can(Select{0}) << "\n";  // no row from Idle

  send("Coin{100}", Coin{100});  // Idle -> Paying
  send("Coin{100}", Coin{100});  // Paying -> Paying: no phase change, no effect, no on_enter
  send("Coin{3}", Coin{3});      // guard "accepted coin" fails: Rejected
  std::cout << "can Select{3}: " << vm.can(Select{3}) << "\n";  // 175 <= 200: yes
  send("Select{9}", Select{9});  // guard "slot exists" fails: Rejected
  send("Select{3}", Select{3});  // Paying -> Vending, 25 cents of change left
  expect(vending.get() && vm.state().slot == 3, "Select{3} vends slot 3");
  send("Dispensed", Dispensed{});  // first row whose guard holds: "change due" -> Paying
  send("Cancel", Cancel{});        // refund the 25 cents -> Idle
  expect(!has_credit.get() && vm.state().refunded == 25 && vm.state().sold == 1,
         "one sale, 25 cents refunded");
  send("Fault{coin jam}", Fault{"coin jam"});  // from any phase -> OutOfOrder (terminal)
  const trellis::SendResult r = send("Coin{25}", Coin{25});  // no row leaves OutOfOrder
  expect(r == trellis::SendResult::Rejected && vm.state().faults == 1, "OutOfOrder is terminal");
  expect(table().validate(Phase::Idle).empty(), "the table validates");

  std::cout << "\n" << trellis::to_mermaid(table(), Phase::Idle) << "done\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "vending_machine: " << e.what() << "\n";
  return 1;
}
