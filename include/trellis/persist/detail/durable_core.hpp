#pragma once
/// @file
/// The core of a durable machine: the machine core plus the write path of each durability
/// mode. The rule every mode keeps: a transition is acknowledged (send() returns Transitioned,
/// or observers hear of it) only once it is on disk in sync and group modes; in async mode
/// the state moves first and `durable_through` tells how far the disk has caught up.
///
/// Group mode in short: senders decide against the newest *accepted* state (the tentative
/// state, under `gm_`), queue a ticket and wait. Whoever finds no writer at work becomes the
/// writer: it snapshots the tentative state, writes it once (covering every ticket queued so
/// far), then, under the graph's lock, publishes the covered transitions to the state cell in
/// order and wakes their senders. Writes are serialized by `io_` and skipped when a later
/// snapshot already covers them, so the epoch on disk never goes back. A send made by a thread
/// that already holds the graph's lock (inside a batch or an observer) cannot wait for
/// another writer, which needs that lock to publish: it writes and publishes by itself.
/// A failed write bumps a generation: snapshots taken before it are never written, so a
/// refused transition never reaches the disk and the disk's epoch never goes back.
/// Lock order: graph lock, io_, gm_; events are emitted with no lock of the core held.
///
/// Before a transition is accepted, every mode checks that it can be written as it is (no
/// NaN or infinity, no nesting past the readers' limit: unwritable_value) and that the epoch
/// can count it (persist_error at 2^64-1), so a refusal never follows an acknowledgement.
///
/// An unknown outcome (persist_outcome_unknown: the sidecar was renamed into place but the
/// directory fsync failed, or a journal line could not be cut back) makes a sync or group
/// machine unusable: the file may hold a transition the machine did not publish, and neither
/// answer can be given honestly, so every later send throws persist_error until the machine
/// is reopened, which starts from what is on disk. Async mode does not need this: its memory
/// is already ahead of the disk, and the writer simply tries again.
///
/// Async retries: a failed background write is retried (the newest state by then) after a
/// pause that starts at 5 ms and doubles up to 1 s; flush() asks for an attempt at once.
/// Destruction asks for one more attempt and then, if the disk keeps failing, makes at most
/// `kStopAttempts` more, 20 ms apart, before it gives up and reports persist_failed.

#include <boost/signals2/signal.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/machine/detail/machine_core.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/journal.hpp"
#include "trellis/persist/sidecar.hpp"
#include "trellis/persist/sidecar_lock.hpp"

namespace trellis::detail {

using PersistEvents = boost::signals2::signal<void(const PersistEvent&)>;

/// What the startup recovery hands to the core.
template <class S>
struct Recovered {
  S state;
  std::uint64_t epoch = 0;
  std::optional<Journal> journal;
};

/// What the durable machine's front needs that does not depend on S, E or the step type.
class DurableCoreBase {
 public:
  virtual ~DurableCoreBase() = default;
  virtual std::uint64_t epoch() const = 0;
  virtual void flush() = 0;
  virtual PersistEvents& events() noexcept = 0;
  virtual const std::filesystem::path& path() const noexcept = 0;
};

template <class S, class E, class F>
class DurableCore final : public MachineCore<S, E>, public DurableCoreBase {
 public:
  DurableCore(Graph* g, Cell<S> cell, F step, std::filesystem::path path, std::string name,
              DurableOptions options, SidecarLock lock, Recovered<S> recovered,
              Cell<std::uint64_t> durable)
      : MachineCore<S, E>(g, std::move(cell)),
        step_(std::move(step)),
        path_(std::move(path)),
        name_(std::move(name)),
        options_(std::move(options)),
        lock_(std::move(lock)),
        journal_(std::move(recovered.journal)),
        durable_(std::move(durable)),
        epoch_(recovered.epoch),
        tentative_(recovered.state),
        tentative_epoch_(recovered.epoch),
        durable_state_(std::move(recovered.state)),
        durable_epoch_(recovered.epoch) {
    written_epoch_ = recovered.epoch;
    if (options_.durability == Durability::async) writer_ = std::thread([this] { writer_loop(); });
  }

  ~DurableCore() override {
    if (writer_.joinable()) {
      {
        std::lock_guard al(am_);
        stop_ = true;
        kick_ = true;
      }
      acv_.notify_all();
      writer_.join();  // the writer writes the latest snapshot first (a bounded number of tries)
    }
  }

