// The propagation algorithm (see include/trellis/reactive/detail/graph.hpp for the model).
// No recursion: every walk keeps its own position on GraphCore::stack_. No allocation on the
// propagate path once the stack, the queue and the link free list have grown.

#include "trellis/reactive/detail/graph.hpp"

#include <string>
#include <utility>

#include "trellis/reactive/errors.hpp"

namespace trellis::detail {

namespace {

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

// ---------------------------------------------------------------- link / unlink

Link* GraphCore::alloc_link() {
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

void GraphCore::add_link(Node* dep, Node* sub, Link* prev, Link* next) {
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

void GraphCore::unlink_from_dep(Link* l) noexcept {
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

void GraphCore::drop_deps_from(Node* n, Link* first) noexcept {
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

void GraphCore::drain_unwatched() noexcept {
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

void GraphCore::detach_subs(Node* n) {
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

// ---------------------------------------------------------------- push

void GraphCore::propagate_pending(Link* l, bool notify_watchers) {
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

void GraphCore::evaluate_failed(Node* n, Node* saved_sub, GraphCore* saved_graph) {
  active_sub = saved_sub;
  tl_graph_ = saved_graph;
  // Not cached: it re-evaluates when next used, and it keeps every dependency it had or
  // gained, so that a write to any of them still reaches it (and, through it, its watchers).
  n->flags = (n->flags & ~kEvaluating) | kFailed;
  if ((n->flags & kDisposed) != 0) disposed_in_evaluation(n);
}

bool GraphCore::evaluate_tail(Node* n, Link* stale, bool changed) {
  if (stale != nullptr) {
    drop_deps_from(n, stale);
    drain_unwatched();
  }
  if ((n->flags & kDisposed) != 0) {  // disposed itself while running
    disposed_in_evaluation(n);
    return false;
  }
  return changed;
}

bool GraphCore::check_dirty(Node* n) {
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
    end_walk();
    throw;
  }
  end_walk();
  return dirty;
}

bool GraphCore::check_dirty_from(Node* n, std::size_t base) {
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

void GraphCore::refresh_slow(Node* n) {
  const std::uint32_t f = n->flags;
  if ((f & kDisposed) != 0) throw_disposed(n);
  if ((f & kEvaluating) != 0) throw_cycle(n);
  if ((f & (kDirty | kFailed)) != 0 || check_dirty(n)) {
    if ((n->flags & kDisposed) != 0) throw_disposed(n);  // disposed by the check itself
    if (evaluate(n)) shallow_propagate(n);
    if ((n->flags & kDisposed) != 0) throw_disposed(n);
  }
}

}  // namespace trellis::detail
