#pragma once
/// @file
/// The propagation algorithm: nodes, links and the walks over them. It knows nothing of values,
/// callables, threads, queues being run or nodes being freed: Cell, Computed, Signal and Effect
/// plug their behaviour in through `Node::update()`; when watchers run is schedule.hpp's
/// business (GraphSchedule), how long nodes live is lifetime.hpp's (Graph, the type contexts
/// and handles hold). Everything here is GraphCore, the base of both.
///
/// Model (push dirty marks, pull values):
/// - A write to a cell marks its direct subscribers Dirty and everything further downstream
///   Pending ("a dependency may have changed"); watchers (effects, eager signals) reached are
///   queued once. Nothing is evaluated on the way down.
/// - A read of a Dirty node re-evaluates it; a read of a Pending node first walks its
///   dependencies (check_dirty) to find out whether any of them really changed, refreshing them
///   bottom-up, so that an equal result cuts the propagation off (memo guard).
/// - The queue is flushed at the end of the outermost write or batch (schedule.hpp): each
///   watcher is brought up to date by the same pull, which makes the result glitch-free.
/// - A pull that reaches a node being evaluated (kEvaluating), whether by reading it or by
///   checking a node that depends on it, raises cycle_error: its cached value is about to change,
///   so nothing read through it now could be kept.
/// - Dependencies are re-tracked on every evaluation: links read again are reused in place,
///   links not read again are dropped, and a computed that loses its last subscriber drops its
///   own dependencies (it is re-evaluated when next read).
///
/// No recursion in the algorithm: every walk (propagate, check_dirty, unlink) keeps its
/// position on an explicit stack held by the graph and reused, so a write to the head of a
/// 100,000-deep chain, and the pull that follows, do not grow the C++ stack. Evaluations nest
/// only through the user's callables: a callable that reads a value not yet up to date (a
/// computed never evaluated, whose dependencies are unknown) evaluates it from inside its own
/// evaluation.
/// No allocation on the propagate path: marking, queueing and checking allocate only when the
/// explicit stack or the queue outgrow their largest size so far. Links come from a free list
/// owned by the graph (a new dependency takes a block of 512 only when the list is empty); the
/// user's callables, run by evaluate(), may of course allocate.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace trellis::detail {

class Graph;  // lifetime.hpp: the complete graph (GraphCore + GraphSchedule + lifetime)
struct Node;

/// Node flags. A node's kind is fixed at creation; the state bits change as the graph runs.
enum : std::uint32_t {
  kComputed = 1u << 0,    // derives a value from its dependencies (computed, signal)
  kWatching = 1u << 1,    // queued when a dependency may have changed (effect, signal)
  kEffect = 1u << 2,      // runs for its side effects
  kDirty = 1u << 3,       // a direct dependency changed: must re-evaluate
  kPending = 1u << 4,     // a dependency further up may have changed: check before use
  kEvaluating = 1u << 5,  // its function is running now (a read of it now is a cycle)
  kQueued = 1u << 6,      // in the flush queue or scheduled on an executor
  kDisposed = 1u << 7,    // detached; reading it raises disposed_error
  kAttached = 1u << 8,    // has attachments (lifetime.hpp), dropped at dispose
  // After a failure (an exception, an aborted flush) a node cannot keep Dirty or Pending:
  // propagation stops at those marks, so the watchers below would never be queued again.
  // These marks say the same to readers but look clean to propagation.
  kFailed = 1u << 9,     // its last run threw: re-evaluate before use (as Dirty)
  kRecheck = 1u << 10,   // a check through it was cut short: check before use (as Pending)
  kDeferred = 1u << 11,  // disposed during a walk: detached once the walks have ended
};

/// An edge dep -> sub, threaded on two intrusive lists: dep's subscribers and sub's dependencies.
struct Link {
  Node* dep;
  Node* sub;
  Link* prev_sub;
  Link* next_sub;
  Link* prev_dep;
  Link* next_dep;
  std::uint32_t version;  // the sub's evaluation in which this link was last confirmed
};

/// The explicit stack of the graph walks: a bare growable array (push and pop are the inner
/// loop of every walk, so no per-operation bookkeeping beyond a capacity check).
class LinkStack {
 public:
  LinkStack() = default;
  LinkStack(const LinkStack&) = delete;
  LinkStack& operator=(const LinkStack&) = delete;
  ~LinkStack() { delete[] data_; }

  std::size_t size() const noexcept { return size_; }
  void push(Link* l) {
    if (size_ == cap_) [[unlikely]]
      grow();
    data_[size_++] = l;
  }
  Link* pop() noexcept { return data_[--size_]; }
  Link* at(std::size_t i) const noexcept { return data_[i]; }
  void truncate(std::size_t n) noexcept { size_ = n; }

