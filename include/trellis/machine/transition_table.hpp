#pragma once
/// @file
/// `TransitionTable<S, E>`: a machine's transitions declared as rows, for enum-like states and
/// events. The table is a pure value: calling it is the transition function (first matching row
/// wins, no match rejects), and its rows stay readable, so diagrams and exhaustive tests see
/// exactly what was declared without running a machine.
///
/// ```cpp
/// enum class Light { Red, Green, Yellow, Off };
/// enum class Tick { Advance, Reset, Power };
///
/// trellis::TransitionTable<Light, Tick> light;
/// light.from(Light::Red).on(Tick::Advance).to(Light::Green);
/// light.from(Light::Green).on(Tick::Advance).when("cars waiting", cars_waiting).to(Light::Yellow);
/// light.from(Light::Yellow).on(Tick::Advance).to(Light::Red);
/// light.from(Light::Red, Light::Green, Light::Yellow).on(Tick::Power).to(Light::Off);
/// light.from(Light::Off).on(Tick::Advance).stay();
/// light.any().on(Tick::Reset).to(Light::Red);
///
/// std::optional<Light> next = light(Light::Red, Tick::Advance);  // Light::Green
/// trellis::StateMachine<Light, Tick> m{ctx, Light::Red, light};  // the table is the function
/// ```
///
/// A row reads "from these states (or any state), on this event, when this guard holds, go to
/// that state (or stay)". Each clause returns the next step of the row, so a row that forgets
/// its event does not compile, and one dropped before its target draws a [[nodiscard]] warning
/// (only `.to()` or `.stay()` adds the row). `.to()` and `.stay()` return the table, so rows
/// also chain: on a named table each row appends to it, and on a temporary
/// (`TransitionTable<S, E>{}.from(...)...`) the chain yields the finished table by value. One
/// statement per row is the form that clang-format keeps one row per line.
///
/// Calling a table neither allocates nor changes it, so many threads may call one table at once
/// (as a ThreadSafeStateMachine does) as long as its guards allow that too.

#include <algorithm>
#include <concepts>
#include <functional>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace trellis {

/// Rows of transitions over states `S` and events `E`, matched by `==` in declaration order.
template <class S, class E>
class TransitionTable {
  static_assert(std::equality_comparable<S> && std::copy_constructible<S>,
                "TransitionTable<S, E>: S must be copyable and have == (rows match states by ==)");
  static_assert(std::equality_comparable<E> && std::copy_constructible<E>,
                "TransitionTable<S, E>: E must be copyable and have == (rows match events by ==); "
                "for events that carry payloads, write the transition function by hand");

 public:
  using state_type = S;
  using event_type = E;
  /// A guard sees the current state and the event; a row whose guard says false is skipped.
  using guard_type = std::function<bool(const S&, const E&)>;

  /// One declared row, as diagrams and tests read it.
  struct Row {
    std::vector<S> from;     ///< The states the row leaves; empty when `any_state`.
    bool any_state = false;  ///< Declared with `any()`: matches every state.
    E event;                 ///< The event the row handles.
    std::optional<S> to;     ///< The target; nullopt when declared with `stay()`.
    guard_type guard;        ///< Empty when the row has no guard.
    std::string guard_name;  ///< The guard's label in diagrams ("guard" when unnamed).

    bool has_guard() const noexcept { return static_cast<bool>(guard); }
    /// Whether the row leaves state `s` (before its event and guard are considered).
    bool covers(const S& s) const { return any_state || std::ranges::find(from, s) != from.end(); }
    /// Where the row leads from `s`: its target, or `s` itself for a `stay()` row.
    S target(const S& s) const { return to ? *to : s; }
  };

  template <class Owner>
  class OnClause;

  /// The first step of a row: the states it leaves; `.on(event)` comes next. The row builders
  /// are [[nodiscard]]: a row whose chain is dropped before `.to()` or `.stay()` is not added.
  template <class Owner>
  class FromClause {
   public:
    /// The event the row handles.
    [[nodiscard(
        "TransitionTable: a row is added by its .to(state) or .stay() only")]] OnClause<Owner>
    on(E event) && {
      return OnClause<Owner>(std::forward<Owner>(table_), std::move(from_), any_, std::move(event));
    }

   private:
    friend class TransitionTable;
    FromClause(Owner table, std::vector<S> from, bool any)
        : table_(std::forward<Owner>(table)), from_(std::move(from)), any_(any) {}

