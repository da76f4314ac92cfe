// FileStore: runs as files, one directory per run (the model is in file_store.hpp).
//
// Every run has a RunFiles entry: a mutex for the threads of this process, open descriptors,
// a cache of the journal's newest checkpoint and one of the effect records, each keyed by its
// file's inode, size and mtime, so a commit or put_effect does not re-read a file unless
// another writer (a process, another FileStore object, a retention rewrite) changed it. The
// journal and effects.jsonl are the same kind of file (checksummed lines, appended under
// commit.lock, torn tail cut by the next writer): LineLog and read_lines serve both. Writers
// hold commit.lock (flock) and check that the descriptor they locked is still the file at the
// path: a retention deletion may have moved the run away and a new run of the same id created
// fresh files.

#include "trellis/agent/file_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <numeric>
#include <unordered_map>
#include <utility>

#include <trellis/io/atomic_file.hpp>
#include <trellis/io/checksum.hpp>
#include <trellis/io/directory.hpp>
#include <trellis/io/file_io.hpp>
#include <trellis/io/file_lock.hpp>
#include <trellis/io/json_text.hpp>
#include <trellis/io/line_log.hpp>
#include <trellis/io/utc_time.hpp>

#include "checkpoint_codec.hpp"
#include "lease_holder.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent {

namespace fs = std::filesystem;
using trellis::detail::Directory;
using trellis::detail::Modes;
using trellis::detail::unique_fd;

namespace {

constexpr const char* kJournal = "journal.jsonl";
constexpr const char* kEffects = "effects.jsonl";
constexpr const char* kEvents = "events.jsonl";
constexpr const char* kLease = "lease";
constexpr const char* kCommitLock = "commit.lock";
constexpr const char* kRequests = "requests.jsonl";
// In the root: names that start with '@', which no run id can take.
constexpr const char* kMarker = "@store.json";
constexpr const char* kIndex = "@index.jsonl";
constexpr const char* kIndexLock = "@index.lock";
constexpr const char* kGraphs = "@graphs";
constexpr const char* kCache = "@cache";
// The first layout whose index lines carry due times and priorities (15 members).
constexpr int kDueIndexVersion = 3;
constexpr std::string_view kFormat = "trellis.file_store";
constexpr std::string_view kIndexFormat = "trellis.file_store.index";
// A writer compacts the index once it holds more than twice its compacted size plus this.
constexpr std::uint64_t kIndexSlack = 1u << 20;
// A writer looks at the index's size every this many appends.
constexpr unsigned kIndexCheckEvery = 64;
// '~' is not allowed in run ids, so no run can ever be named like a directory being deleted.
constexpr std::string_view kTrashPrefix = "~trash.";
// Runs whose descriptors and cache are kept; beyond it, idle ones are closed (a long-lived
// worker that touches many runs must not run out of descriptors).
constexpr std::size_t kMaxOpenRuns = 128;

// The reason for an errno of the durable-I/O toolkit: ELOOP is a link planted at a name trellis
// opens without following, EINVAL (from Directory::open_regular) something that is not a
// regular file.
std::string reason(const fs::path& file, int err) {
  if (err == ELOOP)
    return "a symbolic link is at '" + file.string() +
           "'; trellis does not follow links inside its store";
  if (err == EINVAL) return "not a regular file";
  return std::strerror(err);
}

[[noreturn]] void fail(const fs::path& file, const std::string& operation, int err) {
  throw store_error("trellis: file store: " + operation + " '" + file.string() +
                    "': " + reason(file, err));
}

[[noreturn]] void corrupt(const fs::path& file, std::size_t line, const std::string& why) {
  throw store_error("trellis: file store: '" + file.string() + "' line " + std::to_string(line) +
                    " is corrupt: " + why);
}

bool valid_run_id(std::string_view id) {
  try {
    check_run_id(id);
    return true;
  } catch (const invalid_run_id&) {
    return false;
  }
}

// Opens the directory of run `id` in `root` (`shown` names it in messages) without following
// a link at it: false when it does not exist and `create` is false; with `create`, a missing
// one is made with exactly `modes.directory` and fsync'd into the root (when `sync`).
bool open_run_directory(const Directory& root, const Modes& modes, std::string_view id,
                        const fs::path& shown, bool create, bool sync, Directory& out) {
  for (int attempt = 0;; ++attempt) {
    int err = root.open_directory(id, out);
    if (err == 0) return true;
    if (err == ENOTDIR) {  // O_DIRECTORY | O_NOFOLLOW says ENOTDIR for a link: name it
      struct stat st {};
      if (::fstatat(root.fd(), std::string(id).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode))
        err = ELOOP;
    }
    if (err != ENOENT) fail(shown, "open the run directory", err);
    if (!create) return false;
    const int made = root.make_directory(id, modes.directory);
    if (made == 0 && sync) {
      if (const int s = root.sync()) fail(shown.parent_path(), "fsync the directory", s);
    }
    if (made != 0 && made != EEXIST) fail(shown, "create the run directory", made);
    if (attempt >= 8) fail(shown, "open the run directory", ENOENT);
  }
}

// Opens (creating it with exactly `mode`) the file `name` of `dir` for reading and writing,
// without following a link and without blocking; EINVAL when it is not a regular file.
int open_regular_rw(const Directory& dir, const char* name, int flags, mode_t mode,
                    unique_fd& out) {
  unique_fd fd;
  if (const int err = dir.open_file(name, O_RDWR | O_CREAT | O_NONBLOCK | flags, mode, fd))
    return err;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EINVAL;
  const int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl >= 0) (void)::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  out = std::move(fd);
  return 0;
}