 private:
  void grow() {
    const std::size_t cap = cap_ == 0 ? 64 : cap_ * 2;
    Link** data = new Link*[cap];
    for (std::size_t i = 0; i < size_; ++i) data[i] = data_[i];
    delete[] data_;
    data_ = data;
    cap_ = cap;
  }

  Link** data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

/// A vertex of the graph. Lifetime (lifetime.hpp): one reference is held by the graph while the
/// node is live, one by each handle; the last release deletes it.
struct Node {
  // The algorithm's
  Link* deps = nullptr;
  Link* deps_tail = nullptr;  // during an evaluation: the last dependency confirmed so far
  Link* subs = nullptr;
  Link* subs_tail = nullptr;
  Graph* graph;  // the owning graph (kept, disposed, once the context is destroyed)
  // lifetime.hpp's: the graph's list of live nodes
  Node* live_prev = nullptr;
  Node* live_next = nullptr;
  std::uint32_t flags;
  std::uint32_t version = 0;  // counts evaluations (dependency tracking)
  // schedule.hpp's: the effect budget's count of runs
  std::uint32_t flush_stamp = 0;
  std::uint32_t flush_runs = 0;        // effect runs in the current flush (budget report)
  std::atomic<std::uint32_t> refs{2};  // lifetime.hpp's: the graph's and the first handle's

  Node(Graph* g, std::uint32_t f) noexcept;  // lifetime.hpp
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node();

  /// Evaluates (computed) or runs (effect) the node's function; true if its value changed.
  virtual bool update() { return false; }
  /// Runs an effect's pending cleanup (may throw).
  virtual void cleanup() {}
  /// Called once when the node is disposed: drops the function and the value it holds.
  virtual void on_dispose() noexcept {}

  void retain() noexcept;   // lifetime.hpp
  void release() noexcept;  // lifetime.hpp
};

[[noreturn]] void throw_disposed(const Node* n);
[[noreturn]] void throw_cycle(const Node* n);

/// The algorithm over one graph's nodes. Not thread-safe by itself (schedule.hpp adds the lock)
/// and never instantiated alone: Graph (lifetime.hpp) is the one complete graph.
class GraphCore {
 public:
  GraphCore(const GraphCore&) = delete;
  GraphCore& operator=(const GraphCore&) = delete;

  Node* active_sub = nullptr;  // the evaluation that reads are tracked into

  /// Records that the running evaluation read `dep`.
  void track(Node* dep) {
    Node* sub = active_sub;
    Link* prev = sub->deps_tail;
    if (prev != nullptr && prev->dep == dep) return;
    Link* next = prev != nullptr ? prev->next_dep : sub->deps;
    if (next != nullptr && next->dep == dep) {
      next->version = sub->version;
      sub->deps_tail = next;
      return;
    }
    Link* last = dep->subs_tail;
    if (last != nullptr && last->sub == sub && last->version == sub->version) return;
    add_link(dep, sub, prev, next);
  }

  /// Brings a computed up to date before its value is read; throws on a cycle or disposal.
  void refresh(Node* n) {
    if ((n->flags & (kDirty | kPending | kEvaluating | kDisposed | kFailed | kRecheck)) != 0)
      refresh_slow(n);
  }

  /// Calls f with dependency tracking suspended (effect cleanups).
  template <class F>
  void call_untracked(F& f) {
    Node* saved = active_sub;
    active_sub = nullptr;
    try {
      f();
    } catch (...) {
      active_sub = saved;
      throw;
    }
    active_sub = saved;
  }

 protected:
  GraphCore() = default;
  ~GraphCore() = default;

  // The lifetime layer's hooks, called on rare paths only (a node disposed while the
  // algorithm held it).
  /// `n` was disposed while it was being evaluated: detach it now, or once the walks end.
  virtual void disposed_in_evaluation(Node* n) = 0;
  /// The last walk has ended and `disposals_waiting_` is set: detach what waited for it.
  virtual void walks_ended() noexcept = 0;

  // ---- push
  /// A source changed: its direct subscribers become dirty, everything further down pending;
  /// watchers reached are queued when `notify_watchers`.
  void propagate(Link* l, bool notify_watchers) {
    for (; l != nullptr; l = l->next_sub) {
      Node* s = l->sub;
      const std::uint32_t f = s->flags;
      s->flags = f | kDirty;
      if (notify_watchers && (f & (kWatching | kQueued | kDisposed)) == kWatching) notify(s);
      if ((f & (kDirty | kPending)) == 0 && (f & kComputed) != 0 && s->subs != nullptr)
        propagate_pending(s->subs, notify_watchers);
    }
  }
  void propagate_pending(Link* l, bool notify_watchers);
  /// `n` changed while being pulled: its pending subscribers (and those a cut-short check
  /// left to recheck, which no write may reach again) become dirty.
  static void shallow_propagate(Node* n) noexcept {
    for (Link* l = n->subs; l != nullptr; l = l->next_sub) {
      Node* s = l->sub;
      if ((s->flags & (kPending | kRecheck)) != 0) s->flags |= kDirty;
    }
  }
  /// Queues watcher `n` (the schedule drains queue_ at the flush).
  void notify(Node* n) {
    n->flags |= kQueued;
    queue_.push_back(n);
  }

