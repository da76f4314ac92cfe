#pragma once
/// @file
/// How long nodes and the graph live, and `Graph`, the complete graph that contexts and handles
/// hold (the algorithm of graph.hpp, the execution policy of schedule.hpp, and this).
///
/// - Reference counts: a node is held by its graph while live and by each handle; the graph is
///   held by its context and by every node still allocated, so that a handle that outlives its
///   context still finds a (disposed) node and a valid lock instead of a dangling pointer. The
///   counts are atomic only in a shared (thread-safe) graph.
/// - Dispose detaches a node both ways, runs an effect's last cleanup and drops its callable
///   and value. A node disposed while a walk holds its links (its own evaluation, a dirty check
///   through it) is detached once the walks have ended (deferred disposal).
/// - Attachments: what a layer above keeps alongside a node (subscribe()'s signal hub) lives
///   until the node is disposed, and is told so.
/// - Shutdown (the context's end) disposes effects first, on an intact graph so that their
///   cleanups may still read cells, then everything else at once.

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "trellis/reactive/detail/graph.hpp"
#include "trellis/reactive/detail/schedule.hpp"

namespace trellis::detail {

/// Something a layer above keeps alongside one node, for as long as the node lives.
class Attachment {
 public:
  virtual ~Attachment() = default;
  /// The node is being disposed (called under the graph's lock, before the graph drops its
  /// reference to this attachment): let go of whatever still refers to the node.
  virtual void detach() noexcept {}
};

/// One reactive graph: the algorithm, its execution policy and the lifetime of its nodes.
class Graph final : public GraphSchedule {
 public:
  explicit Graph(bool thread_safe) : GraphSchedule(thread_safe) {}

  void retain() noexcept;
  void release() noexcept;
  /// The context is going away: dispose every node (effects first, running their cleanups).
  void shutdown() noexcept;

  /// Makes `n` live in this graph (the graph holds one reference).
  void adopt(Node* n) noexcept;
  std::size_t live_nodes() const noexcept { return live_count_; }

  /// Detaches `n` both ways; idempotent. Cleanup exceptions are rethrown after teardown.
  void dispose(Node* n);

  /// The attachment stored under `key` on `n`, or null.
  Attachment* attachment(const Node* n, const void* key) const noexcept;
  /// Stores `a` under `key` on `n` (replacing, and detaching, any previous one) until `n` is
  /// disposed or the context ends; then detach() is called and the graph drops `a`. Throws
  /// disposed_error if `n` is disposed already.
  void attach(Node* n, const void* key, std::shared_ptr<Attachment> a);

 private:
  ~Graph() = default;

  void disposed_in_evaluation(Node* n) override { finish_or_defer(n); }
  void walks_ended() noexcept override { run_deferred(); }
  void finish_or_defer(Node* n);
  void finish_dispose(Node* n);
  void run_deferred() noexcept;
  void drop_attachments(Node* n) noexcept;
  void unlive(Node* n) noexcept;

  struct Attached {
    Node* node;
    const void* key;
    std::shared_ptr<Attachment> value;
  };

  std::atomic<std::size_t> refs_{1};
  bool tearing_down_ = false;
  Node* live_head_ = nullptr;
  std::size_t live_count_ = 0;
  std::vector<Node*> deferred_;  // disposals waiting for the walks to end
  std::vector<Attached> attachments_;
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

}  // namespace trellis::detail
