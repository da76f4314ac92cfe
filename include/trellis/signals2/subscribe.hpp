#pragma once
/// @file
/// `subscribe(node, f)`: observe a cell, computed or signal through Boost.Signals2, for users
/// who want its connection management (scoped_connection, blocking, groups). It lives at the
/// edge: one internal effect per observed node feeds a signals2 signal, so the propagation path
/// never touches Boost.

#include <boost/signals2/signal.hpp>

#include <memory>
#include <optional>
#include <utility>

#include "trellis/reactive/detail/access.hpp"
#include "trellis/reactive/detail/basic_context.hpp"
#include "trellis/reactive/untracked.hpp"

namespace trellis {
namespace detail {

/// The signal hub of one observed node, attached to the node (lifetime.hpp's attachments).
template <class T>
struct Hub final : Attachment {
  boost::signals2::signal<void(const T&)> changed;
  std::optional<T> last;
  Effect watcher;
  /// The node was disposed: disconnect every slot.
  void detach() noexcept override { changed.disconnect_all_slots(); }
};

/// The key of subscribe()'s hub among a node's attachments.
inline constexpr char hub_key = 0;

}  // namespace detail

/// Calls `f(const T&)` after each change of `node`'s value (not at subscription), on the
/// thread that runs the context's effects. Disconnect by dropping (or calling disconnect() on)
/// the returned connection; disposing the node disconnects every slot.
template <class Handle, class F>
[[nodiscard(
    "trellis: keep the returned connection (auto c = trellis::subscribe(...)): destroying it "
    "disconnects f, so a discarded one is never called")]] boost::signals2::scoped_connection
subscribe(const Handle& node, F&& f) {
  using T = typename Handle::value_type;
  auto* n = detail::access::node(node);
  detail::Graph* g = n->graph;
  detail::GraphLock lock(g);
  if ((n->flags & detail::kDisposed) != 0) detail::throw_disposed(n);
  auto* hub = static_cast<detail::Hub<T>*>(g->attachment(n, &detail::hub_key));
  if (hub == nullptr) {
    auto fresh = std::make_shared<detail::Hub<T>>();
    hub = fresh.get();
    hub->last = untracked([&] { return node.get(); });
    // The graph owns the hub; a running emission holds it too, so a slot that disposes the
    // node (which drops the graph's hub) does not pull the signal from under its own call.
    hub->watcher = detail::make_effect(g, [weak = std::weak_ptr(fresh), node] {
      std::shared_ptr<detail::Hub<T>> self = weak.lock();
      if (!self) return;
      T now = node.get();
      if (self->last.has_value() && detail::same_value(*self->last, now)) return;
      self->last = now;
      untracked([&] { self->changed(now); });
    });
    g->attach(n, &detail::hub_key, std::move(fresh));
  }
  return boost::signals2::scoped_connection(hub->changed.connect(std::forward<F>(f)));
}

}  // namespace trellis
