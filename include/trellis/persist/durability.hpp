#pragma once
/// @file
/// The options of a durable machine, and what it reports about persistence.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace trellis {

/// When an accepted transition is on disk.
enum class Durability {
  sync,   ///< before send() returns, one write per transition
  group,  ///< before send() returns; concurrent senders share one write (ThreadSafeContext)
  async,  ///< later, by a background writer that retries; see durable_through() and flush()
};

/// What to do with a sidecar that cannot be read at startup.
enum class OnCorrupt {
  fail,        ///< raise recovery_error, touch nothing (the default)
  quarantine,  ///< rename it (and its journal, both or neither) to "<file>.corrupt-<timestamp>"
               ///< and start from the initial state
};

/// The options of a DurableStateMachine (designated initializers welcome).
struct DurableOptions {
  Durability durability = Durability::sync;
  /// The machine's name in its sidecar; empty: the file's stem ("doc-42" for "doc-42.json").
  std::string name = {};
  OnCorrupt on_corrupt = OnCorrupt::fail;
  /// The version of the state's JSON shape this program writes. A sidecar with an older one
  /// goes through `migrate`; a newer one is refused (recovery_error, future_schema).
  int schema_version = 1;
  /// Turns a state written under `from_version` into the current shape.
  std::function<nlohmann::json(nlohmann::json state, int from_version)> migrate = {};
  /// Append every transition to "<file>.journal" (one fdatasync'd line) instead of rewriting
  /// the sidecar, compacting into the sidecar every `compact_every` transitions (sync mode;
  /// group and async write the sidecar).
  bool journal = false;
  std::size_t compact_every = 1024;
  /// The permissions of every file the machine creates (sidecar, journal, lock, temporaries),
  /// applied exactly whatever the umask. To share with a group: 0640 (or 0660). A mode that
  /// lets others write, or that the owner cannot read and write, is refused by the
  /// constructor (invalid_option). Files that exist already keep their mode until rewritten.
  mode_t file_mode = 0600;
};

/// A lifecycle event of a durable machine (see DurableStateMachine::on_event and events()).
struct PersistEvent {
  enum class Kind {
    recovered,      ///< started from a sidecar (and journal)
    quarantined,    ///< a corrupt sidecar was renamed aside
    torn_tail,      ///< a journal's torn last line was ignored and cut
    persisted,      ///< a transition (or a group of them) reached the disk
    persist_failed  ///< a write failed or was refused; the transition was not acknowledged
                    ///< (async: the writer retries; the detail says when)
  };
  Kind kind;
  std::filesystem::path file;
  std::uint64_t epoch = 0;
  std::string detail = {};
};

/// What the machine found on disk when it started.
struct RecoveryReport {
  bool from_sidecar = false;  ///< a sidecar was read (else: the initial state)
  std::uint64_t epoch = 0;    ///< the epoch the machine starts at
  std::size_t journal_replayed = 0;
  std::optional<std::filesystem::path> quarantined_to;          ///< where the sidecar went
  std::optional<std::filesystem::path> journal_quarantined_to;  ///< where its journal went
  std::string quarantine_reason = {};
  std::optional<std::string> torn_tail;  ///< why the journal's last line was ignored
  std::size_t temps_removed = 0;         ///< temporary files a crashed write left behind
};

}  // namespace trellis