// True when `fd` is still the entry `name` of `dir` (it was not renamed away or replaced).
bool same_entry(int fd, const Directory& dir, std::string_view name) {
  struct stat a {
  }, b{};
  if (::fstat(fd, &a) != 0 ||
      ::fstatat(dir.fd(), std::string(name).c_str(), &b, AT_SYMLINK_NOFOLLOW) != 0)
    return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The identity of a file's content as far as the cache is concerned.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

FileStamp stamp_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// One line of the journal or the effects file: the record, its checksum spliced in as the
// last member.
std::string encode_line(const nlohmann::json& record) {
  std::string body;
  try {
    body = record.dump();
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: file store: a record cannot be encoded: ") + e.what());
  }
  return trellis::detail::checksummed_line(body);
}

// What read_lines found.
struct LinesRead {
  bool exists = false;
  FileStamp stamp;  // of the bytes read (size = bytes read)
  FileStamp file;   // as fstat saw the file before reading (size = the file's)
  std::uint64_t valid_size = 0;
  bool torn = false;
  std::size_t records = 0;
};

// Reads the checksummed lines of `name` in `dir` (the journal, the effects file; `path` names
// it in messages), calling `take(record)` for each record in order (return false to stop
// early). An unterminated last line is a torn write: ignored (`torn`). A complete line that
// does not decode, or a record `take` refuses with store_error, is corruption: a store_error
// naming the file and the line, the last line included (scan_lines).
template <class Take>
LinesRead read_lines(const Directory& dir, const char* name, const fs::path& path, Take&& take) {
  LinesRead out;
  unique_fd fd;
  if (const int err = dir.open_regular(name, fd)) {
    if (err == ENOENT) return out;
    fail(path, "open", err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, "stat", errno);
  std::string text;
  if (const int err = trellis::detail::read_all(fd.get(), text)) fail(path, "read", err);
  out.exists = true;
  out.stamp = stamp_of(st);
  out.file = out.stamp;
  out.stamp.size = text.size();
  const trellis::detail::LineScan scan =
      trellis::detail::scan_lines(text, [&](std::string_view line, std::size_t number) {
        nlohmann::json record;
        auto refusal = trellis::detail::parse_json(line, record);
        if (!refusal) refusal = trellis::detail::take_and_verify_checksum(record);
        if (refusal) corrupt(path, number, refusal->detail);
        try {
          return static_cast<bool>(take(record));
        } catch (const store_error& e) {
          corrupt(path, number, e.what());
        }
      });
  out.valid_size = scan.valid_size;
  out.torn = scan.torn;
  out.records = scan.lines;
  return out;
}

// When the run whose journal starts with `record` (applied to `decoder`) was created: the
// "run_created_at" a keep_last rewrite puts on the first kept line, else that checkpoint's time.
std::string first_created_at(const nlohmann::json& record, const detail::CheckpointDecoder& d) {
  if (auto it = record.find("run_created_at"); it != record.end() && it->is_string())
    return it->get<std::string>();
  const auto& cp = d.current_json();
  if (auto it = cp.find("created_at"); it != cp.end() && it->is_string())
    return it->get<std::string>();
  return {};
}

// What the first line of a journal says of the run's creation.
struct JournalStart {
  std::string created_at;  // first_created_at
  bool exact = false;      // the first line is checkpoint 0 or carries run_created_at
};

// Reads the journal of the run directory `dir` (`path` names it), applying each intact record
// to `decoder` and then calling `visit(decoder, seq)` (return false to stop early). `start`
// (may be null) receives what the first line says of the run's creation.
template <class Visit>
LinesRead read_journal(const Directory& dir, const fs::path& path,
                       detail::CheckpointDecoder& decoder, Visit&& visit,
                       JournalStart* start = nullptr) {
  bool first = true;
  return read_lines(dir, kJournal, path, [&](const nlohmann::json& record) {
    const std::uint64_t seq = decoder.apply(record);
    if (first && start) {
      start->created_at = first_created_at(record, decoder);
      start->exact = seq == 0 || record.contains("run_created_at");
    }
    first = false;
    return visit(decoder, seq);
  });
}

// A run's effect records: the newest record of each key, in the order the keys first appeared.
struct EffectList {
  std::vector<EffectRecord> records;
  std::map<std::string, std::size_t, std::less<>> index;  // key -> position in records

  void put(EffectRecord record) {
    auto [at, fresh] = index.try_emplace(record.key, records.size());
    if (fresh)
      records.push_back(std::move(record));
    else
      records[at->second] = std::move(record);
  }
  const EffectRecord* find(std::string_view key) const {
    auto at = index.find(key);
    return at == index.end() ? nullptr : &records[at->second];
  }
};

// Reads the effects file of the run directory `dir` (a missing file holds no records).
LinesRead read_effect_log(const Directory& dir, const fs::path& path, EffectList& out) {
  return read_lines(dir, kEffects, path, [&](const nlohmann::json& record) {
    out.put(record.get<EffectRecord>());
    return true;
  });
}

// An append-only file of checksummed lines in a run's directory (the journal, effects.jsonl):
// this object's O_APPEND writer and the stamp of the content its cache was built from.
struct LineLog {
  const Directory& dir;  // the run's directory (reopened by the owner when it was replaced)
  const char* name;
  fs::path path;  // for messages
  mode_t mode;    // of a file append creates
  unique_fd fd;
  bool cached = false;  // the owner's cache holds the file as of `stamp`
  FileStamp stamp;

  LineLog(const Directory& d, const char* n, fs::path p, mode_t m)
      : dir(d), name(n), path(std::move(p)), mode(m) {}

  // Forgets the file (it was replaced, or the run's directory moved away).
  void reset() {
    fd.close();
    cached = false;
  }

  // The file's stamp now, or nullopt when it does not exist.
  std::optional<FileStamp> current() const {
    struct stat st {};
    if (::fstatat(dir.fd(), name, &st, AT_SYMLINK_NOFOLLOW) == 0) return stamp_of(st);
    if (errno != ENOENT) fail(path, "stat", errno);
    return std::nullopt;
  }

  // After the owner rebuilt its cache from `read`: cuts a torn last line (the caller holds
  // commit.lock) and trusts the cache from now on.
  void settle(const LinesRead& read, bool sync) {
    stamp = read.stamp;
    if (read.torn) {
      unique_fd cut;
      if (const int err = dir.open_file(name, O_WRONLY, 0, cut)) fail(path, "open", err);
      if (const int err = trellis::detail::cut_torn_tail(cut.get(), read.valid_size, sync))
        fail(path, "cut the torn last line of", err);
      struct stat st {};
      if (::fstat(cut.get(), &st) != 0) fail(path, "stat", errno);
      stamp = stamp_of(st);
    }
    cached = true;
  }

  // Appends one line with one write(2) and an fdatasync (under commit.lock, with the cache
  // settled: `stamp.size` is the file's size, 0 when `create`, the file being missing); on
  // failure cuts the file back. A created file's directory is fsync'd. The owner then adds
  // the line's record to its cache, which stays trusted. (The journal.* failpoints fire for
  // either file.)
  void append(const std::string& line, bool sync, bool create) {
    if (fd && !same_entry(fd.get(), dir, name)) fd.close();
    if (!fd) {
      if (const int err =
              dir.open_file(name, O_WRONLY | O_APPEND | (create ? O_CREAT : 0), mode, fd))
        fail(path, "open", err);
    }
    // The persist journal's boundary failpoints: the crash tests kill at them in either file.
    static constexpr trellis::detail::AppendFailpoints failpoints{
        .mid_append = "journal.mid_append", .after_append = "journal.after_append"};
    if (auto failure =
            trellis::detail::append_line(fd.get(), line, stamp.size, sync, &failpoints, path)) {
      cached = false;
      if (failure->cut_error != 0)
        throw store_error("trellis: file store: " + failure->operation + " '" + path.string() +
                          "': " + std::strerror(failure->error) + ", then cut the line back (" +
                          failure->cut_step + ": " + std::strerror(failure->cut_error) +
                          "): the file may hold the line");
      fail(path, failure->operation + " of", failure->error);
    }
    if (create && sync) {
      if (const int err = dir.sync()) fail(path.parent_path(), "fsync the directory", err);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail(path, "stat", errno);
    stamp = stamp_of(st);
    cached = true;
  }
};

// Replaces `target` in `dir` by `bytes` (the toolkit's atomic replace: old or new content after
// a crash, never a mix). `shown` names the directory.
void replace_file(const Directory& dir, const fs::path& shown, const char* target,
                  std::string_view bytes, mode_t mode, bool sync) {
  trellis::detail::ReplaceProgress progress;
  const int err = trellis::detail::replace_file(
      dir, target, bytes, trellis::detail::ReplaceOptions{.mode = mode, .sync = sync}, progress);
  if (err == 0) return;
  switch (progress.step) {
    case trellis::detail::ReplaceStep::create_temporary:
      fail(shown / target, "create a temporary file beside", err);
    case trellis::detail::ReplaceStep::write:
      fail(shown / progress.temporary, "write", err);
    case trellis::detail::ReplaceStep::sync:
      fail(shown / progress.temporary, "fsync", err);
    case trellis::detail::ReplaceStep::close:
      fail(shown / progress.temporary, "close", err);
    case trellis::detail::ReplaceStep::rename:
      fail(shown / target, "rename over", err);
    default:
      fail(shown, "fsync the directory", err);
  }
}

using FlockGuard = trellis::detail::FileLockGuard;

// Tries to take the lease file of `dir` without waiting. On success returns the descriptor;
// on a held lease returns an empty descriptor and the holder's text ("pid N, owner 'w'").
struct LeaseAttempt {
  unique_fd fd;
  std::string holder;
  bool missing = false;  // the run's directory does not exist (and `create` was false)
};

// What the lease file says: "epoch <n> <holder id>\n<pid> <owner>\n" while it is held,
// "epoch <n>\n" once released (so the next holder's epoch is larger), "<pid> <owner>\n" as
// written before epochs existed (epoch 0).
struct LeaseFile {
  std::uint64_t epoch = 0;
  std::string pid;  // empty: nobody holds it
  std::string owner;
};

LeaseFile parse_lease_file(const std::string& text) {
  LeaseFile out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (line.starts_with("epoch ")) {
      std::uint64_t n = 0;
      for (const char ch : line.substr(6)) {
        if (ch < '0' || ch > '9') break;
        n = n * 10 + static_cast<std::uint64_t>(ch - '0');
      }
      out.epoch = n;
    } else if (const auto space = line.find(' '); space != std::string_view::npos && space > 0) {
      out.pid = std::string(line.substr(0, space));
      // The owner is free text (it may hold newlines): the rest of the file.
      out.owner = text.substr(start + space + 1);
      while (!out.owner.empty() && out.owner.back() == '\n') out.owner.pop_back();
      break;
    }
    start = end + 1;
  }
  return out;
}

LeaseAttempt try_lease(const Directory& root, const Modes& modes, std::string_view id,
                       const fs::path& dir, bool sync, bool create = true) {
  const fs::path file = dir / kLease;
  for (int attempt = 0;; ++attempt) {
    Directory run;
    if (!open_run_directory(root, modes, id, dir, create, sync, run))
      return {unique_fd(), {}, true};
    unique_fd fd;
    if (const int err = open_regular_rw(run, kLease, 0, modes.file, fd)) {
      // The run was renamed away (retention) between mkdir and open: make it again (or, without
      // `create`, find it missing).
      if (err == ENOENT && attempt < 8) continue;
      fail(file, "open the lease file", err);
    }
    if (const int locked = trellis::detail::try_lock_file(fd.get()); locked != 0) {
      if (locked != EWOULDBLOCK) fail(file, "flock", locked);
      const LeaseFile held = parse_lease_file(trellis::detail::read_lock_holder(fd.get()));
      const std::string holder = held.pid.empty() ? "another worker (holder unknown)"
                                                  : "'" + held.owner + "' (pid " + held.pid + ")";
      return {unique_fd(), holder};
    }
    // Locked a file that was moved away (or its directory was): retry.
    if (!same_entry(fd.get(), run, kLease) || !same_entry(run.fd(), root, id)) continue;
    return {std::move(fd), {}};
  }
}

// Replaces the lease file's content with `text` (a crash in between leaves the new epoch line
// first: write_lock_holder).
bool write_lease_file(int fd, const std::string& text) noexcept {
  return trellis::detail::write_lock_holder(fd, text);
}

void release_lease_fd(int fd, std::uint64_t epoch = 0) noexcept {
  // Clear the holder first, so a later refusal never names a worker that has let go; keep the
  // epoch, so the next holder's is larger.
  if (epoch == 0 || !write_lease_file(fd, "epoch " + std::to_string(epoch) + "\n"))
    (void)!::ftruncate(fd, 0);
  ::close(fd);
}

// The leases FileStore objects of this process hold, by holder id: a flock cannot be lost
// while its descriptor is open, so a token holds its run's lease exactly as long as it is
// here (and its descriptor is still the lease file of that run's directory).
struct HeldLease {
  std::string run_id;
  int fd;
};
std::mutex held_leases_m;
std::map<std::string, HeldLease, std::less<>>& held_leases() {
  static std::map<std::string, HeldLease, std::less<>> held;
  return held;
}

// Why `lease` (unless empty: the no-token overloads, for which a flock lease of this object
// cannot have been lost) no longer holds the lease of run `run_id` in the store `root`.
std::optional<detail::LeaseRefusal> lease_refusal(const std::string& run_id, const Directory& root,
                                                  const LeaseToken& lease) {
  if (lease.empty()) return std::nullopt;
  std::lock_guard lock(held_leases_m);
  auto it = held_leases().find(lease.holder);
  Directory run;
  if (it == held_leases().end() || it->second.run_id != run_id ||
      root.open_directory(run_id, run) != 0 || !same_entry(it->second.fd, run, kLease))
    return detail::LeaseRefusal{lease.epoch, "was released"};
  return std::nullopt;
}

std::atomic<unsigned> trash_counter{0};

}  // namespace

// The store's root: the directory resolved and opened once, and the modes of what it creates.
struct FileStore::Root {
  Directory dir;
  Modes modes;
};

struct FileStore::RunFiles {
  std::mutex m;
  const Root& root;
  std::string id;
  fs::path dir_path;  // <root>/<id> as the user named the root, for messages
  Directory dir;      // the run's directory, when open (never through a link)
  unique_fd lock_fd;  // commit.lock
  unique_fd events_fd;
  // The journal's newest checkpoint (newest_seq, the encoder) as of journal.stamp.
  LineLog journal;
  std::uint64_t newest_seq = 0;
  detail::CheckpointEncoder encoder;
  // When the run was created (its first checkpoint's time), as of journal.stamp.
  std::string created_at;
  // effects.jsonl's records as of effect_log.stamp.
  LineLog effect_log;
  EffectList effects;
  // requests.jsonl's newest id as of request_log.stamp.
  LineLog request_log;
  std::uint64_t last_request = 0;

  RunFiles(const Root& r, std::string run_id, fs::path shown, std::size_t every)
      : root(r),
        id(std::move(run_id)),
        dir_path(std::move(shown)),
        journal(dir, kJournal, dir_path / kJournal, r.modes.file),
        encoder(every),
        effect_log(dir, kEffects, dir_path / kEffects, r.modes.file),
        request_log(dir, kRequests, dir_path / kRequests, r.modes.file) {}

  // Drops everything opened in the run's directory (it was moved away or replaced).
  void reset() {
    lock_fd.close();
    journal.reset();
    effect_log.reset();
    request_log.reset();
    events_fd.close();
    dir = Directory();
  }

  // Makes `dir` the run's directory now: reopens it when it was moved away or replaced (a
  // deleted run, a new run of the same id). False when it does not exist and `create` is
  // false. Never called while commit.lock is held (reset() closes it).
  bool open_dir(bool create, bool sync) {
    if (dir && same_entry(dir.fd(), root.dir, id)) return true;
    reset();
    return open_run_directory(root.dir, root.modes, id, dir_path, create, sync, dir);
  }

  // Takes commit.lock, (re)opening it if the run's directory was replaced. Returns an empty
  // guard when the run's directory does not exist and `create_dir` is false.
  std::optional<FlockGuard> lock(bool create_dir, bool sync) {
    const fs::path file = dir_path / kCommitLock;
    for (;;) {
      if (!lock_fd) {
        if (!open_dir(create_dir, sync)) return std::nullopt;
        if (const int err = open_regular_rw(dir, kCommitLock, 0, root.modes.file, lock_fd)) {
          if (err == ENOENT) {  // the directory was moved away meanwhile
            reset();
            continue;
          }
          fail(file, "open the commit lock", err);
        }
      }
      if (const int err = trellis::detail::lock_file(lock_fd.get())) fail(file, "flock", err);
      FlockGuard guard(lock_fd.get());
      if (same_entry(lock_fd.get(), dir, kCommitLock) && same_entry(dir.fd(), root.dir, id))
        return guard;
      // Moved away (a deleted run): drop everything opened in the old directory and retry.
      { FlockGuard release = std::move(guard); }
      reset();
    }
  }

  // Brings the cache up to date with the journal (under commit.lock when `writer`, which also
  // cuts a torn last line). False when the run has no journal, or an empty one. A journal whose
  // only bytes are an unterminated line is a store_error, never taken for a missing run (so a
  // create cannot replace it): trellis never leaves one (a journal appears whole, by rename).
  bool refresh(bool writer, bool sync) {
    if (!writer && !open_dir(false, sync)) {
      journal.cached = false;
      return false;
    }
    const std::optional<FileStamp> now = journal.current();
    if (!now) {
      journal.cached = false;
      return false;
    }
    if (journal.cached && *now == journal.stamp) return true;
    journal.cached = false;
    detail::CheckpointDecoder decoder;
    JournalStart start;
    const LinesRead read = read_journal(
        dir, journal.path, decoder, [](auto&, std::uint64_t) { return true; }, &start);
    if (!read.exists) return false;
    if (read.records == 0) {
      if (!read.torn) return false;  // empty
      corrupt(journal.path, 1, "no complete checkpoint line (an unterminated line only)");
    }
    if (read.torn && !writer) return true;  // usable, but not cached: the tail will change
    journal.settle(read, sync);
    encoder.continue_after(decoder.current_json(), decoder.since_full());
    newest_seq = decoder.seq();
    created_at = std::move(start.created_at);
    return true;
  }

  // The newest checkpoint from the cache (refresh() returned true and journal.cached is set).
  Checkpoint newest() const {
    nlohmann::json j = *encoder.previous();
    j["seq"] = newest_seq;
    Checkpoint c;
    from_json(j, c);
    return c;
  }

  // Brings `effects` up to date with effects.jsonl (under commit.lock when `writer`, which also
  // cuts a torn last line; a reader's view of a torn file is used once, not cached). False
  // when the file does not exist (no effect was ever put).
  bool refresh_effects(bool writer, bool sync) {
    const std::optional<FileStamp> now =
        writer || open_dir(false, sync) ? effect_log.current() : std::nullopt;
    if (!now) {
      effects = {};
      effect_log.stamp = {};
      effect_log.cached = false;
      return false;
    }
    if (effect_log.cached && *now == effect_log.stamp) return true;
    effect_log.cached = false;
    effects = {};
    const LinesRead read = read_effect_log(dir, effect_log.path, effects);
    if (read.exists && (writer || !read.torn)) effect_log.settle(read, sync);
    return read.exists;
  }

  // Brings `last_request` up to date with requests.jsonl (under commit.lock: a torn last line
  // is cut). False when the file does not exist (no request was ever made).
  bool refresh_requests(bool sync) {
    const std::optional<FileStamp> now = request_log.current();
    if (!now) {
      last_request = 0;
      request_log.stamp = {};
      request_log.cached = false;
      return false;
    }
    if (request_log.cached && *now == request_log.stamp) return true;
    request_log.cached = false;
    last_request = 0;
    const LinesRead read =
        read_lines(dir, kRequests, request_log.path, [&](const nlohmann::json& record) {
          last_request = std::max(last_request, record.get<CancelRequest>().id);
          return true;
        });
    if (read.exists) request_log.settle(read, sync);
    return read.exists;
  }
};

// --- the run index ------------------------------------------------------------------------

namespace {

// One line of the index: a run's summary and the stamp of its journal when it was written.
struct IndexEntry {
  FileStamp journal;
  RunSummary summary;
};

// The stamp as the index keeps it (the device is left out: a store may be copied or mounted
// elsewhere, which changes inodes anyway).
bool same_journal(const FileStamp& a, const FileStamp& b) {
  return a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns;
}

// One line of the index: a JSON array (compact, and cheap to read back: list_runs reads a line
// per run), [ino, size, mtime_ns, run_id, status, reason, node, step, seq, created_at,
// updated_at, fingerprint, request, due, priority] (layout 3; a line of layout 2 ends with
// request, and is not used: it does not say when the run is due).
std::string index_line(const RunSummary& s, const FileStamp& journal) {
  const nlohmann::json j = {static_cast<std::uint64_t>(journal.ino),
                            journal.size,
                            journal.mtime_ns,
                            s.run_id,
                            enumeration<RunStatus>::name(s.status),
                            enumeration<Reason>::name(s.reason),
                            s.node,
                            s.step,
                            s.seq,
                            s.created_at,
                            s.updated_at,
                            s.fingerprint,
                            s.request,
                            s.due,
                            s.priority};
  return j.dump() + "\n";
}

// Reads index lines as index_line writes them. The fast path takes strings without escapes
// (almost all of them); a line it cannot take goes through the JSON parser.
class IndexLineReader {
 public:
  explicit IndexLineReader(std::string_view line)
      : p_(line.data()), end_(line.data() + line.size()) {}

  bool read(IndexEntry& out) {
    std::uint64_t ino = 0;
    std::int64_t priority = 0;
    std::string_view status, reason;
    RunSummary& s = out.summary;
    if (!(take('[') && number(ino) && take(',') && number(out.journal.size) && take(',') &&
          signed_number(out.journal.mtime_ns) && take(',') && text(s.run_id) && take(',') &&
          text(status) && take(',') && text(reason) && take(',') && text(s.node) && take(',') &&
          number(s.step) && take(',') && number(s.seq) && take(',') && text(s.created_at) &&
          take(',') && text(s.updated_at) && take(',') && text(s.fingerprint) && take(',') &&
          text(s.request) && take(',') && text(s.due) && take(',') && signed_number(priority) &&
          take(']') && p_ == end_))
      return false;
    if (priority < INT_MIN || priority > INT_MAX) return false;
    s.priority = static_cast<int>(priority);
    out.journal.ino = static_cast<ino_t>(ino);
    const auto st = enumeration<RunStatus>::from_name(status);
    const auto re = enumeration<Reason>::from_name(reason);
    if (!st || !re) return false;
    s.status = *st;
    s.reason = *re;
    return true;
  }

 private:
  bool take(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool number(std::uint64_t& out) {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    std::uint64_t n = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      const auto digit = static_cast<std::uint64_t>(*p_ - '0');
      if (n > (UINT64_MAX - digit) / 10) return false;
      n = n * 10 + digit;
      ++p_;
    }
    out = n;
    return true;
  }
  bool signed_number(std::int64_t& out) {
    const bool negative = take('-');
    std::uint64_t n = 0;
    if (!number(n) || n > static_cast<std::uint64_t>(INT64_MAX)) return false;
    out = negative ? -static_cast<std::int64_t>(n) : static_cast<std::int64_t>(n);
    return true;
  }
  bool text(std::string_view& out) {
    if (!take('"')) return false;
    const char* start = p_;
    while (p_ != end_ && *p_ != '"') {
      if (*p_ == '\\' || static_cast<unsigned char>(*p_) < 0x20) return false;  // the slow path
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<std::size_t>(p_ - start));
    ++p_;
    return true;
  }
  bool text(std::string& out) {
    std::string_view v;
    if (!text(v)) return false;
    out.assign(v);
    return true;
  }

  const char* p_;
  const char* end_;
};

// The JSON parser's reading of an index line (escaped strings).
bool parse_index_line_slowly(std::string_view line, IndexEntry& out) {
  nlohmann::json j;
  if (trellis::detail::parse_json(line, j) || !j.is_array() || j.size() != 15) return false;
  try {
    out.journal.ino = static_cast<ino_t>(j[0].get<std::uint64_t>());
    out.journal.size = j[1].get<std::uint64_t>();
    out.journal.mtime_ns = j[2].get<std::int64_t>();
    RunSummary& s = out.summary;
    s.run_id = j[3].get<std::string>();
    const auto st = enumeration<RunStatus>::from_name(j[4].get<std::string>());
    const auto re = enumeration<Reason>::from_name(j[5].get<std::string>());
    if (!st || !re) return false;
    s.status = *st;
    s.reason = *re;
    s.node = j[6].get<std::string>();
    s.step = j[7].get<std::uint64_t>();
    s.seq = j[8].get<std::uint64_t>();
    s.created_at = j[9].get<std::string>();
    s.updated_at = j[10].get<std::string>();
    s.fingerprint = j[11].get<std::string>();
    s.request = j[12].get<std::string>();
    s.due = j[13].get<std::string>();
    const auto priority = j[14].get<std::int64_t>();
    if (priority < INT_MIN || priority > INT_MAX) return false;
    s.priority = static_cast<int>(priority);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// Parses one index line; false for the header, a damaged line or one of another shape (the
// index is a cache: what it cannot use is read from the journals instead).
bool parse_index_line(std::string_view line, IndexEntry& out) {
  if (line.empty() || line.front() != '[') return false;
  if (!IndexLineReader(line).read(out) && !parse_index_line_slowly(line, out)) return false;
  return valid_run_id(out.summary.run_id);
}

std::string index_header(std::uint64_t body_bytes) {
  nlohmann::json j = {{"format", kIndexFormat}, {"compacted_bytes", body_bytes}};
  return j.dump() + "\n";
}

// The compacted size a header line states; 0 when `text` does not start with one.
std::uint64_t parse_index_header(std::string_view text) {
  const std::size_t end = text.find('\n');
  if (end == std::string_view::npos) return 0;
  nlohmann::json j;
  if (trellis::detail::parse_json(text.substr(0, end), j) || !j.is_object()) return 0;
  const auto format = j.find("format");
  const auto bytes = j.find("compacted_bytes");
  if (format == j.end() || *format != kIndexFormat || bytes == j.end() ||
      !bytes->is_number_unsigned())
    return 0;
  return bytes->get<std::uint64_t>();
}

// flock(2) with EINTR retried; 0 or an errno.
int flock_retry(int fd, int how) noexcept {
  int r = 0;
  do {
    r = ::flock(fd, how);
  } while (r != 0 && errno == EINTR);
  return r == 0 ? 0 : errno;
}

// The run's summary read from its journal (`old`: the index's stale entry, if any, for the
// creation time of a journal whose first checkpoints retention removed before run_created_at
// existed); nullopt when the run has no complete checkpoint (it is being created, or gone).
std::optional<IndexEntry> read_run_entry(const Directory& root, const Modes& modes,
                                         const std::string& id, const fs::path& shown,
                                         const IndexEntry* old) {
  Directory dir;
  if (!open_run_directory(root, modes, id, shown, false, false, dir)) return std::nullopt;
  detail::CheckpointDecoder decoder;
  JournalStart start;
  const LinesRead read = read_journal(
      dir, shown / kJournal, decoder, [](auto&, std::uint64_t) { return true; }, &start);
  if (!read.exists || decoder.empty()) return std::nullopt;
  std::string created_at = std::move(start.created_at);
  if (!start.exact && old) created_at = old->summary.created_at;
  // The file's stamp as stat'd: a torn tail (ignored by readers) keeps the entry valid until
  // a writer cuts it.
  return IndexEntry{read.file, summarize(decoder.current(), std::move(created_at))};
}

}  // namespace

// The index's descriptors for appending (shared by the threads of this store, under `m`) and
// when a writer found it due for compaction.
struct FileStore::Index {
  std::mutex m;
  unique_fd lock_fd;            // @index.lock, flock'd shared around each append
  unique_fd fd;                 // @index.jsonl, O_APPEND
  std::uint64_t compacted = 0;  // the size its header states (0: none)
  unsigned appends = 0;
  std::atomic<bool> due{false};

  // Appends a run's line (under the shared flock, no fsync: the index is a cache, so a line
  // lost or torn by a crash costs one journal read later). Never throws: the commit it follows
  // is durable already, and a missing line is harmless.
  void append(const Root& root, const std::string& line) noexcept {
    try {
      std::lock_guard lock(m);
      if (!lock_fd && open_regular_rw(root.dir, kIndexLock, 0, root.modes.file, lock_fd) != 0)
        return;
      if (flock_retry(lock_fd.get(), LOCK_SH) != 0) return;
      FlockGuard unlock(lock_fd.get());
      if (fd && !same_entry(fd.get(), root.dir, kIndex)) fd.close();  // compacted meanwhile
      if (!fd) {
        if (root.dir.open_file(kIndex, O_RDWR | O_APPEND | O_CREAT, root.modes.file, fd) != 0)
          return;
        char head[512];
        const ssize_t n = ::pread(fd.get(), head, sizeof head, 0);
        compacted =
            n > 0 ? parse_index_header(std::string_view(head, static_cast<std::size_t>(n))) : 0;
        appends = 0;
      }
      if (trellis::detail::write_all(fd.get(), line) != 0) return;
      if (++appends % kIndexCheckEvery == 0) {
        struct stat st {};
        if (::fstat(fd.get(), &st) == 0 &&
            static_cast<std::uint64_t>(st.st_size) > 2 * compacted + kIndexSlack)
          due = true;
      }
    } catch (...) {
    }
  }
};

// Every run's summary (sorted by run id) and what the index looked like.
struct FileStore::Listing {
  std::vector<IndexEntry> runs;
  bool index_exists = false;
  std::size_t index_lines = 0;
  std::size_t stale = 0;  // runs read from their journal (no usable line, or a stale one)
};

FileStore::Listing FileStore::collect(bool use_index) {
  Listing out;
  const Directory& root = root_dir_->dir;
  std::unordered_map<std::string, IndexEntry> entries;
  if (use_index) {
    unique_fd fd;
    const int err = root.open_regular(kIndex, fd);
    if (err != 0 && err != ENOENT) fail(root_ / kIndex, "open", err);
    if (err == 0) {
      std::string text;
      if (const int r = trellis::detail::read_all(fd.get(), text)) fail(root_ / kIndex, "read", r);
      out.index_exists = true;
      entries.reserve(text.size() / 256 + 16);
      IndexEntry entry;
      trellis::detail::scan_lines(text, [&](std::string_view line, std::size_t) {
        ++out.index_lines;
        if (parse_index_line(line, entry)) {
          std::string id = entry.summary.run_id;
          entries.insert_or_assign(std::move(id), std::move(entry));
        }
        return true;
      });
    }
  }
  // The runs are the directories of the root that hold a journal: the index only says what
  // they hold, and only while their journal is as it recorded.
  const int dup = ::openat(root.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) fail(root_, "open", errno);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dup), &::closedir);
  if (!d) {
    const int err = errno;
    ::close(dup);
    fail(root_, "list", err);
  }
  std::string rel;
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d.get());
    if (!e) {
      if (errno != 0) fail(root_, "list", errno);
      break;
    }
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    const std::string_view name(e->d_name);
    if (name.starts_with('@') || name.starts_with('~') || name.starts_with('.') ||
        !valid_run_id(name))
      continue;
    struct stat st {};
    if (e->d_type == DT_UNKNOWN &&
        (::fstatat(root.fd(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)))
      continue;
    rel.assign(name).append("/").append(kJournal);
    if (::fstatat(root.fd(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size == 0)
      continue;
    const std::string id(name);
    const auto it = entries.find(id);
    if (it != entries.end() && same_journal(it->second.journal, stamp_of(st))) {
      out.runs.push_back(std::move(it->second));
      continue;
    }
    ++out.stale;
    std::optional<IndexEntry> read = read_run_entry(root, root_dir_->modes, id, root_ / id,
                                                    it == entries.end() ? nullptr : &it->second);
    if (read) out.runs.push_back(std::move(*read));
  }
  std::sort(out.runs.begin(), out.runs.end(), [](const IndexEntry& a, const IndexEntry& b) {
    return a.summary.run_id < b.summary.run_id;
  });
  return out;
}

FileStore::Listing FileStore::compact() {
  const Directory& root = root_dir_->dir;
  unique_fd lock_fd;
  if (const int err = open_regular_rw(root, kIndexLock, 0, root_dir_->modes.file, lock_fd))
    fail(root_ / kIndexLock, "open", err);
  if (const int err = flock_retry(lock_fd.get(), LOCK_EX)) fail(root_ / kIndexLock, "flock", err);
  FlockGuard unlock(lock_fd.get());
  Listing out = collect(true);
  std::string body;
  body.reserve(out.runs.size() * 320);
  for (const IndexEntry& e : out.runs) body += index_line(e.summary, e.journal);
  std::string text = index_header(body.size());
  text += body;
  replace_file(root, root_, kIndex, text, root_dir_->modes.file, options_.sync);
  index_->due = false;
  out.index_exists = true;
  out.index_lines = out.runs.size() + 1;
  out.stale = 0;
  return out;
}

// --- opening ----------------------------------------------------------------------------------

FileStore::FileStore(fs::path root, FileStoreOptions options)
    : root_(std::move(root)),
      options_(options),
      root_dir_(std::make_unique<Root>()),
      index_(std::make_unique<Index>()) {
  root_dir_->modes = Modes::from_file_mode(static_cast<mode_t>(options_.file_mode),
                                           "file store '" + root_.string() + "'");
  open_root();
}

void FileStore::open_root() {
  const bool read_only = options_.read_only;
  auto not_store = [&](const std::string& why) {
    throw not_a_store("trellis: " + root_.string() + " is not a trellis store: " + why);
  };
  // The root (and the path to it) may go through links: resolved here, once. Read-only, a
  // missing root is not made.
  if (const int err = root_dir_->dir.open(root_, !read_only, root_dir_->modes)) {
    if (read_only && err == ENOENT) not_store("nothing is there");
    if (read_only && err == ENOTDIR) not_store("it is not a directory");
    throw store_error("trellis: file store: cannot use '" + root_.string() +
                      "' as its root: " + reason(root_, err));
  }
  const Directory& root = root_dir_->dir;
  const fs::path marker = root_ / kMarker;

  // The marker, if any.
  std::optional<std::uint64_t> marked;
  {
    unique_fd fd;
    const int err = root.open_regular(kMarker, fd);
    if (err == EINVAL || err == ELOOP) not_store(std::string(kMarker) + " is not a regular file");
    if (err != 0 && err != ENOENT) fail(marker, "open", err);
    if (err == 0) {
      std::string text;
      if (const int r = trellis::detail::read_all(fd.get(), text)) fail(marker, "read", r);
      nlohmann::json j;
      if (auto refusal = trellis::detail::parse_json(text, j))
        not_store(std::string(kMarker) + " does not parse: " + refusal->detail);
      const auto format = j.is_object() ? j.find("format") : j.end();
      if (!j.is_object() || format == j.end() || !format->is_string())
        not_store(std::string(kMarker) + " names no format");
      if (*format != kFormat)
        not_store(std::string(kMarker) + " is the marker of another format ('" +
                  format->get<std::string>() + "')");
      const auto version = j.find("version");
      if (version == j.end() || !version->is_number_unsigned() ||
          version->get<std::uint64_t>() == 0)
        not_store(std::string(kMarker) + " holds no version");
      marked = version->get<std::uint64_t>();
      if (*marked > static_cast<std::uint64_t>(format_version))
        throw store_error("trellis: file store '" + root_.string() + "': " + marker.string() +
                          " says layout version " + std::to_string(*marked) +
                          ", newer than this build reads (version " +
                          std::to_string(format_version) +
                          "); open it with a newer trellis (nothing was changed)");
    }
  }

  // No marker: a store of the previous release (run directories), an empty root, or
  // something else.
  bool empty = false;
  if (!marked) {
    bool runs = false, foreign = false;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root.path(), ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with('@') || name.starts_with(kTrashPrefix)) continue;  // ours
      struct stat st {};
      bool run = valid_run_id(name) &&
                 ::fstatat(root.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(st.st_mode);
      if (run) {
        run = false;
        for (const char* file : {kJournal, kLease, kCommitLock})
          run = run ||
                ::fstatat(root.fd(), (name + "/" + file).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
      }
      if (run) {
        runs = true;
        break;
      }
      foreign = true;
    }
    if (ec)
      throw store_error("trellis: file store: cannot list '" + root_.string() +
                        "': " + ec.message());
    if (!runs && foreign)
      not_store("it holds files that are not a store's (no " + std::string(kMarker) +
                ", no run directories)");
    if (!runs && read_only) not_store("it is empty");
    empty = !runs;
    marked = empty ? format_version : 1;
  }
  version_ = static_cast<int>(*marked);
  if (read_only) return;

  // Writable: a new store gets its marker; a version 1 store its index, then its marker.
  if (version_ < format_version) compact();
  if (version_ < format_version || empty) {
    const std::string text = "{\"format\":\"" + std::string(kFormat) +
                             "\",\"version\":" + std::to_string(format_version) + "}\n";
    replace_file(root, root_, kMarker, text, root_dir_->modes.file, options_.sync);
    version_ = format_version;
  }
  // Finish deletions that a crash interrupted.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root.path(), ec)) {
    if (entry.path().filename().string().starts_with(kTrashPrefix)) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

void FileStore::refuse_write(std::string_view what) const {
  if (options_.read_only)
    throw store_error("trellis: file store '" + root_.string() + "' was opened read-only: cannot " +
                      std::string(what));
}

FileStore::~FileStore() = default;

fs::path FileStore::run_directory(std::string_view run_id) const {
  check_run_id(run_id);
  return root_ / std::string(run_id);
}

std::shared_ptr<FileStore::RunFiles> FileStore::files(std::string_view run_id) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  if (auto it = runs_.find(run_id); it != runs_.end()) return it->second;
  if (runs_.size() >= kMaxOpenRuns) {
    for (auto it = runs_.begin(); it != runs_.end();)
      it = it->second.use_count() == 1 ? runs_.erase(it) : std::next(it);  // idle: close
  }
  auto files = std::make_shared<RunFiles>(*root_dir_, std::string(run_id),
                                          root_ / std::string(run_id), options_.snapshot_every);
  runs_.emplace(std::string(run_id), files);
  return files;
}

void FileStore::forget(const std::string& run_id) {
  std::lock_guard lock(m_);
  runs_.erase(run_id);
}

// One run under its commit.lock (none for a renewal: a lease is its own flock).
class FileStore::Write final : public detail::RunWrite {
 public:
  Write(FileStore& store, RunFiles* rf, std::string_view run_id, bool exists)
      : store_(store), rf_(rf), run_id_(run_id), exists_(exists) {}

  std::optional<std::uint64_t> newest_seq() override {
    if (!exists_) return std::nullopt;
    return rf_->newest_seq;
  }

  std::optional<detail::LeaseRefusal> hold_lease(const LeaseToken& lease) override {
    return lease_refusal(std::string(run_id_), store_.root_dir_->dir, lease);
  }

  void insert_first(const Checkpoint& first) override {
    // A new journal appears whole (temporary file + rename), so a crash leaves no half run;
    // the temporaries of a create or rewrite that a crash interrupted go first.
    std::size_t removed = 0;
    if (const int err = rf_->dir.remove_temporaries(kJournal, removed))
      fail(rf_->dir_path, "remove the leftover temporaries in", err);
    detail::CheckpointEncoder encoder(store_.options_.snapshot_every);
    const std::string line = encode_line(encoder.encode(first));
    replace_file(rf_->dir, rf_->dir_path, kJournal, line, store_.root_dir_->modes.file,
                 store_.options_.sync);
    rf_->journal.reset();
    rf_->created_at = first.created_at;
    struct stat st {};
    if (::fstatat(rf_->dir.fd(), kJournal, &st, AT_SYMLINK_NOFOLLOW) == 0)
      store_.index_->append(*store_.root_dir_,
                            index_line(summarize(first, first.created_at), stamp_of(st)));
  }

  void append(const Checkpoint& next) override {
    std::string line;
    try {
      line = encode_line(rf_->encoder.encode(next));
    } catch (...) {
      rf_->journal.cached = false;  // the encoder moved on without a line
      throw;
    }
    rf_->journal.append(line, store_.options_.sync, false);
    rf_->newest_seq = next.seq;
    store_.index_->append(*store_.root_dir_,
                          index_line(summarize(next, rf_->created_at), rf_->journal.stamp));
  }

  void put_effect(const EffectRecord& record) override {
    const std::string line = encode_line(detail::effect_json(record));
    const bool exists = rf_->refresh_effects(true, store_.options_.sync);
    rf_->effect_log.append(line, store_.options_.sync, /*create=*/!exists);
    rf_->effects.put(record);
  }

  std::uint64_t append_cancel_request(const CancelRequest& request) override {
    const bool exists = rf_->refresh_requests(store_.options_.sync);
    CancelRequest numbered = request;
    numbered.id = rf_->last_request + 1;
    const std::string line = encode_line(nlohmann::json(numbered));
    rf_->request_log.append(line, store_.options_.sync, /*create=*/!exists);
    rf_->last_request = numbered.id;
    return numbered.id;
  }

 private:
  FileStore& store_;
  RunFiles* rf_;
  std::string_view run_id_;
  bool exists_;
};

void FileStore::write_run(std::string_view run_id, detail::WriteKind kind,
                          detail::RunBody<detail::RunWrite> body) {
  switch (kind) {
    case detail::WriteKind::create:
      refuse_write("create a run");
      break;
    case detail::WriteKind::commit:
      refuse_write("commit");
      break;
    case detail::WriteKind::put_effect:
      refuse_write("put an effect record");
      break;
    case detail::WriteKind::renew:
      refuse_write("renew a lease");
      break;
    case detail::WriteKind::request:
      refuse_write("request a cancellation");
      break;
  }
  if (kind == detail::WriteKind::renew) {
    run_directory(run_id);
    Write run(*this, nullptr, run_id, false);
    body(run);
    return;
  }
  {
    auto rf = files(run_id);
    std::lock_guard lock(rf->m);
    auto guard = rf->lock(kind == detail::WriteKind::create, options_.sync);
    const bool exists = guard && rf->refresh(true, options_.sync);
    Write run(*this, rf.get(), run_id, exists);
    body(run);
  }
  // The index outgrew its bound: compacted here, outside the run's locks (a cache: a failure
  // leaves it as it was).
  if (index_->due.exchange(false)) {
    try {
      compact();
    } catch (const std::exception&) {
    }
  }
}

std::optional<Checkpoint> FileStore::read_latest(std::string_view run_id) {
  auto rf = files(run_id);
  std::lock_guard lock(rf->m);
  if (!rf->refresh(false, options_.sync)) return std::nullopt;
  if (rf->journal.cached) return rf->newest();
  // A torn tail that a reader may not cut: read it once more without caching.
  detail::CheckpointDecoder decoder;
  read_journal(rf->dir, rf->journal.path, decoder, [](auto&, std::uint64_t) { return true; });
  if (decoder.empty()) return std::nullopt;
  return decoder.current();
}

std::optional<Checkpoint> FileStore::read_checkpoint(std::string_view run_id, std::uint64_t seq) {
  const fs::path dir_path = run_directory(run_id);
  Directory dir;
  if (!open_run_directory(root_dir_->dir, root_dir_->modes, run_id, dir_path, false, false, dir))
    return std::nullopt;
  detail::CheckpointDecoder decoder;
  std::optional<Checkpoint> found;
  read_journal(dir, dir_path / kJournal, decoder,
               [&](const detail::CheckpointDecoder& d, std::uint64_t s) {
                 if (s == seq) found = d.current();
                 return s < seq;
               });
  return found;
}

std::vector<Checkpoint> FileStore::read_history(std::string_view run_id) {
  const fs::path dir_path = run_directory(run_id);
  Directory dir;
  if (!open_run_directory(root_dir_->dir, root_dir_->modes, run_id, dir_path, false, false, dir))
    return {};
  detail::CheckpointDecoder decoder;
  std::vector<Checkpoint> out;
  read_journal(dir, dir_path / kJournal, decoder,
               [&](const detail::CheckpointDecoder& d, std::uint64_t) {
                 out.push_back(d.current());
                 return true;
               });
  return out;
}

std::vector<std::string> FileStore::runs() {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_dir_->dir.path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!valid_run_id(name)) continue;
    // Only real directories are runs: a link planted in the root is not listed (opening it as
    // a run is refused).
    struct stat st {};
    if (::fstatat(root_dir_->dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode))
      continue;
    if (::fstatat(root_dir_->dir.fd(), (name + "/" + kJournal).c_str(), &st, AT_SYMLINK_NOFOLLOW) ==
            0 &&
        st.st_size > 0)
      ids.push_back(name);
  }
  if (ec)
    throw store_error("trellis: file store: cannot list '" + root_.string() + "': " + ec.message());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<Lease> FileStore::take_lease(std::string_view run_id, std::string_view owner,
                                           std::string& holder) {
  refuse_write("take a lease");
  const fs::path dir = run_directory(run_id);
  LeaseAttempt attempt = try_lease(root_dir_->dir, root_dir_->modes, run_id, dir, options_.sync);
  if (!attempt.fd) {
    holder = std::move(attempt.holder);
    return std::nullopt;
  }
  const fs::path file = dir / kLease;
  LeaseToken token{std::string(run_id), detail::new_lease_holder(),
                   parse_lease_file(trellis::detail::read_lock_holder(attempt.fd.get())).epoch + 1};
  // The epoch line must be there for the next holder; who holds it is for run_busy messages.
  if (!write_lease_file(attempt.fd.get(), "epoch " + std::to_string(token.epoch) + " " +
                                              token.holder + "\n" + std::to_string(::getpid()) +
                                              " " + std::string(owner) + "\n"))
    fail(file, "write", errno);
  struct Handle {
    int fd;
    LeaseToken token;
  };
  {
    std::lock_guard lock(held_leases_m);
    held_leases().insert_or_assign(token.holder, HeldLease{token.run_id, attempt.fd.get()});
  }
  // The handle owns the locked descriptor: closing it is what ends the lease.
  auto* handle = new Handle{attempt.fd.release(), token};
  return Lease(std::move(token), Lease::Handle(handle, [](void* p) {
                 auto* h = static_cast<Handle*>(p);
                 {
                   std::lock_guard lock(held_leases_m);
                   held_leases().erase(h->token.holder);
                 }
                 release_lease_fd(h->fd, h->token.epoch);
                 delete h;
               }));
}

std::optional<EffectRecord> FileStore::read_effect(std::string_view run_id, std::string_view key) {
  auto rf = files(run_id);
  std::lock_guard lock(rf->m);
  rf->refresh_effects(false, options_.sync);
  const EffectRecord* found = rf->effects.find(key);
  if (!found) return std::nullopt;
  return *found;
}

std::vector<EffectRecord> FileStore::read_effects(std::string_view run_id) {
  auto rf = files(run_id);
  std::lock_guard lock(rf->m);
  rf->refresh_effects(false, options_.sync);
  return rf->effects.records;
}

void FileStore::write_event(std::string_view run_id, const nlohmann::json& event) {
  std::string line;
  try {
    line = event.dump() + "\n";
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: file store: an event cannot be encoded: ") + e.what());
  }
  refuse_write("append an event");
  auto rf = files(run_id);
  std::lock_guard lock(rf->m);
  auto guard = rf->lock(false, options_.sync);
  if (!guard) return;  // no such run: like MemoryStore, events of unknown runs are dropped
  if (!rf->journal.current()) return;
  const fs::path path = rf->dir_path / kEvents;
  if (rf->events_fd && !same_entry(rf->events_fd.get(), rf->dir, kEvents)) rf->events_fd.close();
  if (!rf->events_fd) {
    if (const int err =
            open_regular_rw(rf->dir, kEvents, O_APPEND, root_dir_->modes.file, rf->events_fd))
      fail(path, "open", err);
  }
  struct stat st {};
  const int fd = rf->events_fd.get();
  // A crash may have torn the last line: cut it, or the next line would be buried in it.
  if (::fstat(fd, &st) != 0) fail(path, "stat", errno);
  char last = '\n';
  if (st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) != 1) fail(path, "read", errno);
  if (last != '\n') {
    std::string text;
    if (::lseek(fd, 0, SEEK_SET) != 0) fail(path, "seek", errno);
    if (const int err = trellis::detail::read_all(fd, text)) fail(path, "read", err);
    const trellis::detail::LineScan scan =
        trellis::detail::scan_lines(text, [](std::string_view, std::size_t) { return true; });
    if (const int err = trellis::detail::cut_torn_tail(fd, scan.valid_size, false))
      fail(path, "cut the torn last line of", err);
  }
  if (const int err = trellis::detail::write_all(fd, line)) fail(path, "append to", err);
}

