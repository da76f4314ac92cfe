#pragma once
/// @file
/// The core of a durable machine: the machine core (state cell, observers) plus the typed half
/// of each durability mode. The core decides transitions and encodes states as JSON; the
/// compiled writers (snapshot_writer.hpp: SyncWriter, GroupWriter, AsyncWriter) count, check
/// and write them, report persisted and persist_failed, retry, and refuse sends after an
/// unknown outcome. The rule every mode keeps: a transition is acknowledged (send() returns
/// Transitioned, or observers hear of it) only once it is on disk in sync and group modes; in
/// async mode the state moves first and `durable_through` tells how far the disk has caught up.
///
/// - sync: under the graph's lock, decide, SyncWriter::write (on disk, or throws), commit.
/// - group: GroupWriter runs the group commit and calls back the Send below to decide against
///   the newest accepted state, to encode it, and to commit it once on disk.
/// - async: under the graph's lock, decide, AsyncWriter::submit (counted, checked, queued),
///   commit, then durable_through from what the writer has written so far.

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "trellis/machine/detail/machine_core.hpp"
#include "trellis/persist/detail/async_writer.hpp"
#include "trellis/persist/detail/group_writer.hpp"
#include "trellis/persist/detail/persist_event_hub.hpp"
#include "trellis/persist/detail/sync_writer.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/journal.hpp"
#include "trellis/persist/sidecar_lock.hpp"
#include "trellis/reactive/detail/access.hpp"

namespace trellis::detail {

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
  PersistEventHub& events() noexcept { return events_; }
  virtual const std::filesystem::path& path() const noexcept = 0;

 private:
  PersistEventHub events_;  // outlives the writers, which are members of the derived core
};

