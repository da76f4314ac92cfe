#pragma once
/// @file
/// The persist layer's errors (codes "persist.*", listed in docs/errors.md). Each derives from
/// trellis::error (trellis/base/error.hpp) and names the file it concerns.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "trellis/base/error.hpp"

namespace trellis {

/// A persisted file (sidecar or journal) cannot be recovered from. The file is left as it was;
/// `what()` reads "trellis: cannot recover from '<file>': <detail>". Code
/// "persist.recovery.<reason>", the reason's name() ("persist.recovery.bad_checksum").
class recovery_error : public error {
 public:
  /// Why the file was refused: a stable code for callers that decide by kind (quarantine or
  /// not); the detail text is for people.
  enum class reason : std::uint8_t {
    unreadable,       ///< open/read failed (permissions, I/O error, a parent that is a file)
    not_a_file,       ///< a directory, FIFO, socket or device at the path
    empty,            ///< zero bytes (or only whitespace)
    truncated,        ///< JSON that ends early
    not_json,         ///< bytes that are not JSON
    not_an_object,    ///< JSON, but an array, string, number, ...
    bad_field,        ///< a required field is missing or has the wrong type
    bad_checksum,     ///< the checksum does not match the content
    foreign_format,   ///< another file format (the "format" tag)
    future_version,   ///< a format version newer than this build reads
    foreign_machine,  ///< the sidecar of another machine
    bad_state,        ///< the state does not decode (raised by the machine layer)
    future_schema,    ///< a state schema newer than the program's (raised by the machine layer)
    bad_sequence,     ///< journal epochs that do not strictly increase
    wrong_kind,       ///< a statechart's sidecar opened as a state machine's, or the reverse
    unknown_state,    ///< a durable chart's sidecar names a state or history id the chart
                      ///< does not have (the detail names the id)
  };

  recovery_error(std::filesystem::path file, reason why, std::string detail);

  /// "persist.recovery." followed by name(why()).
  std::string_view id() const noexcept override;

  /// The file that was refused.
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The kind of refusal.
  reason why() const noexcept { return why_; }
  /// The human reason, without the file name (e.g. "bad checksum").
  const std::string& detail() const noexcept { return detail_; }

  /// The stable name of a reason code ("bad_checksum").
  static std::string_view name(reason why) noexcept;

 private:
  std::filesystem::path path_;
  reason why_;
  std::string detail_;
};

/// Another owner (in this or another process) holds the lock of a sidecar. `what()` reads
/// "trellis: sidecar '<file>' is locked by another owner (pid N)" or "(holder unknown)".
/// Code "persist.sidecar_locked".
class sidecar_locked : public error {
 public:
  sidecar_locked(std::filesystem::path sidecar, std::optional<pid_t> holder);

  std::string_view id() const noexcept override;

  /// The sidecar whose lock is held (not the lock file).
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The pid the holder wrote into the lock file, when it is known and still alive.
  std::optional<pid_t> holder() const noexcept { return holder_; }

 private:
  std::filesystem::path path_;
  std::optional<pid_t> holder_;
};

/// Writing a persisted file failed (or a failpoint injected the failure). `what()` reads
/// "trellis: cannot persist '<file>': <operation>: <system error text>". Code
/// "persist.write_failed" (the system error is `code()`).
class persist_error : public error {
 public:
  /// `operation` says which step failed ("fsync of the temporary file"); `code` is the system
  /// error, empty when there is none (e.g. a state that cannot be encoded).
  persist_error(std::filesystem::path file, std::string operation, std::error_code code = {});

  std::string_view id() const noexcept override;

  /// The file that could not be written.
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The step that failed.
  const std::string& operation() const noexcept { return operation_; }
  /// The system error (`std::generic_category()` errno values), or an empty code.
  std::error_code code() const noexcept { return code_; }

 private:
  std::filesystem::path path_;
  std::string operation_;
  std::error_code code_;
};

/// A write failed at a step after which the file may already hold the new content: the rename
/// of a new sidecar was done but the directory fsync that makes it durable failed, or a
/// journal line whose append failed could not be cut back. Whether that content survives a
/// crash is unknown, so it was neither acknowledged nor can it be called refused; the
/// operation text says which. A DurableStateMachine that meets one refuses every later send
/// until it is reopened (and then starts from what is on disk). Code "persist.outcome_unknown".
class persist_outcome_unknown : public persist_error {
 public:
  using persist_error::persist_error;
  std::string_view id() const noexcept override;
};

}  // namespace trellis
