#pragma once
/// @file
/// `GroupWriter`: the group commit of Durability::group, where concurrent senders share one
/// sidecar write. The writer runs the protocol; the machine's core plugs in the typed steps
/// (decide an event, encode a state, commit a state to the cell) through `Send`, and the
/// graph's lock through `Machine`.
///
/// The protocol: senders decide against the newest *accepted* state (the tentative state,
/// under the writer's lock gm_), queue themselves and wait. Whoever finds no writer at work
/// becomes the writer: it snapshots the tentative state, writes it once (covering every send
/// queued so far), then, under the graph's lock, publishes the covered transitions to the
/// state cell in order and wakes their senders. The senders a write released are typically
/// sending again at once: a new writer waits a little (a quarter of the last write at most)
/// until as many are queued as last time, so that one write carries them all. Writes are
/// serialized by io_ and skipped when a later snapshot already covers them, so the epoch on
/// disk never goes back. A send made by a thread that already holds the graph's lock (inside
/// a batch or an observer) cannot wait for another writer, which needs that lock to publish:
/// it writes and publishes by itself.
///
/// Acknowledgement: send() returns Transitioned once its transition is on disk and committed
/// to the cell (`persisted` emitted by the thread that wrote it). A failed write refuses every
/// transition not on disk (each sender gets persist_error, or persist_outcome_unknown when
/// the failed write may hold it), deciding goes back to the state on disk, and a generation
/// counter makes every snapshot taken before the failure stale, so a refused transition never
/// reaches the disk. An unknown outcome also makes the writer refuse every later send.
/// Before a transition is queued it is counted (persist_error at epoch 2^64-1) and its JSON
/// checked (unwritable_value): a refusal never follows an acknowledgement.
///
/// Lock order: graph lock, io_, gm_; events are emitted with no lock of the writer held.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "trellis/machine/send_result.hpp"
#include "trellis/persist/detail/function_ref.hpp"
#include "trellis/persist/detail/snapshot_writer.hpp"

namespace trellis::detail {

class GroupWriter final : public SnapshotWriter {
 public:
  /// An accepted state: the JSON the sidecar stores. The core derives from it to keep its
  /// typed state beside, and reads that back in Send::decide.
  struct State {
    nlohmann::json json;
  };

  /// The machine's graph lock, as the core reaches it.
  class Machine {
   public:
    /// Whether this thread holds the graph's lock (a send inside a batch or an observer).
    virtual bool holds_graph_lock() const = 0;
    /// Calls `f` with the graph's lock held.
    virtual void with_graph_lock(FunctionRef<void()> f) = 0;

   protected:
    ~Machine() = default;
  };

  /// One send, made by the core on the sender's stack; it is also the sender's place in the
  /// queue, so it lives until send() returns.
  class Send {
   public:
    /// Decides the event against `tentative` (writer's lock held): true for a transition (the
    /// Send keeps the new state), false with `result` set (Rejected or Unchanged).
    virtual bool decide(const State& tentative, SendResult& result) = 0;
    /// The decided state as the writer keeps it (writer's lock held); throws to refuse it.
    virtual std::shared_ptr<const State> encode() = 0;
    /// Commits the decided state, on disk at `epoch`, to the state cell (graph's lock held,
    /// writer's lock not). What it throws is an observer's error: the send that published
    /// rethrows the first one after its own transition is through.
    virtual void publish(std::uint64_t epoch) = 0;

   protected:
    ~Send() = default;

   private:
    friend class GroupWriter;
    bool done_ = false;
    bool failed_ = false;
    bool unknown_ = false;  // failed with an unknown outcome: it may be on disk
  };

  /// `initial` is the state on disk at `epoch` (or the machine's initial state at 0); it is
  /// never written.
  GroupWriter(WriterConfig config, Machine& machine, std::shared_ptr<const State> initial,
              std::uint64_t epoch);
  ~GroupWriter() override;

  /// Decides, queues and waits for one transition (see the file comment).
  SendResult send(Send& s);

  std::uint64_t durable_epoch() const override;

 private:
  struct Queued {
    std::uint64_t epoch = 0;
    Send* send = nullptr;
  };
  struct Snapshot {
    std::shared_ptr<const State> state;
    std::uint64_t epoch = 0;
    std::uint64_t generation = 0;
  };

  SendResult send_alone(Send& s);
  std::uint64_t accept(Send& s, std::unique_lock<std::mutex>& gl);
  [[noreturn]] void throw_refused(const Send& s) const;
  void persist_snapshot(const Snapshot& snap);
  void publish(std::exception_ptr& observer_error);
  void fail_pending(const std::string& why, std::uint64_t unknown_through);

  Machine& machine_;
  mutable std::mutex gm_;
  std::condition_variable gcv_;
  std::shared_ptr<const State> tentative_;  // the newest accepted state (gm_)
  std::uint64_t tentative_epoch_;
  std::deque<Queued> queued_;  // accepted, not yet published, in epoch order (gm_)
  bool group_writing_ = false;
  bool writer_holding_ = false;  // a writer waits for more senders
  std::condition_variable writer_cv_;
  std::size_t last_group_ = 0;                        // transitions the last write carried
  std::chrono::steady_clock::duration last_write_{};  // how long it took (capped)
  std::string failure_;                               // of the last failed write
  std::uint64_t generation_ = 0;                      // bumped by every failed write
  std::mutex io_;                                     // serializes writes
  std::shared_ptr<const State> durable_;              // the state on disk (gm_)
  std::uint64_t durable_epoch_;                       // gm_
};

}  // namespace trellis::detail
