#pragma once
/// @file
/// `Context` and `ThreadSafeContext`: owners of a reactive graph.
///
/// - `Context` is single-threaded and takes no lock: the fast path.
/// - `ThreadSafeContext` may be used from any thread. It serializes every operation on its
///   graph with one recursive lock, so a batch is atomic and a callback may read or write the
///   same context; effects run synchronously on the thread whose write (or outermost batch)
///   triggered them, under that lock, before the write returns. Reading another context from
///   inside a callback is not tracked (and, across threads, takes that context's lock too:
///   keep a consistent order).
///
/// Nodes belong to their context until disposed or until the context is destroyed; handles that
/// outlive their context see disposed nodes.

#include "trellis/reactive/detail/basic_context.hpp"

namespace trellis {

/// A single-threaded reactive graph.
class Context : public detail::BasicContext {
 public:
  Context() : BasicContext(false) {}
};

/// A reactive graph shared by several threads (one recursive lock; effects run on the writer).
class ThreadSafeContext : public detail::BasicContext {
 public:
  ThreadSafeContext() : BasicContext(true) {}
};

}  // namespace trellis
