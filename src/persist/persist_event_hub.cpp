#include "trellis/persist/detail/persist_event_hub.hpp"

namespace trellis::detail {

namespace {

struct Slot {
  // A constructor, not an aggregate: clang 14 (the fuzz build) has no parenthesized
  // aggregate initialization for make_shared.
  Slot(std::uint64_t id_, PersistEventHub::Listener fn_) : id(id_), fn(std::move(fn_)) {}
  std::uint64_t id;
  PersistEventHub::Listener fn;
  std::atomic<bool> live{true};
};

using SlotList = std::vector<std::shared_ptr<Slot>>;

}  // namespace

/// The listeners, copied on write: emit() takes the current list under the lock and calls it
/// without; subscribe and drop replace it.
struct PersistEventHub::Listeners {
  std::mutex mutex;
  std::shared_ptr<const SlotList> slots = std::make_shared<const SlotList>();
  std::uint64_t last_id = 0;
  std::atomic<std::size_t> count{0};

  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex);
    auto next = std::make_shared<SlotList>();
    next->reserve(slots->size());
    for (const std::shared_ptr<Slot>& slot : *slots) {
      if (slot->id == id) {
        slot->live.store(false, std::memory_order_release);
      } else {
        next->push_back(slot);
      }
    }
    count.store(next->size(), std::memory_order_release);
    slots = std::move(next);
  }
};

PersistEventHub::PersistEventHub() : listeners_(std::make_shared<Listeners>()) {}

PersistEventHub::~PersistEventHub() {
  // The attachments first: they may hold a Subscription of this hub, which drops its listener.
  std::lock_guard lock(attachments_mutex_);
  attachments_.clear();
}

Subscription PersistEventHub::subscribe(Listener f) {
  std::uint64_t id;
  {
    std::lock_guard lock(listeners_->mutex);
    id = ++listeners_->last_id;
    auto next = std::make_shared<SlotList>(*listeners_->slots);
    next->push_back(std::make_shared<Slot>(id, std::move(f)));
    listeners_->count.store(next->size(), std::memory_order_release);
    listeners_->slots = std::move(next);
  }
  return Subscription([weak = std::weak_ptr<Listeners>(listeners_), id] {
    if (auto listeners = weak.lock()) listeners->remove(id);
  });
}

bool PersistEventHub::empty() const noexcept {
  return listeners_->count.load(std::memory_order_acquire) == 0;
}

void PersistEventHub::emit(PersistEvent::Kind kind, const std::filesystem::path& file,
                           std::uint64_t epoch, std::string detail) noexcept {
  if (empty()) return;
  try {
    std::shared_ptr<const SlotList> slots;
    {
      std::lock_guard lock(listeners_->mutex);
      slots = listeners_->slots;
    }
    const PersistEvent event{kind, file, epoch, std::move(detail)};
    for (const std::shared_ptr<Slot>& slot : *slots) {
      if (!slot->live.load(std::memory_order_acquire)) continue;
      try {
        slot->fn(event);
      } catch (...) {  // a listener's failure must not turn into a persistence failure
      }
    }
  } catch (...) {  // copying the path or the detail ran out of memory: the event is lost
  }
}

void* PersistEventHub::attachment(const std::type_info& key,
                                  FunctionRef<std::shared_ptr<void>(PersistEventHub&)> make) {
  std::lock_guard lock(attachments_mutex_);
  for (const auto& [type, object] : attachments_) {
    if (*type == key) return object.get();
  }
  attachments_.emplace_back(&key, make(*this));
  return attachments_.back().second.get();
}

}  // namespace trellis::detail