std::vector<nlohmann::json> FileStore::read_events(std::string_view run_id) {
  std::vector<nlohmann::json> out;
  for (StoredEvent& e : read_events_after(run_id, 0)) out.push_back(std::move(e.event));
  return out;
}

void FileStore::retain(const detail::RetentionPlan& retention) {
  refuse_write("apply retention");
  const std::string& cutoff = retention.finished_before;
  for (const std::string& id : runs()) {
    const fs::path dir = root_ / id;
    const Directory& root = root_dir_->dir;
    if (!cutoff.empty()) {
      const std::optional<Checkpoint> newest = read_latest(id);
      if (newest && terminal(newest->status) && newest->created_at < cutoff) {
        LeaseAttempt lease = try_lease(root, root_dir_->modes, id, dir, options_.sync, false);
        if (!lease.fd) continue;  // someone is looking at it (or it is gone): next time
        const std::string trash_name = std::string(kTrashPrefix) + id + "." +
                                       std::to_string(::getpid()) + "." +
                                       std::to_string(trash_counter.fetch_add(1));
        const fs::path trash = root.path() / trash_name;
        if (const int err = root.rename(id, trash_name)) fail(dir, "move aside", err);
        if (options_.sync) {
          if (const int err = root.sync()) fail(root_, "fsync the directory", err);
        }
        release_lease_fd(lease.fd.release());
        std::error_code ec;
        fs::remove_all(trash, ec);
        if (ec)
          throw store_error("trellis: file store: cannot delete '" + trash.string() +
                            "': " + ec.message());
        forget(id);
        continue;
      }
    }
    if (retention.keep_last == 0) continue;
    auto rf = files(id);
    std::lock_guard lock(rf->m);
    auto guard = rf->lock(false, options_.sync);
    if (!guard || !rf->refresh(true, options_.sync)) continue;
    detail::CheckpointDecoder decoder;
    std::vector<Checkpoint> all;
    JournalStart start;
    read_journal(
        rf->dir, rf->journal.path, decoder,
        [&](const detail::CheckpointDecoder& d, std::uint64_t) {
          all.push_back(d.current());
          return true;
        },
        &start);
    if (all.size() <= retention.keep_last) continue;
    detail::CheckpointEncoder encoder(options_.snapshot_every);
    std::string text;
    for (auto it = all.end() - static_cast<std::ptrdiff_t>(retention.keep_last); it != all.end();
         ++it) {
      nlohmann::json record = encoder.encode(*it);
      // The first kept line remembers when the run was created (its summary's created_at).
      if (text.empty()) record["run_created_at"] = start.created_at;
      text += encode_line(record);
    }
    replace_file(rf->dir, rf->dir_path, kJournal, text, root_dir_->modes.file, options_.sync);
    rf->journal.reset();
    struct stat st {};
    if (::fstatat(rf->dir.fd(), kJournal, &st, AT_SYMLINK_NOFOLLOW) == 0)
      index_->append(*root_dir_, index_line(summarize(all.back(), start.created_at), stamp_of(st)));
  }
}

