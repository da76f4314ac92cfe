#include "trellis/persist/detail/snapshot_writer.hpp"

#include <limits>
#include <utility>

#include "trellis/persist/errors.hpp"
#include "trellis/persist/sidecar.hpp"

namespace trellis::detail {

SnapshotWriter::SnapshotWriter(WriterConfig config) : config_(std::move(config)) {}

SnapshotWriter::~SnapshotWriter() = default;

void SnapshotWriter::flush() {}

void SnapshotWriter::refuse_if_unusable() const {
  if (unusable_.load(std::memory_order_acquire))
    throw persist_error(config_.path, "send refused: an earlier write's outcome is unknown (" +
                                          unusable_why_ +
                                          "); reopen the machine to continue from what is on disk");
}

void SnapshotWriter::make_unusable(const std::string& why) {
  std::lock_guard lock(unusable_mutex_);
  if (unusable_.load(std::memory_order_relaxed)) return;
  unusable_why_ = why;
  unusable_.store(true, std::memory_order_release);
}

void SnapshotWriter::write_sidecar(const nlohmann::json& state, std::uint64_t epoch) const {
  store_sidecar(config_.path,
                SidecarRecord{config_.name, epoch, config_.schema_version, state, iso8601_utc(),
                              config_.kind},
                config_.file_mode);
}

void SnapshotWriter::emit(PersistEvent::Kind kind, std::uint64_t epoch,
                          std::string detail) const noexcept {
  if (config_.events != nullptr) config_.events->emit(kind, config_.path, epoch, std::move(detail));
}

void SnapshotWriter::throw_epoch_at_maximum() const {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  throw persist_error(config_.path, "count one more transition: the epoch is at its maximum, " +
                                        std::to_string(max) + ", and would wrap to 0");
}

}  // namespace trellis::detail