  SendResult send(const E& e) override {
    switch (options_.durability) {
      case Durability::group:
        return send_group(e);
      case Durability::async:
        return send_async(e);
      case Durability::sync:
        break;
    }
    return send_sync(e);
  }

  PersistEvents& events() noexcept override { return events_; }
  const std::filesystem::path& path() const noexcept override { return path_; }

  std::uint64_t epoch() const override {
    GraphLock lock(this->g_);
    return epoch_;
  }

  /// Async: asks the writer for an attempt now and waits until every accepted transition is
  /// on disk, or until an attempt fails (that failure is rethrown; the writer keeps retrying);
  /// then updates durable_through. Other modes: nothing to wait for.
  void flush() override {
    if (options_.durability != Durability::async) return;
    std::exception_ptr err;
    {
      std::unique_lock al(am_);
      const std::uint64_t failures_before = failures_;
      if (latest_ || writing_) {
        kick_ = true;
        acv_.notify_all();
      }
      done_cv_.wait(al, [&] { return (!latest_ && !writing_) || failures_ != failures_before; });
      if (latest_ || writing_) err = last_error_;
    }
    {
      GraphLock lock(this->g_);
      // Read under am_ once the graph's lock is ours (the order send_async takes them in):
      // a send made while we waited for that lock may have set a later epoch already, and
      // durable_through must never go back.
      std::uint64_t written;
      {
        std::lock_guard al(am_);
        written = written_epoch_;
      }
      durable_.set(written);
    }
    if (err) std::rethrow_exception(err);
  }

 private:
  struct Ticket {
    bool done = false;
    bool failed = false;
    bool unknown = false;  // failed with an unknown outcome: it may be on disk
  };
  struct Accepted {
    std::uint64_t epoch = 0;
    std::optional<S> to_storage;
    Ticket* ticket = nullptr;
  };
  struct Snapshot {
    S state;
    std::uint64_t epoch;
    std::uint64_t generation = 0;
  };

  // ------------------------------------------------------------------ writing

  nlohmann::json state_json(const S& s) const {
    try {
      return nlohmann::json(s);
    } catch (const nlohmann::json::exception& e) {
      throw persist_error(path_, std::string("encoding the state as JSON: ") + e.what());
    }
  }

  /// The epoch after `current`; refuses the transition when the epoch cannot count it.
  std::uint64_t next_epoch(std::uint64_t current) const {
    if (current == std::numeric_limits<std::uint64_t>::max())
      throw persist_error(path_, "count one more transition: the epoch is at its maximum, " +
                                     std::to_string(current) + ", and would wrap to 0");
    return current + 1;
  }

  /// The epoch a refused transition after `current` is reported with (no wrap).
  static std::uint64_t refused_epoch(std::uint64_t current) {
    return current == std::numeric_limits<std::uint64_t>::max() ? current : current + 1;
  }

  /// For the modes that accept before they write: refuses a state the sidecar cannot hold as
  /// it is, as store_sidecar would (sync mode's writers check by themselves).
  void check_storable(const S& s) const { check_sidecar_state(path_, state_json(s)); }

  /// After an unknown outcome, every send is refused (see the file comment).
  void refuse_if_unusable() const {
    if (unusable_.load(std::memory_order_acquire))
      throw persist_error(path_, "send refused: an earlier write's outcome is unknown (" +
                                     unusable_why_ +
                                     "); reopen the machine to continue from what is on disk");
  }

  void make_unusable(const std::string& why) {
    if (unusable_.load(std::memory_order_relaxed)) return;
    unusable_why_ = why;
    unusable_.store(true, std::memory_order_release);
  }

  void write_state(const S& s, std::uint64_t epoch) {
    store_sidecar(
        path_, SidecarRecord{name_, epoch, options_.schema_version, state_json(s), iso8601_utc()},
        options_.file_mode);
  }

  void emit(PersistEvent::Kind kind, std::uint64_t epoch, std::string detail = {}) noexcept {
    try {
      if (!events_.empty()) events_(PersistEvent{kind, path_, epoch, std::move(detail)});
    } catch (...) {  // a listener's failure must not turn into a persistence failure
    }
  }

