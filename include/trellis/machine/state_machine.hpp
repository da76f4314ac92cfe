#pragma once
/// @file
/// State machines over the signal graph: the state lives in a cell, a pure transition function
/// `std::optional<S>(const S&, const E&)` decides every event (nullopt rejects it), and
/// observers see committed transitions.
///
/// Three runners, one implementation; they differ only in the context, which is the execution
/// policy:
/// - `StateMachine<S, E>` on a `Context`: single-threaded; observers run inside `send()`,
///   before it returns.
/// - `ThreadSafeStateMachine<S, E>` on a `ThreadSafeContext`: `send()` may be called from any
///   thread and is atomic (read, decide, write under the context's lock: no update is ever
///   lost). Observers run on the thread whose `send()` committed the transition, under that
///   lock, before that `send()` returns: observers of one machine never overlap and see
///   transitions in commit order. An observer may call `send()` on its own machine: that call
///   returns once its transition is committed, and its observers run after the current
///   observer returns. S and E are copied between threads.
/// - `AsyncStateMachine<S, E>` on an `AsyncContext`: `send()` and `state()` are synchronous;
///   observers run later on the context's executor (oneTBB's by default), one at a time per
///   machine, each committed transition in commit order; `drain()` waits for them. S and E are
///   copied between threads.
///
/// Inside `ctx.batch(...)`, the transitions of the batch reach observers as one (first from,
/// last to), and not at all if the batch ends where it started.
///
/// Phases: a machine whose state is a struct with a `phase_of(const S&)` hook
/// (trellis/machine/phase.hpp) is observed by phase: `state_is(phase)`, `on_enter(phase, f)`,
/// `on_exit(phase, f)` and `phase()` see only the phase, so a transition that changes the rest
/// of the state in the same phase enters and leaves nothing. `state_is(pred)` observes any
/// other projection. `can(e)` asks the transition function (a table: its rows and guards,
/// without running an update) whether `e` would be accepted now, without sending it.
///
/// Order within one send (outside a batch): the state is committed, then the graph flushes
/// (signals such as `state_is` and `phase()` are recomputed, and effects reading them run), then
/// `on_transition`/`on_enter`/`on_exit` observers run in registration order, then the
/// Boost.Signals2 `transitions()` slots; `send()` returns after all of them. A send made by an
/// effect or an observer is committed at once and told after the current transition. Inside a
/// batch, effects and observers run once at its end; on an AsyncContext, on the executor.
///
/// Observers are std-only: `on_transition`, `on_enter` and `on_exit` return a
/// `trellis::Subscription`. `transitions()`, the same transitions as a Boost.Signals2 signal,
/// is the signals2 adapter's: it needs <trellis/signals2/transitions.hpp> (the umbrella
/// header includes it), and says so at compile time when that header is missing.

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "trellis/base/subscription.hpp"
#include "trellis/machine/detail/machine_core.hpp"
#include "trellis/machine/phase.hpp"
#include "trellis/machine/send_result.hpp"
#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/cell_view.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/reactive/signal.hpp"

namespace trellis {

/// The Boost.Signals2 signal of (from, to) that `transitions()` returns; defined (and
/// complete) only with <trellis/signals2/transitions.hpp>.
template <class S>
class TransitionSignal;

namespace detail {

/// How `transitions()` reaches the signals2 adapter, which specializes this; the primary
/// says the adapter is missing.
template <class S, class E>
struct TransitionsEdge {
  static constexpr bool available = false;
};

/// The API every machine shares (plain or durable), over a type-erased core: the core decides
/// and commits events, this front reads the state and registers observers.
template <class S, class E>
class MachineFront {
  static_assert(std::equality_comparable<S> && std::copy_constructible<S>,
                "trellis: a machine's state type needs == and a copy constructor");
  static_assert(std::copy_constructible<E>, "trellis: a machine's event type must be copyable");

