#pragma once
/// @file
/// What every state machine runner shares: the state cell, the transition function, and the
/// observer dispatch. Observers do not hang off the propagation path one by one: while a
/// machine has observers, each committed transition is logged, and one effect per machine
/// (the dispatcher) delivers the log to them in commit order, collapsing the transitions of one
/// batch into a single (first from, last to). Because the dispatcher is an ordinary effect, the
/// context's execution policy decides where observers run: on the sending thread (Context,
/// ThreadSafeContext) or on the executor (AsyncContext).

#include <boost/signals2/signal.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "trellis/machine/send_result.hpp"
#include "trellis/reactive/cell.hpp"
#include "trellis/reactive/detail/basic_context.hpp"

namespace trellis::detail {

template <class S, class E>
class MachineCore {
 public:
  using Step = std::function<std::optional<S>(const S&, const E&)>;
  using Observer = std::function<void(const S&, const S&)>;
  using TransitionSignal = boost::signals2::signal<void(const S&, const S&)>;

  MachineCore(Graph* g, Cell<S> cell, Step step)
      : g_(g), cell_(std::move(cell)), step_(std::move(step)) {}
  MachineCore(const MachineCore&) = delete;
  MachineCore& operator=(const MachineCore&) = delete;
  ~MachineCore() {
    GraphLock lock(g_);
    dispatcher_ = Effect{};
    cell_.dispose();
  }

  const Cell<S>& cell() const noexcept { return cell_; }

  SendResult send(const E& e) {
    GraphLock lock(g_);
    CellNode<S>* n = cell_.node();
    if ((n->flags & kDisposed) != 0) [[unlikely]]
      throw_disposed(n);
    std::optional<S> next = step_(std::as_const(n->value), e);
    if (!next) return SendResult::Rejected;
    if (same_value(*next, n->value)) return SendResult::Unchanged;
    if (watched_) log_.push_back(Entry{n->value, *next, g_->current_batch()});
    n->value = std::move(*next);
    g_->written(n);  // observers run here (or are scheduled), after the commit
    return SendResult::Transitioned;
  }

  std::uint64_t add_observer(Observer f) {
    GraphLock lock(g_);
    ensure_dispatcher();
    observers_.push_back(std::make_unique<Slot>(Slot{++last_id_, std::move(f)}));
    watched_ = true;
    return last_id_;
  }

  void remove_observer(std::uint64_t id) noexcept {
    GraphLock lock(g_);
    for (auto& slot : observers_) {
      if (slot->id == id) {
        slot->fn = nullptr;  // a tombstone while a dispatch may be running
        break;
      }
    }
    if (!dispatching_) compact();
  }

  TransitionSignal& transitions() {
    GraphLock lock(g_);
    if (!signal_) {
      ensure_dispatcher();
      signal_ = std::make_unique<TransitionSignal>();
      watched_ = true;
    }
    return *signal_;
  }

 private:
  struct Entry {
    S from;
    S to;
    std::uint64_t batch;  // 0: committed outside any batch, never merged
  };
  struct Slot {
    std::uint64_t id;
    Observer fn;
  };

  void ensure_dispatcher() {
    if (dispatcher_.active()) return;
    dispatcher_ = make_effect(g_, [this] {
      (void)cell_.get();  // depend on the state: a commit queues this effect
      dispatch();
    });
  }

  void dispatch() {
    if (log_.empty()) return;
    std::vector<Entry> batch;
    batch.swap(log_);  // sends made by observers go to the next run
    dispatching_ = true;
    std::exception_ptr first;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const S& from = batch[i].from;
      std::size_t last = i;
      while (last + 1 < batch.size() && batch[i].batch != 0 &&
             batch[last + 1].batch == batch[i].batch)
        ++last;
      const S& to = batch[last].to;
      i = last;
      if (same_value(from, to)) continue;  // A -> B -> A inside one batch: nothing to tell
      // Observers added during this dispatch start from the current state: not told this one.
      const std::size_t count = observers_.size();
      for (std::size_t k = 0; k < count; ++k) {
        Slot* slot = observers_[k].get();  // stable even if observers_ grows meanwhile
        if (!slot->fn) continue;
        try {
          slot->fn(from, to);
        } catch (...) {
          if (!first) first = std::current_exception();
        }
      }
      if (signal_) {
        try {
          (*signal_)(from, to);
        } catch (...) {
          if (!first) first = std::current_exception();
        }
      }
    }
    dispatching_ = false;
    compact();
    if (first) std::rethrow_exception(first);
  }

  void compact() noexcept {
    std::erase_if(observers_, [](const std::unique_ptr<Slot>& s) { return !s->fn; });
    watched_ = !observers_.empty() || signal_ != nullptr;
  }

  Graph* g_;
  Cell<S> cell_;
  Step step_;
  bool watched_ = false;
  bool dispatching_ = false;
  std::uint64_t last_id_ = 0;
  std::vector<Entry> log_;
  std::vector<std::unique_ptr<Slot>> observers_;
  std::unique_ptr<TransitionSignal> signal_;
  Effect dispatcher_;
};

}  // namespace trellis::detail
