#pragma once
/// @file
/// `TransitionTable<S, E>`: a machine's transitions declared as rows. The table is a pure value:
/// calling it is the transition function, and its rows stay readable, so diagrams, matrices and
/// exploration see exactly what was declared without running a machine.
///
/// A row reads "from these phases (or any), on this event, when this guard holds, apply this
/// update, and be in that phase (or stay)":
///
/// ```cpp
/// using Event = std::variant<Coin, Select, Cancel, Fault>;  // payload structs
/// trellis::TransitionTable<Vending, Event, Phase> t;        // Phase = phase_of(Vending)
/// t.from(Phase::Idle, Phase::Paying).on<Coin>()
///     .update("add credit", [](Vending v, const Coin& c) { v.credit += c.cents; v.phase =
///     Phase::Paying; return v; }) .to(Phase::Paying);
/// t.from(Phase::Paying).on<Select>()
///     .when("credit >= price", [](const Vending& v, const Select& s) { return v.credit >=
///     price(s.slot); }) .update("vend", vend) .to(Phase::Vending);
/// t.any().on<Fault>().update("record fault", record_fault).to(Phase::OutOfOrder);
/// t.terminal(Phase::OutOfOrder);
/// ```
///
/// - **Events.** When `E` is a `std::variant`, rows are keyed by alternative type: `on<Coin>()`
///   matches every `Coin`, whatever its payload, and the guard and update see the `const
///   Coin&`. When `E` is an enum listed with `TRELLIS_ENUM`, rows are keyed by value:
///   `on(Tick::Advance)`. Any other `E` is matched by `==` against the row's value.
/// - **Phases.** Rows name phases `P`: the state itself for an enum state, or `phase_of(s)`
///   (trellis/machine/phase.hpp) for a struct state. A row's update computes the new state,
///   payload included, as a pure function `S(S, const Ev&)` (or `void(S&, const Ev&)` applied to
///   a copy); the result must be in the row's target phase (or, for `stay()`, in the phase it
///   left): a send whose update breaks this throws `trellis::phase_error` and changes nothing.
///   Without an update, an enum state becomes the target and a struct state is kept as it is.
/// - **Matching.** The rows that cover the state's phase and the event are tried in declaration
///   order; the first whose guard holds (or that has none) decides. No such row: the event is
///   rejected (nullopt). With an enumerated phase and a variant or enumerated event, a send
///   tries only the rows of its (phase, event type) cell.
/// - **Incomplete rows.** A row is added by `.to(phase)` or `.stay()` only. A row that names
///   no event has no `.to()` to call (a compile error), and a row dropped before its target
///   draws a [[nodiscard]] warning; one kept in a variable and never ended is recorded, and
///   the table refuses to be used (`trellis::table_error` naming the row) until it is fixed.
/// - **Checks.** `validate(initial)` lists every problem of the declared rows (rows that can
///   never fire, two unguarded rows for one phase and event type, phases unreachable from
///   `initial`, non-terminal phases with no way out, a row that changes phase without an
///   update); `check(initial)` throws `trellis::table_error` listing them all.
///
/// `.to()` and `.stay()` return the table, so rows also chain: on a named table each row
/// appends to it, and on a temporary (`TransitionTable<S, E>{}.from(...)...`) the chain yields
/// the finished table by value. Calling a table neither allocates (beyond the state it returns)
/// nor changes it, so many threads may call one table at once (as a ThreadSafeStateMachine
/// does) as long as its guards and updates allow that too.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/machine/errors.hpp"
#include "trellis/machine/event_types.hpp"
#include "trellis/machine/phase.hpp"

