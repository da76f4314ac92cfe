// The propagation algorithm (see include/trellis/reactive/detail/graph.hpp for the model).
// No recursion: every walk keeps its own position on Graph::stack_. No allocation on the
// propagate path once the stack, the queue and the link free list have grown.

#include "trellis/reactive/detail/graph.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "trellis/reactive/errors.hpp"

namespace trellis::detail {

namespace {

// The graph whose evaluation runs innermost on this thread (for untracked()).
thread_local Graph* tl_graph = nullptr;

const char* kind_of(const Node* n) {
  if ((n->flags & kEffect) != 0) return "effect";
  if ((n->flags & (kComputed | kWatching)) == (kComputed | kWatching)) return "signal";
  if ((n->flags & kComputed) != 0) return "computed";
  return "cell";
}

constexpr std::size_t kLinkBlock = 512;

}  // namespace

void throw_disposed(const Node* n) {
  throw disposed_error(std::string("trellis: this ") + kind_of(n) +
                       " is disposed (or its context was destroyed); it can no longer be read, "
                       "written or depended upon");
}

void throw_cycle(const Node* n) {
  throw cycle_error(std::string("trellis: cycle: a ") + kind_of(n) +
                    " was read while it was being evaluated (its function reads itself, directly "
                    "or through what depends on it, or a write it makes runs a signal or effect "
                    "that reads it)");
}

Node::~Node() { graph->release(); }

// ---------------------------------------------------------------- lifetime

void Graph::retain() noexcept {
  if (shared())
    refs_.fetch_add(1, std::memory_order_relaxed);
  else
    refs_.store(refs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void Graph::release() noexcept {
  if (shared()) {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  } else {
    const std::size_t left = refs_.load(std::memory_order_relaxed) - 1;
    refs_.store(left, std::memory_order_relaxed);
    if (left == 0) delete this;
  }
}

void Graph::adopt(Node* n) noexcept {
  n->live_next = live_head_;
  if (live_head_ != nullptr) live_head_->live_prev = n;
  live_head_ = n;
  ++live_count_;
}

void Graph::unlive(Node* n) noexcept {
  if (n->live_prev != nullptr)
    n->live_prev->live_next = n->live_next;
  else
    live_head_ = n->live_next;
  if (n->live_next != nullptr) n->live_next->live_prev = n->live_prev;
  n->live_prev = n->live_next = nullptr;
  --live_count_;
}

void Graph::shutdown() noexcept {
  GraphLock lock(this);
  scheduler = nullptr;
  // Effects first, on an intact graph, so that their cleanups may still read cells.
  std::vector<Node*> effects;
  for (Node* n = live_head_; n != nullptr; n = n->live_next) {
    if ((n->flags & kEffect) != 0) {
      n->retain();
      effects.push_back(n);
    }
  }
  for (Node* e : effects) {
    try {
      dispose(e);
    } catch (...) {  // a cleanup that throws while the context dies has nobody to tell
    }
    e->release();
  }
  hubs_.clear();
  // Watchers an aborted flush left queued: the disposed ones are released by their dequeue.
  for (std::size_t i = queue_head_; i < queue_.size(); ++i) {
    Node* n = queue_[i];
    n->flags &= ~kQueued;
    if ((n->flags & kDisposed) != 0) n->release();  // live ones are released below
  }
  queue_.clear();
  queue_head_ = 0;
  // The rest: no edge survives, so nothing needs unlinking one by one.
  tearing_down_ = true;
  while (live_head_ != nullptr) {
    Node* n = live_head_;
    unlive(n);
    n->flags = (n->flags | kDisposed) & ~kQueued;
    n->deps = n->deps_tail = n->subs = n->subs_tail = nullptr;
    n->on_dispose();
    n->release();
  }
  queue_.clear();
  queue_head_ = 0;
  link_blocks_.clear();
  free_links_ = nullptr;
}

// ---------------------------------------------------------------- links

Link* Graph::alloc_link() {
  if (free_links_ == nullptr) {
    auto block = std::make_unique<Link[]>(kLinkBlock);
    for (std::size_t i = 0; i + 1 < kLinkBlock; ++i) block[i].next_dep = &block[i + 1];
    block[kLinkBlock - 1].next_dep = nullptr;
    free_links_ = &block[0];
    link_blocks_.push_back(std::move(block));
  }
  Link* l = free_links_;
  free_links_ = l->next_dep;
  return l;
}

void Graph::add_link(Node* dep, Node* sub, Link* prev, Link* next) {
  Link* l = alloc_link();
  l->dep = dep;
  l->sub = sub;
  l->version = sub->version;
  l->prev_dep = prev;
  l->next_dep = next;
  if (next != nullptr) next->prev_dep = l;
  if (prev != nullptr)
    prev->next_dep = l;
  else
    sub->deps = l;
  sub->deps_tail = l;
  Link* last = dep->subs_tail;
  l->prev_sub = last;
  l->next_sub = nullptr;
  if (last != nullptr)
    last->next_sub = l;
  else
    dep->subs = l;
  dep->subs_tail = l;
}

void Graph::unlink_from_dep(Link* l) noexcept {
  Node* dep = l->dep;
  if (l->prev_sub != nullptr)
    l->prev_sub->next_sub = l->next_sub;
  else
    dep->subs = l->next_sub;
  if (l->next_sub != nullptr)
    l->next_sub->prev_sub = l->prev_sub;
  else
    dep->subs_tail = l->prev_sub;
  // A computed nobody watches any more lets go of its own inputs (re-evaluated when next read).
  if (dep->subs == nullptr && (dep->flags & (kComputed | kWatching | kDisposed)) == kComputed)
    unwatched_.push_back(dep);
}

void Graph::drop_deps_from(Node* n, Link* first) noexcept {
  if (first == nullptr) return;
  if (first->prev_dep != nullptr)
    first->prev_dep->next_dep = nullptr;
  else
    n->deps = nullptr;
  for (Link* l = first; l != nullptr;) {
    Link* next = l->next_dep;
    unlink_from_dep(l);
    free_link(l);
    l = next;
  }
}

void Graph::drain_unwatched() noexcept {
  while (!unwatched_.empty()) {
    Node* d = unwatched_.back();
    unwatched_.pop_back();
    if (d->subs != nullptr || (d->flags & (kDisposed | kEvaluating)) != 0) continue;
    Link* first = d->deps;
    d->deps_tail = nullptr;
    drop_deps_from(d, first);
    d->flags = (d->flags & ~kPending) | kDirty;
  }
}

// ---------------------------------------------------------------- push

void Graph::propagate_pending(Link* l, bool notify_watchers) {
  const std::size_t base = stack_.size();
  for (;;) {
    Node* s = l->sub;
    const std::uint32_t f = s->flags;
    Link* down = nullptr;
    if ((f & (kDirty | kPending)) == 0) {
      s->flags = f | kPending;
      if ((f & kComputed) != 0) down = s->subs;
    }
    if (notify_watchers && (f & (kWatching | kQueued | kDisposed)) == kWatching) notify(s);
    Link* next = l->next_sub;
    if (down != nullptr) {
      if (next != nullptr) stack_.push(next);
      l = down;
      continue;
    }
    if (next != nullptr) {
      l = next;
      continue;
    }
    if (stack_.size() == base) return;
    l = stack_.pop();
  }
}

// ---------------------------------------------------------------- pull

// Hot: called once per re-evaluation. The rare endings (an exception, dependencies dropped, a
// node that disposed itself) are out of line.
inline bool Graph::evaluate(Node* n) {
  if ((n->flags & kEvaluating) != 0) [[unlikely]]
    throw_cycle(n);
  Node* const saved_sub = active_sub;
  Graph* const saved_graph = tl_graph;
  active_sub = n;
  tl_graph = this;
  ++n->version;
  n->deps_tail = nullptr;
  n->flags = (n->flags & ~(kDirty | kPending | kFailed | kRecheck)) | kEvaluating;
  bool changed;
  try {
    changed = n->update();
  } catch (...) {
    evaluate_failed(n, saved_sub, saved_graph);
    throw;
  }
  active_sub = saved_sub;
  tl_graph = saved_graph;
  const std::uint32_t f = n->flags & ~kEvaluating;
  n->flags = f;
  Link* stale = n->deps_tail != nullptr ? n->deps_tail->next_dep : n->deps;
  if (stale != nullptr || (f & kDisposed) != 0) [[unlikely]]
    return evaluate_tail(n, stale, changed);
  return changed;
}

void Graph::evaluate_failed(Node* n, Node* saved_sub, Graph* saved_graph) {
  active_sub = saved_sub;
  tl_graph = saved_graph;
  // Not cached: it re-evaluates when next used, and it keeps every dependency it had or
  // gained, so that a write to any of them still reaches it (and, through it, its watchers).
  n->flags = (n->flags & ~kEvaluating) | kFailed;
  if ((n->flags & kDisposed) != 0) finish_or_defer(n);
}

bool Graph::evaluate_tail(Node* n, Link* stale, bool changed) {
  if (stale != nullptr) {
    drop_deps_from(n, stale);
    drain_unwatched();
  }
  if ((n->flags & kDisposed) != 0) {  // disposed itself while running
    finish_or_defer(n);
    return false;
  }
  return changed;
}

bool Graph::check_dirty(Node* n) {
  const std::size_t base = stack_.size();
  ++walks_;
  bool dirty;
  try {
    dirty = check_dirty_from(n, base);
  } catch (...) {
    // The walk was cut short: the nodes on it and the node it started from keep no Pending
    // mark (propagation would stop at it) but must be checked again before use.
    for (std::size_t i = base; i < stack_.size(); ++i) {
      Node* d = stack_.at(i)->dep;
      d->flags = (d->flags & ~kPending) | kRecheck;
    }
    if ((n->flags & (kDirty | kFailed)) == 0) n->flags = (n->flags & ~kPending) | kRecheck;
    stack_.truncate(base);
    if (--walks_ == 0) run_deferred();
    throw;
  }
  if (--walks_ == 0) run_deferred();
  return dirty;
}

bool Graph::check_dirty_from(Node* n, std::size_t base) {
  Link* l = n->deps;
  for (;;) {
    bool dirty = (n->flags & kDirty) != 0;
    while (!dirty && l != nullptr) {
      Node* d = l->dep;
      const std::uint32_t df = d->flags;
      if ((df & (kDisposed | kEvaluating)) != 0) [[unlikely]] {
        // Being evaluated: what is read now depends on a value still being computed (a cycle,
        // or a flush run by a write inside that computation). Its cached value would be stale,
        // and the marks cleared on this walk would hide the change when it lands.
        if ((df & kDisposed) == 0) throw_cycle(d);
        // Disposed during this walk (its detaching waits for the walk's end, which marks n
        // dirty without running anything): it changes nothing now.
        l = l->next_dep;
      } else if ((df & (kDirty | kFailed)) != 0) {
        if (evaluate(d)) shallow_propagate(d);
        dirty = (n->flags & kDirty) != 0;
        if (!dirty) l = l->next_dep;
      } else if ((df & (kPending | kRecheck)) != 0) {
        stack_.push(l);  // resume n at l's successor once d is settled
        n = d;
        l = d->deps;
      } else {
        l = l->next_dep;
      }
    }
    if (!dirty) n->flags &= ~(kPending | kRecheck);
    if (stack_.size() == base) return dirty;
    Link* up = stack_.pop();
    Node* parent = up->sub;
    Link* next = up->next_dep;
    if (dirty && (n->flags & kDisposed) == 0 && evaluate(n))
      shallow_propagate(n);  // marks parent dirty if n changed
    n = parent;
    l = next;
  }
}

void Graph::refresh_slow(Node* n) {
  const std::uint32_t f = n->flags;
  if ((f & kDisposed) != 0) throw_disposed(n);
  if ((f & kEvaluating) != 0) throw_cycle(n);
  if ((f & (kDirty | kFailed)) != 0 || check_dirty(n)) {
    if ((n->flags & kDisposed) != 0) throw_disposed(n);  // disposed by the check itself
    if (evaluate(n)) shallow_propagate(n);
    if ((n->flags & kDisposed) != 0) throw_disposed(n);
  }
}

// ---------------------------------------------------------------- flush

inline bool Graph::needs_run(Node* n) {
  const std::uint32_t f = n->flags;
  if ((f & (kDirty | kFailed)) != 0) return true;
  if ((f & (kPending | kRecheck)) != 0) return check_dirty(n);
  return false;
}

inline void Graph::count_run(Node* n, std::uint32_t epoch) noexcept {
  if (n->flush_stamp != epoch) {
    n->flush_stamp = epoch;
    n->flush_runs = 0;
  }
  ++n->flush_runs;
}

void Graph::throw_budget(std::size_t runs, const Node* last) {
  // The effect that overran the budget is the one that keeps being re-queued: report it.
  const std::uint32_t busiest = last->flush_runs;
  throw budget_error("trellis: effect budget exceeded: " + std::to_string(runs) +
                     " effect runs without settling (budget " + std::to_string(effect_budget) +
                     "); the busiest effect ran " + std::to_string(busiest) +
                     " times. An effect that writes what it reads loops; raise the budget with "
                     "set_effect_budget() if the work is legitimate");
}

void Graph::abort_flush(Node* overran) noexcept {
  // The watchers not run yet stay queued: the next flush (the next write) runs them. The
  // effect that overran the budget is marked to run again when next reached.
  overran->flags = (overran->flags & ~(kDirty | kPending)) | kFailed;
  flushing_ = false;
}

void Graph::flush_queue() {
  flushing_ = true;
  ++flush_epoch_;
  std::size_t runs = 0;
  std::exception_ptr first;
  // With a scheduler (AsyncContext) effects are handed over and stay queued until they run.
  const std::uint32_t handed_over = scheduler != nullptr ? std::uint32_t{kEffect} : 0u;
  while (queue_head_ < queue_.size()) {
    Node* n = queue_[queue_head_++];
    if ((n->flags & (kDisposed | handed_over)) != 0) [[unlikely]] {
      if ((n->flags & kDisposed) != 0) {
        n->flags &= ~kQueued;
        n->release();
      } else {
        scheduler->schedule(n);
      }
      continue;
    }
    n->flags &= ~kQueued;
    try {
      if (!needs_run(n) || (n->flags & kDisposed) != 0) continue;
      if ((n->flags & kEffect) != 0) {
        if (++runs > effect_budget) {
          count_run(n, flush_epoch_);
          abort_flush(n);
          throw_budget(runs, n);
        }
        count_run(n, flush_epoch_);
        evaluate(n);
      } else if (evaluate(n)) {
        shallow_propagate(n);
      }
    } catch (const budget_error&) {
      throw;
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  queue_.clear();
  queue_head_ = 0;
  flushing_ = false;
  if (first) std::rethrow_exception(first);
}

void Graph::end_batch_after_throw() noexcept {
  --user_batches_;
  if (--batch_depth != 0) return;
  try {
    flush();
  } catch (...) {  // the body's exception is the one the caller sees
  }
}

void Graph::start_watcher(Node* n) {
  if ((n->flags & kEffect) != 0 && scheduler != nullptr) {
    n->flags |= kQueued;
    scheduler->schedule(n);
    return;
  }
  if ((n->flags & kEffect) != 0) count_run(n, flush_epoch_);
  // Writes made by the first run are queued, not re-entered: flush once it has returned.
  ++batch_depth;
  try {
    evaluate(n);
  } catch (...) {
    --batch_depth;
    throw;
  }
  if (--batch_depth == 0) flush();
}

void Graph::run_scheduled(Node* n) {
  n->flags &= ~kQueued;
  if ((n->flags & kDisposed) != 0) {
    n->release();
    return;
  }
  // The run's own writes flush once, after it (like a batch, but not a user batch).
  ++batch_depth;
  try {
    if (needs_run(n) && (n->flags & kDisposed) == 0) {
      if (++async_runs_ > effect_budget) {
        count_run(n, async_epoch_);
        throw_budget(async_runs_, n);
      }
      count_run(n, async_epoch_);
      evaluate(n);
    }
  } catch (...) {
    if (--batch_depth == 0) {
      try {
        flush();
      } catch (...) {  // the run's own error is the one reported
      }
    }
    throw;
  }
  if (--batch_depth == 0) flush();
}

// ---------------------------------------------------------------- dispose

void Graph::dispose(Node* n) {
  if ((n->flags & kDisposed) != 0 || tearing_down_) return;
  n->flags |= kDisposed;
  if ((n->flags & kEvaluating) != 0) return;  // evaluate() finishes the job
  finish_or_defer(n);
}

void Graph::finish_or_defer(Node* n) {
  if ((n->flags & kDeferred) != 0) return;  // already waiting for the walks to end
  if (walks_ > 0) {  // a walk may hold this node's links: detach them once it has ended
    n->flags |= kDeferred;
    deferred_.push_back(n);
    return;
  }
  finish_dispose(n);
}

void Graph::run_deferred() noexcept {
  while (!deferred_.empty()) {
    Node* n = deferred_.back();
    deferred_.pop_back();
    try {
      finish_dispose(n);
    } catch (...) {  // a cleanup's error: the dispose call that asked for it has returned
    }
  }
}

void Graph::detach_subs(Node* n) {
  Link* l = n->subs;
  n->subs = n->subs_tail = nullptr;
  while (l != nullptr) {
    Link* next = l->next_sub;
    Node* s = l->sub;
    if (l->prev_dep != nullptr)
      l->prev_dep->next_dep = l->next_dep;
    else
      s->deps = l->next_dep;
    if (l->next_dep != nullptr) l->next_dep->prev_dep = l->prev_dep;
    if (s->deps_tail == l) s->deps_tail = l->prev_dep;
    // The subscriber lost an input: it must re-evaluate (and fail) when next read, but the
    // dispose itself runs no effect.
    const std::uint32_t f = s->flags;
    s->flags = f | kDirty;
    if ((f & (kDirty | kPending)) == 0 && (f & kComputed) != 0 && s->subs != nullptr)
      propagate_pending(s->subs, false);
    free_link(l);
    l = next;
  }
}

void Graph::finish_dispose(Node* n) {
  std::exception_ptr err;
  try {
    n->cleanup();
  } catch (...) {
    err = std::current_exception();
  }
  Link* first = n->deps;
  n->deps_tail = nullptr;
  drop_deps_from(n, first);
  drain_unwatched();
  detach_subs(n);
  if ((n->flags & kHasHub) != 0) {
    n->flags &= ~kHasHub;
    auto it = std::find_if(hubs_.begin(), hubs_.end(), [n](const auto& h) { return h.first == n; });
    if (it != hubs_.end()) {
      std::shared_ptr<HubBase> hub = std::move(it->second);
      hubs_.erase(it);
      hub->close();  // every slot disconnected, even one being called now
      hub.reset();   // disposes the hub's watcher (unless it is emitting: then after that)
    }
  }
  unlive(n);
  n->on_dispose();
  if ((n->flags & kQueued) == 0) n->release();  // else the queue releases it
  if (err) std::rethrow_exception(err);
}

HubBase* Graph::hub(Node* n) const noexcept {
  for (const auto& [node, hub] : hubs_)
    if (node == n) return hub.get();
  return nullptr;
}

void Graph::set_hub(Node* n, std::shared_ptr<HubBase> h) {
  hubs_.emplace_back(n, std::move(h));
  n->flags |= kHasHub;
}

// ---------------------------------------------------------------- untracked

UntrackScope::UntrackScope() noexcept : graph_(tl_graph), saved_(nullptr) {
  if (graph_ != nullptr) {
    saved_ = graph_->active_sub;
    graph_->active_sub = nullptr;
  }
}

UntrackScope::~UntrackScope() {
  if (graph_ != nullptr) graph_->active_sub = saved_;
}

}  // namespace trellis::detail
