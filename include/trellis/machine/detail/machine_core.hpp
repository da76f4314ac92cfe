#pragma once
/// @file
/// What every state machine runner shares: the state cell, the transition function, and the
/// observer dispatch. Observers do not hang off the propagation path one by one: while a
/// machine has observers, each committed transition is logged, and one effect per machine
/// (the dispatcher) delivers the log to them in commit order, collapsing the transitions of one
/// batch into a single (first from, last to). Because the dispatcher is an ordinary effect, the
/// context's execution policy decides where observers run: on the sending thread (Context,
/// ThreadSafeContext) or on the executor (AsyncContext).
///
/// Adapters (the Boost.Signals2 `transitions()` signal) plug in as the machine's one sink,
/// told after the observers; this header knows nothing of them.

#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "trellis/machine/send_result.hpp"
#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/detail/access.hpp"
#include "trellis/reactive/detail/basic_context.hpp"

namespace trellis::detail {

/// What an adapter attaches to a machine (MachineCore::sink()) to be told every committed
/// transition, after the observers, for as long as the machine lives.
template <class S>
class TransitionSink {
 public:
  virtual ~TransitionSink() = default;
  /// Called like an observer, with the graph's lock held; may throw (the first exception of a
  /// delivery reaches the sender, as an observer's does).
  virtual void told(const S& from, const S& to) = 0;

 protected:
  TransitionSink() = default;
  TransitionSink(const TransitionSink&) = default;
  TransitionSink& operator=(const TransitionSink&) = default;
};

/// Whether `step` would accept `e` in `current`: a table answers from its rows and guards (no
/// update runs), any other transition function by being called.
template <class F, class S, class E>
bool would_accept(F& step, const S& current, const E& e) {
  if constexpr (requires { step.accepts(current, e); }) {
    return step.accepts(current, e);
  } else {
    return step(current, e).has_value();
  }
}

/// Whether `F` is a transition table over `S` and `E` (a machine keeps it as it is).
template <class F, class S, class E>
concept is_transition_table = requires(const F& f, const S& s, const E& e) {
  typename F::phase_type;
  { f.accepts(s, e) } -> std::same_as<bool>;
  { f(s, e) } -> std::same_as<std::optional<S>>;
  f.check_complete();
};

template <class S, class E>
class MachineCore {
 public:
  using Observer = std::function<void(const S&, const S&)>;

  MachineCore(Graph* g, Cell<S> cell)
      : g_(g), cell_(std::move(cell)), shared_(g->shared()), bare_(!shared_) {}
  MachineCore(const MachineCore&) = delete;
  MachineCore& operator=(const MachineCore&) = delete;
  virtual ~MachineCore() {
    GraphLock lock(g_);
    dispatcher_ = Effect{};
    cell_.dispose();
  }

  const Cell<S>& cell() const noexcept { return cell_; }

  /// Decides and commits one event (the transition function is inlined in the override).
  virtual SendResult send(const E& e) = 0;

  /// Whether `e` would be accepted now, without committing anything.
  virtual bool can(const E& e) = 0;

  std::uint64_t add_observer(Observer f) {
    GraphLock lock(g_);
    ensure_dispatcher();
    // It starts from the current state: it is told only transitions committed from now on.
    observers_.push_back(std::make_unique<Slot>(Slot{++last_id_, std::move(f), commits_}));
    set_watched(true);
    return last_id_;
  }

  void remove_observer(std::uint64_t id) noexcept {
    GraphLock lock(g_);
    for (auto& slot : observers_) {
      if (slot->id == id) {
        // A tombstone: the callable itself may be running (an observer dropping its own
        // handle), so it is destroyed by compact(), after the dispatch.
        slot->removed = true;
        removed_ = true;
        break;
      }
    }
    if (!dispatching_) compact();
  }

  /// The machine's sink, made by `make()` (a std::unique_ptr<TransitionSink<S>>) on first use.
  /// One per machine: the Boost.Signals2 edge (signals2/transitions.hpp) is its only user.
  template <class Make>
  TransitionSink<S>& sink(Make make) {
    GraphLock lock(g_);
    if (!sink_) {
      ensure_dispatcher();
      sink_ = make();
      set_watched(true);
    }
    return *sink_;
  }

