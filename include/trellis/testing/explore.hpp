#pragma once
/// @file
/// `trellis::testing::explore`: a bounded breadth-first exploration of a machine whose states
/// cannot be enumerated (a struct state with counters, payload events), from an initial state
/// over event samples. Each distinct state is kept once (by hash and ==), every reached state
/// and every transition is checked against the user's invariants, and the report says which
/// states and phases were reached, which rows and guards of a table were exercised and which
/// never were, the shortest event sequence to every failure, and which states have no way to
/// a terminal phase:
///
/// ```cpp
/// namespace tt = trellis::testing;
/// using namespace vending;
/// struct MachineHash {
///   std::size_t operator()(const Machine& m) const {
///     return tt::hash_values(m.phase, m.credit, m.slot, m.sold, m.refunded, m.faults);
///   }
/// };
/// tt::ExploreOptions<Machine, Event, MachineHash> options{.max_states = 20'000};
/// options.invariant("credit within 0..500",
///                   [](const Machine& m) { return m.credit >= 0 && m.credit <= max_credit; });
/// options.invariant("sales never go back",
///                   [](const Machine& from, const Event&, const Machine& to) {
///                     return to.sold >= from.sold;
///                   });
/// const auto report = tt::explore(table(), Machine{},
///                                 {Coin{25}, Coin{100}, Select{0}, Select{3}, Cancel{},
///                                  Dispensed{}, Fault{"jam"}},
///                                 options);
/// CHECK_MESSAGE(report.ok(), report.summary());  // prints the shortest failing sequence
/// CHECK(report.rows_never_fired().empty());
/// ```
///
/// (tests/machine/explore_test.cpp runs this example: "explore: the vending machine explored as
/// the header shows".)
///
/// - **Samples.** A list of events tried in every state, in the order given (Coin{5} and
///   Coin{25} are two samples of one event type), and/or generators: a callable
///   `(const S&) -> range of events` (or `(const S&, std::vector<E>&)` appending to the list),
///   for payloads that depend on the state. Generators must be deterministic: the path to a
///   failure is rebuilt by asking them again.
/// - **Order.** States are visited breadth first, events in sample order, so every sequence
///   reported is a shortest one, and two runs give equal reports. Nothing in the report
///   depends on hash order.
/// - **Equality.** States are told apart by `==` and hashed with `std::hash<S>` when it exists,
///   else with the options' `Hash` (`ExploreOptions<S, E, Hash>`); `hash_values` combines the
///   members that `==` compares.
/// - **Failures.** A state invariant `bool(const S&)` is checked at every stored state, a
///   transition invariant `bool(const S& from, const E&, const S& to)` at every accepted
///   transition, and an exception thrown by the transition (a `trellis::phase_error` from a
///   row's update, anything from a guard) is a failure of that (state, event). Each distinct
///   failure is reported once, with how often it happened and its shortest sequence.
/// - **Terminals.** The phases in `options.terminal`, else the table's `terminals()`. A stored
///   state from which no terminal phase can be reached is reported. In a partial exploration
///   a state counts only when every state reachable from it was explored, so what is reported
///   is certain, but some may be missed.
/// - **Bounds.** `max_states` states are stored at most, and none further than `max_depth`
///   events from the initial state; every stored state is still tried with every sample, so
///   coverage and invariants are complete for the stored states. A report cut by either bound
///   says so (`partial()`).
/// - **Cost.** Each state is stored once with its parent and the index of the event that
///   reached it; the visited set is an open-addressing table of indices. No allocation per
///   state beyond the state itself (and the events a generator returns).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ostream>
#include <ranges>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "trellis/base/enumeration.hpp"
#include "trellis/base/error.hpp"
#include "trellis/machine/event_types.hpp"
#include "trellis/machine/phase.hpp"
#include "trellis/machine/transition_function.hpp"
#include "trellis/machine/transition_table.hpp"

namespace trellis::detail::explore_impl {

template <class S>
concept std_hashable = std::is_default_constructible_v<std::hash<S>> &&
    requires(const std::hash<S>& h, const S& s) {
  { h(s) } -> std::convertible_to<std::size_t>;
};

/// The hash of `ExploreOptions` when `S` has no `std::hash`: `explore` refuses it.
template <class S>
struct no_hash {};

template <class T>
concept streamable = requires(std::ostream& os, const T& v) {
  os << v;
};

// Whether events can be compared with ==: a variant's operator== is declared for any
// alternatives, so ask each alternative.
template <class E>
struct comparable_events : std::bool_constant<std::equality_comparable<E>> {};
template <class... Ts>
struct comparable_events<std::variant<Ts...>>
    : std::bool_constant<(std::equality_comparable<Ts> && ...)> {};

template <class F>
struct is_table : std::false_type {};
template <class S, class E, class P>
struct is_table<TransitionTable<S, E, P>> : std::true_type {};

}  // namespace trellis::detail::explore_impl

