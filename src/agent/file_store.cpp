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

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <trellis/io/atomic_file.hpp>
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

// Reads the journal of the run directory `dir` (`path` names it), applying each intact record
// to `decoder` and then calling `visit(decoder, seq)` (return false to stop early).
template <class Visit>
LinesRead read_journal(const Directory& dir, const fs::path& path,
                       detail::CheckpointDecoder& decoder, Visit&& visit) {
  return read_lines(dir, kJournal, path, [&](const nlohmann::json& record) {
    const std::uint64_t seq = decoder.apply(record);
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
                       const fs::path& dir, bool sync) {
  const fs::path file = dir / kLease;
  for (int attempt = 0;; ++attempt) {
    Directory run;
    open_run_directory(root, modes, id, dir, true, sync, run);
    unique_fd fd;
    if (const int err = open_regular_rw(run, kLease, 0, modes.file, fd)) {
      // The run was renamed away (retention) between mkdir and open: make it again.
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
  // effects.jsonl's records as of effect_log.stamp.
  LineLog effect_log;
  EffectList effects;

  RunFiles(const Root& r, std::string run_id, fs::path shown, std::size_t every)
      : root(r),
        id(std::move(run_id)),
        dir_path(std::move(shown)),
        journal(dir, kJournal, dir_path / kJournal, r.modes.file),
        encoder(every),
        effect_log(dir, kEffects, dir_path / kEffects, r.modes.file) {}

  // Drops everything opened in the run's directory (it was moved away or replaced).
  void reset() {
    lock_fd.close();
    journal.reset();
    effect_log.reset();
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
    const LinesRead read =
        read_journal(dir, journal.path, decoder, [](auto&, std::uint64_t) { return true; });
    if (!read.exists) return false;
    if (read.records == 0) {
      if (!read.torn) return false;  // empty
      corrupt(journal.path, 1, "no complete checkpoint line (an unterminated line only)");
    }
    if (read.torn && !writer) return true;  // usable, but not cached: the tail will change
    journal.settle(read, sync);
    encoder.continue_after(decoder.current_json(), decoder.since_full());
    newest_seq = decoder.seq();
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
};

FileStore::FileStore(fs::path root, FileStoreOptions options)
    : root_(std::move(root)), options_(options), root_dir_(std::make_unique<Root>()) {
  root_dir_->modes = Modes::from_file_mode(static_cast<mode_t>(options_.file_mode),
                                           "file store '" + root_.string() + "'");
  // The root (and the path to it) may go through links: resolved here, once.
  if (const int err = root_dir_->dir.open(root_, true, root_dir_->modes))
    throw store_error("trellis: file store: cannot use '" + root_.string() +
                      "' as its root: " + reason(root_, err));
  // Finish deletions that a crash interrupted.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_dir_->dir.path(), ec)) {
    if (entry.path().filename().string().starts_with(kTrashPrefix)) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
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
  }

  void put_effect(const EffectRecord& record) override {
    const std::string line = encode_line(detail::effect_json(record));
    const bool exists = rf_->refresh_effects(true, store_.options_.sync);
    rf_->effect_log.append(line, store_.options_.sync, /*create=*/!exists);
    rf_->effects.put(record);
  }

 private:
  FileStore& store_;
  RunFiles* rf_;
  std::string_view run_id_;
  bool exists_;
};

void FileStore::write_run(std::string_view run_id, detail::WriteKind kind,
                          detail::RunBody<detail::RunWrite> body) {
  if (kind == detail::WriteKind::renew) {
    run_directory(run_id);
    Write run(*this, nullptr, run_id, false);
    body(run);
    return;
  }
  auto rf = files(run_id);
  std::lock_guard lock(rf->m);
  auto guard = rf->lock(kind == detail::WriteKind::create, options_.sync);
  const bool exists = guard && rf->refresh(true, options_.sync);
  Write run(*this, rf.get(), run_id, exists);
  body(run);
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
  std::vector<nlohmann::json> out;
  // An unterminated last line is a torn append (ignored; the next append cuts it); a complete
  // line that is not JSON is corruption, the last one included.
  trellis::detail::scan_lines(text, [&](std::string_view line, std::size_t number) {
    nlohmann::json event;
    if (auto refusal = trellis::detail::parse_json(line, event))
      corrupt(path, number, refusal->detail);
    out.push_back(std::move(event));
    return true;
  });
  return out;
}

void FileStore::retain(const detail::RetentionPlan& retention) {
  const std::string& cutoff = retention.finished_before;
  for (const std::string& id : runs()) {
    const fs::path dir = root_ / id;
    const Directory& root = root_dir_->dir;
    if (!cutoff.empty()) {
      const std::optional<Checkpoint> newest = read_latest(id);
      if (newest && terminal(newest->status) && newest->created_at < cutoff) {
        LeaseAttempt lease = try_lease(root, root_dir_->modes, id, dir, options_.sync);
        if (!lease.fd) continue;  // someone is looking at it: next time
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
    read_journal(rf->dir, rf->journal.path, decoder,
                 [&](const detail::CheckpointDecoder& d, std::uint64_t) {
                   all.push_back(d.current());
                   return true;
                 });
    if (all.size() <= retention.keep_last) continue;
    detail::CheckpointEncoder encoder(options_.snapshot_every);
    std::string text;
    for (auto it = all.end() - static_cast<std::ptrdiff_t>(retention.keep_last); it != all.end();
         ++it)
      text += encode_line(encoder.encode(*it));
    replace_file(rf->dir, rf->dir_path, kJournal, text, root_dir_->modes.file, options_.sync);
    rf->journal.reset();
  }
}

}  // namespace trellis::agent
