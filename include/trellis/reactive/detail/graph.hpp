#pragma once
/// @file
/// The propagation algorithm: nodes, links and the walks over them. It knows nothing of values,
/// callables or threads; Cell, Computed, Signal and Effect plug their behaviour in through
/// `Node::update()`, and the contexts plug in a lock and an effect scheduler.
///
/// Model (push dirty marks, pull values):
/// - A write to a cell marks its direct subscribers Dirty and everything further downstream
///   Pending ("a dependency may have changed"); watchers (effects, eager signals) reached are
///   queued once. Nothing is evaluated on the way down.
/// - A read of a Dirty node re-evaluates it; a read of a Pending node first walks its
///   dependencies (check_dirty) to find out whether any of them really changed, refreshing them
///   bottom-up, so that an equal result cuts the propagation off (memo guard).
/// - The queue is flushed at the end of the outermost write or batch: each watcher is brought up
///   to date by the same pull, which makes the result glitch-free.
/// - A pull that reaches a node being evaluated (kEvaluating), whether by reading it or by
///   checking a node that depends on it, raises cycle_error: its cached value is about to change,
///   so nothing read through it now could be kept.
/// - Dependencies are re-tracked on every evaluation: links read again are reused in place,
///   links not read again are dropped, and a computed that loses its last subscriber drops its
///   own dependencies (it is re-evaluated when next read).
///
/// Every walk uses an explicit stack (a 100,000-deep chain must not overflow the C++ stack) held
/// by the graph and reused, so propagation allocates nothing once the stack has grown; links come
/// from a free list owned by the graph.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace trellis::detail {

class Graph;
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
  kHasHub = 1u << 8,      // has a Boost.Signals2 hub (subscribe)
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

/// A vertex of the graph. Lifetime: one reference is held by the graph while the node is live,
/// one by each handle; the last release deletes it.
struct Node {
  Link* deps = nullptr;
  Link* deps_tail = nullptr;  // during an evaluation: the last dependency confirmed so far
  Link* subs = nullptr;
  Link* subs_tail = nullptr;
  Graph* graph;  // null once the context is destroyed
  Node* live_prev = nullptr;
  Node* live_next = nullptr;
  std::uint32_t flags;
  std::uint32_t version = 0;  // counts evaluations (dependency tracking)
  std::uint32_t flush_stamp = 0;
  std::uint32_t flush_runs = 0;        // effect runs in the current flush (budget report)
  std::atomic<std::uint32_t> refs{2};  // the graph's and the first handle's

  Node(Graph* g, std::uint32_t f) noexcept;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node();

  /// Evaluates (computed) or runs (effect) the node's function; true if its value changed.
  virtual bool update() { return false; }
  /// Runs an effect's pending cleanup (may throw).
  virtual void cleanup() {}
  /// Called once when the node is disposed: drops the function and the value it holds.
  virtual void on_dispose() noexcept {}

  void retain() noexcept;
  void release() noexcept;
};

/// Where effect runs go when they are not run inline (AsyncContext).
class EffectScheduler {
 public:
  virtual ~EffectScheduler() = default;
  /// Runs `n` later; called under the graph's lock with `n` marked kQueued.
  virtual void schedule(Node* n) = 0;
};