  // ---- pull
  /// Re-evaluates `n` (tracking its reads); true if its value changed.
  bool evaluate(Node* n);
  /// Whether watcher `n` must run: dirty, or pending with a dependency that really changed.
  bool needs_run(Node* n) {
    const std::uint32_t f = n->flags;
    if ((f & (kDirty | kFailed)) != 0) return true;
    if ((f & (kPending | kRecheck)) != 0) return check_dirty(n);
    return false;
  }
  bool check_dirty(Node* n);

  // ---- link / unlink
  /// Unlinks `n` both ways: from its dependencies (a computed left with no subscriber drops
  /// its own) and from its subscribers, which become dirty (and fail when next evaluated) but
  /// are not run.
  void unlink(Node* n) {
    n->deps_tail = nullptr;
    if (Link* first = n->deps; first != nullptr) {
      drop_deps_from(n, first);
      drain_unwatched();
    }
    if (n->subs != nullptr) detach_subs(n);
  }
  /// Frees every link block at once (the context's end, when no edge survives).
  void free_all_links() noexcept {
    link_blocks_.clear();
    free_links_ = nullptr;
  }

  std::vector<Node*> queue_;        // watchers reached (kQueued), in order; drained by the schedule
  int walks_ = 0;                   // check_dirty walks in progress (they hold links)
  bool disposals_waiting_ = false;  // the lifetime layer waits for walks_ to reach 0

 private:
  void add_link(Node* dep, Node* sub, Link* prev, Link* next);
  /// Drops every dependency of `n` from `first` on (computeds left unwatched drop theirs).
  void drop_deps_from(Node* n, Link* first) noexcept;
  void drain_unwatched() noexcept;
  void detach_subs(Node* n);
  Link* alloc_link();
  void free_link(Link* l) noexcept {
    l->next_dep = free_links_;
    free_links_ = l;
  }
  void unlink_from_dep(Link* l) noexcept;

  void refresh_slow(Node* n);
  bool check_dirty_from(Node* n, std::size_t base);
  void evaluate_failed(Node* n, Node* saved_sub, GraphCore* saved_graph);
  bool evaluate_tail(Node* n, Link* stale, bool changed);
  void end_walk() noexcept {
    if (--walks_ == 0 && disposals_waiting_) [[unlikely]]
      walks_ended();
  }

  friend class UntrackScope;
  // The graph whose evaluation runs innermost on this thread (for untracked()).
  static inline constinit thread_local GraphCore* tl_graph_ = nullptr;

  LinkStack stack_;               // explicit stack of the walks
  std::vector<Node*> unwatched_;  // computeds that lost their last subscriber
  Link* free_links_ = nullptr;
  std::vector<std::unique_ptr<Link[]>> link_blocks_;
};

// Hot: called once per re-evaluation, by the pull walks here and by the flush (schedule.cpp),
// hence inline. The rare endings (an exception, dependencies dropped, a node that disposed
// itself) are out of line.
inline bool GraphCore::evaluate(Node* n) {
  if ((n->flags & kEvaluating) != 0) [[unlikely]]
    throw_cycle(n);
  Node* const saved_sub = active_sub;
  GraphCore* const saved_graph = tl_graph_;
  active_sub = n;
  tl_graph_ = this;
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
  tl_graph_ = saved_graph;
  const std::uint32_t f = n->flags & ~kEvaluating;
  n->flags = f;
  Link* stale = n->deps_tail != nullptr ? n->deps_tail->next_dep : n->deps;
  if (stale != nullptr || (f & kDisposed) != 0) [[unlikely]]
    return evaluate_tail(n, stale, changed);
  return changed;
}

/// Suspends dependency tracking on this thread's innermost evaluation (see untracked()).
class UntrackScope {
 public:
  UntrackScope() noexcept : graph_(GraphCore::tl_graph_), saved_(nullptr) {
    if (graph_ != nullptr) {
      saved_ = graph_->active_sub;
      graph_->active_sub = nullptr;
    }
  }
  UntrackScope(const UntrackScope&) = delete;
  UntrackScope& operator=(const UntrackScope&) = delete;
  ~UntrackScope() {
    if (graph_ != nullptr) graph_->active_sub = saved_;
  }

 private:
  GraphCore* graph_;
  Node* saved_;
};

}  // namespace trellis::detail
