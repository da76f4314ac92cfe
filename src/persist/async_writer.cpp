#include "trellis/persist/detail/async_writer.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "trellis/persist/sidecar.hpp"

namespace trellis::detail {

AsyncWriter::AsyncWriter(WriterConfig config, std::uint64_t epoch)
    : SnapshotWriter(std::move(config)), written_epoch_(epoch), thread_([this] { run(); }) {}

AsyncWriter::~AsyncWriter() {
  {
    std::lock_guard al(am_);
    stop_ = true;
    kick_ = true;
  }
  acv_.notify_all();
  thread_.join();  // the thread writes the latest snapshot first (a bounded number of tries)
}

std::uint64_t AsyncWriter::submit(std::uint64_t current, FunctionRef<nlohmann::json()> encode) {
  std::uint64_t epoch = refused_epoch(current);
  nlohmann::json state = accept(current, epoch, encode);
  {
    std::lock_guard al(am_);
    if (latest_) {  // only the newest is written: it replaces the pending one
      latest_->state.swap(state);
      latest_->epoch = epoch;
    } else {
      latest_.emplace(Snapshot{std::move(state), epoch});
    }
  }
  acv_.notify_one();
  return epoch;  // `state` holds the superseded state, if any: freed with no lock held
}

/// The state after `current`, counted (`epoch`) and checked: refused here, before it is
/// accepted, since the writer could only fail on it later.
nlohmann::json AsyncWriter::accept(std::uint64_t current, std::uint64_t& epoch,
                                   FunctionRef<nlohmann::json()> encode) {
  try {
    epoch = next_epoch(current);
    nlohmann::json state = encode();
    check_sidecar_state(path(), state);
    return state;
  } catch (const std::exception& err) {
    emit(PersistEvent::Kind::persist_failed, epoch, err.what());
    throw;
  }
}

void AsyncWriter::flush() {
  std::unique_lock al(am_);
  const std::uint64_t failures_before = failures_;
  if (latest_ || writing_) {
    kick_ = true;
    acv_.notify_all();
  }
  done_cv_.wait(al, [&] { return (!latest_ && !writing_) || failures_ != failures_before; });
  if ((latest_ || writing_) && last_error_) std::rethrow_exception(last_error_);
}

/// Writes the newest snapshot; after a failure, retries it (or a newer one) after a capped
/// exponential pause, at once when flush() or the destructor asks (kick_); at destruction gives
/// up after kStopAttempts failures.
void AsyncWriter::run() {
  std::unique_lock al(am_);
  auto pause = kFirstRetry;
  int failed_since_stop = 0;
  for (;;) {
    acv_.wait(al, [this] { return latest_.has_value() || stop_; });
    if (!latest_) return;
    if (retry_at_ && !kick_) {
      if (!acv_.wait_until(al, *retry_at_, [this] { return kick_; })) retry_at_.reset();
      continue;  // the snapshot may be newer now
    }
    if (stop_ && failed_since_stop >= kStopAttempts) {
      const std::uint64_t lost = latest_->epoch;
      latest_.reset();
      done_cv_.notify_all();
      al.unlock();
      emit(PersistEvent::Kind::persist_failed, lost,
           "the machine is being destroyed and the write still fails after " +
               std::to_string(kStopAttempts) + " more attempts: epoch " + std::to_string(lost) +
               " is not on disk");
      return;
    }
    kick_ = false;
    retry_at_.reset();
    Snapshot snap = std::move(*latest_);
    latest_.reset();
    writing_ = true;
    const auto wait = stop_ ? kStopRetry : pause;
    al.unlock();
    std::exception_ptr err;
    try {
      write_sidecar(snap.state, snap.epoch);
      emit(PersistEvent::Kind::persisted, snap.epoch);
    } catch (const std::exception& e) {
      err = std::current_exception();
      emit(PersistEvent::Kind::persist_failed, snap.epoch,
           std::string(e.what()) + "; retrying in " + std::to_string(wait.count()) + " ms");
    }
    al.lock();
    writing_ = false;
    if (err) {
      ++failures_;
      last_error_ = err;
      if (stop_) ++failed_since_stop;
      retry_at_ = std::chrono::steady_clock::now() + wait;
      pause = std::min(pause * 2, kLongestRetry);
      if (!latest_) latest_ = std::move(snap);  // unless a newer state supersedes it
    } else {
      written_epoch_.store(snap.epoch, std::memory_order_release);
      last_error_ = nullptr;
      pause = kFirstRetry;
    }
    done_cv_.notify_all();
  }
}

}  // namespace trellis::detail