/// The lock of a thread-safe graph. Re-entrant at no cost: a thread that already holds it (a
/// callback reading its own context) passes straight through, without touching the mutex.
class GraphMutex {
 public:
  /// Takes the lock; false if this thread already held it (then do not unlock).
  bool lock() {
    if (owner_.load(std::memory_order_relaxed) == &self_) return false;
    m_.lock();
    owner_.store(&self_, std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(nullptr, std::memory_order_relaxed);
    m_.unlock();
  }
  /// Whether the calling thread holds the lock now.
  bool held_by_me() const noexcept { return owner_.load(std::memory_order_relaxed) == &self_; }

 private:
  // The address of a thread_local identifies the running thread; owner_ is cleared before
  // every unlock, so it never holds the address of a thread that has ended.
  static inline constinit thread_local char self_ = 0;
  std::mutex m_;
  std::atomic<const char*> owner_{nullptr};
};

/// Type-erased owner of a node's Boost.Signals2 hub (see subscribe.hpp).
class HubBase {
 public:
  virtual ~HubBase() = default;
  /// The observed node was disposed: disconnect every slot.
  virtual void close() noexcept = 0;
};

[[noreturn]] void throw_disposed(const Node* n);
[[noreturn]] void throw_cycle(const Node* n);

/// One reactive graph and its algorithm. Not thread-safe by itself: a context that shares it
/// across threads sets `mutex`, and every entry point from a handle takes it.
///
/// The graph lives on the heap and is reference-counted by its context and by every node still
/// allocated, so that a handle that outlives its context still finds a (disposed) node and a
/// valid lock instead of a dangling pointer.
class Graph {
 public:
  explicit Graph(bool thread_safe) : mutex(thread_safe ? &mutex_storage_ : nullptr) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Execution policy, set once by the owning context.
  GraphMutex* const mutex;
  EffectScheduler* scheduler = nullptr;

  /// Whether nodes and the graph may be shared between threads (atomic reference counts).
  bool shared() const noexcept { return mutex != nullptr; }
  void retain() noexcept;
  void release() noexcept;
  /// The context is going away: dispose every node (effects first, running their cleanups).
  void shutdown() noexcept;

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

  Node* active_sub = nullptr;  // the evaluation that reads are tracked into
  int batch_depth = 0;
  std::uint64_t batch_seq = 0;  // counts outermost user batches (observers collapse per batch)
  std::size_t effect_budget = 1'000'000;

  /// Makes `n` live in this graph (the graph holds one reference).
  void adopt(Node* n) noexcept;
  std::size_t live_nodes() const noexcept { return live_count_; }

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

  /// A cell's value changed: mark downstream, and flush unless a batch or flush is open.
  void written(Node* cell) {
    if (cell->subs == nullptr) return;
    propagate(cell->subs, true);
    if (batch_depth == 0) flush();
  }

  /// Queues watcher `n` to run at the next flush even though no dependency changed.
  void request_run(Node* n) {
    n->flags |= kDirty;
    if ((n->flags & (kQueued | kDisposed)) == 0) notify(n);
  }

  /// Runs queued watchers (or hands effects to the scheduler) until the queue is empty.
  void flush() {
    if (queue_head_ < queue_.size() && !flushing_) flush_queue();
  }

  /// Opens a user batch (ctx.batch), or a nested one.
  void begin_batch() noexcept {
    if (user_batches_++ == 0) ++batch_seq;
    ++batch_depth;
  }
  /// The outermost user batch open now, or 0 outside any.
  std::uint64_t current_batch() const noexcept { return user_batches_ > 0 ? batch_seq : 0; }
  /// Ends a batch opened with begin_batch(); flushes at the outermost exit.
  void end_batch() {
    --user_batches_;
    if (--batch_depth == 0) flush();
  }
  /// Same, for a batch whose body threw: flush errors are dropped so the body's error wins.
  void end_batch_after_throw() noexcept;

  /// Creates the first run of a new effect or signal: evaluates now, or schedules the effect.
  void start_watcher(Node* n);
  /// Runs one scheduled effect (called by the scheduler, which must hold the lock).
  void run_scheduled(Node* n);
  /// Async budget window: runs counted since the scheduler was last idle.
  void reset_async_window() noexcept {
    async_runs_ = 0;
    ++async_epoch_;
  }

  /// Detaches `n` both ways; idempotent. Cleanup exceptions are rethrown after teardown.
  void dispose(Node* n);

  /// Subscription hubs (Boost.Signals2 edge), owned by the graph, keyed by node.
  HubBase* hub(Node* n) const noexcept;
  void set_hub(Node* n, std::shared_ptr<HubBase> h);

 private:
  void add_link(Node* dep, Node* sub, Link* prev, Link* next);
  Link* alloc_link();
  void free_link(Link* l) noexcept {
    l->next_dep = free_links_;
    free_links_ = l;
  }
  void unlink_from_dep(Link* l) noexcept;
  void drop_deps_from(Node* n, Link* first) noexcept;
  void drain_unwatched() noexcept;