namespace trellis::testing {

/// `std::hash<S>` when it exists; otherwise a marker that `explore` refuses with a message.
template <class S>
using default_hash = std::conditional_t<detail::explore_impl::std_hashable<S>, std::hash<S>,
                                        detail::explore_impl::no_hash<S>>;

/// A hash of several values (each with a `std::hash`), for a state's hash: pass the members
/// its `==` compares.
template <class... Ts>
std::size_t hash_values(const Ts&... values) {
  std::size_t h = static_cast<std::size_t>(0x84222325cbf29ce4ULL);
  ((h ^= std::hash<Ts>{}(values) + static_cast<std::size_t>(0x9e3779b97f4a7c15ULL) + (h << 6) +
         (h >> 2)),
   ...);
  return h;
}

/// A named check: over a state, `bool(const S&)`, or over a transition,
/// `bool(const S& from, const E& event, const S& to)`. It holds when it returns true.
template <class S, class E>
struct Invariant {
  std::string name;
  std::function<bool(const S&)> over_state;                           ///< empty for a transition's
  std::function<bool(const S&, const E&, const S&)> over_transition;  ///< empty for a state's

  Invariant() = default;
  template <class F>
  Invariant(std::string invariant_name, F check) : name(std::move(invariant_name)) {
    if constexpr (std::predicate<const F&, const S&>) {
      over_state = std::move(check);
    } else if constexpr (std::predicate<const F&, const S&, const E&, const S&>) {
      over_transition = std::move(check);
    } else {
      static_assert(sizeof(F) == 0,
                    "trellis::testing::Invariant: an invariant must be callable as "
                    "bool(const S&) (over a state) or bool(const S& from, const E& event, "
                    "const S& to) (over a transition)");
    }
  }
};

/// The events `explore` tries in every state, in order: fixed events and generators.
template <class S, class E>
class Samples {
 public:
  Samples() = default;
  /// Fixed events, tried in this order: `{Coin{5}, Coin{25}, Select{0}, Cancel{}}`.
  Samples(std::initializer_list<E> events) : Samples(std::vector<E>(events)) {}
  Samples(std::vector<E> events) {  // NOLINT(google-explicit-constructor): a list of samples
    for (E& e : events) add(std::move(e));
  }

  /// Adds a fixed event after the samples already given.
  Samples& add(E event) & {
    fixed_.push_back(event);
    sources_.push_back(Source{std::move(event), {}});
    return *this;
  }
  Samples add(E event) && { return std::move(add(std::move(event))); }

  /// Adds a generator after the samples already given: `gen(const S&)` returns the events to
  /// try in that state (a range of values convertible to E), or `gen(const S&,
  /// std::vector<E>& out)` appends them. It must give the same events for equal states.
  template <class Gen>
  Samples& generate(Gen gen) & {
    using Out = std::vector<E>;
    typename Source::generator_type g;
    if constexpr (std::is_invocable_v<const Gen&, const S&, Out&>) {
      g = [f = std::move(gen)](const S& s, Out& out) { f(s, out); };
    } else if constexpr (std::is_invocable_v<const Gen&, const S&>) {
      using R = std::invoke_result_t<const Gen&, const S&>;
      static_assert(
          std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, E>,
          "trellis::testing::Samples::generate: gen(const S&) must return a range of "
          "events (values convertible to E), e.g. a std::vector<E>");
      g = [f = std::move(gen)](const S& s, Out& out) {
        for (auto&& e : f(s)) out.emplace_back(std::forward<decltype(e)>(e));
      };
    } else {
      static_assert(sizeof(Gen) == 0,
                    "trellis::testing::Samples::generate: a generator must be callable as "
                    "gen(const S&) returning a range of events, or gen(const S&, "
                    "std::vector<E>&) appending them");
    }
    sources_.push_back(Source{std::nullopt, std::move(g)});
    ++generators_;
    return *this;
  }
  template <class Gen>
  Samples generate(Gen gen) && {
    return std::move(generate(std::move(gen)));
  }

  /// Whether every sample is a fixed event (then `events_for` is the fixed list).
  bool fixed() const noexcept { return generators_ == 0; }
  /// The fixed events, in order.
  const std::vector<E>& fixed_events() const noexcept { return fixed_; }

  /// Appends the events to try in `s`, in sample order.
  void events_for(const S& s, std::vector<E>& out) const {
    for (const Source& src : sources_) {
      if (src.event) {
        out.push_back(*src.event);
      } else {
        src.generate(s, out);
      }
    }
  }

 private:
  struct Source {
    using generator_type = std::function<void(const S&, std::vector<E>&)>;
    std::optional<E> event;
    generator_type generate;
  };
  std::vector<Source> sources_;
  std::vector<E> fixed_;
  std::size_t generators_ = 0;
};

/// How `explore` is bounded, what it checks and how it prints. An aggregate: set members by
/// name (`{.max_states = 10'000}`). `Hash` hashes states (see `default_hash`).
template <class S, class E, class Hash = default_hash<S>>
struct ExploreOptions {
  using phase_type = phase_t<S>;