namespace trellis {

namespace detail {

template <class...>
inline constexpr bool row_misuse = false;

// A row's guard and update with their own types, until the row ends (see OnClause).
struct no_guard {};
struct no_update {};

template <class Pred>
struct guard_fn {
  Pred pred;
  template <class S, class Ev>
  bool operator()(const S& s, const Ev& e) const {
    if constexpr (std::predicate<const Pred&, const S&, const Ev&>) {
      return static_cast<bool>(pred(s, e));
    } else {
      return static_cast<bool>(pred(s));
    }
  }
};

template <class A, class B>
struct both_guards {
  A a;
  B b;
  template <class S, class Ev>
  bool operator()(const S& s, const Ev& e) const {
    return a(s, e) && b(s, e);
  }
};

template <class Fn, bool Pure>
struct update_fn {
  Fn fn;
  template <class S, class Ev>
  void operator()(S& s, const Ev& e) const {
    if constexpr (Pure) {
      s = fn(std::move(s), e);
    } else {
      fn(s, e);
    }
  }
};

// Names a phase or an event value in messages: its enumeration name, or "a value" for a type
// that has none.
template <class T>
std::string name_of_value(const T& v) {
  if constexpr (Enumerated<T>) {
    return describe_value(v);
  } else {
    return "a value";
  }
}

}  // namespace detail

/// What a table did with one event, for exploration and coverage: the row that decided it and
/// every guard it evaluated on the way, with its answer.
struct RowTrace {
  /// The index in `rows()` of the row that decided the event; -1 when rejected.
  std::ptrdiff_t fired = -1;
  /// (index in `rows()`, the guard's answer), in evaluation order.
  std::vector<std::pair<std::size_t, bool>> guards;
};

/// Rows of transitions over states `S`, events `E` and phases `P` (see the file comment).
template <class S, class E, class P = phase_t<S>>
class TransitionTable {
  static_assert(std::copy_constructible<S>, "TransitionTable<S, E>: S must be copyable");
  static_assert(std::copy_constructible<E>, "TransitionTable<S, E>: E must be copyable");
  static_assert(std::same_as<P, phase_t<S>>,
                "TransitionTable<S, E, P>: P must be the phase of S: write `P phase_of(const S&)` "
                "next to S (for a struct state), or leave P out (an enum state is its own phase)");
  static_assert(std::equality_comparable<P> && std::copy_constructible<P>,
                "TransitionTable<S, E>: phases must be copyable and have == (rows match them)");
  static_assert(event_types<E>::count > 0 || std::equality_comparable<E>,
                "TransitionTable<S, E>: E must be a std::variant (rows keyed by alternative type), "
                "an enum listed with TRELLIS_ENUM, or a type with == (rows matched by value)");

  using Types = event_types<E>;
  static constexpr std::size_t kinds = Types::count;
  static constexpr bool keyed = kinds > 0;
  static constexpr bool indexed = keyed && Enumerated<P>;

 public:
  using state_type = S;
  using event_type = E;
  using phase_type = P;
  /// A guard sees the current state and the event; a row whose guard says false is skipped.
  using guard_type = std::function<bool(const S&, const E&)>;
  /// An update turns a copy of the current state into the new state.
  using update_type = std::function<void(S&, const E&)>;
  /// A row's guard and update as one call: false when the guard does not hold; otherwise true,
  /// with the updated copy of the state in `next` (left empty when the row has no update).
  using decide_type = std::function<bool(const S&, const E&, std::optional<S>& next)>;

  /// One declared row, as diagrams, matrices and exploration read it.
  struct Row {
    std::vector<P> from;      ///< The phases the row leaves; empty when `any_state`.
    bool any_state = false;   ///< Declared with `any()`: covers every phase.
    std::size_t kind = 0;     ///< The event type (variant alternative or enumerated value).
    std::optional<E> event;   ///< The event value of an `on(value)` row; nullopt for `on<T>()`.
    std::optional<P> to;      ///< The target phase; nullopt when declared with `stay()`.
    guard_type guard;         ///< Empty when the row has no guard.
    std::string guard_name;   ///< The guard's label in diagrams ("guard" when unnamed).
    update_type update;       ///< Empty when the row has no update.
    decide_type decide;       ///< Guard and update fused; empty when the row has neither.
    std::string update_name;  ///< The update's label in diagrams (empty: not drawn).
    std::size_t number = 0;   ///< 1 for the first row declared, and so on.

    bool has_guard() const noexcept { return static_cast<bool>(guard); }
    bool has_update() const noexcept { return static_cast<bool>(update); }
    /// Whether the row leaves phase `p` (before its event and guard are considered).
    bool covers(const P& p) const { return any_state || std::ranges::find(from, p) != from.end(); }
    /// The phase the row leads to from `p`: its target, or `p` itself for a `stay()` row.
    P target(const P& p) const { return to ? *to : p; }
    /// Whether the row handles event `e` (its type or value; the guard is not asked).
    bool handles(const E& e) const {
      if constexpr (Types::by_type) {
        return Types::index(e) == kind;
      } else {
        return *event == e;
      }
    }
    /// The event's name in diagrams: the alternative's type name or the value's name.
    std::string event_name() const {
      if constexpr (keyed) {
        return std::string(Types::name(kind));
      } else {
        return "event";
      }
    }
    /// "row 3 (from Idle, Paying on Coin [credit ok] / add credit -> Paying)".
    std::string describe() const {
      std::string out = "row " + std::to_string(number) + " (from ";
      if (any_state) {
        out += "any phase";
      } else {
        for (std::size_t i = 0; i < from.size(); ++i) {
          if (i > 0) out += ", ";
          out += detail::name_of_value(from[i]);
        }
      }
      out += " on " + event_name();
      if (has_guard()) out += " [" + guard_name + "]";
      if (has_update() && !update_name.empty()) out += " / " + update_name;
      out += to ? " -> " + detail::name_of_value(*to) : std::string(" -> stay");
      return out + ")";
    }
  };

