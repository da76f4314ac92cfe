#pragma once
/// @file
/// `TransitionFunction<F, S, E>`: what every machine, table and tester in trellis agrees a
/// transition is: a pure call `std::optional<S>(const S&, const E&)` where nullopt rejects the
/// event. A plain function, a lambda, a `TransitionTable` and a `TransitionMatrix` all qualify.

#include <concepts>
#include <functional>
#include <optional>
#include <type_traits>

namespace trellis {

/// `F` maps a state and an event to the next state, or to nullopt to reject the event.
template <class F, class S, class E>
concept TransitionFunction = std::invocable<const F&, const S&, const E&> &&
    std::convertible_to<std::invoke_result_t<const F&, const S&, const E&>, std::optional<S>>;

}  // namespace trellis
