#pragma once
/// @file
/// Running statecharts on the signal graph: `StateChart<D>` (a Context, single-threaded),
/// `ThreadSafeStateChart<D>` (a ThreadSafeContext: send from any thread) and
/// `AsyncStateChart<D>` (an AsyncContext: observers on the executor). They share the flat
/// machines' runner (trellis/machine/state_machine.hpp) and its guarantees:
///
/// - One external event is one macrostep (W3C SCXML Appendix D: a microstep, then eventless
///   transitions and internal events until stable), run under the context's lock and
///   committed to the configuration cell once: no observer, signal or effect sees a
///   half-processed step, and no event is lost under concurrent sends.
/// - Observers (`on_enter`, `on_exit`, `on_transition`) run after the commit in registration
///   order, as the flat machines' do (on the sending thread, or on the executor for
///   AsyncStateChart); inside `ctx.batch(...)` the macrosteps of the batch reach them as one
///   (first before, last after). `on_enter`/`on_exit` compare the committed configurations:
///   a state active only in the middle of a macrostep (or of a batch) is not reported.
/// - Delayed sends (`ChartActions::send`, a builder's `.send(e, delay, id)`) are timed by the
///   chart's clock; `send(e)` first delivers those already due (they were sent earlier),
///   then `e`, then those its macrostep made due; `fire_due()` delivers them without sending
///   anything (call it when `next_due()` passes). A zero delay is due at once: the event
///   follows the macrostep that sent it, within the same `send()`.
/// - An action that throws ends its block and raises `error.execution` (SCXML 5.9; the
///   event's data is the std::exception_ptr); a guard that throws is false and raises it too.
/// - A macrostep that does not become stable within `ChartOptions::microstep_budget`
///   microsteps throws `chart_livelock` from `send()`, after committing what it reached.

#include <atomic>
#include <concepts>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "trellis/base/subscription.hpp"
#include "trellis/machine/detail/machine_core.hpp"
#include "trellis/machine/send_result.hpp"
#include "trellis/reactive/async_context.hpp"
#include "trellis/reactive/cell_view.hpp"
#include "trellis/reactive/context.hpp"
#include "trellis/reactive/signal.hpp"
#include "trellis/statechart/chart.hpp"
#include "trellis/statechart/clock.hpp"
#include "trellis/statechart/configuration.hpp"
#include "trellis/statechart/detail/chart_instance.hpp"

namespace trellis {

struct ChartOptions {
  /// The clock delayed sends are timed by (nullptr: the system clock); it must outlive the
  /// chart.
  const ChartClock* clock = nullptr;
  /// The most microsteps one macrostep may take before `chart_livelock`.
  std::size_t microstep_budget = 100'000;
};

namespace detail {

/// Told around each macrostep of a running chart, with the graph's lock held (durable charts
/// persist through it). Either call may throw to refuse the step: the runner then commits
/// nothing and the exception reaches the sender.
class ChartStepHook {
 public:
  /// Before the instance processes an event (nothing has run yet).
  virtual void before_step() = 0;
  /// After it processed `e` (`took`: it took transitions; the pending sends may have changed
  /// either way). A hook that throws puts the instance and its data back as they were.
  virtual void after_step(const ChartEvent& e, bool took) = 0;

 protected:
  ChartStepHook() = default;
  ChartStepHook(const ChartStepHook&) = default;
  ChartStepHook& operator=(const ChartStepHook&) = default;
  ~ChartStepHook() = default;
};

/// A running chart's data and interpreter, kept together (the instance points at the data).
template <class D>
struct ChartHolder {
  ChartHolder(const Chart<D>& chart, D d, const ChartOptions& options)
      : data(std::move(d)),
        clock(options.clock != nullptr ? options.clock : &SystemChartClock::instance()),
        inst(chart.shared_definition(), &data, clock, options.microstep_budget) {}
  ChartHolder(const ChartHolder&) = delete;
  ChartHolder& operator=(const ChartHolder&) = delete;

  ChartConfiguration snapshot(std::uint64_t step) const {
    std::optional<ChartConfiguration> out;
    snapshot_into(out, step);
    return std::move(*out);
  }
  /// The configuration after `step` macrosteps, made in place (no move of its sets).
  void snapshot_into(std::optional<ChartConfiguration>& out, std::uint64_t step) const {
    StateSet reentered;
    reentered.assign_and(inst.entered(), inst.exited());
    out.emplace(&inst.definition(), inst.configuration(), std::move(reentered), step,
                !inst.running());
  }

  D data;
  const ChartClock* clock;
  ChartInstance inst;
  /// Set (under the graph's lock) when the instance has queued sends, so that a send can skip
  /// the lock when there are none.
  std::atomic<bool> maybe_due{false};
  /// Told around each macrostep (set before the chart runs; nullptr: none).
  ChartStepHook* hook = nullptr;
};

/// The error (chart_livelock) of the last macrostep the calling thread ran: ChartStep moves it
/// here under the graph's lock, and the send that ran the step takes it, so that another
/// thread's send never throws it. Per thread, and saved around nested sends (an observer's).
inline std::exception_ptr& chart_step_error() noexcept {
  static thread_local std::exception_ptr error;
  return error;
}

/// The transition function the machine runner calls, under the graph's lock: one macrostep.
template <class D>
struct ChartStep {
  ChartHolder<D>* h;