  /// At most this many distinct states are stored (the initial state included).
  std::size_t max_states = 1'000'000;
  /// No state further than this many events from the initial state is stored.
  std::size_t max_depth = std::numeric_limits<std::size_t>::max();
  /// Checked at every stored state (over a state) or accepted transition (over a transition).
  std::vector<Invariant<S, E>> invariants{};
  /// The phases in which the machine may end; empty: the table's `terminals()`.
  std::vector<phase_type> terminal{};
  /// Hashes a state; equal states must have equal hashes.
  Hash hash{};
  /// How the summary prints a state; empty: its enumeration name, `operator<<`, or its phase.
  std::function<std::string(const S&)> describe_state{};
  /// How the summary prints an event; empty: its enumeration name, `operator<<` (of the
  /// variant's alternative), or its type's name, followed by its place in the samples when
  /// several fixed samples would print alike ("Coin (sample 2)").
  std::function<std::string(const E&)> describe_event{};
  /// Distinct failures kept with their sequence (more are only counted).
  std::size_t max_failures = 16;
  /// States with no way to a terminal phase kept with their sequence (all are counted).
  std::size_t max_examples = 3;

  /// Adds a named invariant (see `Invariant`).
  template <class F>
  ExploreOptions& invariant(std::string name, F check) & {
    invariants.emplace_back(std::move(name), std::move(check));
    return *this;
  }
};

/// How many stored states are in one phase.
template <class P>
struct PhaseCount {
  P phase;
  std::size_t states = 0;
  bool operator==(const PhaseCount&) const = default;
};

/// What one table row did during an exploration.
struct RowCoverage {
  std::size_t number = 0;   ///< `Row::number`: 1 for the first row declared.
  std::string description;  ///< `Row::describe()`.
  std::size_t fired = 0;    ///< Transitions the row decided (its update ran).
  bool has_guard = false;
  std::size_t guard_true = 0;   ///< Times its guard was asked and held.
  std::size_t guard_false = 0;  ///< Times its guard was asked and did not hold.
  bool operator==(const RowCoverage&) const = default;
};

/// A sequence of events from the initial state, with the states along the way: `states[0]` is
/// the initial state and `states[i + 1]` the state after `events[i]`.
template <class S, class E>
struct Path {
  std::vector<E> events;
  std::vector<S> states;
  bool operator==(const Path&) const = default;
};

enum class FailureKind {
  state_invariant,       ///< A stored state broke an invariant over states.
  transition_invariant,  ///< An accepted transition broke an invariant over transitions.
  exception,             ///< The transition threw (a phase_error, a guard's exception...).
};

/// One distinct failure: an invariant broken, or an exception (by its message).
template <class S, class E>
struct Failure {
  FailureKind kind = FailureKind::state_invariant;
  /// The invariant's name, or the exception's message ("[machine.phase] TransitionTable: ..."
  /// for a trellis::error).
  std::string what;
  /// How many states (state invariant) or (state, event) pairs (otherwise) failed this way.
  std::size_t count = 0;
  /// The shortest sequence that fails. For a transition invariant, the last state is the one
  /// the transition led to; for an exception, the last event threw and has no state after it
  /// (`states.size() == events.size()`).
  Path<S, E> path;
  bool operator==(const Failure&) const = default;
};

/// What `explore` found. `ok()`: no failure and no state without a way to a terminal phase;
/// `summary()`: everything, readable, for a failing test's message.
template <class S, class E>
struct ExploreReport {
  using phase_type = phase_t<S>;

  std::size_t states = 0;       ///< Distinct states stored.
  std::size_t transitions = 0;  ///< (state, event) pairs accepted.
  std::size_t rejected = 0;     ///< (state, event) pairs rejected.
  std::size_t depth = 0;        ///< Events from the initial state to the farthest stored state.
  bool cut_by_states = false;   ///< Some state was not stored because of max_states.
  bool cut_by_depth = false;    ///< Some state was not stored because of max_depth.
  /// Every listed phase, in enumeration order, with its number of stored states; empty when
  /// the phase is not enumerated (TRELLIS_ENUM).
  std::vector<PhaseCount<phase_type>> phases;
  /// Whether a table was explored (then `rows` has one entry per row, in declaration order).
  bool has_rows = false;
  std::vector<RowCoverage> rows;
  /// Distinct failures, shortest sequence first.
  std::vector<Failure<S, E>> failures;
  /// Failures beyond `max_failures` distinct ones (counted, not kept).
  std::size_t more_failures = 0;
  /// Whether terminal phases were known, so that ways to them were checked.
  bool terminal_checked = false;
  /// Stored states with no way to a terminal phase (certain ones only, when partial).
  std::size_t no_terminal = 0;
  /// The first `max_examples` of them, nearest first.
  std::vector<Path<S, E>> no_terminal_examples;
  /// The text `summary()` returns (written by explore with the options' describe functions).
  std::string text;

