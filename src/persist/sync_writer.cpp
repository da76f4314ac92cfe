#include "trellis/persist/detail/sync_writer.hpp"

#include <exception>
#include <string>
#include <utility>

#include "trellis/persist/errors.hpp"

namespace trellis::detail {

SyncWriter::SyncWriter(WriterConfig config, std::uint64_t epoch, std::optional<Journal> journal,
                       std::size_t compact_every)
    : SnapshotWriter(std::move(config)),
      journal_(std::move(journal)),
      compact_every_(compact_every),
      written_epoch_(epoch) {}

void SyncWriter::write(std::uint64_t& epoch,
                       FunctionRef<EncodedTransition(bool journaled)> encode) {
  std::uint64_t next = refused_epoch(epoch);
  try {
    next = next_epoch(epoch);
    write_one(encode(journaled()), next);
  } catch (const persist_outcome_unknown& err) {
    make_unusable(err.what());
    emit(PersistEvent::Kind::persist_failed, next, err.what());
    throw;  // nothing acknowledged; the file may hold it
  } catch (const std::exception& err) {
    emit(PersistEvent::Kind::persist_failed, next, err.what());
    throw;  // nothing acknowledged
  }
  written_epoch_ = next;
  epoch = next;
  emit(PersistEvent::Kind::persisted, next);
}

void SyncWriter::write_one(EncodedTransition&& t, std::uint64_t epoch) {
  if (!journal_) {
    write_sidecar(t.to, epoch);
    return;
  }
  const JournalEntry entry{epoch, std::move(t.event), std::move(t.from), std::move(t.to)};
  journal_->append(entry);
  if (++since_compact_ < compact_every_) return;
  try {  // the journal already holds the transition: a failed compaction loses nothing
    write_sidecar(entry.to, epoch);
    journal_->reset();
    since_compact_ = 0;
  } catch (const std::exception& err) {
    emit(PersistEvent::Kind::persist_failed, epoch,
         std::string("compaction into the sidecar: ") + err.what());
  }
}

}  // namespace trellis::detail