  void refresh_slow(Node* n);
  bool check_dirty(Node* n);
  bool check_dirty_from(Node* n, std::size_t base);
  bool evaluate(Node* n);
  void evaluate_failed(Node* n, Node* saved_sub, Graph* saved_graph);
  bool evaluate_tail(Node* n, Link* stale, bool changed);
  /// `n` changed while being pulled: its pending subscribers (and those a cut-short check
  /// left to recheck, which no write may reach again) become dirty.
  static void shallow_propagate(Node* n) noexcept {
    for (Link* l = n->subs; l != nullptr; l = l->next_sub) {
      Node* s = l->sub;
      if ((s->flags & (kPending | kRecheck)) != 0) s->flags |= kDirty;
    }
  }
  /// A source changed: its direct subscribers become dirty, everything further down pending.
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
  void propagate_pending(Link* l, bool notify);
  void notify(Node* n) {
    n->flags |= kQueued;
    queue_.push_back(n);
  }
  void flush_queue();
  void abort_flush(Node* overran) noexcept;
  [[noreturn]] void throw_budget(std::size_t runs, const Node* last);
  bool needs_run(Node* n);
  void count_run(Node* n, std::uint32_t epoch) noexcept;
  void finish_dispose(Node* n);
  void finish_or_defer(Node* n);
  void run_deferred() noexcept;
  void detach_subs(Node* n);
  void unlive(Node* n) noexcept;
  ~Graph() = default;

  GraphMutex mutex_storage_;
  std::atomic<std::size_t> refs_{1};
  bool tearing_down_ = false;
  std::uint32_t async_epoch_ = 1;

  int user_batches_ = 0;
  std::vector<Node*> queue_;
  std::size_t queue_head_ = 0;
  bool flushing_ = false;
  std::uint32_t flush_epoch_ = 1;
  std::size_t async_runs_ = 0;

  LinkStack stack_;               // explicit stack of the walks
  std::vector<Node*> unwatched_;  // computeds that lost their last subscriber

  Link* free_links_ = nullptr;
  std::vector<std::unique_ptr<Link[]>> link_blocks_;

  Node* live_head_ = nullptr;
  std::size_t live_count_ = 0;

  std::vector<std::pair<Node*, std::shared_ptr<HubBase>>> hubs_;
  int walks_ = 0;                // check_dirty walks in progress (they hold links)
  std::vector<Node*> deferred_;  // disposals waiting for the walks to end
};

inline Node::Node(Graph* g, std::uint32_t f) noexcept : graph(g), flags(f) { g->retain(); }

inline void Node::retain() noexcept {
  if (graph->shared())
    refs.fetch_add(1, std::memory_order_relaxed);
  else
    refs.store(refs.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline void Node::release() noexcept {
  if (graph->shared()) {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  } else {
    const std::uint32_t left = refs.load(std::memory_order_relaxed) - 1;
    refs.store(left, std::memory_order_relaxed);
    if (left == 0) delete this;
  }
}

/// Takes the graph's lock if it has one (ThreadSafeContext, AsyncContext).
class GraphLock {
 public:
  explicit GraphLock(Graph* g) : m_(g->mutex != nullptr && g->mutex->lock() ? g->mutex : nullptr) {}
  GraphLock(const GraphLock&) = delete;
  GraphLock& operator=(const GraphLock&) = delete;
  ~GraphLock() {
    if (m_ != nullptr) m_->unlock();
  }

 private:
  GraphMutex* m_;
};

/// Suspends dependency tracking on this thread's innermost evaluation (see untracked()).
class UntrackScope {
 public:
  UntrackScope() noexcept;
  UntrackScope(const UntrackScope&) = delete;
  UntrackScope& operator=(const UntrackScope&) = delete;
  ~UntrackScope();

 private:
  Graph* graph_;
  Node* saved_;
};

}  // namespace trellis::detail