 private:
  // A row being written: everything but its end.
  struct Draft {
    std::vector<P> from;
    bool any_state = false;
    std::size_t kind = 0;
    std::optional<E> event;
    std::string event_name;
    bool has_guard = false;
    bool has_update = false;
    guard_type guard;
    std::string guard_name;
    update_type update;
    std::string update_name;
    decide_type decide;
  };

  // Clauses on a named table report, when they are dropped unfinished, the row they held.
  template <class Owner>
  class ClauseBase {
   protected:
    static constexpr bool named = std::is_lvalue_reference_v<Owner>;

    ClauseBase(Owner table, Draft draft)
        : table_(std::forward<Owner>(table)), draft_(std::move(draft)) {}
    ClauseBase(ClauseBase&& other) noexcept(std::is_nothrow_move_constructible_v<Draft>)
        : table_(std::forward<Owner>(other.table_)),
          draft_(std::move(other.draft_)),
          live_(std::exchange(other.live_, false)) {}
    ClauseBase& operator=(ClauseBase&&) = delete;
    ~ClauseBase() {
      if constexpr (named) {
        if (live_) table_.note_unfinished(draft_);
      }
    }

    Owner finish(std::optional<P> to) {
      live_ = false;
      table_.add(std::move(draft_), std::move(to));
      return std::forward<Owner>(table_);
    }

    Owner table_;
    Draft draft_;
    bool live_ = true;
  };

 public:
  template <class Owner, class Ev, class G, class U>
  class OnClause;
  // A row just after its event: no guard and no update yet.
  template <class Owner, class Ev>
  using OnEvent = OnClause<Owner, Ev, detail::no_guard, detail::no_update>;

  /// The first step of a row: the phases it leaves; `.on<T>()` or `.on(value)` comes next.
  /// The row builders are [[nodiscard]]: only `.to()` or `.stay()` adds the row.
  template <class Owner>
  class FromClause : ClauseBase<Owner> {
    using Base = ClauseBase<Owner>;

   public:
    /// The row handles every event of alternative type `T` of the variant `E`.
    template <class T>
    [[nodiscard(
        "TransitionTable: a row is added by its .to(phase) or .stay() only")]] OnEvent<Owner, T>
    on() && {
      static_assert(Types::by_type,
                    "TransitionTable: on<T>() keys a row by event type, which needs E to be a "
                    "std::variant; for an enum event write on(value)");
      this->draft_.kind = Types::template of<T>();
      this->draft_.event_name = std::string(type_name<T>());
      return OnEvent<Owner, T>(std::move(*this));
    }

    /// The row handles the event `value` (an enum value, or any `E` matched by ==).
    [[nodiscard(
        "TransitionTable: a row is added by its .to(phase) or .stay() only")]] OnEvent<Owner, E>
        on(E value) && requires(!Types::by_type) {
      if constexpr (keyed) {
        this->draft_.kind = Types::index(value);
        this->draft_.event_name = detail::name_of_value(value);
      } else {
        this->draft_.event_name = "event";
      }
      this->draft_.event = std::move(value);
      return OnEvent<Owner, E>(std::move(*this));
    }

    // A row's event comes before anything else: these say so instead of "no member".
    template <class... A>
    void to(A&&...) && {
      static_assert(detail::row_misuse<A...>,
                    "TransitionTable: this row has no event: write from(...).on<T>() (or "
                    ".on(value)) before .to(phase)");
    }
    template <class... A>
    void stay(A&&...) && {
      static_assert(detail::row_misuse<A...>,
                    "TransitionTable: this row has no event: write from(...).on<T>() (or "
                    ".on(value)) before .stay()");
    }
    template <class... A>
    void when(A&&...) && {
      static_assert(detail::row_misuse<A...>,
                    "TransitionTable: this row has no event: write from(...).on<T>() (or "
                    ".on(value)) before .when(guard)");
    }
    template <class... A>
    void update(A&&...) && {
      static_assert(detail::row_misuse<A...>,
                    "TransitionTable: this row has no event: write from(...).on<T>() (or "
                    ".on(value)) before .update(fn)");
    }