  bool partial() const noexcept { return cut_by_states || cut_by_depth; }
  bool complete() const noexcept { return !partial(); }
  bool ok() const noexcept { return failures.empty() && more_failures == 0 && no_terminal == 0; }
  const std::string& summary() const noexcept { return text; }

  /// The failure with the shortest sequence, or nullptr.
  const Failure<S, E>* shortest_failure() const noexcept {
    return failures.empty() ? nullptr : &failures.front();
  }
  /// The stored states in phase `p` (0 when the phase is not enumerated).
  std::size_t states_in(const phase_type& p) const {
    for (const auto& c : phases) {
      if (c.phase == p) return c.states;
    }
    return 0;
  }
  /// The listed phases no stored state is in.
  std::vector<phase_type> phases_never_reached() const {
    std::vector<phase_type> out;
    for (const auto& c : phases) {
      if (c.states == 0) out.push_back(c.phase);
    }
    return out;
  }
  /// The numbers (`Row::number`) of the rows that never fired.
  std::vector<std::size_t> rows_never_fired() const {
    return numbers([](const RowCoverage& r) { return r.fired == 0; });
  }
  /// The numbers of the guarded rows whose guard never held.
  std::vector<std::size_t> guards_never_true() const {
    return numbers([](const RowCoverage& r) { return r.has_guard && r.guard_true == 0; });
  }
  /// The numbers of the guarded rows whose guard never failed.
  std::vector<std::size_t> guards_never_false() const {
    return numbers([](const RowCoverage& r) { return r.has_guard && r.guard_false == 0; });
  }

  bool operator==(const ExploreReport&) const = default;

 private:
  template <class Pred>
  std::vector<std::size_t> numbers(Pred pred) const {
    std::vector<std::size_t> out;
    for (const RowCoverage& r : rows) {
      if (pred(r)) out.push_back(r.number);
    }
    return out;
  }
};

/// The report's summary.
template <class S, class E>
std::string to_string(const ExploreReport<S, E>& report) {
  return report.text;
}

}  // namespace trellis::testing

namespace trellis::detail::explore_impl {

using testing::ExploreOptions;
using testing::ExploreReport;
using testing::Failure;
using testing::FailureKind;
using testing::Invariant;
using testing::Path;
using testing::RowCoverage;
using testing::Samples;

// The transition `explore` runs: a table (traced: rows and guards) or a plain function.
template <class S, class E, class P>
struct TableStep {
  const TransitionTable<S, E, P>& table;
  static constexpr bool traced = true;
  std::optional<S> operator()(const S& s, const E& e, RowTrace& trace) const {
    return table(s, e, trace);
  }
  std::optional<S> operator()(const S& s, const E& e) const { return table(s, e); }
};

template <class S, class E, class F>
struct FunctionStep {
  const F& fn;
  static constexpr bool traced = false;
  std::optional<S> operator()(const S& s, const E& e, RowTrace&) const { return fn(s, e); }
  std::optional<S> operator()(const S& s, const E& e) const { return fn(s, e); }
};

template <class T>
std::string default_text(const T& v) {
  if constexpr (Enumerated<T>) {
    return trellis::detail::describe_value(v);
  } else if constexpr (streamable<T>) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return {};
  }
}

template <class E>
std::string default_event_text(const E& e) {
  if constexpr (trellis::detail::is_variant<E>::value) {
    return std::visit(
        [](const auto& alt) -> std::string {
          using T = std::remove_cvref_t<decltype(alt)>;
          if constexpr (streamable<T>) {
            return default_text(alt);
          } else {
            return std::string(type_name<T>());
          }
        },
        e);
  } else {
    std::string text = default_text(e);
    return text.empty() ? std::string("event") : text;
  }
}

template <class S>
std::string default_state_text(const S& s) {
  if constexpr (Enumerated<S> || streamable<S>) {
    return default_text(s);
  } else if constexpr (Enumerated<phase_t<S>>) {
    return "state in " + trellis::detail::describe_value(phase_value(s));
  } else {
    return "state";
  }
}

