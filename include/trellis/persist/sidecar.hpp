#pragma once
/// @file
/// The JSON sidecar: one file per machine holding its last persisted state.
///
/// A sidecar is one line of JSON with a SHA-256 checksum over its other members; the format
/// (version `sidecar_version`) is described in docs/formats.md, section "Sidecar".
///
/// `store_sidecar` replaces the file atomically (temp file, fsync, rename, directory fsync);
/// `load_sidecar` never modifies it; a file that cannot be trusted raises
/// `trellis::recovery_error` with the reason, and `quarantine_sidecar` moves it aside.
/// None of these take the lock: an owner holds a `SidecarLock` while it writes.
///
/// Paths: the sidecar's path may go through symbolic links (its directory, or the file name
/// itself: writes then replace the link's target, so the link keeps pointing at the sidecar).
/// Every other file beside it (temporaries, the journal, the lock) is opened relative to the
/// resolved directory without following a link; a link planted at one of those names is
/// refused, never followed.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trellis {

/// The "format" tag of a sidecar.
inline constexpr std::string_view sidecar_format = "trellis.sidecar";
/// The newest sidecar format version this build reads and writes. Version 2 added the "kind"
/// member and the statechart kind; a flat machine's sidecar is still written at version 1
/// (which every reader since the first reads), a statechart's at version 2.
inline constexpr int sidecar_version = 2;

/// What a sidecar holds.
enum class SidecarKind : std::uint8_t {
  machine,     ///< a DurableStateMachine's state (format version 1; or 2 with "kind":"machine")
  statechart,  ///< a DurableStateChart's configuration, history, data and delayed sends
               ///< (format version 2, "kind":"statechart")
};

/// The content of a sidecar, without the envelope (format, version, checksum).
struct SidecarRecord {
  std::string machine;      ///< the machine's name; a sidecar is refused by other machines
  std::uint64_t epoch = 0;  ///< accepted transitions so far; only grows
  int schema = 1;           ///< the version of the state's JSON shape (for migrations)
  nlohmann::json state;     ///< the state, as the machine's to_json wrote it
  std::string updated_at;   ///< ISO-8601 UTC time of the write (see `iso8601_utc`)
  /// What the state is; decides the format version written (see sidecar_version).
  SidecarKind kind = SidecarKind::machine;

  friend bool operator==(const SidecarRecord&, const SidecarRecord&) = default;
};

/// `time` as ISO-8601 UTC with milliseconds: "2024-05-01T12:00:00.123Z".
std::string iso8601_utc(
    std::chrono::system_clock::time_point time = std::chrono::system_clock::now());

/// The bytes of a sidecar holding `record` (one line of JSON and a newline). Writes
/// `record.updated_at` as given. Throws unwritable_value (naming the member, "/state/...")
/// if the state holds a NaN or an infinity (which JSON would write as null) or nests deeper
/// than `max_json_depth` counted from the sidecar's top level (which the reader refuses), and
/// nlohmann::json::type_error if it holds a string that is not UTF-8.
std::string encode_sidecar(const SidecarRecord& record);

/// Throws unwritable_value naming the sidecar at `path` when `state` cannot be a sidecar's
/// state as it is (see encode_sidecar): for a writer that must refuse a state before it
/// acknowledges it and writes it later. store_sidecar checks by itself.
void check_sidecar_state(const std::filesystem::path& path, const nlohmann::json& state);

/// Parses and verifies the bytes of a sidecar read from `file` (used only in messages).
/// Returns the record, or throws recovery_error with the precise reason: empty, truncated,
/// not JSON, not an object, another format, a future version, a missing or wrong-typed field
/// (a version 2 file without a known "kind" too),
/// a bad checksum, or (when `expected_machine` is not empty) another machine's name.
SidecarRecord decode_sidecar(std::string_view bytes, std::string_view expected_machine,
                             const std::filesystem::path& file = {});

/// Reads the sidecar at `path` for machine `expected_machine` (empty: any machine).
/// nullopt when there is no file there (ENOENT, including a missing parent directory);
/// recovery_error for a dangling symbolic link at the path, for anything that is not a valid
/// sidecar of that machine, for a directory or other non-regular file at the path, and for a file
/// that cannot be read. Never modifies the file.
std::optional<SidecarRecord> load_sidecar(const std::filesystem::path& path,
                                          std::string_view expected_machine);

/// Atomically replaces the sidecar at `path` with `record`: a temporary file
/// "<path>.tmp-trellis-<16 hex digits>" in the same directory (O_CREAT|O_EXCL|O_NOFOLLOW,
/// exactly `file_mode` whatever the umask; invalid_option for a mode that lets others write),
/// write, fsync, rename over `path`, fsync of the directory. A state that cannot be written as it
/// is raises unwritable_value before anything is written. On failure up to the rename, the
/// temporary file is removed, `path` is untouched and persist_error names the file, the step and
/// the system error. A failure after the rename (the directory fsync) throws
/// persist_outcome_unknown, a persist_error: `path` then already holds `record`, but whether it
/// survives a crash is unknown, so the caller can neither acknowledge it nor call it refused.
void store_sidecar(const std::filesystem::path& path, const SidecarRecord& record,
                   mode_t file_mode = 0600);

/// Removes temporary files that `store_sidecar` left beside `path` when its process died
/// mid-write ("<path>.tmp-trellis-<16 hex digits>" regular files: only names trellis makes,
/// never a user's "<path>.tmp-backup"; the "<path>.tmp-<pid>-<n>" files of earlier versions
/// are left alone too); returns how many. Call it only while holding the SidecarLock of `path`.
std::size_t remove_sidecar_temps(const std::filesystem::path& path);

/// Renames the file at `path` to "<path>.corrupt-<UTC timestamp>" (adding "-2", "-3", ... if
/// that name is taken; never replacing or deleting anything), fsyncs the directory and returns
/// the new path. Throws persist_error if the rename fails.
std::filesystem::path quarantine_sidecar(const std::filesystem::path& path);

/// Where `quarantine_sidecar_and_journal` moved the files (nullopt: that file was not there).
struct Quarantined {
  std::optional<std::filesystem::path> sidecar;
  std::optional<std::filesystem::path> journal;
};

/// Moves the sidecar at `path` and (with `journal`) its journal "<path>.journal" aside
/// together, under the same suffix ".corrupt-<UTC timestamp>[-N]", each only if present:
/// both or neither (if the second rename fails, the first is moved back and persist_error is
/// thrown). Never replaces or deletes anything; fsyncs the directory.
Quarantined quarantine_sidecar_and_journal(const std::filesystem::path& path, bool journal);

}  // namespace trellis