   private:
    friend class TransitionTable;
    template <class, class, class, class>
    friend class OnClause;
    FromClause(Owner table, Draft draft) : Base(std::forward<Owner>(table), std::move(draft)) {}
  };

  /// The second step of a row: optional guards and update, then `.to(phase)` or `.stay()`,
  /// which ends the row and returns the table. `Ev` is what guards and updates see: the
  /// alternative type of an `on<T>()` row, `E` otherwise. `G` and `U` are the guard and update
  /// given so far, kept with their own types until the row ends, so that a send runs a row's
  /// guard, copy and update as one inlined function.
  template <class Owner, class Ev, class G, class U>
  class OnClause : ClauseBase<Owner> {
    using Base = ClauseBase<Owner>;

   public:
    /// Takes the row only when `pred(state, event)` (or `pred(state)`) is true; shown as
    /// `[guard]` in diagrams. A second `when` must hold as well.
    template <class Pred>
    [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] auto when(
        Pred pred) && {
      return std::move(*this).when("guard", std::move(pred));
    }

    /// As `when(pred)`, labelled `[name]` in diagrams, matrices and exploration reports.
    template <class Pred>
    [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] auto when(
        std::string name, Pred pred) && {
      static_assert(
          std::predicate<const Pred&, const S&, const Ev&> || std::predicate<const Pred&, const S&>,
          "TransitionTable: a guard must be callable as bool(const S&, const Ev&) "
          "(Ev: the row's event type) or bool(const S&)");
      Draft& d = this->draft_;
      d.guard_name = d.has_guard ? d.guard_name + " && " + name : std::move(name);
      d.has_guard = true;
      detail::guard_fn<Pred> next{std::move(pred)};
      if constexpr (std::is_same_v<G, detail::no_guard>) {
        return OnClause<Owner, Ev, detail::guard_fn<Pred>, U>(std::move(*this), std::move(next),
                                                              std::move(u_));
      } else {
        using Both = detail::both_guards<G, detail::guard_fn<Pred>>;
        return OnClause<Owner, Ev, Both, U>(std::move(*this), Both{std::move(g_), std::move(next)},
                                            std::move(u_));
      }
    }

    /// Computes the new state: `fn(S, const Ev&) -> S` or `fn(S&, const Ev&)` on a copy of the
    /// current state. One update per row.
    template <class Fn>
    [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] auto update(
        Fn fn) && {
      return std::move(*this).update(std::string(), std::move(fn));
    }

    /// As `update(fn)`, labelled `/ name` in diagrams and matrices.
    template <class Fn>
    [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] auto update(
        std::string name, Fn fn) && {
      static_assert(std::is_same_v<U, detail::no_update>,
                    "TransitionTable: a row has one update; compose the two into one function");
      static_assert(returns_state<Fn>() || std::is_invocable_v<const Fn&, S&, const Ev&>,
                    "TransitionTable: an update must be callable as S(S, const Ev&) or "
                    "void(S&, const Ev&) (Ev: the row's event type)");
      this->draft_.update_name = std::move(name);
      this->draft_.has_update = true;
      return OnClause<Owner, Ev, G, detail::update_fn<Fn, returns_state<Fn>()>>(
          std::move(*this), std::move(g_),
          detail::update_fn<Fn, returns_state<Fn>()>{std::move(fn)});
    }

    /// Ends the row: it leads to phase `target`.
    Owner to(P target) && {
      seal();
      return this->finish(std::optional<P>(std::move(target)));
    }

    /// Ends the row: it accepts the event and keeps the phase (the update, if any, may change
    /// the rest of the state; without one, a machine reports the send as Unchanged).
    Owner stay() && {
      seal();
      return this->finish(std::nullopt);
    }

   private:
    friend class FromClause<Owner>;
    template <class, class, class, class>
    friend class OnClause;

    explicit OnClause(FromClause<Owner>&& from) : Base(std::move(from)) {}
    template <class Other>
    OnClause(Other&& from, G g, U u)
        : Base(static_cast<Base&&>(from)), g_(std::move(g)), u_(std::move(u)) {}