  std::optional<ChartConfiguration> operator()(const ChartConfiguration& current,
                                               const ChartEvent& e) {
    if (h->hook != nullptr) h->hook->before_step();
    h->inst.clear_changes();
    const bool took = h->inst.process(e);
    if (h->hook != nullptr) h->hook->after_step(e, took);
    if (!h->inst.pending_sends().empty()) h->maybe_due.store(true, std::memory_order_relaxed);
    if (h->inst.has_error()) chart_step_error() = h->inst.take_error();
    std::optional<ChartConfiguration> next;
    if (took) h->snapshot_into(next, current.step() + 1);
    return next;
  }
  bool accepts(const ChartConfiguration&, const ChartEvent& e) { return h->inst.enabled(e); }
};

}  // namespace detail

template <class D, class Ctx>
class BasicStateChart {
 public:
  using data_type = D;
  using context_type = Ctx;

  /// Starts `chart` with `data`: the initial configuration is entered (its entry actions run)
  /// before the constructor returns.
  BasicStateChart(Ctx& ctx, Chart<D> chart, D data = D{}, ChartOptions options = {})
      : BasicStateChart(ctx, chart, start(chart, std::move(data), options)) {}

  /// Runs a holder that is already started or restored (durable charts use this).
  BasicStateChart(Ctx& ctx, Chart<D> chart, std::shared_ptr<detail::ChartHolder<D>> holder)
      : ctx_(&ctx), chart_(std::move(chart)), holder_(std::move(holder)) {
    core_ = std::make_shared<
        detail::MachineCoreFor<ChartConfiguration, ChartEvent, detail::ChartStep<D>>>(
        graph_of(ctx), ctx.cell(holder_->snapshot(0)), detail::ChartStep<D>{holder_.get()});
  }

  BasicStateChart(const BasicStateChart&) = delete;
  BasicStateChart& operator=(const BasicStateChart&) = delete;
  ~BasicStateChart() { core_.reset(); }

  /// Processes `e` as one macrostep (Transitioned: it took transitions; Rejected: none was
  /// enabled, or the chart is done); delayed sends already due are delivered before it, and
  /// those due after it (a zero delay) after it, each as its own macrostep.
  SendResult send(const ChartEvent& e) {
    // Sends that fell due before this call go first (they were sent earlier), then `e`, then
    // the ones its macrostep made due (a zero delay).
    if (holder_->maybe_due.load(std::memory_order_relaxed)) fire_due();
    const SendResult r = deliver(e);
    if (holder_->maybe_due.load(std::memory_order_relaxed)) fire_due();
    return r;
  }

  /// Delivers every delayed send due by the chart's clock, each as its own macrostep, in due
  /// order; returns how many were delivered. The context's lock is held from taking a send off
  /// the queue until its macrostep is committed, so concurrent callers deliver in due order and
  /// no other step sees the queue without a send that is not delivered yet.
  std::size_t fire_due() {
    std::size_t n = 0;
    detail::GraphLock lock(graph_of(*ctx_));
    while (true) {
      std::optional<ChartEvent> next = holder_->inst.take_due(holder_->clock->now());
      if (!next) {
        if (holder_->inst.pending_sends().empty())
          holder_->maybe_due.store(false, std::memory_order_relaxed);
        return n;
      }
      deliver(*next);
      ++n;
    }
  }

  /// When the next delayed send is due, if any is pending.
  std::optional<ChartClock::time_point> next_due() const {
    detail::GraphLock lock(graph_of(*ctx_));
    return holder_->inst.next_due();
  }

  /// The pending delayed sends, in due order.
  std::vector<DelayedSend> pending_sends() const {
    detail::GraphLock lock(graph_of(*ctx_));
    return holder_->inst.pending_sends();
  }

  /// An eager Signal<bool>: true exactly while state `id` is active (unknown_state otherwise).
  Signal<bool> in(std::string_view id) const {
    const int s = chart_.definition().index_of(id);
    return ctx_->signal([cell = core_->cell(), s] { return cell.get().contains(s); });
  }
  /// The same as `in(id)` (the flat machines' name).
  Signal<bool> state_is(std::string_view id) const { return in(id); }

  /// The current configuration (tracked when read inside a computed, signal or effect).
  ChartConfiguration snapshot() const { return core_->cell().get(); }
  /// A read-only handle on the configuration cell.
  CellView<ChartConfiguration> configuration_cell() const {
    return CellView<ChartConfiguration>(core_->cell());
  }
  /// The active states' ids, in document order (compound and parallel states included).
  std::vector<std::string> configuration() const { return snapshot().ids(); }
  /// The active atomic states' ids, in document order.
  std::vector<std::string> atomic_configuration() const { return snapshot().atomic_ids(); }
  /// Whether a top-level final state was entered (the chart takes no more events).
  bool done() const { return snapshot().done(); }