std::vector<StoredEvent> FileStore::read_events_after(std::string_view run_id,
                                                      std::uint64_t after_seq) {
  const fs::path dir_path = run_directory(run_id);
  const fs::path path = dir_path / kEvents;
  Directory dir;
  if (!open_run_directory(root_dir_->dir, root_dir_->modes, run_id, dir_path, false, false, dir))
    return {};
  unique_fd fd;
  if (const int err = dir.open_regular(kEvents, fd)) {
    if (err == ENOENT) return {};
    fail(path, "open", err);
  }
  std::string text;
  if (const int err = trellis::detail::read_all(fd.get(), text)) fail(path, "read", err);
  // An event's position is its line number: lines are only ever appended (a torn last line,
  // never counted, is cut before the next append), so positions never move.
  std::vector<StoredEvent> out;
  trellis::detail::scan_lines(text, [&](std::string_view line, std::size_t number) {
    if (number <= after_seq) return true;
    StoredEvent event{number, {}};
    if (auto refusal = trellis::detail::parse_json(line, event.event))
      corrupt(path, number, refusal->detail);
    out.push_back(std::move(event));
    return true;
  });
  return out;
}

std::vector<CancelRequest> FileStore::read_cancel_requests(std::string_view run_id,
                                                           std::uint64_t after) {
  // The run loop asks between every two steps: a run without requests costs one fstatat.
  const std::string relative = std::string(run_id) + "/" + kRequests;
  struct stat st {};
  if (::fstatat(root_dir_->dir.fd(), relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return {};
    fail(root_ / relative, "stat", errno);
  }
  const fs::path dir_path = run_directory(run_id);
  Directory dir;
  if (!open_run_directory(root_dir_->dir, root_dir_->modes, run_id, dir_path, false, false, dir))
    return {};
  std::vector<CancelRequest> out;
  read_lines(dir, kRequests, dir_path / kRequests, [&](const nlohmann::json& record) {
    CancelRequest request = record.get<CancelRequest>();
    if (request.id > after) out.push_back(std::move(request));
    return true;
  });
  return out;
}

std::vector<RunSummary> FileStore::read_summaries(const RunFilter& filter) {
  // An older layout's index lines (read-only: it was not upgraded) lack the due time: every
  // journal is read instead.
  const bool indexed = version_ >= kDueIndexVersion;
  Listing listing = collect(indexed);
  // A writable store repairs its index when the listing had to read journals, or when the
  // index holds far more lines than runs (deleted runs, many commits).
  if (indexed && !options_.read_only &&
      (listing.stale > 0 || !listing.index_exists ||
       listing.index_lines > 2 * listing.runs.size() + 1024 || index_->due))
    listing = compact();
  std::vector<RunSummary> out;
  for (IndexEntry& e : listing.runs) {
    if (filter.limit > 0 && out.size() == filter.limit) break;
    if (filter.matches(e.summary)) out.push_back(std::move(e.summary));
  }
  return out;
}

namespace {

// Claim order (store.hpp): higher priority first, then the earliest due, then the run id.
bool claim_order(const RunSummary& a, const RunSummary& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.due != b.due) return a.due < b.due;
  return a.run_id < b.run_id;
}

// The lease files (device, inode) whose leases FileStore objects of this process hold, by run
// id: a run among them is not a candidate (its take_lease would fail).
std::multimap<std::string, std::pair<dev_t, ino_t>> leases_held_here() {
  std::multimap<std::string, std::pair<dev_t, ino_t>> out;
  std::lock_guard lock(held_leases_m);
  for (const auto& [holder, held] : held_leases()) {
    struct stat st {};
    if (::fstat(held.fd, &st) == 0) out.emplace(held.run_id, std::make_pair(st.st_dev, st.st_ino));
  }
  return out;
}

}  // namespace

