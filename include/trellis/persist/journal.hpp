#pragma once
/// @file
/// The journal: an append-only JSONL log of accepted transitions beside a sidecar
/// ("<sidecar>.journal"), so that a transition is durable after one fdatasync'd append rather
/// than a full sidecar rewrite.
///
/// Each line is one checksummed JSON object (epoch, event, from, to) and a newline; the format
/// (version 1) is described in docs/formats.md, section "Journal". Epochs strictly increase
/// down the file. A line is acknowledged only after its one write(2),
/// newline included, returned: a crash mid-append can only leave an unterminated last line,
/// which `read_journal` ignores and reports as a torn tail. A complete line that does not
/// decode (a bad checksum included), wherever it is, the last line too, is corruption: an
/// error, the file left as it is.
///
/// The journal and its temporaries are opened relative to their (resolved) directory without
/// following a link: a symbolic link planted at "<sidecar>.journal" or at a temporary's name is
/// refused (recovery_error when reading, persist_error when writing), its target untouched.
/// Recovery is the sidecar plus the journal lines whose epoch is past the sidecar's; after
/// the owner compacts the journal into the sidecar it calls `Journal::reset()`.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trellis {

namespace detail {
class Directory;
}  // namespace detail

/// One accepted transition.
struct JournalEntry {
  std::uint64_t epoch = 0;  ///< the machine's epoch after this transition
  nlohmann::json event;
  nlohmann::json from;
  nlohmann::json to;

  friend bool operator==(const JournalEntry&, const JournalEntry&) = default;
};

/// The journal file beside `sidecar`: "<sidecar>.journal".
std::filesystem::path journal_path_for(const std::filesystem::path& sidecar);

/// The bytes of one journal line for `entry`, newline included. Throws unwritable_value
/// (naming the member, "/to/...") when the event or a state holds a NaN or an infinity, or
/// nests deeper than `max_json_depth` counted from the line's top level.
std::string encode_journal_line(const JournalEntry& entry);

/// An unterminated last line (an append a crash cut short) that `read_journal` ignored.
struct TornTail {
  std::size_t line = 0;      ///< 1-based line number
  std::uint64_t offset = 0;  ///< where the torn line starts (= the valid size of the file)
  std::string reason;        ///< "no trailing newline"
};

/// What `read_journal` found.
struct JournalContents {
  std::vector<JournalEntry> entries;  ///< every intact line, in file order
  std::optional<TornTail> torn;       ///< set when an unterminated last line was ignored
  std::uint64_t valid_size = 0;       ///< bytes up to the end of the last intact line
};

/// Reads the journal at `path` (not the sidecar's path: see `journal_path_for`). No file: no
/// entries. An unterminated last line is ignored and reported in `torn`; a complete line that
/// does not decode (the last one included), epochs that do not strictly increase, a symbolic
/// link at the path, a directory at the path or an unreadable file raise
/// recovery_error naming the file and the line number. Never modifies the file.
JournalContents read_journal(const std::filesystem::path& path);

/// The appending end of a journal: one open descriptor, O_APPEND, the file created with
/// exactly `file_mode` (0600 by default) whatever the umask.
/// Not thread-safe; the machine serializes its appends.
class Journal {
 public:
  /// Opens (creating if needed, with exactly `file_mode`) the journal at `path` and fsyncs its
  /// directory so the file itself survives a crash. Throws persist_error (a symbolic link at
  /// `path` is refused, not followed), invalid_option for a mode that lets others write. The owner
  /// should hold the sidecar's SidecarLock, and cut a torn tail reported by read_journal
  /// (`truncate(valid_size)`) before appending.
  explicit Journal(std::filesystem::path path, mode_t file_mode = 0600);
  ~Journal();
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// Appends one line with a single write(2), then fdatasync. A value that cannot be written
  /// as it is raises unwritable_value before anything is written. On failure the file is cut
  /// back to its previous size (no torn line is left for later appends to bury) and
  /// persist_error is thrown; if even that cut fails, the line may stay: the error is then a
  /// persist_outcome_unknown, and every later append throws too.
  void append(const JournalEntry& entry);

  /// Cuts the file to `size` bytes and fdatasyncs (drop a torn tail). Throws persist_error;
  /// if the cut was made but not synced, every later append throws too.
  void truncate(std::uint64_t size);

  /// Empties the journal (after its entries were compacted into the sidecar) by putting a
  /// fresh empty file in its place: create "<journal>.tmp-trellis-<16 hex digits>"
  /// (O_EXCL, O_NOFOLLOW, the journal's mode), fsync it, rename it over
  /// the journal, fsync the directory. A failure before the rename leaves the journal as it
  /// was (and appendable) and throws persist_error. If only the directory fsync fails, the
  /// new empty file is in place and appended to, and persist_error is thrown; either file is
  /// a valid journal after a crash, since the sidecar holds everything the old one held, and
  /// the next append fsyncs the directory first (failing, and writing nothing, if it still
  /// cannot). Never truncates in place.
  void reset();

  /// The file's size as this writer knows it.
  std::uint64_t size() const noexcept { return size_; }

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  mode_t mode_ = 0600;
  std::unique_ptr<detail::Directory> dir_;  // the journal's directory, resolved once
  int fd_ = -1;
  std::uint64_t size_ = 0;
  bool broken_ = false;
  bool directory_unconfirmed_ = false;  // reset()'s rename not yet known to be durable
};

/// Removes the temporary files `Journal::reset` left beside the journal `journal` when its
/// process died before renaming them ("<journal>.tmp-trellis-<16 hex digits>" only; the
/// "<journal>.tmp-<pid>-<n>" files of earlier versions are left alone); returns how many. Call it
/// only while holding the sidecar's SidecarLock.
std::size_t remove_journal_temps(const std::filesystem::path& journal);

}  // namespace trellis
