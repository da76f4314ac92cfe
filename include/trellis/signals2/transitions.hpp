#pragma once
/// @file
/// The Boost.Signals2 edge of the machines (target `trellis::signals2`): with this header,
/// `machine.transitions()` returns a `trellis::TransitionSignal<S>`, a
/// `boost::signals2::signal<void(const S&, const S&)>` told each committed transition (as
/// `on_transition` observers are, and after them), for users who want its connection
/// semantics (scoped_connection, blocking, groups):
///
/// ```cpp
/// #include <trellis/signals2/transitions.hpp>
/// boost::signals2::scoped_connection c =
///     light.transitions().connect([](const Light& from, const Light& to) { ... });
/// ```
///
/// The signal lives as long as the machine; connecting to it makes the machine observed for
/// the rest of its life (no cost before the first call).

#include <boost/signals2/signal.hpp>

#include <memory>

#include "trellis/machine/detail/machine_core.hpp"
#include "trellis/machine/state_machine.hpp"

namespace trellis {

/// The signal `transitions()` returns: a boost::signals2::signal of (from, to).
template <class S>
class TransitionSignal : public boost::signals2::signal<void(const S&, const S&)> {
 public:
  using boost::signals2::signal<void(const S&, const S&)>::signal;
};

namespace detail {

template <class S>
class TransitionSignalSink final : public TransitionSink<S> {
 public:
  void told(const S& from, const S& to) override { signal(from, to); }
  TransitionSignal<S> signal;
};

template <class S, class E>
requires true  // more specialized than the primary, which says this header is missing
    struct TransitionsEdge<S, E> {
  static constexpr bool available = true;

  static TransitionSignal<S>& signal(MachineCore<S, E>& core) {
    TransitionSink<S>& sink = core.sink([] { return std::make_unique<TransitionSignalSink<S>>(); });
    return static_cast<TransitionSignalSink<S>&>(sink).signal;
  }
};

}  // namespace detail
}  // namespace trellis