 public:
  using state_type = S;
  using event_type = E;
  /// A boost::signals2::signal<void(const S&, const S&)> (derived from it); complete with
  /// <trellis/signals2/transitions.hpp>.
  using TransitionSignal = ::trellis::TransitionSignal<S>;

  /// Decides `e` and commits the new state; observers run as the runner's header says.
  SendResult send(const E& e) { return core_->send(e); }

  /// The current state (a copy); tracked when read inside a computed, signal or effect.
  S state() const { return core_->cell().get(); }

  /// A read-only handle on the state, for computeds and effects.
  CellView<S> state_cell() const { return CellView<S>(core_->cell()); }

  /// The phase of the states (`S` itself unless `phase_of(const S&)` exists).
  using phase_type = phase_t<S>;

  /// An eager Signal<bool>: true exactly while the machine is in `s`, fresh when send() returns.
  Signal<bool> state_is(S s) const {
    return ctx_->signal([cell = core_->cell(), s = std::move(s)] { return cell.get() == s; });
  }

  /// An eager Signal<bool>: true exactly while the state's phase is `p` (struct states with a
  /// `phase_of` hook).
  Signal<bool> state_is(phase_type p) const requires(phase_traits<S>::projected) {
    return ctx_->signal(
        [cell = core_->cell(), p = std::move(p)] { return phase_value(cell.get()) == p; });
  }

  /// An eager Signal<bool> of `pred(state)`, any projection of the state.
  template <class Pred>
  requires(std::predicate<const Pred&, const S&> && !std::convertible_to<Pred, S> &&
           !std::convertible_to<Pred, phase_type>) Signal<bool> state_is(Pred pred)
  const {
    return ctx_->signal([cell = core_->cell(), pred = std::move(pred)] {
      return static_cast<bool>(pred(cell.get()));
    });
  }

  /// An eager Signal of the state's phase: fresh when send() returns, and it changes (and
  /// wakes what reads it) only when the phase does.
  Signal<phase_type> phase() const {
    return ctx_->signal([cell = core_->cell()] { return phase_type(phase_value(cell.get())); });
  }

  /// Whether `e` would be accepted in the current state (Transitioned or Unchanged), asked of
  /// the transition function without committing anything. A table answers from its rows and
  /// guards without running an update.
  bool can(const E& e) const { return core_->can(e); }

  /// Calls `f(from, to)` for each committed transition (not at registration, not for a
  /// rejected or unchanged event). Stops when the returned handle is dropped.
  template <class F>
  [[nodiscard]] Subscription on_transition(F f) {
    static_assert(std::is_invocable_v<F&, const S&, const S&>,
                  "trellis: on_transition(f) needs f(const S& from, const S& to)");
    return observe([f = std::move(f)](const S& from, const S& to) mutable { f(from, to); });
  }

  /// Calls `f()` each time the machine enters `s`.
  template <class F>
  [[nodiscard]] Subscription on_enter(S s, F f) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_enter(s, f) needs f()");
    return observe([s = std::move(s), f = std::move(f)](const S&, const S& to) mutable {
      if (to == s) f();
    });
  }

  /// Calls `f()` each time the machine leaves `s`.
  template <class F>
  [[nodiscard]] Subscription on_exit(S s, F f) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_exit(s, f) needs f()");
    return observe([s = std::move(s), f = std::move(f)](const S& from, const S&) mutable {
      if (from == s) f();
    });
  }

