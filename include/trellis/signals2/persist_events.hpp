#pragma once
/// @file
/// The Boost.Signals2 edge of the persist layer: `DurableStateMachine::events()`, the
/// machine's lifecycle events (persisted, persist_failed) as a
/// `boost::signals2::signal<void(const PersistEvent&)>`, for users who want its connection
/// semantics (scoped_connection, groups, blocking). The durable machine itself reports
/// through on_event(), which needs no Boost; this header attaches one signal per machine to
/// it, made on the first events() call and kept as long as the machine. A slot runs on the
/// thread that emits (see on_event()); an exception it throws stops that emission to the
/// signal's later slots and is otherwise ignored, as before.

#include <boost/signals2/signal.hpp>

#include <memory>
#include <typeinfo>
#include <utility>

#include "trellis/machine/subscription.hpp"
#include "trellis/persist/detail/persist_event_hub.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/durable_state_machine.hpp"

namespace trellis::detail {

/// What events() returns.
using PersistEvents = boost::signals2::signal<void(const PersistEvent&)>;

template <>
struct Signals2PersistEvents<void> {
  static constexpr bool included = true;

  /// The signal attached to `hub`, made and subscribed on first use.
  static PersistEvents& signal(PersistEventHub& hub) {
    void* kept = hub.attachment(typeid(Attached), [](PersistEventHub& h) -> std::shared_ptr<void> {
      auto attached = std::make_shared<Attached>();
      attached->subscription =
          h.subscribe([signal = &attached->signal](const PersistEvent& e) { (*signal)(e); });
      return attached;
    });
    return static_cast<Attached*>(kept)->signal;
  }

 private:
  struct Attached {
    PersistEvents signal;
    Subscription subscription;  // dropped first, while the hub still lives
  };
};

}  // namespace trellis::detail
