#include "trellis/persist/detail/group_writer.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "trellis/persist/errors.hpp"
#include "trellis/persist/sidecar.hpp"

namespace trellis::detail {

GroupWriter::GroupWriter(WriterConfig config, Machine& machine,
                         std::shared_ptr<const State> initial, std::uint64_t epoch)
    : SnapshotWriter(std::move(config)),
      machine_(machine),
      tentative_(initial),
      tentative_epoch_(epoch),
      durable_(std::move(initial)),
      durable_epoch_(epoch) {}

GroupWriter::~GroupWriter() = default;

std::uint64_t GroupWriter::durable_epoch() const {
  std::lock_guard gl(gm_);
  return durable_epoch_;
}

SendResult GroupWriter::send(Send& s) {
  if (machine_.holds_graph_lock()) return send_alone(s);
  std::unique_lock gl(gm_);
  refuse_if_unusable();
  SendResult result = SendResult::Transitioned;
  if (!s.decide(*tentative_, result)) return result;
  accept(s, gl);
  if (writer_holding_) writer_cv_.notify_one();
  std::exception_ptr observer_error;
  for (;;) {
    if (s.done_) break;
    if (s.failed_) throw_refused(s);
    if (group_writing_) {
      gcv_.wait(gl);
      continue;
    }
    // No writer at work: this sender writes for everybody queued so far, after waiting a
    // little for as many senders as the last write carried (see the file comment).
    group_writing_ = true;
    if (queued_.size() < last_group_ && last_write_ > std::chrono::nanoseconds(0)) {
      writer_holding_ = true;
      writer_cv_.wait_for(gl, last_write_ / 4, [this] { return queued_.size() >= last_group_; });
      writer_holding_ = false;
    }
    const Snapshot snap{tentative_, tentative_epoch_, generation_};
    last_group_ = queued_.size();
    gl.unlock();
    const auto started = std::chrono::steady_clock::now();
    persist_snapshot(snap);  // a failure refuses the queued sends (fail_pending), never throws
    const auto took = std::chrono::steady_clock::now() - started;
    machine_.with_graph_lock([&] { publish(observer_error); });
    gl.lock();
    last_write_ = std::min<std::chrono::steady_clock::duration>(took, std::chrono::milliseconds(4));
    group_writing_ = false;
    gcv_.notify_all();
  }
  gl.unlock();
  if (observer_error) std::rethrow_exception(observer_error);
  return SendResult::Transitioned;
}

SendResult GroupWriter::send_alone(Send& s) {
  std::unique_lock gl(gm_);
  refuse_if_unusable();
  SendResult result = SendResult::Transitioned;
  if (!s.decide(*tentative_, result)) return result;
  const std::uint64_t epoch = accept(s, gl);
  const Snapshot snap{tentative_, epoch, generation_};
  gl.unlock();
  persist_snapshot(snap);
  std::exception_ptr observer_error;
  publish(observer_error);  // this thread holds the graph's lock already
  gl.lock();
  gcv_.notify_all();
  if (s.failed_) throw_refused(s);
  gl.unlock();
  if (observer_error) std::rethrow_exception(observer_error);
  return SendResult::Transitioned;
}

/// Queues the decided transition (gm_ held by `gl`) once it is known to be writable and
/// countable: a refusal is reported (persist_failed, with gm_ released) and thrown, and
/// queues nothing.
std::uint64_t GroupWriter::accept(Send& s, std::unique_lock<std::mutex>& gl) {
  std::uint64_t epoch = refused_epoch(tentative_epoch_);
  std::shared_ptr<const State> state;
  try {
    epoch = next_epoch(tentative_epoch_);
    state = s.encode();
    check_sidecar_state(path(), state->json);
  } catch (const std::exception& err) {
    gl.unlock();
    emit(PersistEvent::Kind::persist_failed, epoch, err.what());
    throw;
  }
  queued_.push_back(Queued{epoch, &s});
  tentative_ = std::move(state);
  tentative_epoch_ = epoch;
  return epoch;
}

/// Throws for a refused send (gm_ held): persist_outcome_unknown if the failed write may have
/// put it on disk.
void GroupWriter::throw_refused(const Send& s) const {
  if (s.unknown_) throw persist_outcome_unknown(path(), "group write: " + failure_);
  throw persist_error(path(), "group write: " + failure_);
}

/// Writes `snap` unless a later snapshot is on disk or a failure since it was taken refused
/// its transitions. A failed write refuses every transition not on disk.
void GroupWriter::persist_snapshot(const Snapshot& snap) {
  PersistEvent::Kind kind = PersistEvent::Kind::persisted;
  std::string detail;
  {
    std::lock_guard io(io_);
    {
      std::lock_guard gl(gm_);
      if (snap.generation != generation_ || durable_epoch_ >= snap.epoch) return;
    }
    try {
      write_sidecar(snap.state->json, snap.epoch);
      std::lock_guard gl(gm_);
      durable_ = snap.state;
      durable_epoch_ = snap.epoch;
    } catch (const std::exception& err) {
      const bool unknown = dynamic_cast<const persist_outcome_unknown*>(&err) != nullptr;
      std::lock_guard gl(gm_);
      if (unknown) make_unusable(err.what());
      fail_pending(err.what(), unknown ? snap.epoch : 0);
      kind = PersistEvent::Kind::persist_failed;
      detail = err.what();
    }
  }
  gcv_.notify_all();
  emit(kind, snap.epoch, std::move(detail));
}

/// Moves the queued transitions that are on disk into the state cell, one at a time and in
/// order (an observer's own send, published from inside, continues the same queue), and marks
/// their senders done. Called with the graph's lock held and gm_ not held.
void GroupWriter::publish(std::exception_ptr& observer_error) {
  struct Wake {
    std::condition_variable& cv;
    ~Wake() { cv.notify_all(); }
  } wake{gcv_};
  for (;;) {
    Queued q;
    {
      std::lock_guard gl(gm_);
      if (queued_.empty() || queued_.front().epoch > durable_epoch_) return;
      q = queued_.front();
      queued_.pop_front();
    }
    try {
      q.send->publish(q.epoch);
    } catch (...) {
      if (!observer_error) observer_error = std::current_exception();
    }
    std::lock_guard gl(gm_);
    q.send->done_ = true;  // its sender wakes at the end of this publish (one notify)
  }
}

/// A write failed: every queued transition not on disk is refused, deciding goes back to the
/// state on disk, and snapshots taken before now are stale (gm_ held). The transitions up to
/// `unknown_through` may be on disk all the same (an unknown outcome).
void GroupWriter::fail_pending(const std::string& why, std::uint64_t unknown_through) {
  ++generation_;
  tentative_ = durable_;
  tentative_epoch_ = durable_epoch_;
  failure_ = why;
  while (!queued_.empty() && queued_.back().epoch > durable_epoch_) {
    queued_.back().send->failed_ = true;
    queued_.back().send->unknown_ = queued_.back().epoch <= unknown_through;
    queued_.pop_back();
  }
}

}  // namespace trellis::detail
