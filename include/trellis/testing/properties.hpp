#pragma once
/// @file
/// Property checks over a transition matrix: terminal states are sticky, every state is
/// reachable, no edge goes backward under a rank, and the function is deterministic. Each
/// returns the list of violations, one readable sentence per offending (state, event) pair,
/// and an empty list when the property holds, so a test can print what broke:
///
/// ```cpp
/// namespace tt = trellis::testing;
/// const auto m = tt::transition_matrix(table);
/// const auto stuck = tt::sticky_terminals(m, {Phase::Committed}, {Event::StartPreflight});
/// CHECK_MESSAGE(stuck.empty(), tt::joined(stuck));  // prints the violations on failure
/// CHECK(tt::reachable_from(m, Phase::PreflightStarted).empty());
/// ```

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/machine/transition_function.hpp"
#include "trellis/testing/transition_matrix.hpp"

namespace trellis::testing {

/// One violation per line, for `INFO` or a failure message.
inline std::string joined(const std::vector<std::string>& violations) {
  std::string out;
  for (const std::string& v : violations) {
    out += v;
    out += '\n';
  }
  return out;
}

}  // namespace trellis::testing

namespace trellis::detail {

template <class T>
std::string names_of(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) {
    if (!out.empty()) out += ", ";
    out += describe_value(v);
  }
  return out;
}

template <class T>
bool contains_value(const std::vector<T>& values, const T& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// "Red --Advance--> Green": the edge notation every violation uses.
template <class S, class E>
std::string edge_text(const S& from, const E& e, const std::optional<S>& to) {
  return describe_value(from) + " --" + describe_value(e) + "--> " +
         (to ? describe_value(*to) : std::string("rejected"));
}

}  // namespace trellis::detail

namespace trellis::testing {

/// Violations of "once in a terminal state, only an event in `may_leave` moves the machine
/// elsewhere" (rejecting an event or staying put is fine).
template <class S, class E>
std::vector<std::string> sticky_terminals(const TransitionMatrix<S, E>& matrix,
                                          const std::vector<S>& terminals,
                                          const std::vector<E>& may_leave = {}) {
  std::vector<std::string> violations;
  const std::string allowed = may_leave.empty()
                                  ? std::string("no event may leave it")
                                  : "only " + detail::names_of(may_leave) + " may leave it";
  for (const S& t : terminals) {
    for (const E& e : enumeration<E>::values) {
      const std::optional<S>& to = matrix.at(t, e);
      if (to && !(*to == t) && !detail::contains_value(may_leave, e)) {
        violations.push_back(detail::edge_text(t, e, to) + ": terminal state " +
                             detail::describe_value(t) + " is left; " + allowed);
      }
    }
  }
  return violations;
}

/// Violations of "every state is reachable from `initial`": one per unreachable state.
template <class S, class E>
std::vector<std::string> reachable_from(const TransitionMatrix<S, E>& matrix, const S& initial) {
  using SE = enumeration<S>;
  std::vector<bool> seen(SE::size, false);
  std::vector<S> frontier{initial};
  seen[detail::listed_index(initial)] = true;
  while (!frontier.empty()) {
    const S s = frontier.back();
    frontier.pop_back();
    for (const E& e : enumeration<E>::values) {
      const std::optional<S>& to = matrix.at(s, e);
      if (!to) continue;
      const std::size_t k = detail::listed_index(*to);
      if (!seen[k]) {
        seen[k] = true;
        frontier.push_back(*to);
      }
    }
  }
  std::vector<std::string> violations;
  for (std::size_t k = 0; k < SE::size; ++k) {
    if (!seen[k]) {
      violations.push_back(std::string(SE::names[k]) + " is not reachable from " +
                           detail::describe_value(initial));
    }
  }
  return violations;
}

/// Violations of "no accepted event moves to a state of lower `rank`", except the events in
/// `may_rewind`. `rank(s)` returns anything ordered (an int, an enum); equal ranks are not
/// backward.
template <class S, class E, class Rank>
std::vector<std::string> no_backward_edges(const TransitionMatrix<S, E>& matrix, const Rank& rank,
                                           const std::vector<E>& may_rewind = {}) {
  static_assert(std::invocable<const Rank&, const S&> &&
                    std::totally_ordered<std::invoke_result_t<const Rank&, const S&>>,
                "no_backward_edges: rank must map a state to something ordered (an int)");
  std::vector<std::string> violations;
  for (const S& s : enumeration<S>::values) {
    for (const E& e : enumeration<E>::values) {
      const std::optional<S>& to = matrix.at(s, e);
      if (!to || !(rank(*to) < rank(s)) || detail::contains_value(may_rewind, e)) continue;
      std::string text = detail::edge_text(s, e, to) + " goes backward";
      using R = std::remove_cvref_t<std::invoke_result_t<const Rank&, const S&>>;
      if constexpr (std::is_arithmetic_v<R>) {
        text += " (rank " + std::to_string(rank(s)) + " to " + std::to_string(rank(*to)) + ")";
      }
      text += may_rewind.empty() ? std::string("; no event may rewind")
                                 : "; only " + detail::names_of(may_rewind) + " may rewind";
      violations.push_back(std::move(text));
    }
  }
  return violations;
}

/// Violations of "the same (state, event) always gives the same result": calls `fn` twice on
/// every pair and reports the pairs whose answers differ.
template <class S, class E, class F>
std::vector<std::string> deterministic(const F& fn) {
  static_assert(Enumerated<S> && Enumerated<E>,
                "deterministic<S, E>(fn): S and E need enumerations; declare TRELLIS_ENUM(S, ...) "
                "and TRELLIS_ENUM(E, ...) next to them");
  static_assert(TransitionFunction<F, S, E>,
                "deterministic<S, E>(fn): fn must be callable as "
                "std::optional<S>(const S&, const E&)");
  std::vector<std::string> violations;
  for (const S& s : enumeration<S>::values) {
    for (const E& e : enumeration<E>::values) {
      const std::optional<S> first = fn(s, e);
      const std::optional<S> second = fn(s, e);
      if (!(first == second)) {
        violations.push_back(detail::edge_text(s, e, first) + " the first time, then " +
                             (second ? detail::describe_value(*second) : std::string("rejected")) +
                             ": not deterministic");
      }
    }
  }
  return violations;
}

/// `deterministic` for a transition table or anything else naming its state and event types.
template <class F>
requires requires {
  typename F::state_type;
  typename F::event_type;
}
std::vector<std::string> deterministic(const F& fn) {
  return deterministic<typename F::state_type, typename F::event_type>(fn);
}

/// `deterministic` for a plain function `std::optional<S> step(const S&, const E&)`.
template <class S, class E>
std::vector<std::string> deterministic(std::optional<S> (*fn)(const S&, const E&)) {
  return deterministic<S, E, std::optional<S> (*)(const S&, const E&)>(fn);
}

}  // namespace trellis::testing
