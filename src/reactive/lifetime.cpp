// How long nodes and the graph live (see include/trellis/reactive/detail/lifetime.hpp).

#include "trellis/reactive/detail/lifetime.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace trellis::detail {

Node::~Node() { graph->release(); }

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
    disposals_waiting_ = true;
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
  disposals_waiting_ = false;
}

void Graph::finish_dispose(Node* n) {
  std::exception_ptr err;
  try {
    n->cleanup();
  } catch (...) {
    err = std::current_exception();
  }
  unlink(n);
  if ((n->flags & kAttached) != 0) drop_attachments(n);
  unlive(n);
  n->on_dispose();
  if ((n->flags & kQueued) == 0) n->release();  // else the queue releases it
  if (err) std::rethrow_exception(err);
}

// ---------------------------------------------------------------- attachments

Attachment* Graph::attachment(const Node* n, const void* key) const noexcept {
  if ((n->flags & kAttached) == 0) return nullptr;
  for (const Attached& a : attachments_)
    if (a.node == n && a.key == key) return a.value.get();
  return nullptr;
}

void Graph::attach(Node* n, const void* key, std::shared_ptr<Attachment> a) {
  if ((n->flags & kDisposed) != 0) throw_disposed(n);
  for (Attached& old : attachments_) {
    if (old.node == n && old.key == key) {
      std::shared_ptr<Attachment> dropped = std::exchange(old.value, std::move(a));
      dropped->detach();
      return;  // `dropped` goes last, once the new one is in place
    }
  }
  attachments_.push_back(Attached{n, key, std::move(a)});
  n->flags |= kAttached;
}

void Graph::drop_attachments(Node* n) noexcept {
  n->flags &= ~kAttached;
  // Taken out of the list before they are told or dropped: dropping one may dispose other
  // nodes (subscribe()'s hub owns an effect), which re-enters this list.
  std::vector<std::shared_ptr<Attachment>> dropped;
  for (auto it = attachments_.begin(); it != attachments_.end();) {
    if (it->node == n) {
      dropped.push_back(std::move(it->value));
      it = attachments_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& a : dropped) a->detach();  // e.g. every slot disconnected, even a running one
  // Dropped here: an attachment whose callback is running (a slot disposing the node it
  // observes) is kept by that call until it returns.
}

// ---------------------------------------------------------------- shutdown

void Graph::shutdown() noexcept {
  GraphLock lock(this);
  scheduler_ = nullptr;
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
  {  // taken out first: dropping one may dispose (already disposed) effects again
    std::vector<Attached> dropped = std::move(attachments_);
    attachments_.clear();
    for (const Attached& a : dropped) a.value->detach();
  }
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
  free_all_links();
}

}  // namespace trellis::detail
