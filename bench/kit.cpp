/// @file
/// Concurrent sends, measured with the kit of <trellis/testing/bench.hpp> (issue 12): N threads
/// (1, 2, 4, 8) send to ONE ThreadSafeStateMachine, beside the same transition function behind
/// a plain std::mutex, on two machines:
///
/// - `increment/...`: the state is a `long` and every event adds 1, so a lost update shows in
///   the final state (`state_count` is the state itself); no observer, as issue 3's contended
///   rows. `increment_observed/...`: the same with a counting on_transition observer.
/// - `account/...`: a struct state (balance and two counters) and a variant event with a
///   payload (`Deposit{cents}`, `Withdraw{cents}`); a withdrawal beyond the balance is rejected.
///   Every accepted event increments one counter, which `state_count` adds up.
///
/// Counters per run (see the header): sends_per_s, cpu_per_wall, overlapped, oversubscribed,
/// lost. The summary at the end (stderr) gives the machine's ratio to the mutex only for rows
/// whose threads overlapped; the program exits 1 when any run lost a transition.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <trellis/testing/bench.hpp>
#include <variant>

namespace {

namespace tt = trellis::testing;

struct Inc {};

std::optional<long> increment(const long& n, const Inc&) { return n + 1; }

struct Account {
  long balance = 0;
  std::uint64_t deposits = 0;
  std::uint64_t withdrawals = 0;
  friend bool operator==(const Account&, const Account&) = default;
};
struct Deposit {
  long cents;
};
struct Withdraw {
  long cents;
};
using Money = std::variant<Deposit, Withdraw>;

std::optional<Account> account(const Account& a, const Money& e) {
  if (const auto* d = std::get_if<Deposit>(&e)) {
    return Account{a.balance + d->cents, a.deposits + 1, a.withdrawals};
  }
  const long cents = std::get<Withdraw>(e).cents;
  if (cents > a.balance) return std::nullopt;  // rejected: not enough money
  return Account{a.balance - cents, a.deposits, a.withdrawals + 1};
}

void register_all() {
  const auto count = [](const long& n) { return static_cast<std::uint64_t>(n); };
  const auto inc = [](std::size_t, std::uint64_t) { return Inc{}; };
  // The shape of issue 3's contended rows: no observer, the final state checked.
  tt::register_send_benchmarks<long, Inc>(
      "increment", 0L, increment, inc,
      {.threads = {1, 2, 4, 8}, .observed = false, .state_count = count});
  // The same with an on_transition observer counting (the baseline calls its counter too).
  tt::register_send_benchmarks<long, Inc>(
      "increment_observed", 0L, increment, inc,
      {.threads = {1, 2, 4, 8}, .observed = true, .state_count = count});

  // Each thread deposits three times, then withdraws a varying amount (sometimes rejected).
  tt::register_send_benchmarks<Account, Money>(
      "account", Account{}, account,
      [](std::size_t thread, std::uint64_t i) -> Money {
        if (i % 4 != 3) return Deposit{100 + static_cast<long>(thread)};
        return Withdraw{static_cast<long>(200 + (i / 4) % 200)};
      },
      {.threads = {1, 2, 4, 8}, .observed = true, .state_count = [](const Account& a) {
         return a.deposits + a.withdrawals;
       }});
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return tt::report_send_benchmarks();
}
