#pragma once
/// @file
/// Phases: the enumerated part of a state that tables, observers and diagrams speak about. A
/// machine whose state is an enum is its own phase. A struct state names its phase with a
/// `phase_of` function written next to it (found by argument-dependent lookup, like
/// `TRELLIS_ENUM`'s hook):
///
/// ```cpp
/// namespace vending {
/// enum class Phase { Idle, Paying, Vending, OutOfOrder };
/// TRELLIS_ENUM(Phase, Idle, Paying, Vending, OutOfOrder);
/// struct Machine { Phase phase = Phase::Idle; int credit = 0; int sold = 0; bool operator==(const
/// Machine&) const = default; }; constexpr Phase phase_of(const Machine& m) { return m.phase; }
/// }
/// // trellis::phase_t<vending::Machine> is vending::Phase: tables are declared over it, and
/// // machine.state_is(Phase::Vending), on_enter(Phase::Idle, f) and phase() observe it.
/// ```

#include <concepts>
#include <type_traits>
#include <utility>

namespace trellis {

namespace detail {

template <class S>
concept has_phase_hook = requires(const S& s) {
  { phase_of(s) } -> std::equality_comparable;
};

}  // namespace detail

/// `type`: the phase of states `S`, and `of(s)`: the phase of `s`. The phase of a state without
/// a `phase_of` hook is the state itself.
template <class S>
struct phase_traits {
  using type = S;
  static constexpr bool projected = false;
  static constexpr const S& of(const S& s) noexcept { return s; }
};

template <class S>
requires detail::has_phase_hook<S>
struct phase_traits<S> {
  using type = std::remove_cvref_t<decltype(phase_of(std::declval<const S&>()))>;
  static constexpr bool projected = true;
  static constexpr type of(const S& s) { return phase_of(s); }
};

/// The phase type of states `S` (`S` itself unless a `phase_of(const S&)` hook exists).
template <class S>
using phase_t = typename phase_traits<S>::type;

/// The phase of `s`: `phase_of(s)`, or `s` itself.
template <class S>
constexpr decltype(auto) phase_value(const S& s) {
  return phase_traits<S>::of(s);
}

}  // namespace trellis