 protected:
  /// The state cell, or disposed_error; call with the graph's lock held.
  [[gnu::always_inline]] CellNode<S>* live_cell() const { return live_node(cell_); }

  /// What `step` makes of `e` in state `current`: the new state, or nullopt with `result` set
  /// (Rejected: the step refused it; Unchanged: the same state, nothing to commit).
  template <class F>
  static std::optional<S> decide(F& step, const S& current, const E& e, SendResult& result) {
    std::optional<S> next = step(current, e);
    if (!next) {
      result = SendResult::Rejected;
    } else if (same_value(*next, current)) {
      result = SendResult::Unchanged;
      next.reset();
    }
    return next;
  }

  /// Commits `next` (a state different from the current one) and tells the graph.
  void commit(CellNode<S>* n, S&& next) {
    if (!watched_) {
      write_cell(n, std::move(next));
      return;
    }
    commit_observed(n, std::move(next));
  }

  /// commit() for a machine with observers: logs the transition and has it delivered.
  void commit_observed(CellNode<S>* n, S&& next) {
    std::exception_ptr first;
    if (!g_->in_batch() && !g_->has_executor() && !dispatching_ && log_.empty()) {
      // The common case, outside a batch on the sending thread: tell observers right away,
      // without going through the log. Dispatching starts before the effects run, so a send
      // made by one of them is logged and told after this transition, in commit order.
      S to = next;
      S from = exchange_cell_value(n, std::move(next));
      const std::uint64_t seq = ++commits_;
      dispatching_ = true;
      try {
        g_->written(n);  // effects and signals reading the state first
      } catch (...) {
        first = std::current_exception();
      }
      tell(from, to, seq, first);
      while (!log_.empty()) deliver(first);  // what effects and observers sent meanwhile
      dispatching_ = false;
      if (removed_) compact();
      if (first) std::rethrow_exception(first);
      return;
    }
    log_.push_back(Entry{cell_value(n), next, g_->current_batch(), ++commits_});
    (void)exchange_cell_value(n, std::move(next));
    try {
      g_->written(n);  // effects and signals reading the state first
    } catch (...) {
      first = std::current_exception();  // the transition is committed: still tell observers
    }
    if (!g_->in_batch() && !g_->has_executor()) {
      // Outside a batch, on the sending thread: tell observers now, unless this send comes
      // from an observer or an effect of a dispatch under way, which tells it once that
      // returns.
      if (!dispatching_) {
        try {
          dispatch();
        } catch (...) {
          if (!first) first = std::current_exception();
        }
      }
    } else {
      // At the end of the batch, or on the executor: the dispatcher effect runs then.
      try {
        run_at_flush(dispatcher_);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  Graph* g_;
  Cell<S> cell_;
  bool watched_ = false;  // has observers or a sink: commits go through commit_observed()
  const bool shared_;     // g_->shared()
  // Neither shared nor watched: a send needs no lock and tells no observer, one test on the
  // hot path. Written only while !shared_ (never after construction on a shared graph), so
  // it may be read before taking the lock.
  bool bare_;

  void set_watched(bool watched) noexcept {
    watched_ = watched;
    if (!shared_) bare_ = !watched;
  }

 private:
  struct Entry {
    S from;
    S to;
    std::uint64_t batch;  // 0: committed outside any batch, never merged
    std::uint64_t seq;    // commit number: observers registered since are not told it
  };
  struct Slot {
    std::uint64_t id;
    Observer fn;
    std::uint64_t since;  // commits_ at registration
    bool removed = false;
  };

  void ensure_dispatcher() {
    if (dispatcher_.active()) return;
    // An effect with no dependency: commit() requests its runs (batch end, executor).
    dispatcher_ = make_effect(g_, [this] { dispatch(); });
  }

  void dispatch() {
    if (dispatching_) return;
    dispatching_ = true;
    std::exception_ptr first;
    while (!log_.empty()) deliver(first);  // sends made by observers append to log_
    dispatching_ = false;
    if (removed_) compact();
    if (first) std::rethrow_exception(first);
  }

  void deliver(std::exception_ptr& first) {
    std::vector<Entry> batch;
    batch.swap(spare_);
    batch.swap(log_);  // log_ gets the spare capacity
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const S& from = batch[i].from;
      const std::uint64_t seq = batch[i].seq;
      std::size_t last = i;
      while (last + 1 < batch.size() && batch[i].batch != 0 &&
             batch[last + 1].batch == batch[i].batch)
        ++last;
      const S& to = batch[last].to;
      i = last;
      if (same_value(from, to)) continue;  // A -> B -> A inside one batch: nothing to tell
      tell(from, to, seq, first);
    }
    batch.clear();
    if (spare_.capacity() < batch.capacity()) spare_.swap(batch);
  }

  /// Calls every observer with one transition; the first exception is kept for later.
  void tell(const S& from, const S& to, std::uint64_t seq, std::exception_ptr& first) {
    for (std::size_t k = 0; k < observers_.size(); ++k) {
      Slot* slot = observers_[k].get();  // stable even if observers_ grows meanwhile
      if (slot->removed || slot->since >= seq) continue;  // dropped, or registered after seq
      try {
        slot->fn(from, to);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (sink_) {
      try {
        sink_->told(from, to);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
  }

  void compact() noexcept {
    removed_ = false;
    std::erase_if(observers_, [](const std::unique_ptr<Slot>& s) { return s->removed; });
    set_watched(!observers_.empty() || sink_ != nullptr);
  }

  bool removed_ = false;
  bool dispatching_ = false;
  std::uint64_t commits_ = 0;
  std::uint64_t last_id_ = 0;
  std::vector<Entry> log_;
  std::vector<Entry> spare_;
  std::vector<std::unique_ptr<Slot>> observers_;
  std::unique_ptr<TransitionSink<S>> sink_;
  Effect dispatcher_;
};

/// The core for one transition function type: `send` calls it directly, so it can be inlined
/// and its std::optional result stays in registers.
template <class S, class E, class F>
class MachineCoreFor final : public MachineCore<S, E> {
 public:
  MachineCoreFor(Graph* g, Cell<S> cell, F step)
      : MachineCore<S, E>(g, std::move(cell)), step_(std::move(step)) {}

  // The hot path. A bare machine (no lock, no observer: see bare_) decides and writes inline,
  // with no lock guard alive across the call, so it needs almost no saved registers; any other
  // send takes the general path out of line.
  SendResult send(const E& e) override {
    if (!this->bare_) [[unlikely]]
      return send_general(e);
    return decide_and_commit<true>(e);
  }

 private:
  [[gnu::noinline]] SendResult send_general(const E& e) {
    GraphLock lock(this->g_);
    return decide_and_commit<false>(e);
  }

  // Written out rather than through decide() and commit(): with them GCC 12 passes the
  // std::optional through memory (bench machine/StateMachine/send_lambda). Call with the
  // graph's lock held, if it has one; `Bare` when called on a bare machine.
  template <bool Bare>
  [[gnu::always_inline]] SendResult decide_and_commit(const E& e) {
    CellNode<S>* n = this->live_cell();
    std::optional<S> next = step_(cell_value(n), e);
    if (!next) return SendResult::Rejected;
    if (same_value(*next, cell_value(n))) return SendResult::Unchanged;
    if constexpr (Bare) {
      // !bare_ now means watched_ (the step registered an observer); testing bare_ again lets
      // the compiler drop the test when step_ is inlined.
      if (!this->bare_) [[unlikely]]
        return commit_observed_from(n, std::move(*next));
    } else if (this->watched_) {
      this->commit_observed(n, std::move(*next));
      return SendResult::Transitioned;
    }
    if (store_cell(n, std::move(*next))) [[unlikely]]
      return tell_readers(n);  // out of line: propagation would spill the path without readers
    return SendResult::Transitioned;
  }

  [[gnu::noinline]] static SendResult tell_readers(CellNode<S>* n) {
    n->graph->written(n);
    return SendResult::Transitioned;
  }

  // For the bare path: out of line, and taking the new state by value, since a reference to
  // the optional taken there would keep it in memory.
  [[gnu::noinline]] SendResult commit_observed_from(CellNode<S>* n, S next) {
    this->commit_observed(n, std::move(next));
    return SendResult::Transitioned;
  }

  // Public in MachineCore (what callers use); the override is an implementation detail.
  bool can(const E& e) override {
    GraphLock lock(this->g_);
    return would_accept(step_, cell_value(this->live_cell()), e);
  }

  F step_;
};

}  // namespace trellis::detail