// splitmix64's finalizer: spreads a user hash (often the identity) over the low bits the
// open-addressing table indexes with.
inline std::uint64_t mix_hash(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

template <class S, class E, class Hash, class Step>
class Explorer {
  using P = phase_t<S>;
  using Report = ExploreReport<S, E>;
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

 public:
  Explorer(const Step& step, const Samples<S, E>& samples, const ExploreOptions<S, E, Hash>& opts,
           std::vector<P> terminals, std::vector<RowCoverage> rows, bool has_rows)
      : step_(step), samples_(samples), opts_(opts), terminals_(std::move(terminals)) {
    report_.has_rows = has_rows;
    report_.rows = std::move(rows);
    report_.terminal_checked = !terminals_.empty();
    for (const Invariant<S, E>& inv : opts_.invariants) {
      if (inv.over_state) state_checks_.push_back(&inv);
      if (inv.over_transition) transition_checks_.push_back(&inv);
    }
    if constexpr (Enumerated<P>) {
      for (const P& p : enumeration<P>::values) report_.phases.push_back({p, 0});
    }
  }

  Report run(const S& initial) {
    const std::size_t max_states =
        std::clamp<std::size_t>(opts_.max_states, 1, std::size_t{none} - 1);
    const bool track_edges = report_.terminal_checked;
    slots_.assign(1024, none);
    mask_ = slots_.size() - 1;
    store(initial, hash_of(initial), none, none);

    std::vector<E> generated;
    RowTrace trace;
    std::size_t depth = 0;
    std::size_t level_end = 1;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (i == level_end) {
        ++depth;
        level_end = states_.size();
      }
      const bool deeper = depth < opts_.max_depth;
      if (track_edges) edge_begin_.push_back(static_cast<std::uint32_t>(edges_.size()));
      const S& s = states_[i];  // a deque: stays put while states are appended
      const std::vector<E>* events = &samples_.fixed_events();
      if (!samples_.fixed()) {
        generated.clear();
        samples_.events_for(s, generated);
        events = &generated;
      }
      for (std::size_t k = 0; k < events->size(); ++k) {
        const E& e = (*events)[k];
        std::optional<S> next;
        try {
          next = step_(s, e, trace);
        } catch (const trellis::error& err) {
          count_trace(trace);
          fail_exception("[" + std::string(err.id()) + "] " + err.what(), i, k);
          continue;
        } catch (const std::exception& err) {
          count_trace(trace);
          fail_exception(err.what(), i, k);
          continue;
        } catch (...) {
          count_trace(trace);
          fail_exception("an exception that is not a std::exception", i, k);
          continue;
        }
        count_trace(trace);
        if (!next) {
          ++report_.rejected;
          continue;
        }
        ++report_.transitions;
        for (const Invariant<S, E>* inv : transition_checks_) {
          if (!inv->over_transition(s, e, *next)) {
            fail(FailureKind::transition_invariant, inv->name, i, k, &*next);
          }
        }
        const std::uint64_t h = hash_of(*next);
        std::uint32_t j = find(*next, h);
        if (j == none) {
          if (!deeper || states_.size() >= max_states) {
            (deeper ? report_.cut_by_states : report_.cut_by_depth) = true;
            if (track_edges) {
              open_.resize(states_.size(), false);
              open_[i] = true;
            }
            continue;
          }
          j = store(std::move(*next), h, static_cast<std::uint32_t>(i),
                    static_cast<std::uint32_t>(k));
          report_.depth = depth + 1;
        }
        if (track_edges) edges_.push_back(j);
      }
    }
    report_.states = states_.size();
    if (track_edges) {
      edge_begin_.push_back(static_cast<std::uint32_t>(edges_.size()));
      open_.resize(states_.size(), false);
      find_no_terminal();
    }
    report_.text = summary();
    return std::move(report_);
  }

 private:
  std::uint64_t hash_of(const S& s) const {
    return mix_hash(static_cast<std::uint64_t>(opts_.hash(s)));
  }

  std::uint32_t find(const S& s, std::uint64_t h) const {
    for (std::size_t at = h & mask_;; at = (at + 1) & mask_) {
      const std::uint32_t j = slots_[at];
      if (j == none) return none;
      if (hashes_[j] == h && states_[j] == s) return j;
    }
  }

  template <class T>
  std::uint32_t store(T&& s, std::uint64_t h, std::uint32_t parent, std::uint32_t via) {
    const auto j = static_cast<std::uint32_t>(states_.size());
    states_.push_back(std::forward<T>(s));
    hashes_.push_back(h);
    parents_.push_back(parent);
    vias_.push_back(via);
    if (2 * states_.size() > slots_.size()) {
      grow();  // places every state, this one included
    } else {
      place(j);
    }
    const S& stored = states_.back();
    if constexpr (Enumerated<P>) {
      const std::size_t pi = trellis::detail::fast_index(phase_value(stored));
      if (pi < report_.phases.size()) ++report_.phases[pi].states;
    }
    for (const Invariant<S, E>* inv : state_checks_) {
      if (!inv->over_state(stored)) fail(FailureKind::state_invariant, inv->name, j, none, nullptr);
    }
    return j;
  }

  void place(std::uint32_t j) {
    std::size_t at = hashes_[j] & mask_;
    while (slots_[at] != none) at = (at + 1) & mask_;
    slots_[at] = j;
  }

  void grow() {
    slots_.assign(slots_.size() * 2, none);
    mask_ = slots_.size() - 1;
    for (std::uint32_t j = 0; j < states_.size(); ++j) place(j);
  }

  void count_trace(const RowTrace& trace) {
    if constexpr (Step::traced) {
      if (trace.fired >= 0) ++report_.rows[static_cast<std::size_t>(trace.fired)].fired;
      for (const auto& [row, held] : trace.guards) {
        ++(held ? report_.rows[row].guard_true : report_.rows[row].guard_false);
      }
    }
  }

  // Records one failure: of state `at` (event `none`), or of event `k` sent in state `at`
  // (leading to `to`, or throwing when `to` is null).
  void fail(FailureKind kind, const std::string& what, std::size_t at, std::uint32_t k,
            const S* to) {
    for (Failure<S, E>& f : report_.failures) {
      if (f.kind == kind && f.what == what) {
        ++f.count;
        return;
      }
    }
    if (report_.failures.size() >= opts_.max_failures) {
      ++report_.more_failures;
      return;
    }
    Failure<S, E> f;
    f.kind = kind;
    f.what = what;
    f.count = 1;
    f.path = path_to(at);
    if (k != none) {
      f.path.events.push_back(event_at(at, k));
      if (to != nullptr) f.path.states.push_back(*to);
    }
    report_.failures.push_back(std::move(f));
  }

  void fail_exception(const std::string& what, std::size_t at, std::size_t k) {
    fail(FailureKind::exception, what, at, static_cast<std::uint32_t>(k), nullptr);
  }

  // Event `k` of the samples in state `at`, asking the generators again.
  E event_at(std::size_t at, std::size_t k) const {
    if (samples_.fixed()) return samples_.fixed_events()[k];
    std::vector<E> events;
    samples_.events_for(states_[at], events);
    if (k >= events.size()) {
      throw invalid_option(
          "trellis::testing::explore: a generator gave fewer events for a state the second "
          "time it was asked; generators must give the same events for equal states");
    }
    return events[k];
  }

  Path<S, E> path_to(std::size_t at) const {
    std::vector<std::size_t> chain;
    for (std::size_t j = at; j != none; j = parents_[j]) chain.push_back(j);
    std::ranges::reverse(chain);
    Path<S, E> path;
    path.states.push_back(states_[chain.front()]);
    for (std::size_t n = 1; n < chain.size(); ++n) {
      const std::size_t from = chain[n - 1];
      E e = event_at(from, vias_[chain[n]]);
      const std::optional<S> again = step_(states_[from], e);
      if (!again || !(*again == states_[chain[n]])) {
        throw invalid_option(
            "trellis::testing::explore: replaying the path to a failure gave another state: "
            "the transition and the generators must be deterministic (equal inputs, equal "
            "results)");
      }
      path.events.push_back(std::move(e));
      path.states.push_back(states_[chain[n]]);
    }
    return path;
  }

  bool is_terminal(const S& s) const {
    const auto& p = phase_value(s);
    return std::ranges::any_of(terminals_, [&](const P& t) { return t == p; });
  }

  // Marks every state that can reach a terminal phase (or an unexplored state) by walking the
  // edges backwards; the rest have no way to a terminal phase.
  void find_no_terminal() {
    const std::size_t n = states_.size();
    std::vector<std::uint32_t> rev_begin(n + 1, 0);
    for (const std::uint32_t to : edges_) ++rev_begin[to + 1];
    for (std::size_t j = 0; j < n; ++j) rev_begin[j + 1] += rev_begin[j];
    std::vector<std::uint32_t> rev(edges_.size());
    std::vector<std::uint32_t> fill(rev_begin.begin(), rev_begin.end() - 1);
    for (std::uint32_t from = 0; from < n; ++from) {
      for (std::uint32_t x = edge_begin_[from]; x < edge_begin_[from + 1]; ++x) {
        rev[fill[edges_[x]]++] = from;
      }
    }
    std::vector<bool> good(n, false);
    std::vector<std::uint32_t> todo;
    for (std::uint32_t j = 0; j < n; ++j) {
      if (open_[j] || is_terminal(states_[j])) {
        good[j] = true;
        todo.push_back(j);
      }
    }
    while (!todo.empty()) {
      const std::uint32_t j = todo.back();
      todo.pop_back();
      for (std::uint32_t x = rev_begin[j]; x < rev_begin[j + 1]; ++x) {
        if (!good[rev[x]]) {
          good[rev[x]] = true;
          todo.push_back(rev[x]);
        }
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (good[j]) continue;
      ++report_.no_terminal;
      if (report_.no_terminal_examples.size() < opts_.max_examples) {
        report_.no_terminal_examples.push_back(path_to(j));
      }
    }
  }

  std::string state_text(const S& s) const {
    return opts_.describe_state ? opts_.describe_state(s) : default_state_text(s);
  }
  // The options' text, or the default one; a fixed sample whose default text another fixed
  // sample shares (Coin{5} and Coin{25} both read "Coin") also gets its place in the samples.
  std::string event_text(const E& e) const {
    if (opts_.describe_event) return opts_.describe_event(e);
    std::string text = default_event_text(e);
    if constexpr (comparable_events<E>::value) {
      const std::vector<E>& fixed = samples_.fixed_events();
      std::size_t same = 0;
      std::size_t at = fixed.size();
      for (std::size_t k = 0; k < fixed.size(); ++k) {
        if (default_event_text(fixed[k]) != text) continue;
        ++same;
        if (at == fixed.size() && fixed[k] == e) at = k;
      }
      if (same > 1 && at < fixed.size()) text += " (sample " + std::to_string(at + 1) + ")";
    }
    return text;
  }

  std::string path_text(const Path<S, E>& path) const {
    std::string out = "      " + state_text(path.states.front()) + "\n";
    for (std::size_t n = 0; n < path.events.size(); ++n) {
      out += "      --" + event_text(path.events[n]) + "--> ";
      out += n + 1 < path.states.size() ? state_text(path.states[n + 1]) : std::string("throws");
      out += "\n";
    }
    return out;
  }

  static std::string plural(std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  }

  std::string summary() const {
    const Report& r = report_;
    std::string out = "explore: " + plural(r.states, "state") + ", " +
                      plural(r.transitions, "transition") + " (" + std::to_string(r.rejected) +
                      " rejected), depth " + std::to_string(r.depth) + "; ";
    if (r.complete()) {
      out += "complete\n";
    } else {
      out += "PARTIAL:";
      if (r.cut_by_states) out += " stopped at max_states = " + std::to_string(opts_.max_states);
      if (r.cut_by_states && r.cut_by_depth) out += ",";
      if (r.cut_by_depth) out += " stopped at max_depth = " + std::to_string(opts_.max_depth);
      out += "\n";
    }
    if constexpr (Enumerated<P>) {
      out += "phases:";
      for (std::size_t i = 0; i < r.phases.size(); ++i) {
        out += (i ? ", " : " ") + trellis::detail::describe_value(r.phases[i].phase) + " " +
               std::to_string(r.phases[i].states);
      }
      out += "\n";
      const auto never = r.phases_never_reached();
      if (!never.empty()) {
        out += "  never reached:";
        for (std::size_t i = 0; i < never.size(); ++i) {
          out += (i ? ", " : " ") + trellis::detail::describe_value(never[i]);
        }
        out += "\n";
      }
    }
    if (r.has_rows) {
      const auto fired = r.rows.size() - r.rows_never_fired().size();
      out += "rows: " + std::to_string(fired) + " of " + std::to_string(r.rows.size()) + " fired\n";
      const auto list = [&](const char* title, const std::vector<std::size_t>& numbers,
                            bool guard) {
        if (numbers.empty()) return;
        out += std::string("  ") + title + ":\n";
        for (const std::size_t number : numbers) {
          const RowCoverage& row = r.rows[number - 1];
          out += "    " + row.description;
          if (guard) {
            out += ": asked " + std::to_string(row.guard_true + row.guard_false) + " times";
          }
          out += "\n";
        }
      };
      list("never fired", r.rows_never_fired(), false);
      list("guard never true", r.guards_never_true(), true);
      list("guard never false", r.guards_never_false(), true);
    }
    if (r.failures.empty() && r.more_failures == 0) {
      out += "failures: none\n";
    } else {
      out += "failures: " + std::to_string(r.failures.size() + r.more_failures) + "\n";
      for (const Failure<S, E>& f : r.failures) {
        switch (f.kind) {
          case FailureKind::state_invariant:
            out += "  invariant \"" + f.what + "\" broken in " + plural(f.count, "state");
            break;
          case FailureKind::transition_invariant:
            out += "  invariant \"" + f.what + "\" broken by " + plural(f.count, "transition");
            break;
          case FailureKind::exception:
            out += "  exception " + f.what + ", thrown by " + plural(f.count, "transition");
            break;
        }
        out += "; shortest sequence (" + plural(f.path.events.size(), "event") + "):\n";
        out += path_text(f.path);
      }
      if (r.more_failures > 0) {
        out +=
            "  and " + std::to_string(r.more_failures) + " more (raise max_failures to see them)\n";
      }
    }
    if (!r.terminal_checked) {
      out +=
          "terminal phases: none declared, so ways to them were not checked (declare them "
          "with the table's terminal(...) or options.terminal)\n";
    } else {
      out += "terminal phases:";
      for (std::size_t i = 0; i < terminals_.size(); ++i) {
        out += (i ? ", " : " ") + phase_text(terminals_[i]);
      }
      if (r.no_terminal == 0) {
        out += r.complete() ? "; every state can reach one\n"
                            : "; no state found without a way to one (partial exploration: "
                              "only states whose successors were all explored are judged)\n";
      } else {
        out += "; " + plural(r.no_terminal, "state") + " cannot reach one" +
               (r.complete() ? "" : " (at least: partial exploration)") + "; nearest:\n";
        for (const Path<S, E>& p : r.no_terminal_examples) {
          out += "    after " + plural(p.events.size(), "event") + ":\n" + path_text(p);
        }
      }
    }
    out += r.ok() ? "ok\n" : "NOT OK\n";
    return out;
  }

  static std::string phase_text(const P& p) {
    if constexpr (Enumerated<P>) {
      return trellis::detail::describe_value(p);
    } else {
      const std::string text = default_text(p);
      return text.empty() ? std::string("a phase") : text;
    }
  }

  const Step& step_;
  const Samples<S, E>& samples_;
  const ExploreOptions<S, E, Hash>& opts_;
  std::vector<P> terminals_;
  std::vector<const Invariant<S, E>*> state_checks_;
  std::vector<const Invariant<S, E>*> transition_checks_;
  Report report_;

  std::deque<S> states_;
  std::vector<std::uint64_t> hashes_;
  std::vector<std::uint32_t> parents_;
  std::vector<std::uint32_t> vias_;  // the index of the sample that reached each state
  std::vector<std::uint32_t> slots_;
  std::size_t mask_ = 0;
  // Only with terminal phases: the successors of state i are
  // edges_[edge_begin_[i] .. edge_begin_[i + 1]); open_: some successor was not stored.
  std::vector<std::uint32_t> edge_begin_;
  std::vector<std::uint32_t> edges_;
  std::vector<bool> open_;
};

// Whether S, E and Hash can be explored; each missing piece is a static_assert that says what
// to write (explore stops there, without a cascade of errors from its body).
template <class S, class E, class Hash>
constexpr bool explorable() {
  static_assert(std::equality_comparable<S>,
                "trellis::testing::explore: states must have == (states are told apart by it): "
                "add `bool operator==(const S&) const = default;` to the state");
  static_assert(std::copy_constructible<S> && std::copy_constructible<E>,
                "trellis::testing::explore: states and events must be copyable");
  static_assert(!std::is_same_v<Hash, no_hash<S>>,
                "trellis::testing::explore: states S have no std::hash<S>; give the options a "
                "hash: `struct H { std::size_t operator()(const S& s) const { return "
                "trellis::testing::hash_values(s.a, s.b); } };` and pass "
                "`trellis::testing::ExploreOptions<S, E, H>` (or specialise std::hash<S>)");
  constexpr bool callable = std::is_invocable_r_v<std::size_t, const Hash&, const S&>;
  static_assert(std::is_same_v<Hash, no_hash<S>> || callable,
                "trellis::testing::explore: the options' Hash must be callable as "
                "std::size_t(const S&)");
  return std::equality_comparable<S> && std::copy_constructible<S> && std::copy_constructible<E> &&
         callable;
}

template <class S, class E, class P, class Hash>
ExploreReport<S, E> explore_table(const TransitionTable<S, E, P>& table, const S& initial,
                                  const Samples<S, E>& samples,
                                  const ExploreOptions<S, E, Hash>& options) {
  table.check_complete();
  std::vector<RowCoverage> rows;
  rows.reserve(table.rows().size());
  for (const auto& row : table.rows()) {
    RowCoverage c;
    c.number = row.number;
    c.description = row.describe();
    c.has_guard = row.has_guard();
    rows.push_back(std::move(c));
  }
  std::vector<P> terminals = options.terminal.empty() ? table.terminals() : options.terminal;
  const TableStep<S, E, P> step{table};
  return Explorer<S, E, Hash, TableStep<S, E, P>>(step, samples, options, std::move(terminals),
                                                  std::move(rows), true)
      .run(initial);
}

}  // namespace trellis::detail::explore_impl

