#pragma once
/// @file
/// `DurableStateMachine<S, E>`: a state machine that survives `kill -9` and power loss.
///
/// At construction it takes the sidecar's lock (a second owner, in this or another process,
/// gets sidecar_locked), reads the sidecar once (and replays its journal), and starts from
/// what it found: the sidecar beats the `initial` state, which is used only when there is no
/// file. From then on every accepted transition is persisted from the transition path itself
/// (never by re-reading the file): see Durability for when. A sidecar that cannot be read
/// raises recovery_error naming the file and the reason and is left untouched, unless
/// `on_corrupt = quarantine` renames it aside.
///
/// It works on a Context (sync, async) or a ThreadSafeContext (also group), with the same API
/// as StateMachine plus epoch(), durable_through(), flush(), recovery() and events(). S is
/// written and read with nlohmann_json's to_json/from_json (a static_assert says when either is
/// missing); the journal writes E with its to_json when it has one, and null otherwise.
///
/// sync: the transition is on disk before send() returns; if writing fails, send() raises
/// persist_error, the state stays the last persisted one and no observer hears of it.
/// group: the same promise, with concurrent senders sharing one write.
/// async: send() commits in memory and a background writer persists the newest state;
/// durable_through() (an eager signal of the last persisted epoch) is updated on the
/// machine's own thread, at the next send() or flush(). A failed background write is retried
/// (the newest state by then) after a pause of 5 ms doubling up to 1 s, each failure reported
/// as persist_failed; flush() asks for an attempt at once. Destruction flushes: one attempt,
/// then at most 3 more 20 ms apart if the disk keeps failing, after which it gives up with a
/// persist_failed event (the state not on disk is lost, as a crash would lose it).
///
/// In every mode, send() refuses before it accepts anything:
/// - a state that JSON text cannot carry back as it is (a NaN or an infinity, which would be
///   written as null, or nesting deeper than max_json_depth counted from the file's top, which
///   the next start would refuse): unwritable_value naming the file and the member
///   ("/state/scores/2"; "/to/..." in a journal line), with nothing written;
/// - a transition past epoch 2^64-1: persist_error (the epoch would wrap to 0).
///
/// An unknown outcome: when the sidecar has been renamed into place but the directory fsync
/// that makes the rename durable fails (or a journal line whose append failed cannot be cut
/// back), the file may or may not keep the transition through a crash. A sync or group send
/// then raises persist_outcome_unknown and publishes nothing, and the machine refuses every
/// later send (persist_error, "reopen the machine"): it cannot tell the caller either answer
/// truthfully, and going on from memory could contradict the file. Reopening it starts from
/// what is on disk, which is then the truth. Async mode retries instead (its memory is ahead
/// of the disk anyway).

#include <concepts>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "trellis/error.hpp"
#include "trellis/machine/state_machine.hpp"
#include "trellis/persist/detail/durable_core.hpp"
#include "trellis/persist/detail/json_convertible.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/journal.hpp"
#include "trellis/persist/sidecar.hpp"
#include "trellis/persist/sidecar_lock.hpp"

namespace trellis {

/// A state machine persisted in a JSON sidecar (see the file comment).
template <class S, class E>
class DurableStateMachine : public detail::MachineFront<S, E> {
  static_assert(detail::json_convertible<S>,
                "trellis: DurableStateMachine<S, E> needs nlohmann::json conversions for S: define "
                "to_json(nlohmann::json&, const S&) and from_json(const nlohmann::json&, S&), or "
                "NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(S, ...)");

 public:
  /// Opens (or creates) the machine persisted at `path`.
  template <class Ctx, class F>
  requires std::derived_from<Ctx, detail::BasicContext> DurableStateMachine(
      Ctx& ctx, std::filesystem::path path, S initial, F step, DurableOptions options = {}) {
    auto adapted = this->adapt(std::move(step));
    detail::Graph* g = graph_of(ctx);
    if (options.durability == Durability::group && !g->shared())
      throw error("trellis: Durability::group needs a ThreadSafeContext (machine '" +
                  path.string() + "')");
    std::string name = options.name.empty() ? path.stem().string() : options.name;
    SidecarLock lock(path);
    detail::Recovered<S> found = recover(path, name, options, std::move(initial));
    auto durable = ctx.cell(found.epoch);
    durable_through_.emplace(ctx.signal([durable] { return durable.get(); }));
    auto core = std::make_shared<detail::DurableCore<S, E, decltype(adapted)>>(
        g, ctx.cell(found.state), std::move(adapted), path, std::move(name), std::move(options),
        std::move(lock), std::move(found), durable);
    durable_ = core.get();
    this->ctx_ = &ctx;
    this->core_ = std::move(core);
  }

