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
/// `on_corrupt = quarantine` renames it aside (with its journal: when either the sidecar or the
/// journal cannot be trusted, both go aside under the same ".corrupt-<timestamp>" suffix, or,
/// if one cannot be moved, neither, and the constructor throws persist_error).
///
/// Files: the path may go through symbolic links; it is resolved once, at construction, and
/// the lock ("<resolved>.lock"), the journal and the temporaries are named after the resolved
/// path and opened in its directory without following links (a link planted at one of those
/// names is refused with persist_error or recovery_error, its target untouched). So every
/// alias of one sidecar meets the same lock, and path() is the resolved path. Everything the
/// machine creates gets exactly `DurableOptions::file_mode` (0600 by default), whatever the
/// umask. An empty path is refused (invalid_option) before anything is created.
///
/// It works on a Context (sync, async) or a ThreadSafeContext (also group), with the same API
/// as StateMachine plus epoch(), durable_through(), flush(), recovery() and on_event() (and
/// events(), the same events as a Boost.Signals2 signal, with
/// <trellis/signals2/persist_events.hpp>). S is
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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "trellis/machine/state_machine.hpp"
#include "trellis/machine/subscription.hpp"
#include "trellis/persist/detail/durable_core.hpp"
#include "trellis/persist/detail/json_convertible.hpp"
#include "trellis/persist/durability.hpp"
#include "trellis/persist/errors.hpp"
#include "trellis/persist/journal.hpp"
#include "trellis/persist/sidecar.hpp"
#include "trellis/persist/sidecar_lock.hpp"

namespace trellis {

namespace detail {
/// The Boost.Signals2 view of a durable machine's events: declared here, defined (for
/// Tag = void) by <trellis/signals2/persist_events.hpp>, and looked up by events() only when
/// it is called, so that this header needs no Boost.
template <class Tag>
struct Signals2PersistEvents {
  static constexpr bool included = false;
};
}  // namespace detail

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
    // A table is kept as it is (can() asks its rows); one with an unfinished row is refused
    // before the sidecar is touched.
    auto adapted = [&] {
      if constexpr (detail::is_transition_table<F, S, E>) {
        step.check_complete();
        return std::move(step);
      } else {
        return this->adapt(std::move(step));
      }
    }();
    detail::Graph* g = graph_of(ctx);
    if (options.durability == Durability::group && !g->shared())
      throw invalid_option("trellis: Durability::group needs a ThreadSafeContext (machine '" +
                           path.string() + "')");
    if (path.empty())
      throw invalid_option("trellis: DurableStateMachine: the sidecar path is empty");
    std::string name = options.name.empty() ? path.stem().string() : options.name;
    // The lock checks file_mode, and resolves the path once: every alias of the sidecar meets
    // the same lock, and the sidecar, journal and temporaries are named after that path.
    SidecarLock lock(path, options.file_mode);
    path = lock.resolved_path();
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
  /// Flushes (async mode: a bounded number of attempts; errors are reported as events, not
  /// thrown) and releases the lock.
  ~DurableStateMachine() {
    if (durable_ == nullptr) return;
    try {
      durable_->flush();
    } catch (...) {  // already reported as an event; a destructor cannot throw
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

  /// Calls `f(event)` for each lifecycle event after startup, persisted and persist_failed
  /// (sync: on the sending thread; group: on the writing thread; async: on the background
  /// writer's thread), until the returned handle is dropped. Listeners may be added and
  /// dropped from any thread; an exception thrown by one is ignored.
  template <class Fn>
  [[nodiscard]] Subscription on_event(Fn f) {
    static_assert(std::is_invocable_v<Fn&, const PersistEvent&>,
                  "trellis: on_event(f) needs f(const trellis::PersistEvent&)");
    return durable_->events().subscribe(std::function<void(const PersistEvent&)>(std::move(f)));
  }

  /// The lifecycle events of on_event() as a Boost.Signals2 signal, for users who want its
  /// connection semantics; needs <trellis/signals2/persist_events.hpp> (trellis/trellis.hpp
  /// includes it). Created on first use.
  template <class Tag = void>
  decltype(auto) events() {
    using Adapter = detail::Signals2PersistEvents<Tag>;
    static_assert(Adapter::included,
                  "trellis: DurableStateMachine::events() is a Boost.Signals2 signal: #include "
                  "<trellis/signals2/persist_events.hpp>, or use on_event(f), which needs no "
                  "Boost");
    if constexpr (Adapter::included) return Adapter::signal(durable_->events());
  }

  const std::filesystem::path& path() const noexcept { return durable_->path(); }

 private:
  detail::Recovered<S> recover(const std::filesystem::path& path, const std::string& name,
                               const DurableOptions& options, S initial) {
    detail::Recovered<S> found{initial, 0, std::nullopt};
    report_.temps_removed = remove_sidecar_temps(path);
    if (options.journal) report_.temps_removed += remove_journal_temps(journal_path_for(path));
    std::optional<JournalContents> contents;
    try {
      if (std::optional<SidecarRecord> record = load_sidecar(path, name)) {
        if (record->kind != SidecarKind::machine)
          throw recovery_error(path, recovery_error::reason::wrong_kind,
                               "the sidecar of a statechart (a DurableStateChart's), not of a "
                               "state machine");
        found.state = decode_state(path, *record, options);
        found.epoch = record->epoch;
        report_.from_sidecar = true;
      }
      if (options.journal) {
        contents = read_journal(journal_path_for(path));
        replay_journal(journal_path_for(path), *contents, found);
      }
    } catch (const recovery_error& e) {
      if (options.on_corrupt != OnCorrupt::quarantine) throw;
      // The sidecar and its journal are one record: both go aside, or neither.
      const Quarantined moved = quarantine_sidecar_and_journal(path, options.journal);
      report_.quarantined_to = moved.sidecar;
      report_.journal_quarantined_to = moved.journal;
      report_.quarantine_reason = e.what();
      report_.from_sidecar = false;
      report_.journal_replayed = 0;
      found = detail::Recovered<S>{std::move(initial), 0, std::nullopt};
      contents.reset();
    }
    if (options.journal) {
      found.journal.emplace(journal_path_for(path), options.file_mode);
      if (contents && contents->torn) {
        found.journal->truncate(contents->valid_size);
        report_.torn_tail =
            "line " + std::to_string(contents->torn->line) + ": " + contents->torn->reason;
      }
    }
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

  void replay_journal(const std::filesystem::path& file, const JournalContents& contents,
                      detail::Recovered<S>& found) {
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
  }

  RecoveryReport report_;
  std::optional<Signal<std::uint64_t>> durable_through_;
  detail::DurableCoreBase* durable_ = nullptr;
};

}  // namespace trellis