  /// Sync mode: the transition `from` -> `to` (epoch `epoch`) reaches the disk, or throws.
  void persist_one(const S& from, const S& to, const E& e, std::uint64_t epoch) {
    if (!journal_) {
      write_state(to, epoch);
      return;
    }
    // Replay needs only `to`: an event type without to_json is journaled as null, never skipped
    // (skipping would acknowledge a transition written nowhere).
    nlohmann::json event = nullptr;
    if constexpr (std::is_constructible_v<nlohmann::json, const E&>) event = nlohmann::json(e);
    journal_->append(JournalEntry{epoch, std::move(event), state_json(from), state_json(to)});
    if (++since_compact_ < options_.compact_every) return;
    try {  // the journal already holds the transition: a failed compaction loses nothing
      write_state(to, epoch);
      journal_->reset();
      since_compact_ = 0;
    } catch (const std::exception& err) {
      emit(PersistEvent::Kind::persist_failed, epoch,
           std::string("compaction into the sidecar: ") + err.what());
    }
  }

  /// Commits `to` to the state cell, then durable_through; observer errors come last.
  void commit_durable(CellNode<S>* n, S&& to, std::uint64_t epoch) {
    std::exception_ptr err;
    try {
      this->commit(n, std::move(to));
    } catch (...) {
      err = std::current_exception();
    }
    // An observer's send, committed from inside commit(), may have published (and set
    // durable_through to) a later epoch already: epoch_ is the newest, and it is on disk.
    durable_.set(std::max(epoch, epoch_));
    if (err) std::rethrow_exception(err);
  }

  // ------------------------------------------------------------------ sync

  SendResult send_sync(const E& e) {
    GraphLock lock(this->g_);
    refuse_if_unusable();
    CellNode<S>* n = this->live_cell();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, cell_value(n), e, result);
    if (!next) return result;
    std::uint64_t epoch = refused_epoch(epoch_);
    try {
      epoch = next_epoch(epoch_);
      persist_one(cell_value(n), *next, e, epoch);
    } catch (const persist_outcome_unknown& err) {
      make_unusable(err.what());
      emit(PersistEvent::Kind::persist_failed, epoch, err.what());
      throw;  // nothing changed in memory, nobody was told; the file may hold it
    } catch (const std::exception& err) {
      emit(PersistEvent::Kind::persist_failed, epoch, err.what());
      throw;  // nothing changed, nobody was told
    }
    epoch_ = epoch;
    emit(PersistEvent::Kind::persisted, epoch);
    commit_durable(n, std::move(*next), epoch);
    return SendResult::Transitioned;
  }

  // ------------------------------------------------------------------ group