    // Type-erases the guard, the update and the two fused into the row's decision.
    void seal() {
      Draft& d = this->draft_;
      constexpr bool guarded = !std::is_same_v<G, detail::no_guard>;
      constexpr bool updated = !std::is_same_v<U, detail::no_update>;
      if constexpr (guarded) {
        d.guard = [g = g_](const S& s, const E& e) { return g(s, alternative(e)); };
      }
      if constexpr (updated) {
        d.update = [u = u_](S& s, const E& e) { u(s, alternative(e)); };
      }
      if constexpr (guarded || updated) {
        d.decide = [g = g_, u = u_](const S& s, const E& e, std::optional<S>& next) {
          const Ev& ev = alternative(e);
          if constexpr (guarded) {
            if (!g(s, ev)) return false;
          }
          if constexpr (updated) {
            next.emplace(s);
            u(*next, ev);
          }
          return true;
        };
      }
    }

    // Whether `Fn` is the pure form S(S, const Ev&) (as opposed to void(S&, const Ev&)).
    template <class Fn>
    static constexpr bool returns_state() {
      if constexpr (std::is_invocable_v<const Fn&, S, const Ev&>) {
        return std::is_convertible_v<std::invoke_result_t<const Fn&, S, const Ev&>, S>;
      } else {
        return false;
      }
    }

    static const Ev& alternative(const E& e) {
      if constexpr (std::is_same_v<Ev, E>) {
        return e;
      } else {
        return *std::get_if<Ev>(&e);  // the row's kind was matched before its guard or update
      }
    }

    [[no_unique_address]] G g_{};
    [[no_unique_address]] U u_{};
  };

  TransitionTable() = default;

