#pragma once
/// @file
/// `PersistEventHub`: where a durable machine's lifecycle events (persisted, persist_failed)
/// go, with no dependency beyond the standard library. Listeners are added with subscribe()
/// and stay until their Subscription is dropped; the Boost.Signals2 view of the events
/// (<trellis/signals2/persist_events.hpp>) is one such listener, kept by the hub as an
/// attachment.
///
/// Threads: subscribe, drop and emit may run on any threads at once. emit() calls the
/// listeners on the emitting thread with no lock held (a listener may subscribe or drop one,
/// or block), in subscription order; one that has been dropped is not called once its drop has
/// returned, unless that call had already started. A listener's exception is swallowed, so it
/// neither stops the others nor turns into a persistence failure. With no listener, emit()
/// costs one atomic load.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "trellis/machine/subscription.hpp"
#include "trellis/persist/detail/function_ref.hpp"
#include "trellis/persist/durability.hpp"

namespace trellis::detail {

class PersistEventHub {
 public:
  using Listener = std::function<void(const PersistEvent&)>;

  PersistEventHub();
  ~PersistEventHub();
  PersistEventHub(const PersistEventHub&) = delete;
  PersistEventHub& operator=(const PersistEventHub&) = delete;

  /// Calls `f(event)` for every event emitted from now on, until the handle is dropped (the
  /// handle may outlive the hub).
  [[nodiscard]] Subscription subscribe(Listener f);

  /// True when no listener is subscribed.
  bool empty() const noexcept;

  /// Tells every listener `PersistEvent{kind, file, epoch, detail}` (see the file comment).
  void emit(PersistEvent::Kind kind, const std::filesystem::path& file, std::uint64_t epoch,
            std::string detail = {}) noexcept;

  /// The object an adapter keeps beside the hub under `key` (its type): made by `make` on the
  /// first call (under a lock, so once), kept until the hub is destroyed (before the
  /// listeners' list, so it may hold a Subscription of this hub).
  void* attachment(const std::type_info& key,
                   FunctionRef<std::shared_ptr<void>(PersistEventHub&)> make);

 private:
  struct Listeners;
  std::shared_ptr<Listeners> listeners_;
  std::mutex attachments_mutex_;
  std::vector<std::pair<const std::type_info*, std::shared_ptr<void>>> attachments_;
};

}  // namespace trellis::detail