  SendResult send_group(const E& e) {
    if (this->g_->locked_by_this_thread()) return send_group_alone(e);
    Ticket ticket;
    std::unique_lock gl(gm_);
    refuse_if_unusable();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, std::as_const(tentative_), e, result);
    if (!next) return result;
    accept(std::move(*next), &ticket, gl);
    if (writer_holding_) writer_cv_.notify_one();
    std::exception_ptr observer_error;
    for (;;) {
      if (ticket.done) break;
      if (ticket.failed) throw_refused(ticket);
      if (group_writing_) {
        gcv_.wait(gl);
        continue;
      }
      // No writer at work: this sender writes for everybody queued so far. The senders the
      // last write released are typically sending again right now: wait a little (a quarter
      // of a write at most) until as many are queued as last time, so that one write carries
      // them all instead of alternating between a lone transition and the rest.
      group_writing_ = true;
      if (accepted_.size() < last_group_ && last_write_ > std::chrono::nanoseconds(0)) {
        writer_holding_ = true;
        writer_cv_.wait_for(gl, last_write_ / 4,
                            [this] { return accepted_.size() >= last_group_; });
        writer_holding_ = false;
      }
      const Snapshot snap{tentative_, tentative_epoch_, generation_};
      last_group_ = accepted_.size();
      gl.unlock();
      const auto started = std::chrono::steady_clock::now();
      persist_snapshot(snap);  // a failure refuses the tickets (fail_pending), never throws
      const auto took = std::chrono::steady_clock::now() - started;
      {
        GraphLock lock(this->g_);
        publish(observer_error);
      }
      gl.lock();
      last_write_ =
          std::min<std::chrono::steady_clock::duration>(took, std::chrono::milliseconds(4));
      group_writing_ = false;
      gcv_.notify_all();
    }
    gl.unlock();
    if (observer_error) std::rethrow_exception(observer_error);
    return SendResult::Transitioned;
  }

  /// A group-mode send from a thread holding the graph's lock (inside a batch or an observer):
  /// it cannot wait for another writer, which needs that lock to publish, so it writes and
  /// publishes by itself.
  SendResult send_group_alone(const E& e) {
    Ticket ticket;
    std::unique_lock gl(gm_);
    refuse_if_unusable();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, std::as_const(tentative_), e, result);
    if (!next) return result;
    const std::uint64_t epoch = accept(std::move(*next), &ticket, gl);
    const Snapshot snap{tentative_, epoch, generation_};
    gl.unlock();
    persist_snapshot(snap);
    std::exception_ptr observer_error;
    publish(observer_error);
    gl.lock();
    const Ticket outcome = ticket;
    gcv_.notify_all();
    if (outcome.failed) throw_refused(outcome);
    gl.unlock();
    if (observer_error) std::rethrow_exception(observer_error);
    return SendResult::Transitioned;
  }

  /// Queues `next` (gm_ held by `gl`), once it is known to be writable and countable: a
  /// refusal is reported (persist_failed, with gm_ released) and thrown, and queues nothing.
  std::uint64_t accept(S&& next, Ticket* ticket, std::unique_lock<std::mutex>& gl) {
    std::uint64_t epoch = refused_epoch(tentative_epoch_);
    try {
      epoch = next_epoch(tentative_epoch_);
      check_storable(next);
    } catch (const std::exception& err) {
      gl.unlock();
      emit(PersistEvent::Kind::persist_failed, epoch, err.what());
      throw;
    }
    accepted_.push_back(Accepted{epoch, next, ticket});
    tentative_ = std::move(next);
    tentative_epoch_ = epoch;
    return epoch;
  }

  /// Throws for a refused ticket (gm_ held): persist_outcome_unknown if the failed write may
  /// have put it on disk.
  [[noreturn]] void throw_refused(const Ticket& ticket) const {
    if (ticket.unknown) throw persist_outcome_unknown(path_, "group write: " + failure_);
    throw persist_error(path_, "group write: " + failure_);
  }

  /// Writes `snap` unless a later snapshot is on disk or a failure since it was taken refused
  /// its transitions. Writes are serialized by io_ (lock order: graph, io_, gm_). A failed
  /// write refuses every transition not on disk; events are emitted with no lock held.
  void persist_snapshot(const Snapshot& snap) {
    std::optional<PersistEvent> event;
    {
      std::lock_guard io(io_);
      {
        std::lock_guard gl(gm_);
        if (snap.generation != generation_ || durable_epoch_ >= snap.epoch) return;
      }
      try {
        write_state(snap.state, snap.epoch);
        std::lock_guard gl(gm_);
        durable_state_ = snap.state;
        durable_epoch_ = snap.epoch;
        event = PersistEvent{PersistEvent::Kind::persisted, path_, snap.epoch};
      } catch (const std::exception& err) {
        const bool unknown = dynamic_cast<const persist_outcome_unknown*>(&err) != nullptr;
        std::lock_guard gl(gm_);
        if (unknown) make_unusable(err.what());
        fail_pending(err.what(), unknown ? snap.epoch : 0);
        event = PersistEvent{PersistEvent::Kind::persist_failed, path_, snap.epoch, err.what()};
      }
    }
    gcv_.notify_all();
    emit(event->kind, event->epoch, event->detail);
  }

  /// Moves the accepted transitions that are on disk into the state cell, one at a time and in
  /// order (an observer's own send, published from inside, continues the same queue), and
  /// marks their tickets done. Called with the graph's lock held and gm_ not held.
  void publish(std::exception_ptr& observer_error) {
    struct Wake {
      std::condition_variable& cv;
      ~Wake() { cv.notify_all(); }
    } wake{gcv_};
    CellNode<S>* n = access::node(this->cell_);
    for (;;) {
      Accepted a;
      {
        std::lock_guard gl(gm_);
        if (accepted_.empty() || accepted_.front().epoch > durable_epoch_) return;
        a = std::move(accepted_.front());
        accepted_.pop_front();
      }
      epoch_ = a.epoch;
      try {
        commit_durable(n, std::move(*a.to_storage), a.epoch);
      } catch (...) {
        if (!observer_error) observer_error = std::current_exception();
      }
      std::lock_guard gl(gm_);
      a.ticket->done = true;  // its sender wakes at the end of this publish (one notify)
    }
  }

  /// A write failed: every accepted transition not on disk is refused, deciding goes back to
  /// the state on disk, and snapshots taken before now are stale (gm_ held). The transitions
  /// up to `unknown_through` may be on disk all the same (an unknown outcome).
  void fail_pending(const std::string& why, std::uint64_t unknown_through) {
    ++generation_;
    tentative_ = durable_state_;
    tentative_epoch_ = durable_epoch_;
    failure_ = why;
    while (!accepted_.empty() && accepted_.back().epoch > durable_epoch_) {
      accepted_.back().ticket->failed = true;
      accepted_.back().ticket->unknown = accepted_.back().epoch <= unknown_through;
      accepted_.pop_back();
    }
  }

  // ------------------------------------------------------------------ async

  SendResult send_async(const E& e) {
    GraphLock lock(this->g_);
    CellNode<S>* n = this->live_cell();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, cell_value(n), e, result);
    if (!next) return result;
    std::uint64_t epoch = refused_epoch(epoch_);
    try {  // refused here, before it is committed: the writer could only fail on it later
      epoch = next_epoch(epoch_);
      check_storable(*next);
    } catch (const std::exception& err) {
      emit(PersistEvent::Kind::persist_failed, epoch, err.what());
      throw;
    }
    epoch_ = epoch;
    {
      std::lock_guard al(am_);
      latest_ = Snapshot{*next, epoch, 0};  // the writer persists only the newest
    }
    acv_.notify_one();
    std::exception_ptr err;
    try {
      this->commit(n, std::move(*next));
    } catch (...) {
      err = std::current_exception();
    }
    std::uint64_t written;
    {
      std::lock_guard al(am_);
      written = written_epoch_;
    }
    durable_.set(written);  // updated on the machine's own thread
    if (err) std::rethrow_exception(err);
    return SendResult::Transitioned;
  }

  static constexpr std::chrono::milliseconds kFirstRetry{5};
  static constexpr std::chrono::milliseconds kLongestRetry{1000};
  static constexpr std::chrono::milliseconds kStopRetry{20};
  static constexpr int kStopAttempts = 3;

  /// The background writer: writes the newest snapshot; after a failure, retries it (or a
  /// newer one) after a capped exponential pause, at once when flush() or the destructor
  /// asks (kick_); at destruction gives up after kStopAttempts failures.
  void writer_loop() {
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
        write_state(snap.state, snap.epoch);
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
        written_epoch_ = snap.epoch;
        last_error_ = nullptr;
        pause = kFirstRetry;
      }
      done_cv_.notify_all();
    }
  }

  F step_;
  std::filesystem::path path_;
  std::string name_;
  DurableOptions options_;
  SidecarLock lock_;
  std::optional<Journal> journal_;
  Cell<std::uint64_t> durable_;
  PersistEvents events_;
  std::uint64_t epoch_;  // of the state in the cell (graph lock)
  std::size_t since_compact_ = 0;
  std::atomic<bool> unusable_{false};  // an unknown outcome was met (see the file comment)
  std::string unusable_why_;           // written once, before unusable_ is set

  // group
  std::mutex gm_;
  std::condition_variable gcv_;
  S tentative_;
  std::uint64_t tentative_epoch_;
  std::deque<Accepted> accepted_;
  bool group_writing_ = false;
  bool writer_holding_ = false;  // a writer waits for more senders
  std::condition_variable writer_cv_;
  std::size_t last_group_ = 0;                        // transitions the last group write carried
  std::chrono::steady_clock::duration last_write_{};  // how long it took (capped)
  std::string failure_;
  std::uint64_t generation_ = 0;  // bumped by every failed group write
  std::mutex io_;                 // serializes group writes
  S durable_state_;               // gm_
  std::uint64_t durable_epoch_;   // gm_

  // async (am_)
  std::mutex am_;
  std::condition_variable acv_;
  std::condition_variable done_cv_;
  std::optional<Snapshot> latest_;  // the newest state not yet on disk (a failed one waits here)
  bool writing_ = false;
  std::uint64_t written_epoch_ = 0;
  std::uint64_t failures_ = 0;     // failed attempts so far
  std::exception_ptr last_error_;  // of the last attempt, if it failed
  std::optional<std::chrono::steady_clock::time_point> retry_at_;
  bool kick_ = false;  // flush() or the destructor wants an attempt now
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace trellis::detail