    Owner table_;
    std::vector<S> from_;
    bool any_;
  };

  /// The second step of a row: an optional guard, then `.to(state)` or `.stay()`, which ends
  /// the row and returns the table.
  template <class Owner>
  class OnClause {
   public:
    /// Takes the row only when `pred(state, event)` (or `pred(state)`) is true; shown as
    /// `[guard]` in diagrams. A second `when` must hold as well.
    template <class Pred>
    [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] OnClause
    when(Pred pred) && {
      return std::move(*this).when("guard", std::move(pred));
    }

    /// As `when(pred)`, labelled `[name]` in diagrams.
    template <class Pred>
    [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] OnClause
    when(std::string name, Pred pred) && {
      guard_type next;
      if constexpr (std::predicate<const Pred&, const S&, const E&>) {
        next = std::move(pred);
      } else if constexpr (std::predicate<const Pred&, const S&>) {
        next = [p = std::move(pred)](const S& s, const E&) { return static_cast<bool>(p(s)); };
      } else {
        static_assert(sizeof(Pred) == 0,
                      "TransitionTable: a guard must be callable as bool(const S&, const E&) or "
                      "bool(const S&)");
      }
      if (guard_) {
        guard_ = [a = std::move(guard_), b = std::move(next)](const S& s, const E& e) {
          return a(s, e) && b(s, e);
        };
        guard_name_ += " && " + name;
      } else {
        guard_ = std::move(next);
        guard_name_ = std::move(name);
      }
      return std::move(*this);
    }

    /// Ends the row: it leads to `target`.
    Owner to(S target) && { return finish(std::optional<S>(std::move(target))); }

    /// Ends the row: it accepts the event and keeps the state (a self-transition, which a
    /// machine reports as Unchanged).
    Owner stay() && { return finish(std::nullopt); }

   private:
    friend class FromClause<Owner>;
    OnClause(Owner table, std::vector<S> from, bool any, E event)
        : table_(std::forward<Owner>(table)),
          from_(std::move(from)),
          any_(any),
          event_(std::move(event)) {}

    Owner finish(std::optional<S> to) {
      table_.rows_.push_back(Row{std::move(from_), any_, std::move(event_), std::move(to),
                                 std::move(guard_), std::move(guard_name_)});
      return std::forward<Owner>(table_);
    }

    Owner table_;
    std::vector<S> from_;
    bool any_;
    E event_;
    guard_type guard_;
    std::string guard_name_;
  };

  /// Starts a row leaving one or more states.
  template <class... More>
  requires(std::convertible_to<const More&, S>&&...)
      [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
          TransitionTable&> from(const S& first, const More&... more) & {
    return FromClause<TransitionTable&>(*this, std::vector<S>{first, S(more)...}, false);
  }
  template <class... More>
  requires(std::convertible_to<const More&, S>&&...)
      [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
          TransitionTable> from(const S& first, const More&... more) && {
    return FromClause<TransitionTable>(std::move(*this), std::vector<S>{first, S(more)...}, false);
  }

  /// Starts a row leaving each state of a range (for a set of states named once elsewhere).
  template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, S>
  [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
      TransitionTable&>
  from(const R& states) & {
    return FromClause<TransitionTable&>(*this, std::vector<S>(states.begin(), states.end()), false);
  }
  template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, S>
  [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
      TransitionTable>
  from(const R& states) && {
    return FromClause<TransitionTable>(std::move(*this),
                                       std::vector<S>(states.begin(), states.end()), false);
  }

  /// Starts a row leaving every state.
  [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
      TransitionTable&>
  any() & {
    return FromClause<TransitionTable&>(*this, {}, true);
  }
  [[nodiscard("TransitionTable: a row is added by its .to(state) or .stay() only")]] FromClause<
      TransitionTable>
  any() && {
    return FromClause<TransitionTable>(std::move(*this), {}, true);
  }

  /// The transition function: the target of the first row that covers `s`, handles `e` and
  /// whose guard holds; nullopt (rejected) when no row does.
  std::optional<S> operator()(const S& s, const E& e) const {
    for (const Row& row : rows_) {
      if (row.event == e && row.covers(s) && (!row.guard || row.guard(s, e))) {
        return row.target(s);
      }
    }
    return std::nullopt;
  }

  /// The rows in declaration order (the order in which they are tried).
  const std::vector<Row>& rows() const noexcept { return rows_; }

 private:
  std::vector<Row> rows_;
};

}  // namespace trellis
