#pragma once
/// @file
/// The reference-counted pointer every node handle is built on: copying a handle shares the
/// node, the last handle (and the graph, until dispose) keeps it allocated.

#include <utility>

#include "trellis/reactive/detail/lifetime.hpp"

namespace trellis::detail {

/// The one friend of every public handle: reaches the node behind it (access.hpp).
struct access;

/// Tag: the handle takes over the first-handle reference a new node is born with.
struct adopt_t {
  explicit adopt_t() = default;
};
inline constexpr adopt_t adopt{};

template <class N>
class NodeHandle {
 public:
  NodeHandle(adopt_t, N* n) noexcept : n_(n) {}
  NodeHandle(const NodeHandle& o) noexcept : n_(o.n_) { n_->retain(); }
  NodeHandle(NodeHandle&& o) noexcept : n_(o.n_) {
    o.n_->retain();
  }  // a moved-from handle stays valid
  NodeHandle& operator=(const NodeHandle& o) noexcept {
    o.n_->retain();
    n_->release();
    n_ = o.n_;
    return *this;
  }
  ~NodeHandle() { n_->release(); }

  N* node() const noexcept { return n_; }
  friend bool operator==(const NodeHandle& a, const NodeHandle& b) noexcept { return a.n_ == b.n_; }

 private:
  N* n_;
};

/// Disposes `n` under its graph's lock; idempotent.
inline void dispose_node(Node* n) {
  Graph* g = n->graph;
  GraphLock lock(g);
  g->dispose(n);
}

inline bool node_disposed(const Node* n) {
  GraphLock lock(n->graph);
  return (n->flags & kDisposed) != 0;
}

}  // namespace trellis::detail