namespace trellis::testing {

/// Explores `table` from `initial` over `samples` (see the file comment). The table's rows and
/// guards are covered in the report, and its `terminals()` are the terminal phases unless
/// `options.terminal` names others. Throws `table_error` when a row was left unfinished.
template <class S, class E, class P, class Hash = default_hash<S>>
ExploreReport<S, E> explore(const TransitionTable<S, E, P>& table,
                            const std::type_identity_t<S>& initial,
                            const std::type_identity_t<Samples<S, E>>& samples,
                            const ExploreOptions<S, E, Hash>& options = {}) {
  if constexpr (!detail::explore_impl::explorable<S, E, Hash>()) {
    return {};
  } else {
    return detail::explore_impl::explore_table(table, initial, samples, options);
  }
}

/// Explores a plain transition function `std::optional<S>(const S&, const E&)` (no rows to
/// cover; the terminal phases are `options.terminal`). S and E are deduced from the initial
/// state and the samples or options, or given: `explore<Light, Tick>(step, Light::Red, {...})`.
template <class S, class E, class F, class Hash = default_hash<S>>
requires(!detail::explore_impl::is_table<F>::value && TransitionFunction<F, S, E>)
    ExploreReport<S, E> explore(const F& step, const S& initial, const Samples<S, E>& samples,
                                const ExploreOptions<S, E, Hash>& options = {}) {
  if constexpr (!detail::explore_impl::explorable<S, E, Hash>()) {
    return {};
  } else {
    const detail::explore_impl::FunctionStep<S, E, F> fn{step};
    return detail::explore_impl::Explorer<S, E, Hash, detail::explore_impl::FunctionStep<S, E, F>>(
               fn, samples, options, options.terminal, {}, false)
        .run(initial);
  }
}

}  // namespace trellis::testing
