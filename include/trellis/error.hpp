#pragma once
/// @file
/// The one exception root of trellis. Every error trellis raises derives from
/// `trellis::error` (a `std::runtime_error`), so `catch (const trellis::error&)` catches them
/// all; the subclasses say what went wrong, and `what()` names the object and the reason.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace trellis {

/// Root of every exception trellis throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A computed or signal read itself, directly or through others, while it was being evaluated.
class cycle_error : public error {
 public:
  using error::error;
};

/// A disposed node (or one whose context is gone) was read, written or depended upon.
class disposed_error : public error {
 public:
  using error::error;
};

/// A flush ran more effects than the context's effect budget allows (a feedback loop).
class budget_error : public error {
 public:
  using error::error;
};

/// A persisted file (sidecar or journal) cannot be recovered from. The file is left as it was;
/// `what()` reads "trellis: cannot recover from '<file>': <detail>".
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
  };

  recovery_error(std::filesystem::path file, reason why, std::string detail);

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
class sidecar_locked : public error {
 public:
  sidecar_locked(std::filesystem::path sidecar, std::optional<pid_t> holder);

  /// The sidecar whose lock is held (not the lock file).
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The pid the holder wrote into the lock file, when it is known and still alive.
  std::optional<pid_t> holder() const noexcept { return holder_; }

 private:
  std::filesystem::path path_;
  std::optional<pid_t> holder_;
};

/// Writing a persisted file failed (or a failpoint injected the failure). `what()` reads
/// "trellis: cannot persist '<file>': <operation>: <system error text>".
class persist_error : public error {
 public:
  /// `operation` says which step failed ("fsync of the temporary file"); `code` is the system
  /// error, empty when there is none (e.g. a state that cannot be encoded).
  persist_error(std::filesystem::path file, std::string operation, std::error_code code = {});

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
/// until it is reopened (and then starts from what is on disk).
class persist_outcome_unknown : public persist_error {
 public:
  using persist_error::persist_error;
};

/// A value was about to be persisted that JSON text cannot carry back as it is: a NaN or
/// infinite number (JSON writes them as `null`), or nesting deeper than the readers accept
/// (`max_json_depth`). Raised before anything is written or acknowledged, so nothing is lost.
/// `what()` reads "trellis: cannot write <object>: <member> <reason>; nothing was written".
class unwritable_value : public error {
 public:
  unwritable_value(std::string object, std::string member, std::string reason);

  /// What was being written ("the state of sidecar '/x/s.json'", "checkpoint 3 of run 'r'").
  const std::string& object() const noexcept { return object_; }
  /// The offending member as a JSON pointer into the written document ("/state/scores/2"; ""
  /// for the document itself).
  const std::string& member() const noexcept { return member_; }
  /// "is NaN", "is +Inf", "is -Inf" or "is nested deeper than 512 levels".
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string object_;
  std::string member_;
  std::string reason_;
};

/// An option or argument given to a trellis constructor that it cannot honour: an empty
/// path, a file mode that lets others write. `what()` names the object and the reason.
class invalid_option : public error {
 public:
  using error::error;
};

/// The deepest nesting of arrays and objects trellis writes and reads back: a container inside
/// more than this many others is refused by every reader and, before writing, by every writer.
inline constexpr int max_json_depth = 512;

}  // namespace trellis