std::vector<RunSummary> FileStore::read_due(const std::string& now,
                                            const std::vector<std::string>* fingerprints,
                                            std::size_t limit) {
  std::vector<RunSummary> out;
  if (limit == 0 || (fingerprints != nullptr && fingerprints->empty())) return out;
  auto wanted = [&](const RunSummary& s) {
    if (s.due.empty() || s.due > now) return false;  // fixed-width UTC: text order is time order
    return fingerprints == nullptr || std::find(fingerprints->begin(), fingerprints->end(),
                                                s.fingerprint) != fingerprints->end();
  };
  const Directory& root = root_dir_->dir;
  const auto held = leases_held_here();
  auto held_here = [&](const std::string& id) {
    const auto [first, last] = held.equal_range(id);
    if (first == last) return false;
    struct stat st {};
    const std::string lease = id + "/" + kLease;
    if (::fstatat(root.fd(), lease.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    for (auto it = first; it != last; ++it)
      if (it->second == std::make_pair(st.st_dev, st.st_ino)) return true;
    return false;
  };

  // The full pass: the listing (every journal's stamp checked, stale ones read, the index
  // repaired), on the first call of this object and every kDueFullPass after, so a run whose
  // index line a crash lost is found; always over an older layout (its index has no due time).
  const std::int64_t tick = std::chrono::steady_clock::now().time_since_epoch().count();
  std::int64_t next = next_full_due_pass_.load();
  if (version_ < kDueIndexVersion ||
      (tick >= next &&
       next_full_due_pass_.compare_exchange_strong(
           next,
           tick + std::chrono::duration_cast<std::chrono::steady_clock::duration>(kDueFullPass)
                      .count()))) {
    for (RunSummary& s : read_summaries(RunFilter{}))
      if (wanted(s) && !held_here(s.run_id)) out.push_back(std::move(s));
    std::sort(out.begin(), out.end(), claim_order);
    if (out.size() > limit) out.resize(limit);
    return out;
  }

  // The quick pass: one read of the index, the newest line of each run; then, in claim order,
  // each candidate's journal stamp is checked (a deleted run is dropped, a stale line replaced
  // by what the journal says) until `limit` are found.
  std::unordered_map<std::string, IndexEntry> entries;
  {
    unique_fd fd;
    const int err = root.open_regular(kIndex, fd);
    if (err != 0 && err != ENOENT) fail(root_ / kIndex, "open", err);
    if (err == 0) {
      std::string text;
      if (const int r = trellis::detail::read_all(fd.get(), text)) fail(root_ / kIndex, "read", r);
      IndexEntry entry;
      trellis::detail::scan_lines(text, [&](std::string_view line, std::size_t) {
        if (parse_index_line(line, entry)) {
          std::string id = entry.summary.run_id;
          entries.insert_or_assign(std::move(id), std::move(entry));
        }
        return true;
      });
    }
  }
  std::vector<IndexEntry*> candidates;
  for (auto& [id, e] : entries)
    if (wanted(e.summary)) candidates.push_back(&e);
  std::sort(candidates.begin(), candidates.end(), [](const IndexEntry* a, const IndexEntry* b) {
    return claim_order(a->summary, b->summary);
  });
  std::string rel;
  for (IndexEntry* e : candidates) {
    if (out.size() >= limit) break;
    const std::string& id = e->summary.run_id;
    if (held_here(id)) continue;
    rel.assign(id).append("/").append(kJournal);
    struct stat st {};
    if (::fstatat(root.fd(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size == 0)
      continue;  // deleted (its line stays until the index is compacted)
    if (same_journal(e->journal, stamp_of(st))) {
      out.push_back(std::move(e->summary));
      continue;
    }
    std::optional<IndexEntry> read = read_run_entry(root, root_dir_->modes, id, root_ / id, e);
    if (read && wanted(read->summary)) out.push_back(std::move(read->summary));
  }
  std::sort(out.begin(), out.end(), claim_order);
  return out;
}

bool FileStore::erase_run(std::string_view run_id) {
  refuse_write("delete a run");
  const fs::path dir = run_directory(run_id);
  const std::string id(run_id);
  const Directory& root = root_dir_->dir;
  {
    Directory run;
    if (!open_run_directory(root, root_dir_->modes, run_id, dir, false, false, run)) return false;
    struct stat st {};
    if (::fstatat(run.fd(), kJournal, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_size == 0)
      return false;
  }
  // The lease (any holder, this process's included, keeps the run) and then commit.lock (a
  // write in flight finishes first; the next finds the run gone).
  LeaseAttempt lease = try_lease(root, root_dir_->modes, run_id, dir, options_.sync, false);
  if (lease.missing) return false;
  if (!lease.fd)
    throw run_busy("trellis: run '" + id + "' cannot be deleted: it is being advanced by " +
                   lease.holder);
  auto rf = files(run_id);
  const std::string trash_name = std::string(kTrashPrefix) + id + "." + std::to_string(::getpid()) +
                                 "." + std::to_string(trash_counter.fetch_add(1));
  {
    std::lock_guard lock(rf->m);
    auto guard = rf->lock(false, options_.sync);
    if (!guard || !rf->journal.current()) {
      release_lease_fd(lease.fd.release());
      return false;
    }
    if (const int err = root.rename(id, trash_name)) fail(dir, "move aside", err);
    if (options_.sync) {
      if (const int err = root.sync()) fail(root_, "fsync the directory", err);
    }
    guard.reset();  // unlocks commit.lock before its descriptor is closed
    rf->reset();
  }
  release_lease_fd(lease.fd.release());
  forget(id);
  std::error_code ec;
  fs::remove_all(root.path() / trash_name,
                 ec);  // the run is gone already; leftovers are removed at the next open
  return true;
}

namespace {

std::string graph_file(std::string_view fingerprint) {
  std::string name;
  trellis::detail::sha256_hex_into(fingerprint, name);
  return name + ".json";
}

}  // namespace

namespace {

/// Opens the store's directory `sub` (graph shapes, cache entries), creating it (and syncing
/// the root when `sync`) when it is missing.
Directory side_directory(const Directory& root_dir, const fs::path& root, const char* sub,
                         mode_t mode, bool sync) {
  const fs::path dir_path = root / sub;
  Directory dir;
  for (int attempt = 0;; ++attempt) {
    int err = root_dir.open_directory(sub, dir);
    if (err == 0) return dir;
    if (err != ENOENT || attempt > 0) fail(dir_path, "open", err);
    err = root_dir.make_directory(sub, mode);
    if (err != 0 && err != EEXIST) fail(dir_path, "create", err);
    if (err == 0 && sync) {
      if (const int s = root_dir.sync()) fail(root, "fsync the directory", s);
    }
  }
}

/// The text of file `name` in the store's directory `sub` (its path in `path`); nullopt when
/// the directory or the file does not exist.
std::optional<std::string> read_side_file(const Directory& root_dir, const fs::path& root,
                                          const char* sub, const std::string& name,
                                          fs::path& path) {
  const fs::path dir_path = root / sub;
  path = dir_path / name;
  Directory dir;
  if (const int err = root_dir.open_directory(sub, dir)) {
    if (err == ENOENT) return std::nullopt;
    fail(dir_path, "open", err);
  }
  unique_fd fd;
  if (const int err = dir.open_regular(name, fd)) {
    if (err == ENOENT) return std::nullopt;
    fail(path, "open", err);
  }
  std::string text;
  if (const int err = trellis::detail::read_all(fd.get(), text)) fail(path, "read", err);
  return text;
}

}  // namespace

void FileStore::write_graph(const GraphShape& shape) {
  refuse_write("store a graph shape");
  std::string text;
  try {
    text = nlohmann::json(shape).dump() + "\n";
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: file store: a graph shape cannot be encoded: ") +
                      e.what());
  }
  const fs::path dir_path = root_ / kGraphs;
  const std::string name = graph_file(shape.fingerprint);
  const Directory dir =
      side_directory(root_dir_->dir, root_, kGraphs, root_dir_->modes.directory, options_.sync);
  // run() puts its graph's shape at every start: the same shape is not written again.
  {
    unique_fd fd;
    if (dir.open_regular(name, fd) == 0) {
      std::string old;
      if (trellis::detail::read_all(fd.get(), old) == 0 && old == text) return;
    }
  }
  replace_file(dir, dir_path, name.c_str(), text, root_dir_->modes.file, options_.sync);
}

std::optional<GraphShape> FileStore::read_graph(std::string_view fingerprint) {
  fs::path path;
  std::optional<std::string> read =
      read_side_file(root_dir_->dir, root_, kGraphs, graph_file(fingerprint), path);
  if (!read) return std::nullopt;
  const std::string& text = *read;
  nlohmann::json j;
  if (auto refusal = trellis::detail::parse_json(text, j)) corrupt(path, 1, refusal->detail);
  GraphShape shape;
  try {
    from_json(j, shape);
  } catch (const store_error& e) {
    corrupt(path, 1, e.what());
  }
  if (shape.fingerprint != fingerprint)
    corrupt(path, 1, "it holds the shape of another fingerprint ('" + shape.fingerprint + "')");
  return shape;
}

namespace {

std::string cache_file(std::string_view key) { return std::string(key) + ".json"; }

}  // namespace

void FileStore::write_cache(const CacheEntry& entry) {
  refuse_write("store a cache entry");
  const std::string text = encode_line(nlohmann::json(entry));
  const fs::path dir_path = root_ / kCache;
  const Directory dir =
      side_directory(root_dir_->dir, root_, kCache, root_dir_->modes.directory, options_.sync);
  const std::string name = cache_file(entry.key);
  replace_file(dir, dir_path, name.c_str(), text, root_dir_->modes.file, options_.sync);
}

std::optional<CacheEntry> FileStore::read_cache(std::string_view key) {
  fs::path path;
  std::optional<std::string> read =
      read_side_file(root_dir_->dir, root_, kCache, cache_file(key), path);
  if (!read) return std::nullopt;
  std::string& text = *read;
  if (text.empty() || text.back() != '\n') corrupt(path, 1, "it is not one complete line");
  text.pop_back();
  nlohmann::json j;
  auto refusal = trellis::detail::parse_json(text, j);
  if (!refusal) refusal = trellis::detail::take_and_verify_checksum(j);
  if (refusal) corrupt(path, 1, refusal->detail);
  CacheEntry entry;
  if (const auto why = detail::decode_cache_entry(j, key, entry)) corrupt(path, 1, *why);
  return entry;
}

}  // namespace trellis::agent