template <class S, class E, class F>
class DurableCore final : public MachineCore<S, E>,
                          public DurableCoreBase,
                          private GroupWriter::Machine {
 public:
  DurableCore(Graph* g, Cell<S> cell, F step, std::filesystem::path path, std::string name,
              DurableOptions options, SidecarLock lock, Recovered<S> recovered,
              Cell<std::uint64_t> durable)
      : MachineCore<S, E>(g, std::move(cell)),
        step_(std::move(step)),
        mode_(options.durability),
        lock_(std::move(lock)),
        durable_(std::move(durable)),
        epoch_(recovered.epoch) {
    WriterConfig config{std::move(path), std::move(name), options.schema_version, options.file_mode,
                        &events()};
    switch (mode_) {
      case Durability::sync:
        writer_ = std::make_unique<SyncWriter>(std::move(config), recovered.epoch,
                                               std::move(recovered.journal), options.compact_every);
        break;
      case Durability::group:
        writer_ = std::make_unique<GroupWriter>(
            std::move(config), static_cast<GroupWriter::Machine&>(*this),
            std::make_shared<const Accepted>(Accepted{{}, std::move(recovered.state)}),
            recovered.epoch);
        break;
      case Durability::async:
        writer_ = std::make_unique<AsyncWriter>(std::move(config), recovered.epoch);
        break;
    }
    // Group and async write only the sidecar; a journal opened (and cut) at recovery stays
    // open for the machine's lifetime all the same.
    if (mode_ != Durability::sync) idle_journal_ = std::move(recovered.journal);
  }

  ~DurableCore() override {
    writer_.reset();  // the async writer writes the latest snapshot first (bounded tries)
  }

  /// Asked of the committed state (what state() returns), without committing anything.
  bool can(const E& e) override {
    GraphLock lock(this->g_);
    return would_accept(step_, cell_value(this->live_cell()), e);
  }

  SendResult send(const E& e) override {
    switch (mode_) {
      case Durability::group:
        return send_group(e);
      case Durability::async:
        return send_async(e);
      case Durability::sync:
        break;
    }
    return send_sync(e);
  }

  const std::filesystem::path& path() const noexcept override { return writer_->path(); }

  std::uint64_t epoch() const override {
    GraphLock lock(this->g_);
    return epoch_;
  }

  /// Async: waits for the writer (AsyncWriter::flush), then updates durable_through, then
  /// rethrows the writer's failure if any. Other modes: nothing to wait for.
  void flush() override {
    if (mode_ != Durability::async) return;
    std::exception_ptr err;
    try {
      writer_->flush();
    } catch (...) {
      err = std::current_exception();
    }
    {
      // The writer's epoch is read with the graph's lock held, as send_async reads it: it only
      // grows, so a send made while we waited, which may have set a later one already, is
      // never undone, and durable_through never goes back.
      GraphLock lock(this->g_);
      durable_.set(writer_->durable_epoch());
    }
    if (err) std::rethrow_exception(err);
  }

 private:
  /// A group-mode accepted state: the JSON the writer writes, and the state itself.
  struct Accepted : GroupWriter::State {
    S state;
  };

  nlohmann::json encode(const S& s) const {
    try {
      return nlohmann::json(s);
    } catch (const nlohmann::json::exception& e) {
      throw persist_error(path(), std::string("encoding the state as JSON: ") + e.what());
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
    auto& writer = static_cast<SyncWriter&>(*writer_);
    GraphLock lock(this->g_);
    writer.refuse_if_unusable();
    CellNode<S>* n = this->live_cell();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, cell_value(n), e, result);
    if (!next) return result;
    // Nothing changes in memory and nobody is told unless the writer returns.
    writer.write(epoch_, [&](bool journaled) {
      EncodedTransition t{encode(*next)};
      if (journaled) {
        // Replay needs only `to`: an event type without to_json is journaled as null, never
        // skipped (skipping would acknowledge a transition written nowhere).
        if constexpr (std::is_constructible_v<nlohmann::json, const E&>)
          t.event = nlohmann::json(e);
        t.from = encode(cell_value(n));
      }
      return t;
    });
    commit_durable(n, std::move(*next), epoch_);
    return SendResult::Transitioned;
  }

  // ------------------------------------------------------------------ group

  /// One group-mode send, on the sender's stack (GroupWriter::Send).
  class GroupSend final : public GroupWriter::Send {
   public:
    GroupSend(DurableCore& core, const E& e) : core_(core), e_(e) {}

    bool decide(const GroupWriter::State& tentative, SendResult& result) override {
      next_ = core_.decide(core_.step_, static_cast<const Accepted&>(tentative).state, e_, result);
      return next_.has_value();
    }

    std::shared_ptr<const GroupWriter::State> encode() override {
      return std::make_shared<const Accepted>(Accepted{{core_.encode(*next_)}, *next_});
    }

    void publish(std::uint64_t epoch) override {
      core_.epoch_ = epoch;
      core_.commit_durable(access::node(core_.cell_), std::move(*next_), epoch);
    }

   private:
    DurableCore& core_;
    const E& e_;
    std::optional<S> next_;
  };

  SendResult send_group(const E& e) {
    GroupSend send(*this, e);
    return static_cast<GroupWriter&>(*writer_).send(send);
  }

  bool holds_graph_lock() const override { return this->g_->locked_by_this_thread(); }

  void with_graph_lock(FunctionRef<void()> f) override {
    GraphLock lock(this->g_);
    f();
  }

  // ------------------------------------------------------------------ async

  SendResult send_async(const E& e) {
    auto& writer = static_cast<AsyncWriter&>(*writer_);
    GraphLock lock(this->g_);
    CellNode<S>* n = this->live_cell();
    SendResult result = SendResult::Transitioned;
    std::optional<S> next = this->decide(step_, cell_value(n), e, result);
    if (!next) return result;
    epoch_ = writer.submit(epoch_, [&] { return encode(*next); });
    std::exception_ptr err;
    try {
      this->commit(n, std::move(*next));
    } catch (...) {
      err = std::current_exception();
    }
    durable_.set(writer.durable_epoch());  // updated on the machine's own thread
    if (err) std::rethrow_exception(err);
    return SendResult::Transitioned;
  }

  F step_;
  Durability mode_;
  SidecarLock lock_;
  std::optional<Journal> idle_journal_;
  Cell<std::uint64_t> durable_;
  std::uint64_t epoch_;  // of the state in the cell (graph lock)
  std::unique_ptr<SnapshotWriter> writer_;
};

}  // namespace trellis::detail