  /// Calls `f()` each time the state's phase becomes `p` (a transition within `p` does not
  /// enter it again).
  template <class F>
  [[nodiscard]] Subscription on_enter(phase_type p, F f) requires(phase_traits<S>::projected) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_enter(phase, f) needs f()");
    return observe([p = std::move(p), f = std::move(f)](const S& from, const S& to) mutable {
      if (phase_value(to) == p && !(phase_value(from) == p)) f();
    });
  }

  /// Calls `f()` each time the state's phase stops being `p`.
  template <class F>
  [[nodiscard]] Subscription on_exit(phase_type p, F f) requires(phase_traits<S>::projected) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_exit(phase, f) needs f()");
    return observe([p = std::move(p), f = std::move(f)](const S& from, const S& to) mutable {
      if (phase_value(from) == p && !(phase_value(to) == p)) f();
    });
  }

  /// The committed transitions as a Boost.Signals2 signal of (from, to), for users who want
  /// its connection semantics; its slots are told after the on_transition observers. Created
  /// on first use: a machine that never calls this pays nothing for it. Needs
  /// <trellis/signals2/transitions.hpp> (and trellis::signals2, which brings Boost); a
  /// template only so that it is checked where it is called.
  template <class Edge = TransitionsEdge<S, E>>
  TransitionSignal& transitions() {
    static_assert(Edge::available,
                  "trellis: machine.transitions() is the Boost.Signals2 edge: #include "
                  "<trellis/signals2/transitions.hpp> (or observe with on_transition(f), which "
                  "needs no Boost)");
    return Edge::signal(*core_);
  }

 protected:
  MachineFront() = default;

  /// Adapts any transition callable to the exact signature the core calls.
  template <class F>
  static auto adapt(F step) {
    static_assert(std::is_invocable_v<F&, const S&, const E&>,
                  "trellis: the transition function must be callable as step(const S&, const E&)");
    static_assert(
        std::is_convertible_v<std::invoke_result_t<F&, const S&, const E&>, std::optional<S>>,
        "trellis: the transition function must return std::optional<S> (nullopt rejects)");
    return [f = std::move(step)](const S& s, const E& e) mutable -> std::optional<S> {
      return f(s, e);
    };
  }

  BasicContext* ctx_ = nullptr;
  std::shared_ptr<MachineCore<S, E>> core_;

 private:
  Subscription observe(typename MachineCore<S, E>::Observer f) {
    const std::uint64_t id = core_->add_observer(std::move(f));
    return Subscription([weak = std::weak_ptr(core_), id] {
      if (auto core = weak.lock()) core->remove_observer(id);
    });
  }
};

}  // namespace detail

/// A state machine on the reactive context `Ctx` (see the aliases below).
template <class S, class E, class Ctx>
class BasicStateMachine : public detail::MachineFront<S, E> {
 public:
  using context_type = Ctx;

  /// A machine in state `initial`, deciding events with `step(state, event)`, any callable
  /// returning something convertible to std::optional<S>.
  ///
  /// A `TransitionTable<S, E>` is kept as it is (it is the function, and `can()` asks its rows);
  /// one with a row left unfinished is refused with `table_error`.
  template <class F>
  BasicStateMachine(Ctx& ctx, S initial, F step) {
    this->ctx_ = &ctx;
    if constexpr (detail::is_transition_table<F, S, E>) {
      step.check_complete();
      this->core_ = std::make_shared<detail::MachineCoreFor<S, E, F>>(
          graph_of(ctx), ctx.cell(std::move(initial)), std::move(step));
    } else {
      auto adapted = this->adapt(std::move(step));
      this->core_ = std::make_shared<detail::MachineCoreFor<S, E, decltype(adapted)>>(
          graph_of(ctx), ctx.cell(std::move(initial)), std::move(adapted));
    }
  }

  /// Returns when every observer run scheduled so far has finished (AsyncStateMachine).
  void drain() requires std::derived_from<Ctx, AsyncContext> { context().drain(); }

  Ctx& context() const noexcept { return static_cast<Ctx&>(*this->ctx_); }
};

/// A single-threaded machine on a Context.
template <class S, class E>
using StateMachine = BasicStateMachine<S, E, Context>;
/// A machine shared by threads, on a ThreadSafeContext.
template <class S, class E>
using ThreadSafeStateMachine = BasicStateMachine<S, E, ThreadSafeContext>;
/// A machine whose observers run on an AsyncContext's executor.
template <class S, class E>
using AsyncStateMachine = BasicStateMachine<S, E, AsyncContext>;

}  // namespace trellis