  /// Whether `e` would take a transition now (guards are evaluated; nothing runs).
  bool can(const ChartEvent& e) const { return core_->can(e); }

  /// A copy of the chart's data.
  D data() const {
    detail::GraphLock lock(graph_of(*ctx_));
    return holder_->data;
  }
  /// Calls `f(const D&)` with the context's lock held and returns its result.
  template <class F>
  auto read(F f) const {
    detail::GraphLock lock(graph_of(*ctx_));
    return f(std::as_const(holder_->data));
  }

  /// Calls `f()` each time state `id` becomes active in a committed step: inactive before and
  /// active after, or exited and entered again by the step (an external self-transition). A
  /// state active only between the microsteps of one macrostep (or the macrosteps of one
  /// batch) was never committed and is not reported; so entries minus exits told so far is
  /// always whether the state is active.
  template <class F>
  [[nodiscard]] Subscription on_enter(std::string_view id, F f) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_enter(id, f) needs f()");
    const int s = chart_.definition().index_of(id);
    return observe([s, f = std::move(f)](const ChartConfiguration& from,
                                         const ChartConfiguration& to) mutable {
      if (to.contains(s) && (!from.contains(s) || reentered(to, s))) f();
    });
  }

  /// Calls `f()` each time state `id` stops being active in a committed step (or is exited
  /// and entered again by it); see on_enter.
  template <class F>
  [[nodiscard]] Subscription on_exit(std::string_view id, F f) {
    static_assert(std::is_invocable_v<F&>, "trellis: on_exit(id, f) needs f()");
    const int s = chart_.definition().index_of(id);
    return observe([s, f = std::move(f)](const ChartConfiguration& from,
                                         const ChartConfiguration& to) mutable {
      if (from.contains(s) && (!to.contains(s) || reentered(to, s))) f();
    });
  }

  /// Calls `f(before, after)` for each committed macrostep.
  template <class F>
  [[nodiscard]] Subscription on_transition(F f) {
    static_assert(std::is_invocable_v<F&, const ChartConfiguration&, const ChartConfiguration&>,
                  "trellis: on_transition(f) needs f(const ChartConfiguration& before, const "
                  "ChartConfiguration& after)");
    return observe(std::move(f));
  }

  /// Returns when every observer run scheduled so far has finished (AsyncStateChart).
  void drain() requires std::derived_from<Ctx, AsyncContext> { context().drain(); }

  Ctx& context() const noexcept { return *ctx_; }
  const Chart<D>& chart() const noexcept { return chart_; }

  /// The holder (data and interpreter): for trellis's own layers (durable charts).
  const std::shared_ptr<detail::ChartHolder<D>>& holder() const noexcept { return holder_; }

 private:
  static std::shared_ptr<detail::ChartHolder<D>> start(const Chart<D>& chart, D data,
                                                       const ChartOptions& options) {
    auto h = std::make_shared<detail::ChartHolder<D>>(chart, std::move(data), options);
    h->inst.start();
    if (auto err = h->inst.take_error()) std::rethrow_exception(err);
    if (!h->inst.pending_sends().empty()) h->maybe_due = true;
    return h;
  }

  SendResult deliver(const ChartEvent& e) {
    std::exception_ptr& slot = detail::chart_step_error();
    std::exception_ptr outer = std::exchange(slot, nullptr);  // a send around this one
    SendResult r = SendResult::Rejected;
    try {
      r = core_->send(e);
    } catch (...) {
      slot = std::move(outer);
      throw;
    }
    if (std::exception_ptr err = std::exchange(slot, std::move(outer))) std::rethrow_exception(err);
    return r;
  }

  /// Whether the (last) macrostep leading to `to` exited `s` and entered it again.
  static bool reentered(const ChartConfiguration& to, int s) noexcept {
    return to.reentered().contains(s);
  }

  template <class F>
  Subscription observe(F f) {
    using Core = detail::MachineCore<ChartConfiguration, ChartEvent>;
    const std::uint64_t id = core_->add_observer(typename Core::Observer(std::move(f)));
    return Subscription([weak = std::weak_ptr<Core>(core_), id] {
      if (auto core = weak.lock()) core->remove_observer(id);
    });
  }

  Ctx* ctx_;
  Chart<D> chart_;
  std::shared_ptr<detail::ChartHolder<D>> holder_;
  std::shared_ptr<detail::MachineCore<ChartConfiguration, ChartEvent>> core_;
};

/// A single-threaded chart on a Context.
template <class D = NoData>
using StateChart = BasicStateChart<D, Context>;
/// A chart shared by threads, on a ThreadSafeContext.
template <class D = NoData>
using ThreadSafeStateChart = BasicStateChart<D, ThreadSafeContext>;
/// A chart whose observers run on an AsyncContext's executor.
template <class D = NoData>
using AsyncStateChart = BasicStateChart<D, AsyncContext>;

}  // namespace trellis