  DurableStateMachine(const DurableStateMachine&) = delete;
  DurableStateMachine& operator=(const DurableStateMachine&) = delete;
  /// Flushes (async mode: a bounded number of attempts; errors are reported on events(), not
  /// thrown) and releases the lock.
  ~DurableStateMachine() {
    if (durable_ == nullptr) return;
    try {
      durable_->flush();
    } catch (...) {  // already on the events bus; a destructor cannot throw
    }
  }

  /// Accepted transitions so far, recovered ones included (the epoch of the current state).
  std::uint64_t epoch() const { return durable_->epoch(); }

  /// The epoch known to be on disk, as an eager signal (async: updated on the machine's own
  /// thread at send() and flush(); sync and group: equal to epoch()).
  Signal<std::uint64_t> durable_through() const { return *durable_through_; }

  /// Async: asks the background writer for an attempt now and waits until the newest state is
  /// on disk or an attempt fails, updates durable_through, and rethrows that failure (the
  /// writer keeps retrying). Sync and group: returns at once (everything acknowledged is on
  /// disk).
  void flush() { durable_->flush(); }

  /// What the machine found on disk when it started.
  const RecoveryReport& recovery() const noexcept { return report_; }

  /// Lifecycle events after startup: persisted, persist_failed (sync: on the sending thread;
  /// group: on the writing thread; async: on the background writer's thread).
  detail::PersistEvents& events() noexcept { return durable_->events(); }

  const std::filesystem::path& path() const noexcept { return durable_->path(); }

 private:
  detail::Recovered<S> recover(const std::filesystem::path& path, const std::string& name,
                               const DurableOptions& options, S initial) {
    detail::Recovered<S> found{std::move(initial), 0, std::nullopt};
    report_.temps_removed = remove_sidecar_temps(path);
    if (options.journal) report_.temps_removed += remove_journal_temps(journal_path_for(path));
    try {
      if (std::optional<SidecarRecord> record = load_sidecar(path, name)) {
        found.state = decode_state(path, *record, options);
        found.epoch = record->epoch;
        report_.from_sidecar = true;
      }
    } catch (const recovery_error& e) {
      if (options.on_corrupt != OnCorrupt::quarantine) throw;
      report_.quarantined_to = quarantine_sidecar(path);
      report_.quarantine_reason = e.what();
    }
    if (options.journal) replay_journal(path, options, found);
    report_.epoch = found.epoch;
    return found;
  }

  static S decode_state(const std::filesystem::path& path, const SidecarRecord& record,
                        const DurableOptions& options) {
    nlohmann::json state = record.state;
    if (record.schema > options.schema_version)
      throw recovery_error(path, recovery_error::reason::future_schema,
                           "state schema " + std::to_string(record.schema) +
                               " is newer than this program's " +
                               std::to_string(options.schema_version));
    if (record.schema < options.schema_version) {
      if (!options.migrate)
        throw recovery_error(path, recovery_error::reason::bad_state,
                             "state schema " + std::to_string(record.schema) +
                                 " needs a migrate hook to reach " +
                                 std::to_string(options.schema_version));
      state = options.migrate(std::move(state), record.schema);
    }
    return decode(path, state, "the state");
  }

  static S decode(const std::filesystem::path& file, const nlohmann::json& j, const char* what) {
    try {
      return j.template get<S>();
    } catch (const nlohmann::json::exception& e) {
      throw recovery_error(file, recovery_error::reason::bad_state,
                           std::string(what) + " does not decode: " + e.what());
    }
  }

  void replay_journal(const std::filesystem::path& path, const DurableOptions&,
                      detail::Recovered<S>& found) {
    const std::filesystem::path file = journal_path_for(path);
    JournalContents contents = read_journal(file);
    for (const JournalEntry& entry : contents.entries) {
      if (entry.epoch <= found.epoch) continue;  // already compacted into the sidecar
      if (entry.epoch != found.epoch + 1)
        throw recovery_error(file, recovery_error::reason::bad_sequence,
                             "journal jumps from epoch " + std::to_string(found.epoch) + " to " +
                                 std::to_string(entry.epoch));
      found.state = decode(file, entry.to, "a journal line's state");
      found.epoch = entry.epoch;
      ++report_.journal_replayed;
    }
    found.journal.emplace(file);
    if (contents.torn) {
      found.journal->truncate(contents.valid_size);
      report_.torn_tail =
          "line " + std::to_string(contents.torn->line) + ": " + contents.torn->reason;
    }
  }

  RecoveryReport report_;
  std::optional<Signal<std::uint64_t>> durable_through_;
  detail::DurableCoreBase* durable_ = nullptr;
};

}  // namespace trellis