  /// Starts a row leaving one or more phases.
  template <class... More>
  requires(std::convertible_to<const More&, P>&&...)
      [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
          TransitionTable&> from(const P& first, const More&... more) & {
    return FromClause<TransitionTable&>(*this, draft(std::vector<P>{first, P(more)...}, false));
  }
  template <class... More>
  requires(std::convertible_to<const More&, P>&&...)
      [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
          TransitionTable> from(const P& first, const More&... more) && {
    return FromClause<TransitionTable>(std::move(*this),
                                       draft(std::vector<P>{first, P(more)...}, false));
  }

  /// Starts a row leaving each phase of a range (for a set of phases named once elsewhere).
  template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, P>
  [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
      TransitionTable&>
  from(const R& phases) & {
    return FromClause<TransitionTable&>(*this,
                                        draft(std::vector<P>(phases.begin(), phases.end()), false));
  }
  template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, P>
  [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
      TransitionTable>
  from(const R& phases) && {
    return FromClause<TransitionTable>(std::move(*this),
                                       draft(std::vector<P>(phases.begin(), phases.end()), false));
  }

  /// Starts a row leaving every phase.
  [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
      TransitionTable&>
  any() & {
    return FromClause<TransitionTable&>(*this, draft({}, true));
  }
  [[nodiscard("TransitionTable: a row is added by its .to(phase) or .stay() only")]] FromClause<
      TransitionTable>
  any() && {
    return FromClause<TransitionTable>(std::move(*this), draft({}, true));
  }

  /// Declares phases in which the machine may end: `validate()` does not ask them for a way
  /// out.
  template <class... More>
  requires(std::convertible_to<const More&, P>&&...)
      TransitionTable& terminal(const P& first, const More&... more) & {
    (terminals_.push_back(first), ..., terminals_.push_back(P(more)));
    return *this;
  }
  template <class... More>
  requires(std::convertible_to<const More&, P>&&...) TransitionTable
      terminal(const P& first, const More&... more) && {
    return std::move(terminal(first, more...));
  }

  /// The transition function: the new state from the first row that covers the phase of `s`,
  /// handles `e` and whose guard holds; nullopt (rejected) when no row does. Throws
  /// `phase_error` when that row's update leaves the wrong phase, `table_error` when a row was
  /// left unfinished.
  [[gnu::always_inline]] std::optional<S> operator()(const S& s, const E& e) const {
    return run<false>(s, e, nullptr);
  }

  /// As `operator()`, recording in `trace` the row that fired and every guard evaluated.
  std::optional<S> operator()(const S& s, const E& e, RowTrace& trace) const {
    trace.fired = -1;
    trace.guards.clear();
    return run<true>(s, e, &trace);
  }

  /// Whether `e` would be accepted in `s`: some row covers and handles it and its guard holds.
  /// Runs no update.
  bool accepts(const S& s, const E& e) const { return find<false>(s, e, nullptr) != nullptr; }

  /// The rows in declaration order (the order in which they are tried).
  const std::vector<Row>& rows() const noexcept { return rows_; }

  /// The phases declared with `terminal()`.
  const std::vector<P>& terminals() const noexcept { return terminals_; }

  /// Every problem of the declared rows, one sentence each; empty when there is none. With
  /// `initial`, phases that cannot be reached from it are problems too. Phase-wide checks
  /// (reachability, ways out, hidden rows per phase) need an enumerated phase (TRELLIS_ENUM).
  std::vector<std::string> validate(const std::optional<P>& initial = std::nullopt) const;

  /// Throws `table_error` listing every problem `validate(initial)` finds.
  void check(const std::optional<P>& initial = std::nullopt) const {
    const std::vector<std::string> problems = validate(initial);
    if (problems.empty()) return;
    std::string text = "TransitionTable: " + std::to_string(problems.size()) + " problem" +
                       (problems.size() == 1 ? "" : "s") + ":";
    for (const std::string& p : problems) text += "\n  - " + p;
    throw table_error(text);
  }

  /// Throws `table_error` when a row was started and never ended (what every use checks first).
  void check_complete() const {
    if (!unfinished_.empty()) [[unlikely]]
      throw_unfinished();
  }

 private:
  static Draft draft(std::vector<P> from, bool any) {
    Draft d;
    d.from = std::move(from);
    d.any_state = any;
    return d;
  }

  static std::string from_text(const Draft& d) {
    if (d.any_state) return "any phase";
    std::string out;
    for (const P& p : d.from) {
      if (!out.empty()) out += ", ";
      out += detail::name_of_value(p);
    }
    return out;
  }

  void note_unfinished(const Draft& d) {
    std::string text =
        "a row begun after row " + std::to_string(rows_.size()) + " (from " + from_text(d);
    if (!d.event_name.empty()) text += " on " + d.event_name;
    text += ") was never ended: end it with .to(phase) or .stay()";
    unfinished_.push_back(std::move(text));
  }

  [[noreturn]] void throw_unfinished() const {
    std::string text = "TransitionTable: ";
    for (std::size_t i = 0; i < unfinished_.size(); ++i) text += (i ? "; " : "") + unfinished_[i];
    throw table_error(text);
  }

  void add(Draft d, std::optional<P> to) {
    Row row;
    row.from = std::move(d.from);
    row.any_state = d.any_state;
    row.kind = d.kind;
    row.event = std::move(d.event);
    row.to = std::move(to);
    row.guard = std::move(d.guard);
    row.guard_name = std::move(d.guard_name);
    row.update = std::move(d.update);
    row.update_name = std::move(d.update_name);
    row.decide = std::move(d.decide);
    row.number = rows_.size() + 1;
    if constexpr (indexed) {
      if (cells_.empty()) cells_.resize(enumeration<P>::size * kinds);
      // A row naming an unlisted phase or event joins no cell; validate() reports it.
      if (row.kind < kinds) {
        const auto id = static_cast<std::uint32_t>(rows_.size());
        for (std::size_t pi = 0; pi < enumeration<P>::size; ++pi) {
          if (row.covers(enumeration<P>::values[pi])) cells_[pi * kinds + row.kind].push_back(id);
        }
      }
    }
    rows_.push_back(std::move(row));
  }

  // The first row that decides `e` in `s`, or nullptr.
  template <bool Traced>
  const Row* find(const S& s, const E& e, RowTrace* trace) const {
    check_complete();
    const auto& p = phase_value(s);
    const auto consider = [&](const Row& row, std::size_t id) {
      if (!row.guard) return true;
      const bool ok = row.guard(s, e);
      if constexpr (Traced) trace->guards.emplace_back(id, ok);
      return ok;
    };
    if constexpr (indexed) {
      const std::size_t pi = detail::fast_index(p);
      if (pi >= enumeration<P>::size) detail::throw_unlisted(p);
      const std::size_t k = Types::index(e);
      if (k >= kinds) return nullptr;  // an enum event value its enumeration does not list
      if (cells_.empty()) return nullptr;
      for (const std::uint32_t id : cells_[pi * kinds + k]) {
        const Row& row = rows_[id];
        if (consider(row, id)) {
          if constexpr (Traced) trace->fired = static_cast<std::ptrdiff_t>(id);
          return &row;
        }
      }
    } else {
      for (std::size_t id = 0; id < rows_.size(); ++id) {
        const Row& row = rows_[id];
        if (row.handles(e) && row.covers(p) && consider(row, id)) {
          if constexpr (Traced) trace->fired = static_cast<std::ptrdiff_t>(id);
          return &row;
        }
      }
    }
    return nullptr;
  }

  // The traced run: the row found first (guards asked one by one), then its update.
  template <bool Traced>
  [[gnu::always_inline]] std::optional<S> run(const S& s, const E& e, RowTrace* trace) const {
    if constexpr (!Traced) {
      return decide(s, e);
    } else {
      const Row* row = find<Traced>(s, e, trace);
      if (row == nullptr) return std::nullopt;
      if constexpr (std::is_same_v<S, P>) {
        if (!row->update) return row->to ? *row->to : s;
      }
      std::optional<S> next(std::in_place, s);
      if (row->update) row->update(*next, e);
      checked_phase(*row, s, *next);
      return next;
    }
  }

  // The send: each candidate row's guard, copy and update run as one call.
  [[gnu::always_inline]] std::optional<S> decide(const S& s, const E& e) const {
    check_complete();
    const auto& p = phase_value(s);
    std::optional<S> next;
    const auto take = [&](const Row& row) {
      if (row.decide && !row.decide(s, e, next)) return false;
      if (!next) {
        if constexpr (std::is_same_v<S, P>) {
          next.emplace(row.to ? *row.to : s);
          return true;
        } else {
          next.emplace(s);
        }
      }
      checked_phase(row, s, *next);
      return true;
    };
    if constexpr (indexed) {
      const std::size_t pi = detail::fast_index(p);
      if (pi >= enumeration<P>::size) detail::throw_unlisted(p);
      const std::size_t k = Types::index(e);
      if (k >= kinds || cells_.empty()) return next;  // an enum event its enumeration omits
      for (const std::uint32_t id : cells_[pi * kinds + k]) {
        if (take(rows_[id])) return next;
      }
    } else {
      for (const Row& row : rows_) {
        if (row.handles(e) && row.covers(p) && take(row)) return next;
      }
    }
    return next;
  }

  static void checked_phase(const Row& row, const S& from_state, const S& next) {
    if constexpr (!std::is_same_v<S, P>) {
      const P& from = phase_value(from_state);
      const bool ok = row.to ? phase_value(next) == *row.to : phase_value(next) == from;
      if (!ok) [[unlikely]]
        throw_wrong_phase(row, from, phase_value(next));
    } else {
      const bool ok = row.to ? next == *row.to : next == from_state;
      if (!ok) [[unlikely]]
        throw_wrong_phase(row, from_state, next);
    }
  }

  [[noreturn]] static void throw_wrong_phase(const Row& row, const P& from, const P& got) {
    throw phase_error("TransitionTable: " + row.describe() + " left " +
                      detail::name_of_value(from) + " for " + detail::name_of_value(got) +
                      ", but the row leads to " + detail::name_of_value(row.to ? *row.to : from) +
                      (row.has_update() ? ": its update must return a state in that phase"
                                        : ": a row without an update cannot change the phase"));
  }

  std::vector<Row> rows_;
  std::vector<P> terminals_;
  std::vector<std::string> unfinished_;
  std::vector<std::vector<std::uint32_t>> cells_;  // indexed: rows per (phase, event type)
};

template <class S, class E, class P>
std::vector<std::string> TransitionTable<S, E, P>::validate(const std::optional<P>& initial) const {
  std::vector<std::string> problems = unfinished_;
  const auto phase_name = [](const P& p) { return detail::name_of_value(p); };

  // Values the enumerations do not list would silently match nothing.
  if constexpr (Enumerated<P>) {
    for (const Row& row : rows_) {
      for (const P& p : row.from) {
        if (!enumeration<P>::index_of(p)) {
          problems.push_back(row.describe() + " leaves " + phase_name(p) + ", which the " +
                             "enumeration of " + std::string(enumeration<P>::type_name) +
                             " does not list");
        }
      }
    }
  }
  if constexpr (keyed && !Types::by_type) {
    for (const Row& row : rows_) {
      if (row.kind >= kinds) {
        problems.push_back(row.describe() + " handles an event value its enumeration does not " +
                           "list: it can never fire");
      }
    }
  }

  // A struct state changes phase only through an update.
  if constexpr (!std::is_same_v<S, P>) {
    for (const Row& row : rows_) {
      if (!row.to || row.update) continue;
      const bool moves = row.any_state ||
                         std::ranges::any_of(row.from, [&](const P& p) { return !(p == *row.to); });
      if (moves) {
        problems.push_back(row.describe() + " leads to " + phase_name(*row.to) +
                           " but has no update: a state's phase changes only through an update, "
                           "so the row would throw phase_error");
      }
    }
  }

  if constexpr (indexed) {
    using PE = enumeration<P>;
    // Hidden rows: in each (phase, event type) cell, rows after an unguarded one never fire.
    std::vector<bool> fires(rows_.size(), false);
    std::vector<std::string> reported;
    for (std::size_t pi = 0; pi < PE::size; ++pi) {
      for (std::size_t k = 0; k < kinds; ++k) {
        const auto& cell = cells_.empty() ? std::vector<std::uint32_t>{} : cells_[pi * kinds + k];
        std::optional<std::uint32_t> open;  // the first unguarded row of the cell
        for (const std::uint32_t id : cell) {
          const Row& row = rows_[id];
          if (!open) {
            fires[id] = true;
            if (!row.guard) open = id;
            continue;
          }
          if (!row.guard) {
            problems.push_back("two unguarded rows for " + std::string(PE::names[pi]) + " on " +
                               std::string(Types::name(k)) + ": " + rows_[*open].describe() +
                               " and " + row.describe() + "; the first wins, the second never " +
                               "fires there");
          }
        }
      }
    }
    for (std::size_t id = 0; id < rows_.size(); ++id) {
      const Row& row = rows_[id];
      if (!fires[id] && row.kind < kinds) {
        problems.push_back(row.describe() +
                           " can never fire: earlier unguarded rows decide every " +
                           "phase and event it covers");
      }
    }

    // The phase graph: an edge p -> row.target(p) for every row covering p (guards may hold).
    const auto targets_of = [&](std::size_t pi) {
      std::vector<std::size_t> out;
      const P& p = PE::values[pi];
      for (const Row& row : rows_) {
        if (!row.covers(p)) continue;
        if (const auto t = PE::index_of(row.target(p))) out.push_back(*t);
      }
      return out;
    };
    std::vector<bool> reached(PE::size, !initial.has_value());
    if (initial) {
      const auto start = PE::index_of(*initial);
      if (!start) {
        problems.push_back("the initial phase " + phase_name(*initial) + " is not listed in the " +
                           "enumeration of " + std::string(PE::type_name));
      } else {
        std::vector<std::size_t> todo{*start};
        reached[*start] = true;
        while (!todo.empty()) {
          const std::size_t pi = todo.back();
          todo.pop_back();
          for (const std::size_t t : targets_of(pi)) {
            if (!reached[t]) {
              reached[t] = true;
              todo.push_back(t);
            }
          }
        }
        for (std::size_t pi = 0; pi < PE::size; ++pi) {
          if (!reached[pi]) {
            problems.push_back("phase " + std::string(PE::names[pi]) + " cannot be reached from " +
                               phase_name(*initial));
          }
        }
      }
    }
    for (std::size_t pi = 0; pi < PE::size; ++pi) {
      if (!reached[pi] || std::ranges::find(terminals_, PE::values[pi]) != terminals_.end()) {
        continue;
      }
      const std::vector<std::size_t> out = targets_of(pi);
      if (std::ranges::none_of(out, [&](std::size_t t) { return t != pi; })) {
        problems.push_back("phase " + std::string(PE::names[pi]) + " has no way out and is not " +
                           "declared terminal (declare it with .terminal(" +
                           std::string(PE::names[pi]) + ") if the machine may end there)");
      }
    }
  } else {
    // Without enumerated phases: an unguarded any() row hides every later row for its event.
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const Row& a = rows_[i];
      if (!a.any_state || a.guard) continue;
      for (std::size_t j = i + 1; j < rows_.size(); ++j) {
        const Row& b = rows_[j];
        const bool same = keyed ? a.kind == b.kind : (a.event && b.event && *a.event == *b.event);
        if (same) {
          problems.push_back(b.describe() + " can never fire: " + a.describe() +
                             " decides every phase on its event without a guard");
        }
      }
    }
  }
  return problems;
}

}  // namespace trellis
