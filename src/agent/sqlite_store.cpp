// SqliteStore: runs in one SQLite database (the model is in sqlite_store.hpp).
//
// Statements are prepared once per connection and reset after every use (a SELECT left
// mid-way would keep a read transaction open). Commits reuse a per-run encoder cached with
// the run's row id and newest seq: row ids are AUTOINCREMENT (never reused), and a (run, seq)
// row never changes content, so a matching pair means the cache is the newest checkpoint.

#include "trellis/agent/sqlite_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

#include <trellis/io/checksum.hpp>
#include <trellis/io/directory.hpp>
#include <trellis/io/json_text.hpp>
#include <trellis/io/utc_time.hpp>

#include "checkpoint_codec.hpp"
#include "lease_holder.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/base/enumeration.hpp"

namespace trellis::agent {

namespace {

// The schema as the steps that built it: kMigrations[v] takes a database from version v to
// v + 1 (version 0: empty). A new database runs them all, an older one those it lacks, inside
// the schema check's transaction (so concurrent openers upgrade it once).
constexpr const char* kMigrations[] = {
    // 1: runs, their checkpoints, events and leases.
    R"sql(
CREATE TABLE trellis_schema(version INTEGER NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL UNIQUE,
  newest_seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  finished INTEGER NOT NULL,
  newest_at TEXT NOT NULL,
  since_full INTEGER NOT NULL);
CREATE TABLE checkpoints(
  run INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  full INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY(run, seq)) WITHOUT ROWID;
CREATE TABLE events(id INTEGER PRIMARY KEY, run INTEGER NOT NULL, event TEXT NOT NULL);
CREATE INDEX events_by_run ON events(run, id);
CREATE TABLE leases(
  run_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  pid INTEGER NOT NULL,
  token TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL);
)sql",
    // 2: effect records; `ordinal` is the position of the key's first put in its run.
    R"sql(
CREATE TABLE IF NOT EXISTS effects(
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  ordinal INTEGER NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY(run, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS effects_in_order ON effects(run, ordinal);
)sql",
    // 3: lease epochs (a released lease keeps its row, with an empty token, for the epoch) and
    // the holder's process as another process on the same machine can check it.
    R"sql(
CREATE TABLE leases_3(
  run_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  pid INTEGER NOT NULL,
  token TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  epoch INTEGER NOT NULL DEFAULT 0,
  host TEXT NOT NULL DEFAULT '',
  pid_space TEXT NOT NULL DEFAULT '',
  started INTEGER NOT NULL DEFAULT 0);
INSERT INTO leases_3(run_id, owner, pid, token, expires_at_ms)
  SELECT run_id, owner, pid, token, expires_at_ms FROM leases;
DROP TABLE leases;
ALTER TABLE leases_3 RENAME TO leases;
)sql",
    // 4: every checkpoint and effect row carries the SHA-256 of its record text, as the file
    // formats' lines do (rows of an older database get theirs when it is upgraded).
    R"sql(
ALTER TABLE checkpoints ADD COLUMN checksum TEXT;
ALTER TABLE effects ADD COLUMN checksum TEXT;
)sql",
    // 5: the run index (what a listing shows, kept by every create and commit; the rows of an
    // older database get theirs from their newest checkpoint when it is upgraded), operators'
    // cancel requests, and graph shapes.
    R"sql(
ALTER TABLE runs ADD COLUMN next_node TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN reason TEXT NOT NULL DEFAULT 'none';
ALTER TABLE runs ADD COLUMN created_at TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN request TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_status ON runs(status, run_id);
CREATE TABLE cancel_requests(
  run INTEGER NOT NULL,
  id INTEGER NOT NULL,
  record TEXT NOT NULL,
  checksum TEXT NOT NULL,
  PRIMARY KEY(run, id)) WITHOUT ROWID;
CREATE TABLE graphs(
  fingerprint TEXT PRIMARY KEY,
  shape TEXT NOT NULL,
  checksum TEXT NOT NULL) WITHOUT ROWID;
)sql",
    // 6: durable timers and priorities: when a worker may advance the run (RunSummary::due,
    // NULL when nothing but a person makes it runnable) and its priority, kept by every create
    // and commit (the rows of an older database get theirs from their newest checkpoint when
    // it is upgraded); claims read the due runs over runs_by_due.
    R"sql(
ALTER TABLE runs ADD COLUMN due TEXT;
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_due ON runs(due) WHERE due IS NOT NULL;
)sql",
    // 7: cache entries (store-wide, not a run's: deleting a run keeps them); the version also
    // covers the hash chain's members in checkpoint and effect records, which an older build
    // would rewrite without them.
    R"sql(
CREATE TABLE cache_entries(
  key TEXT PRIMARY KEY,
  entry TEXT NOT NULL,
  checksum TEXT NOT NULL) WITHOUT ROWID;
)sql",
};
static_assert(std::size(kMigrations) == static_cast<std::size_t>(SqliteStore::schema_version));

// The records from the newest full one at or before seq ?2 of run ?1, up to it: what decodes
// checkpoint ?2.
constexpr const char* kChainSql =
    "SELECT seq, record, checksum FROM checkpoints WHERE run=?1 AND seq<=?2 AND seq>=coalesce("
    "(SELECT max(seq) FROM checkpoints WHERE run=?1 AND seq<=?2 AND full=1), 0) ORDER BY seq";
constexpr const char* kOldestSql = "SELECT min(seq) FROM checkpoints WHERE run=?1";

const char* synchronous_pragma(SqliteSynchronous s) {
  switch (s) {
    case SqliteSynchronous::off:
      return "PRAGMA synchronous=OFF";
    case SqliteSynchronous::normal:
      return "PRAGMA synchronous=NORMAL";
    case SqliteSynchronous::full:
      return "PRAGMA synchronous=FULL";
    case SqliteSynchronous::extra:
      return "PRAGMA synchronous=EXTRA";
  }
  return "PRAGMA synchronous=FULL";
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string dump(const nlohmann::json& j) {
  try {
    return j.dump();
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: SQLite store: a record cannot be encoded: ") +
                      e.what());
  }
}

}  // namespace

struct SqliteStore::Db {
  // One prepared statement.
  class Stmt {
   public:
    Stmt(Db& db, const char* sql) : db_(db) {
      db.check(sqlite3_prepare_v3(db.handle, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr),
               std::string("prepare \"") + sql + "\"");
    }
    ~Stmt() { sqlite3_finalize(s_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    sqlite3_stmt* get() const noexcept { return s_; }
    Db& db() const noexcept { return db_; }

   private:
    Db& db_;
    sqlite3_stmt* s_ = nullptr;
  };

  // One use of a statement: binds, steps, and resets it at scope exit.
  class Query {
   public:
    explicit Query(Stmt& s) : s_(s) {}
    ~Query() {
      sqlite3_reset(s_.get());
      sqlite3_clear_bindings(s_.get());
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int i, std::int64_t v) {
      s_.db().check(sqlite3_bind_int64(s_.get(), i, v), "bind");
      return *this;
    }
    /// Binds `text`, or NULL when it is empty.
    Query& bind_or_null(int i, std::string_view text) {
      if (text.empty()) {
        s_.db().check(sqlite3_bind_null(s_.get(), i), "bind");
        return *this;
      }
      return bind(i, text);
    }
    Query& bind(int i, std::string_view text) {
      s_.db().check(sqlite3_bind_text(s_.get(), i, text.data(), static_cast<int>(text.size()),
                                      SQLITE_TRANSIENT),
                    "bind");
      return *this;
    }
    /// True for a row, false when done.
    bool step() {
      const int rc = sqlite3_step(s_.get());
      if (rc == SQLITE_ROW) return true;
      if (rc == SQLITE_DONE) return false;
      s_.db().check(rc, std::string("run \"") + sqlite3_sql(s_.get()) + "\"");
      return false;
    }
    void run() {
      while (step()) {
      }
    }
    std::int64_t integer(int col) const { return sqlite3_column_int64(s_.get(), col); }
    std::string text(int col) const {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_.get(), col));
      return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_.get(), col)))
               : std::string();
    }

   private:
    Stmt& s_;
  };

  // BEGIN IMMEDIATE ... COMMIT, rolled back unless committed.
  class Transaction {
   public:
    explicit Transaction(Db& db) : db_(db) { Query(*db.begin).run(); }
    ~Transaction() {
      if (!done_) {
        sqlite3_stmt* rollback = db_.rollback_->get();
        sqlite3_reset(rollback);
        sqlite3_step(rollback);
        sqlite3_reset(rollback);
      }
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
      Query(*db_.commit_).run();
      done_ = true;
    }

   private:
    Db& db_;
    bool done_ = false;
  };

  struct Cached {
    std::uint64_t seq = 0;
    detail::CheckpointEncoder encoder;
  };

  std::filesystem::path path;
  sqlite3* handle = nullptr;

  bool read_only = false;
  // The schema version the statements are written for: schema_version, or for a read-only
  // store the older version it found (read as it is: the missing tables read as empty).
  int version = 0;

  Db(std::filesystem::path p, unsigned file_mode, bool ro) : path(std::move(p)), read_only(ro) {
    const trellis::detail::Modes modes = trellis::detail::Modes::from_file_mode(
        static_cast<mode_t>(file_mode), "SQLite store '" + path.string() + "'");
    if (read_only)
      check_exists();
    else
      create_file(modes);
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    const int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
    if (rc != SQLITE_OK) {
      const std::string message = handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc);
      sqlite3_close(handle);
      handle = nullptr;
      throw store_error("trellis: SQLite store '" + path.string() + "': open: " + message);
    }
    sqlite3_extended_result_codes(handle, 1);
  }
  // Opened to read: a path with no database file there is not a store (and nothing is created:
  // SQLITE_OPEN_READONLY never creates the file).
  void check_exists() const {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (st.type() == std::filesystem::file_type::not_found)
      throw not_a_store("trellis: SQLite store '" + path.string() +
                        "': no such database (opened read-only: nothing was created)");
    if (ec)
      throw store_error("trellis: SQLite store '" + path.string() + "': open: " + ec.message());
    if (!std::filesystem::is_regular_file(st))
      throw not_a_store("trellis: SQLite store '" + path.string() + "': not a database file");
  }
  // Creates a missing database file with exactly `file_mode` (SQLite would create it with
  // 0644 narrowed by the umask), so SQLite gives the -wal and -shm files the same mode. An
  // existing file (or a link to one) is left as it is.
  void create_file(const trellis::detail::Modes& modes) const {
    if (path.empty() || path == ":memory:") return;  // SQLite's private databases: no file
    trellis::detail::Directory dir;
    if (const int err = dir.open(trellis::detail::parent_directory(path), false, modes))
      throw store_error("trellis: SQLite store '" + path.string() +
                        "': open its directory: " + std::strerror(err));
    trellis::detail::unique_fd fd;
    const int err =
        dir.open_file(path.filename().string(), O_RDWR | O_CREAT | O_EXCL, modes.file, fd);
    if (err != 0 && err != EEXIST)
      throw store_error("trellis: SQLite store '" + path.string() +
                        "': create the database file: " + std::strerror(err));
  }

  ~Db() {
    statements.clear();
    sqlite3_close(handle);
  }

  void check(int rc, const std::string& what) const {
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
    if ((rc & 0xff) == SQLITE_NOTADB)
      throw not_a_store("trellis: SQLite store '" + path.string() + "': " + what + ": " +
                        sqlite3_errmsg(handle) + " (" + sqlite3_errstr(rc) + ")");
    throw store_error("trellis: SQLite store '" + path.string() + "': " + what + ": " +
                      sqlite3_errmsg(handle) + " (" + sqlite3_errstr(rc) + ")");
  }

  void exec(const char* sql, const std::string& what) {
    char* message = nullptr;
    const int rc = sqlite3_exec(handle, sql, nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
      const std::string text = message ? message : sqlite3_errstr(rc);
      sqlite3_free(message);
      throw store_error("trellis: SQLite store '" + path.string() + "': " + what + ": " + text +
                        " (" + sqlite3_errstr(rc) + ")");
    }
  }

  [[noreturn]] void refuse(const std::string& why) const {
    throw store_error("trellis: SQLite store '" + path.string() + "': " + why);
  }
  [[noreturn]] void refuse_write(const char* what) const {
    throw store_error("trellis: SQLite store '" + path.string() + "': opened read-only: " + what +
                      " is refused, nothing was written");
  }

  // What the database holds before trellis touches it: its schema version (-1: no
  // trellis_schema table) and the names of every other table, index, view or trigger.
  struct Contents {
    int version = -1;
    std::vector<std::string> others;
  };
  Contents inspect() {
    Contents found;
    sqlite3_stmt* s = nullptr;
    check(
        sqlite3_prepare_v2(handle, "SELECT name FROM sqlite_master ORDER BY name", -1, &s, nullptr),
        "read the schema");
    int rc = 0;
    bool has_schema = false;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      const std::string n = name ? name : "";
      if (n == "trellis_schema")
        has_schema = true;
      else
        found.others.push_back(n);
    }
    sqlite3_finalize(s);
    check(rc, "read the schema");
    if (has_schema) {
      check(sqlite3_prepare_v2(handle, "SELECT max(version) FROM trellis_schema", -1, &s, nullptr),
            "read the schema version");
      rc = sqlite3_step(s);
      found.version = rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER
                          ? std::max(sqlite3_column_int(s, 0), 0)
                          : 0;
      sqlite3_finalize(s);
      check(rc, "read the schema version");
    }
    return found;
  }

  // Refuses a database trellis must not touch; returns the schema version found (-1: none, an
  // empty database that gets the schema).
  int check_schema(const Contents& found) const {
    if (found.version > schema_version)
      refuse("schema version " + std::to_string(found.version) + " is newer than this build's (" +
             std::to_string(schema_version) + "); use a newer trellis");
    if (found.version == 0) refuse("schema version 0 is not one trellis wrote");
    if (found.version == -1 && !found.others.empty()) {
      std::string names;
      for (std::size_t i = 0; i < found.others.size() && i < 5; ++i)
        names += (i ? ", " : "") + found.others[i];
      if (found.others.size() > 5) names += ", ...";
      throw not_a_store("trellis: SQLite store '" + path.string() +
                        "': the database holds tables of another program (" + names +
                        ") and no trellis_schema: it belongs to something else, and is left as "
                        "it was (trellis uses only an empty database or one it created)");
    }
    if (read_only && found.version == -1)
      throw not_a_store("trellis: SQLite store '" + path.string() +
                        "': the database is empty: it holds no trellis store (opened read-only: "
                        "nothing was written)");
    if (read_only && found.version < 4)
      refuse("schema version " + std::to_string(found.version) +
             " predates row checksums and is read only once upgraded: open it for writing "
             "once (it is upgraded in place to version " +
             std::to_string(schema_version) + ")");
    return found.version;
  }

  // Schema 3: the rows an older trellis wrote get the checksum of the record they hold (the
  // upgrade trusts what it finds; from then on any change to a record is detected).
  void checksum_old_rows() {
    for (const char* table : {"checkpoints", "effects"}) {
      const std::string key = std::string(table) == "checkpoints" ? "seq" : "key";
      std::vector<std::tuple<std::int64_t, std::string, std::string>> rows;
      {
        sqlite3_stmt* s = nullptr;
        const std::string select = "SELECT run, " + key + ", record FROM " + table;
        check(sqlite3_prepare_v2(handle, select.c_str(), -1, &s, nullptr), select);
        int rc = 0;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
          const auto* k = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
          const auto* r = reinterpret_cast<const char*>(sqlite3_column_text(s, 2));
          rows.emplace_back(sqlite3_column_int64(s, 0), k ? k : "",
                            r ? std::string(r, static_cast<std::size_t>(sqlite3_column_bytes(s, 2)))
                              : std::string());
        }
        sqlite3_finalize(s);
        check(rc, select);
      }
      const std::string update =
          std::string("UPDATE ") + table + " SET checksum=?3 WHERE run=?1 AND " + key + "=?2";
      sqlite3_stmt* u = nullptr;
      check(sqlite3_prepare_v2(handle, update.c_str(), -1, &u, nullptr), update);
      for (const auto& [run, k, record] : rows) {
        const std::string sum = trellis::detail::checksum_of(record);
        sqlite3_bind_int64(u, 1, run);
        if (key == "seq")
          sqlite3_bind_int64(u, 2, std::stoll(k));
        else
          sqlite3_bind_text(u, 2, k.data(), static_cast<int>(k.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(u, 3, sum.data(), static_cast<int>(sum.size()), SQLITE_TRANSIENT);
        const int rc = sqlite3_step(u);
        sqlite3_reset(u);
        if (rc != SQLITE_DONE) {
          sqlite3_finalize(u);
          check(rc, update);
        }
      }
      sqlite3_finalize(u);
    }
  }

  // Statements live in `statements` (destroyed before the connection closes).
  std::vector<std::unique_ptr<Stmt>> statements;
  Stmt& prepare(const char* sql) {
    return *statements.emplace_back(std::make_unique<Stmt>(*this, sql));
  }

  // The statements of the schema in use: a read-only store prepares no writes, and over a
  // version 4 database none of version 5's tables.
  void prepare_all() {
    run_by_name = &prepare("SELECT id, newest_seq, since_full FROM runs WHERE run_id=?1");
    chain_to = &prepare(kChainSql);
    all_checkpoints =
        &prepare("SELECT seq, record, checksum FROM checkpoints WHERE run=?1 ORDER BY seq");
    list_runs = &prepare("SELECT run_id FROM runs ORDER BY run_id");
    lease_get = &prepare(
        "SELECT owner, pid, token, expires_at_ms, epoch, host, pid_space, started FROM leases "
        "WHERE run_id=?1");
    select_events = &prepare(
        "SELECT e.event FROM events e JOIN runs r ON e.run=r.id WHERE r.run_id=?1 ORDER BY e.id");
    events_after = &prepare(
        "SELECT e.id, e.event FROM events e JOIN runs r ON e.run=r.id WHERE r.run_id=?1 AND "
        "e.id>?2 ORDER BY e.id");
    get_effect = &prepare(
        "SELECT e.record, e.checksum FROM effects e JOIN runs r ON e.run=r.id "
        "WHERE r.run_id=?1 AND e.key=?2");
    list_effects = &prepare(
        "SELECT e.record, e.checksum FROM effects e JOIN runs r ON e.run=r.id "
        "WHERE r.run_id=?1 ORDER BY e.ordinal");
    oldest_seq = &prepare(kOldestSql);
    all_runs = &prepare("SELECT id, run_id, newest_seq FROM runs ORDER BY run_id");
    if (version >= 5) {
      cancel_requests_after = &prepare(
          "SELECT c.id, c.record, c.checksum FROM cancel_requests c JOIN runs r ON c.run=r.id "
          "WHERE r.run_id=?1 AND c.id>?2 ORDER BY c.id");
      get_graph = &prepare("SELECT shape, checksum FROM graphs WHERE fingerprint=?1");
    }
    if (version >= 7)
      get_cache_entry = &prepare("SELECT entry, checksum FROM cache_entries WHERE key=?1");
    if (version >= 6) {
      // The due runs in claim order, over runs_by_due, each with its lease row (the caller
      // skips the ones a live holder has); ?2: a JSON array of fingerprints, NULL for any.
      due_runs = &prepare(
          "SELECT r.run_id, r.status, r.reason, r.next_node, r.step, r.newest_seq, "
          "r.created_at, r.newest_at, r.fingerprint, r.request, r.due, r.priority, "
          "l.token, l.expires_at_ms, l.pid, l.pid_space, l.started "
          "FROM runs r LEFT JOIN leases l ON l.run_id=r.run_id "
          "WHERE r.due IS NOT NULL AND r.due<=?1 "
          "AND (?2 IS NULL OR r.fingerprint IN (SELECT value FROM json_each(?2))) "
          "ORDER BY r.priority DESC, r.due, r.run_id");
    }
    if (read_only) return;

    begin = &prepare("BEGIN IMMEDIATE");
    commit_ = &prepare("COMMIT");
    rollback_ = &prepare("ROLLBACK");
    insert_run = &prepare(
        "INSERT INTO runs(run_id, newest_seq, status, finished, newest_at, since_full, "
        "next_node, step, reason, created_at, fingerprint, request, due, priority) "
        "VALUES(?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?5, ?9, ?10, ?11, ?12)");
    update_run = &prepare(
        "UPDATE runs SET newest_seq=?2, status=?3, finished=?4, newest_at=?5, since_full=?6, "
        "next_node=?7, step=?8, reason=?9, fingerprint=?10, request=?11, due=?12, priority=?13 "
        "WHERE id=?1");
    insert_checkpoint = &prepare(
        "INSERT INTO checkpoints(run, seq, full, record, checksum) VALUES(?1, ?2, ?3, ?4, ?5)");
    lease_put = &prepare(
        "INSERT OR REPLACE INTO leases(run_id, owner, pid, token, expires_at_ms, epoch, host, "
        "pid_space, started) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    lease_renew = &prepare("UPDATE leases SET expires_at_ms=?3 WHERE run_id=?1 AND token=?2");
    lease_release = &prepare(
        "UPDATE leases SET token='', owner='', expires_at_ms=0 WHERE run_id=?1 AND token=?2");
    insert_event =
        &prepare("INSERT INTO events(run, event) SELECT id, ?2 FROM runs WHERE run_id=?1");
    sync_off = &prepare("PRAGMA synchronous=OFF");
    finished_before = &prepare("SELECT id, run_id FROM runs WHERE finished=1 AND newest_at<?1");
    delete_checkpoints = &prepare("DELETE FROM checkpoints WHERE run=?1");
    delete_events = &prepare("DELETE FROM events WHERE run=?1");
    delete_effects = &prepare("DELETE FROM effects WHERE run=?1");
    delete_requests = &prepare("DELETE FROM cancel_requests WHERE run=?1");
    delete_run = &prepare("DELETE FROM runs WHERE id=?1");
    delete_lease = &prepare("DELETE FROM leases WHERE run_id=?1");
    longer_than = &prepare(
        "SELECT r.id, r.since_full, r.newest_seq FROM runs r "
        "WHERE (SELECT count(*) FROM checkpoints c WHERE c.run=r.id) > ?1");
    nth_newest =
        &prepare("SELECT seq FROM checkpoints WHERE run=?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2");
    make_full =
        &prepare("UPDATE checkpoints SET full=1, record=?3, checksum=?4 WHERE run=?1 AND seq=?2");
    delete_before = &prepare("DELETE FROM checkpoints WHERE run=?1 AND seq<?2");
    set_since_full = &prepare("UPDATE runs SET since_full=?2 WHERE id=?1");
    put_effect = &prepare(
        "INSERT INTO effects(run, key, ordinal, record, checksum) VALUES(?1, ?2, "
        "(SELECT coalesce(max(ordinal) + 1, 0) FROM effects WHERE run=?1), ?3, ?4) "
        "ON CONFLICT(run, key) DO UPDATE SET record=excluded.record, "
        "checksum=excluded.checksum");
    newest_request = &prepare("SELECT coalesce(max(id), 0) FROM cancel_requests WHERE run=?1");
    insert_request =
        &prepare("INSERT INTO cancel_requests(run, id, record, checksum) VALUES(?1, ?2, ?3, ?4)");
    put_graph = &prepare(
        "INSERT INTO graphs(fingerprint, shape, checksum) VALUES(?1, ?2, ?3) "
        "ON CONFLICT(fingerprint) DO UPDATE SET shape=excluded.shape, "
        "checksum=excluded.checksum");
    put_cache_entry = &prepare(
        "INSERT INTO cache_entries(key, entry, checksum) VALUES(?1, ?2, ?3) "
        "ON CONFLICT(key) DO UPDATE SET entry=excluded.entry, checksum=excluded.checksum");
  }

  Stmt* begin = nullptr;
  Stmt* commit_ = nullptr;
  Stmt* rollback_ = nullptr;
  Stmt* run_by_name = nullptr;
  Stmt* insert_run = nullptr;
  Stmt* update_run = nullptr;
  Stmt* insert_checkpoint = nullptr;
  Stmt* chain_to = nullptr;
  Stmt* all_checkpoints = nullptr;
  Stmt* list_runs = nullptr;
  Stmt* lease_get = nullptr;
  Stmt* lease_put = nullptr;
  Stmt* lease_renew = nullptr;
  Stmt* lease_release = nullptr;
  Stmt* insert_event = nullptr;
  Stmt* select_events = nullptr;
  Stmt* sync_off = nullptr;
  Stmt* sync_on = nullptr;
  Stmt* finished_before = nullptr;
  Stmt* delete_checkpoints = nullptr;
  Stmt* delete_events = nullptr;
  Stmt* delete_effects = nullptr;
  Stmt* delete_run = nullptr;
  Stmt* delete_lease = nullptr;
  Stmt* longer_than = nullptr;
  Stmt* put_effect = nullptr;
  Stmt* get_effect = nullptr;
  Stmt* list_effects = nullptr;
  Stmt* nth_newest = nullptr;
  Stmt* make_full = nullptr;
  Stmt* delete_before = nullptr;
  Stmt* set_since_full = nullptr;
  Stmt* events_after = nullptr;
  Stmt* oldest_seq = nullptr;
  Stmt* all_runs = nullptr;
  Stmt* cancel_requests_after = nullptr;
  Stmt* get_graph = nullptr;
  Stmt* get_cache_entry = nullptr;
  Stmt* put_cache_entry = nullptr;
  Stmt* delete_requests = nullptr;
  Stmt* newest_request = nullptr;
  Stmt* insert_request = nullptr;
  Stmt* put_graph = nullptr;
  Stmt* due_runs = nullptr;

  std::map<std::int64_t, Cached> cache;                 // run row id -> newest encoder
  std::map<std::string, LeaseToken, std::less<>> held;  // run id -> our newest lease on it

  // A run's row in `leases`.
  struct LeaseRow {
    std::string owner;
    std::int64_t pid = 0;
    std::string holder;  // empty: released
    std::int64_t expires_at_ms = 0;
    std::uint64_t epoch = 0;
    std::string host;
    std::string pid_space;
    std::int64_t started = 0;

    // Nobody holds it: released, expired, or its holder provably died on this machine.
    bool free(std::int64_t now) const {
      return holder.empty() || expires_at_ms <= now ||
             detail::provably_dead(pid_space, pid, started);
    }
    std::string who() const {
      return "'" + owner + "' (pid " + std::to_string(pid) + (host.empty() ? "" : " on " + host);
    }
  };
  std::optional<LeaseRow> find_lease(std::string_view run_id) {
    Query q(*lease_get);
    q.bind(1, run_id);
    if (!q.step()) return std::nullopt;
    return LeaseRow{q.text(0),
                    q.integer(1),
                    q.text(2),
                    q.integer(3),
                    static_cast<std::uint64_t>(q.integer(4)),
                    q.text(5),
                    q.text(6),
                    q.integer(7)};
  }

  // The run's row: id, newest seq, records since its last full one.
  struct RunRow {
    std::int64_t id;
    std::uint64_t newest_seq;
    std::size_t since_full;
  };
  std::optional<RunRow> find_run(std::string_view run_id) {
    Query q(*run_by_name);
    q.bind(1, run_id);
    if (!q.step()) return std::nullopt;
    return RunRow{q.integer(0), static_cast<std::uint64_t>(q.integer(1)),
                  static_cast<std::size_t>(q.integer(2))};
  }

  // Decodes the chain of `run` up to `seq` (from the newest full record at or before it).
  void decode_to(std::int64_t run, std::uint64_t seq, detail::CheckpointDecoder& decoder) {
    decode_with(*chain_to, run, seq, decoder);
  }
  void decode_with(Stmt& chain, std::int64_t run, std::uint64_t seq,
                   detail::CheckpointDecoder& decoder) {
    Query q(chain);
    q.bind(1, run).bind(2, static_cast<std::int64_t>(seq));
    while (q.step()) apply(decoder, q.text(1), q.text(2), q.integer(0));
  }

  // A run's summary decoded from its checkpoints, where there is no run index (a version 4
  // database read as it is, and the upgrade to version 5): its newest checkpoint, and the time
  // of its oldest kept one (its first, unless retention trimmed it before the upgrade: then
  // the oldest kept is the earliest time known). nullopt for a run without checkpoints.
  std::optional<RunSummary> summary_of(Stmt& chain, Stmt& oldest, std::int64_t run,
                                       std::uint64_t newest_seq) {
    detail::CheckpointDecoder newest;
    decode_with(chain, run, newest_seq, newest);
    if (newest.empty()) return std::nullopt;
    Checkpoint cp = newest.current();
    std::uint64_t first_seq = newest_seq;
    {
      Query q(oldest);
      q.bind(1, run);
      if (q.step()) first_seq = static_cast<std::uint64_t>(q.integer(0));
    }
    std::string created_at = cp.created_at;
    if (first_seq < newest_seq) {
      detail::CheckpointDecoder first;
      decode_with(chain, run, first_seq, first);
      if (!first.empty()) created_at = first.current().created_at;
    }
    return summarize(cp, std::move(created_at));
  }

  // Schema 5: the run index of the runs an older trellis wrote, from their checkpoints.
  void index_old_runs() {
    Stmt chain(*this, kChainSql);
    Stmt oldest(*this, kOldestSql);
    Stmt update(*this,
                "UPDATE runs SET next_node=?2, step=?3, reason=?4, created_at=?5, "
                "fingerprint=?6, request=?7 WHERE id=?1");
    std::vector<std::pair<std::int64_t, std::uint64_t>> rows;
    {
      Stmt all(*this, "SELECT id, newest_seq FROM runs");
      Query q(all);
      while (q.step()) rows.emplace_back(q.integer(0), static_cast<std::uint64_t>(q.integer(1)));
    }
    for (const auto& [id, newest_seq] : rows) {
      const std::optional<RunSummary> s = summary_of(chain, oldest, id, newest_seq);
      if (!s) continue;
      Query(update)
          .bind(1, id)
          .bind(2, s->node)
          .bind(3, static_cast<std::int64_t>(s->step))
          .bind(4, enumeration<Reason>::name(s->reason))
          .bind(5, s->created_at)
          .bind(6, s->fingerprint)
          .bind(7, s->request)
          .run();
    }
  }

  // Schema 6: the due time and priority of the runs an older trellis wrote, from their newest
  // checkpoint (a run that was Queued or Running is due at once, as a worker should find it).
  void due_old_runs() {
    Stmt chain(*this, kChainSql);
    Stmt update(*this, "UPDATE runs SET due=?2, priority=?3 WHERE id=?1");
    std::vector<std::pair<std::int64_t, std::uint64_t>> rows;
    {
      Stmt all(*this, "SELECT id, newest_seq FROM runs");
      Query q(all);
      while (q.step()) rows.emplace_back(q.integer(0), static_cast<std::uint64_t>(q.integer(1)));
    }
    for (const auto& [id, newest_seq] : rows) {
      detail::CheckpointDecoder newest;
      decode_with(chain, id, newest_seq, newest);
      if (newest.empty()) continue;
      const Checkpoint cp = newest.current();
      Query(update)
          .bind(1, id)
          .bind_or_null(2, due_at(cp).value_or(std::string()))
          .bind(3, std::int64_t{cp.priority})
          .run();
    }
  }

  // A run's summary from a row whose columns 0-9 are run_id, status, reason, next_node, step,
  // newest_seq, created_at, newest_at, fingerprint and request, and with `due` 10 and 11 due and
  // priority.
  RunSummary summary_row(const Query& q, bool due) const {
    RunSummary s;
    s.run_id = q.text(0);
    const std::string status = q.text(1);
    const std::string reason = q.text(2);
    const auto st = enumeration<RunStatus>::from_name(status);
    const auto re = enumeration<Reason>::from_name(reason);
    if (!st || !re)
      refuse("run '" + s.run_id + "' has an unknown " +
             (st ? "reason '" + reason : "status '" + status) + "' in its index row");
    s.status = *st;
    s.reason = *re;
    s.node = q.text(3);
    s.step = static_cast<std::uint64_t>(q.integer(4));
    s.seq = static_cast<std::uint64_t>(q.integer(5));
    s.created_at = q.text(6);
    s.updated_at = q.text(7);
    s.fingerprint = q.text(8);
    s.request = q.text(9);
    if (due) {
      s.due = q.text(10);  // NULL reads as empty
      s.priority = static_cast<int>(q.integer(11));
    }
    return s;
  }

  // The record text of a row, checked against the row's checksum and parsed with the file
  // readers' depth limit (a crafted deep record must not overflow the decoder's stack).
  nlohmann::json record_of(const std::string& text, const std::string& checksum,
                           const std::string& what) const {
    if (checksum.empty()) refuse(what + " has no checksum");
    if (trellis::detail::checksum_of(text) != checksum)
      refuse(what + " has a bad checksum: the record was edited or damaged");
    nlohmann::json record;
    if (auto refusal = trellis::detail::parse_json(text, record))
      refuse(what + " is not a record: " + refusal->detail);
    return record;
  }

  void apply(detail::CheckpointDecoder& decoder, const std::string& text,
             const std::string& checksum, std::int64_t seq) {
    const std::string what = "checkpoint " + std::to_string(seq);
    nlohmann::json record = record_of(text, checksum, what);
    try {
      decoder.apply(record);
    } catch (const store_error& e) {
      refuse(what + ": " + e.what());
    }
  }

  EffectRecord effect_of(const std::string& text, const std::string& checksum,
                         std::string_view run_id) const {
    const nlohmann::json record =
        record_of(text, checksum, "an effect record of run '" + std::string(run_id) + "'");
    try {
      return record.get<EffectRecord>();
    } catch (const store_error& e) {
      refuse("an effect record of run '" + std::string(run_id) + "': " + e.what());
    }
  }
};

SqliteStore::SqliteStore(std::filesystem::path path, SqliteStoreOptions options)
    : path_(std::move(path)),
      options_(options),
      db_(std::make_unique<Db>(path_, options_.file_mode, options_.read_only)) {
  Db& db = *db_;
  db.check(sqlite3_busy_timeout(db.handle, static_cast<int>(options_.busy_timeout.count())),
           "busy_timeout");
  // Look before touching anything: a database that is not trellis's (another program's tables,
  // a newer schema) is refused while it is still byte for byte as it was, before the WAL switch
  // or the schema transaction could write to it.
  const int found = db.check_schema(db.inspect());
  if (options_.read_only) {
    // Read as it is: no WAL switch, no upgrade (an older schema's missing tables read as
    // empty, its runs are listed from their checkpoints).
    db.version = found;
    db.prepare_all();
    return;
  }
  // journal_mode answers with the mode in force; anything but WAL (e.g. a read-only file
  // system) would silently lose the concurrency this store promises.
  {
    sqlite3_stmt* s = nullptr;
    db.check(sqlite3_prepare_v2(db.handle, "PRAGMA journal_mode=WAL", -1, &s, nullptr),
             "PRAGMA journal_mode=WAL");
    const int rc = sqlite3_step(s);
    const std::string mode =
        rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "";
    sqlite3_finalize(s);
    db.check(rc, "PRAGMA journal_mode=WAL");
    if (mode != "wal" && mode != "memory")
      db.refuse("cannot use WAL mode (journal mode " + mode + ")");
  }
  db.exec(synchronous_pragma(options_.synchronous), "set synchronous");
  db.exec("BEGIN IMMEDIATE", "begin the schema check");
  try {
    // Again under the write lock: another process may have created or upgraded it meanwhile.
    const int version = db.check_schema(db.inspect());
    // Create the schema, or upgrade an older one in place.
    for (int v = std::max(version, 0); v < schema_version; ++v) {
      db.exec(kMigrations[v], "upgrade the schema to version " + std::to_string(v + 1));
      if (v + 1 == 4) db.checksum_old_rows();
      if (v + 1 == 5 && version > 0) db.index_old_runs();
      if (v + 1 == 6 && version > 0) db.due_old_runs();
    }
    if (version == -1)
      db.exec(("INSERT INTO trellis_schema(version) VALUES(" + std::to_string(schema_version) + ")")
                  .c_str(),
              "record the schema version");
    else if (version < schema_version)
      db.exec(("UPDATE trellis_schema SET version=" + std::to_string(schema_version)).c_str(),
              "record the schema version");
    db.exec("COMMIT", "commit the schema");
  } catch (...) {
    sqlite3_exec(db.handle, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  db.version = schema_version;
  db.prepare_all();
  db.sync_on = &db.prepare(synchronous_pragma(options_.synchronous));
}

SqliteStore::~SqliteStore() = default;

// Inside a write transaction: `lease` (for an empty one, this object's newest lease on the run,
// if it holds one; else nothing is checked) must still hold the run's lease: the row has its
// holder id and epoch, else a refusal (another worker took the run over after it expired, or
// it was released). It is then renewed. Every write that advances a run checks it, so a
// worker that lost the run can neither commit a step nor start an effect (the started record
// is the fence before the external call). An expired lease that nobody took is still the
// holder's: nobody else can have written to the run meanwhile.
std::optional<detail::LeaseRefusal> SqliteStore::keep_lease(Db& db, std::string_view run_id,
                                                            const LeaseToken& lease) {
  const LeaseToken* token = &lease;
  if (lease.empty()) {
    auto held = db.held.find(run_id);
    if (held == db.held.end()) return std::nullopt;
    token = &held->second;
  }
  const std::optional<Db::LeaseRow> row = db.find_lease(run_id);
  if (!row || row->holder != token->holder || row->epoch != token->epoch)
    return detail::LeaseRefusal{token->epoch, !row || row->holder.empty()
                                                  ? std::string("was released")
                                                  : "expired and was taken by " + row->who() +
                                                        ", epoch " + std::to_string(row->epoch) +
                                                        ")"};
  Db::Query(*db.lease_renew)
      .bind(1, run_id)
      .bind(2, token->holder)
      .bind(3, now_ms() + options_.lease_ttl.count())
      .run();
  return std::nullopt;
}

// One run inside one database transaction (BEGIN IMMEDIATE ... COMMIT), under m_.
class SqliteStore::Write final : public detail::RunWrite {
 public:
  Write(SqliteStore& store, Db& db, std::string_view run_id)
      : store_(store), db_(db), run_id_(run_id) {}

  std::optional<std::uint64_t> newest_seq() override {
    run_ = db_.find_run(run_id_);
    if (!run_) return std::nullopt;
    return run_->newest_seq;
  }

  std::optional<detail::LeaseRefusal> hold_lease(const LeaseToken& lease) override {
    return store_.keep_lease(db_, run_id_, lease);
  }

  void insert_first(const Checkpoint& first) override {
    detail::CheckpointEncoder encoder(store_.options_.snapshot_every);
    const std::string record = dump(encoder.encode(first));
    Db::Query(*db_.insert_run)
        .bind(1, first.run_id)
        .bind(2, static_cast<std::int64_t>(first.seq))
        .bind(3, enumeration<RunStatus>::name(first.status))
        .bind(4, static_cast<std::int64_t>(terminal(first.status)))
        .bind(5, first.created_at)
        .bind(6, first.next_node)
        .bind(7, static_cast<std::int64_t>(first.step))
        .bind(8, enumeration<Reason>::name(first.reason))
        .bind(9, first.fingerprint)
        .bind(10, request_id(first))
        .bind_or_null(11, due_at(first).value_or(std::string()))
        .bind(12, std::int64_t{first.priority})
        .run();
    const std::int64_t id = sqlite3_last_insert_rowid(db_.handle);
    Db::Query(*db_.insert_checkpoint)
        .bind(1, id)
        .bind(2, static_cast<std::int64_t>(first.seq))
        .bind(3, std::int64_t{1})
        .bind(4, record)
        .bind(5, trellis::detail::checksum_of(record))
        .run();
    // The encoder is cached once the transaction commits.
    pending_id_ = id;
    pending_.emplace(Db::Cached{first.seq, std::move(encoder)});
  }

  void append(const Checkpoint& next) override {
    auto cached = db_.cache.find(run_->id);
    if (cached == db_.cache.end() || cached->second.seq != run_->newest_seq) {
      detail::CheckpointDecoder decoder;
      db_.decode_to(run_->id, run_->newest_seq, decoder);
      if (decoder.empty()) db_.refuse("run '" + next.run_id + "' has no checkpoints");
      Db::Cached fresh{run_->newest_seq, detail::CheckpointEncoder(store_.options_.snapshot_every)};
      fresh.encoder.continue_after(decoder.current_json(), decoder.since_full());
      cached = db_.cache.insert_or_assign(run_->id, std::move(fresh)).first;
    }
    // The encoder moves on before the row is written: forget it unless the commit succeeds.
    pending_id_ = run_->id;
    Db::Cached& entry = pending_.emplace(std::move(cached->second));
    db_.cache.erase(cached);
    const nlohmann::json record = entry.encoder.encode(next);
    const bool full = detail::CheckpointDecoder::is_full(record);
    const std::string text = dump(record);
    Db::Query(*db_.insert_checkpoint)
        .bind(1, run_->id)
        .bind(2, static_cast<std::int64_t>(next.seq))
        .bind(3, std::int64_t{full ? 1 : 0})
        .bind(4, text)
        .bind(5, trellis::detail::checksum_of(text))
        .run();
    Db::Query(*db_.update_run)
        .bind(1, run_->id)
        .bind(2, static_cast<std::int64_t>(next.seq))
        .bind(3, enumeration<RunStatus>::name(next.status))
        .bind(4, static_cast<std::int64_t>(terminal(next.status)))
        .bind(5, next.created_at)
        .bind(6, static_cast<std::int64_t>(entry.encoder.since_full()))
        .bind(7, next.next_node)
        .bind(8, static_cast<std::int64_t>(next.step))
        .bind(9, enumeration<Reason>::name(next.reason))
        .bind(10, next.fingerprint)
        .bind(11, request_id(next))
        .bind_or_null(12, due_at(next).value_or(std::string()))
        .bind(13, std::int64_t{next.priority})
        .run();
    entry.seq = next.seq;
  }

  std::uint64_t append_cancel_request(const CancelRequest& request) override {
    // Under BEGIN IMMEDIATE: no other connection can take the same id.
    std::uint64_t newest = 0;
    {
      Db::Query q(*db_.newest_request);
      q.bind(1, run_->id);
      if (q.step()) newest = static_cast<std::uint64_t>(q.integer(0));
    }
    CancelRequest kept = request;
    kept.id = newest + 1;
    const std::string text = dump(nlohmann::json(kept));
    Db::Query(*db_.insert_request)
        .bind(1, run_->id)
        .bind(2, static_cast<std::int64_t>(kept.id))
        .bind(3, text)
        .bind(4, trellis::detail::checksum_of(text))
        .run();
    return kept.id;
  }

  void put_effect(const EffectRecord& record) override {
    const std::string text = dump(detail::effect_json(record));
    Db::Query(*db_.put_effect)
        .bind(1, run_->id)
        .bind(2, record.key)
        .bind(3, text)
        .bind(4, trellis::detail::checksum_of(text))
        .run();
  }

  // After the transaction committed: caches the run's encoder, as of the row just written.
  void committed() {
    if (pending_) db_.cache.insert_or_assign(pending_id_, std::move(*pending_));
  }

 private:
  SqliteStore& store_;
  Db& db_;
  std::string_view run_id_;
  std::optional<Db::RunRow> run_;
  std::int64_t pending_id_ = 0;
  std::optional<Db::Cached> pending_;
};

void SqliteStore::write_run(std::string_view run_id, detail::WriteKind kind,
                            detail::RunBody<detail::RunWrite> body) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write(detail::write_name(kind));
  Db::Transaction tx(db);
  Write run(*this, db, run_id);
  body(run);
  tx.commit();
  run.committed();
}

std::optional<Checkpoint> SqliteStore::read_latest(std::string_view run_id) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  const std::optional<Db::RunRow> run = db.find_run(run_id);
  if (!run) return std::nullopt;
  if (auto c = db.cache.find(run->id); c != db.cache.end() && c->second.seq == run->newest_seq) {
    nlohmann::json j = *c->second.encoder.previous();
    j["seq"] = run->newest_seq;
    Checkpoint cp;
    from_json(j, cp);
    return cp;
  }
  detail::CheckpointDecoder decoder;
  db.decode_to(run->id, run->newest_seq, decoder);
  if (decoder.empty()) return std::nullopt;  // deleted between the two statements
  Checkpoint cp = decoder.current();
  Db::Cached fresh{cp.seq, detail::CheckpointEncoder(options_.snapshot_every)};
  fresh.encoder.continue_after(decoder.current_json(), decoder.since_full());
  db.cache.insert_or_assign(run->id, std::move(fresh));
  return cp;
}

std::optional<Checkpoint> SqliteStore::read_checkpoint(std::string_view run_id, std::uint64_t seq) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  const std::optional<Db::RunRow> run = db.find_run(run_id);
  if (!run || seq > run->newest_seq) return std::nullopt;
  detail::CheckpointDecoder decoder;
  db.decode_to(run->id, seq, decoder);
  if (decoder.empty()) return std::nullopt;
  Checkpoint cp = decoder.current();
  if (cp.seq != seq) return std::nullopt;
  return cp;
}

std::vector<Checkpoint> SqliteStore::read_history(std::string_view run_id) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  const std::optional<Db::RunRow> run = db.find_run(run_id);
  if (!run) return {};
  std::vector<Checkpoint> out;
  detail::CheckpointDecoder decoder;
  Db::Query q(*db.all_checkpoints);
  q.bind(1, run->id);
  while (q.step()) {
    db.apply(decoder, q.text(1), q.text(2), q.integer(0));
    out.push_back(decoder.current());
  }
  return out;
}

std::vector<std::string> SqliteStore::runs() {
  std::lock_guard lock(m_);
  std::vector<std::string> ids;
  Db::Query q(*db_->list_runs);
  while (q.step()) ids.push_back(q.text(0));
  return ids;
}

namespace {
struct SqliteLease {
  SqliteStore* store;
  LeaseToken token;
};
}  // namespace

std::optional<Lease> SqliteStore::take_lease(std::string_view run_id, std::string_view owner,
                                             std::string& holder) {
  const detail::ProcessIdentity me = detail::this_process();
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("lease");
  const std::int64_t now = now_ms();
  Db::Transaction tx(db);
  const std::optional<Db::LeaseRow> row = db.find_lease(run_id);
  if (row && !row->free(now)) {
    holder = row->who() + ", lease for " + std::to_string(row->expires_at_ms - now) + " ms more)";
    return std::nullopt;
  }
  LeaseToken token{std::string(run_id), detail::new_lease_holder(), row ? row->epoch + 1 : 1};
  Db::Query(*db.lease_put)
      .bind(1, run_id)
      .bind(2, owner)
      .bind(3, me.pid)
      .bind(4, token.holder)
      .bind(5, now + options_.lease_ttl.count())
      .bind(6, static_cast<std::int64_t>(token.epoch))
      .bind(7, me.host)
      .bind(8, me.pid_space)
      .bind(9, me.started)
      .run();
  tx.commit();
  db.held.insert_or_assign(std::string(run_id), token);
  auto* handle = new SqliteLease{this, token};
  return Lease(std::move(token), Lease::Handle(handle, [](void* p) {
                 auto* l = static_cast<SqliteLease*>(p);
                 l->store->release(l->token);
                 delete l;
               }));
}

void SqliteStore::release(const LeaseToken& token) noexcept {
  try {
    std::lock_guard lock(m_);
    Db& db = *db_;
    if (auto it = db.held.find(token.run_id);
        it != db.held.end() && it->second.holder == token.holder)
      db.held.erase(it);
    // The row stays (with no holder) for its epoch: the next holder's is larger.
    Db::Query(*db.lease_release).bind(1, token.run_id).bind(2, token.holder).run();
  } catch (...) {
    // The row expires by itself: a failed release only delays the next worker by the TTL.
  }
}

std::optional<EffectRecord> SqliteStore::read_effect(std::string_view run_id,
                                                     std::string_view key) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  Db::Query q(*db.get_effect);
  q.bind(1, run_id).bind(2, key);
  if (!q.step()) return std::nullopt;
  return db.effect_of(q.text(0), q.text(1), run_id);
}

std::vector<EffectRecord> SqliteStore::read_effects(std::string_view run_id) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  std::vector<EffectRecord> out;
  Db::Query q(*db.list_effects);
  q.bind(1, run_id);
  while (q.step()) out.push_back(db.effect_of(q.text(0), q.text(1), run_id));
  return out;
}

void SqliteStore::write_event(std::string_view run_id, const nlohmann::json& event) {
  const std::string text = dump(event);
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("append_event");
  Db::Query(*db.sync_off).run();
  try {
    Db::Query(*db.insert_event).bind(1, run_id).bind(2, text).run();
  } catch (...) {
    Db::Query(*db.sync_on).run();
    throw;
  }
  Db::Query(*db.sync_on).run();
}

std::vector<nlohmann::json> SqliteStore::read_events(std::string_view run_id) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  std::vector<nlohmann::json> out;
  Db::Query q(*db.select_events);
  q.bind(1, run_id);
  while (q.step()) {
    nlohmann::json e;
    if (auto refusal = trellis::detail::parse_json(q.text(0), e))
      db.refuse("an event of run '" + std::string(run_id) + "' is not JSON: " + refusal->detail);
    out.push_back(std::move(e));
  }
  return out;
}

void SqliteStore::retain(const detail::RetentionPlan& retention) {
  const std::string& cutoff = retention.finished_before;
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("apply_retention");
  Db::Transaction tx(db);
  if (!cutoff.empty()) {
    std::vector<std::pair<std::int64_t, std::string>> old;
    {
      Db::Query q(*db.finished_before);
      q.bind(1, cutoff);
      while (q.step()) old.emplace_back(q.integer(0), q.text(1));
    }
    const std::int64_t now = now_ms();
    for (const auto& [id, run_id] : old) {
      if (auto row = db.find_lease(run_id); row && !row->free(now))
        continue;  // someone holds it: next time
      Db::Query(*db.delete_checkpoints).bind(1, id).run();
      Db::Query(*db.delete_events).bind(1, id).run();
      Db::Query(*db.delete_effects).bind(1, id).run();
      Db::Query(*db.delete_requests).bind(1, id).run();
      Db::Query(*db.delete_run).bind(1, id).run();
      Db::Query(*db.delete_lease).bind(1, run_id).run();  // a new run of this id starts anew
      db.cache.erase(id);
    }
  }
  if (retention.keep_last > 0) {
    struct Long {
      std::int64_t id;
      std::int64_t since_full;
      std::int64_t newest_seq;
    };
    std::vector<Long> runs;
    {
      Db::Query q(*db.longer_than);
      q.bind(1, static_cast<std::int64_t>(retention.keep_last));
      while (q.step()) runs.push_back({q.integer(0), q.integer(1), q.integer(2)});
    }
    for (const Long& run : runs) {
      std::int64_t oldest_kept = 0;
      {
        Db::Query q(*db.nth_newest);
        q.bind(1, run.id).bind(2, static_cast<std::int64_t>(retention.keep_last - 1));
        if (!q.step()) continue;
        oldest_kept = q.integer(0);
      }
      // The oldest kept row becomes a full record; the rows after it still chain from it.
      detail::CheckpointDecoder decoder;
      db.decode_to(run.id, static_cast<std::uint64_t>(oldest_kept), decoder);
      if (decoder.empty()) continue;
      detail::CheckpointEncoder encoder(1);
      const std::string record = dump(encoder.encode(decoder.current()));
      Db::Query(*db.make_full)
          .bind(1, run.id)
          .bind(2, oldest_kept)
          .bind(3, record)
          .bind(4, trellis::detail::checksum_of(record))
          .run();
      Db::Query(*db.delete_before).bind(1, run.id).bind(2, oldest_kept).run();
      Db::Query(*db.set_since_full)
          .bind(1, run.id)
          .bind(2, std::min(run.since_full, run.newest_seq - oldest_kept))
          .run();
    }
  }
  tx.commit();
}

std::vector<StoredEvent> SqliteStore::read_events_after(std::string_view run_id,
                                                        std::uint64_t after_seq) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  std::vector<StoredEvent> out;
  Db::Query q(*db.events_after);
  // Positions are events.id: an INTEGER PRIMARY KEY, larger for every later row.
  q.bind(1, run_id).bind(2,
                         static_cast<std::int64_t>(std::min<std::uint64_t>(after_seq, INT64_MAX)));
  while (q.step()) {
    StoredEvent e;
    e.seq = static_cast<std::uint64_t>(q.integer(0));
    if (auto refusal = trellis::detail::parse_json(q.text(1), e.event))
      db.refuse("an event of run '" + std::string(run_id) + "' is not JSON: " + refusal->detail);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<CancelRequest> SqliteStore::read_cancel_requests(std::string_view run_id,
                                                             std::uint64_t after) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  std::vector<CancelRequest> out;
  if (db.version < 5) return out;  // read-only over version 4: no request log yet
  Db::Query q(*db.cancel_requests_after);
  q.bind(1, run_id).bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(after, INT64_MAX)));
  while (q.step()) {
    const std::string what =
        "cancel request " + std::to_string(q.integer(0)) + " of run '" + std::string(run_id) + "'";
    const nlohmann::json record = db.record_of(q.text(1), q.text(2), what);
    try {
      out.push_back(record.get<CancelRequest>());
    } catch (const store_error& e) {
      db.refuse(what + ": " + e.what());
    }
  }
  return out;
}

namespace {

// The filter's WHERE clause over the runs table (version 5 on) and its bindings: status
// (over the runs_by_status index), since, node, the graph prefix and the page's start.
std::string summary_where(const RunFilter& filter) {
  std::vector<std::string> where;
  if (filter.status) where.emplace_back("status=?1");
  if (!filter.since.empty()) where.emplace_back("newest_at>=?2");
  if (!filter.node.empty()) where.emplace_back("next_node=?3");
  if (!filter.graph.empty()) where.emplace_back("substr(fingerprint,1,length(?4))=?4");
  if (!filter.after.empty()) where.emplace_back("run_id>?5");  // BINARY collation: byte order
  std::string sql;
  for (std::size_t i = 0; i < where.size(); ++i) sql += (i ? " AND " : " WHERE ") + where[i];
  return sql;
}

// Binds the values summary_where's clause names (`Query`: Db::Query).
template <class Query>
void bind_filter(Query& q, const RunFilter& filter) {
  if (filter.status) q.bind(1, enumeration<RunStatus>::name(*filter.status));
  if (!filter.since.empty()) q.bind(2, filter.since);
  if (!filter.node.empty()) q.bind(3, filter.node);
  if (!filter.graph.empty()) q.bind(4, filter.graph);
  if (!filter.after.empty()) q.bind(5, filter.after);
}

}  // namespace

std::vector<RunSummary> SqliteStore::read_summaries(const RunFilter& filter) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  std::vector<RunSummary> out;
  if (db.version < 5) {
    // Read-only over version 4: no index, each run decoded from its checkpoints.
    std::vector<std::pair<std::int64_t, std::uint64_t>> rows;
    {
      Db::Query q(*db.all_runs);
      while (q.step()) rows.emplace_back(q.integer(0), static_cast<std::uint64_t>(q.integer(2)));
    }
    for (const auto& [id, newest_seq] : rows) {
      if (filter.limit > 0 && out.size() == filter.limit) break;
      std::optional<RunSummary> s = db.summary_of(*db.chain_to, *db.oldest_seq, id, newest_seq);
      if (s && filter.matches(*s)) out.push_back(std::move(*s));
    }
    return out;
  }
  // Columns 0-9 are the index's; then due and priority (version 6), or the row id (version 5,
  // read-only: the due time is decoded from the newest checkpoint). Ordered by run id (the
  // unique index on it), so a LIMIT stops the reading at the page's end.
  const bool has_due = db.version >= 6;
  std::string sql =
      "SELECT run_id, status, reason, next_node, step, newest_seq, created_at, newest_at, "
      "fingerprint, request, ";
  sql += has_due ? "due, priority FROM runs" : "id FROM runs";
  sql += summary_where(filter) + " ORDER BY run_id LIMIT ?6";
  Db::Stmt stmt(db, sql.c_str());
  Db::Query q(stmt);
  bind_filter(q, filter);
  q.bind(6, filter.limit > 0
                ? static_cast<std::int64_t>(std::min<std::size_t>(filter.limit, INT64_MAX))
                : std::int64_t{-1});  // -1: no limit
  while (q.step()) {
    RunSummary& s = out.emplace_back(db.summary_row(q, has_due));
    if (!has_due) {
      detail::CheckpointDecoder newest;
      db.decode_to(q.integer(10), s.seq, newest);
      if (newest.empty()) continue;
      const Checkpoint cp = newest.current();
      s.due = due_at(cp).value_or(std::string());
      s.priority = cp.priority;
    }
  }
  return out;
}

std::size_t SqliteStore::read_count(const RunFilter& filter) {
  {
    std::lock_guard lock(m_);
    Db& db = *db_;
    if (db.version >= 5) {
      Db::Stmt stmt(db, ("SELECT count(*) FROM runs" + summary_where(filter)).c_str());
      Db::Query q(stmt);
      bind_filter(q, filter);
      q.step();
      return static_cast<std::size_t>(q.integer(0));
    }
  }
  return StoreProtocol::read_count(filter);  // version 4: no index to count in
}

std::vector<RunSummary> SqliteStore::read_due(const std::string& now,
                                              const std::vector<std::string>* fingerprints,
                                              std::size_t limit) {
  // Read-only over an older schema: no due column, the protocol's default over the listing.
  // (db_->version is set once, by the constructor.)
  if (db_->version < 6) return StoreProtocol::read_due(now, fingerprints, limit);
  std::vector<RunSummary> out;
  if (limit == 0 || (fingerprints != nullptr && fingerprints->empty())) return out;
  const std::string wanted = fingerprints ? dump(nlohmann::json(*fingerprints)) : std::string();
  std::lock_guard lock(m_);
  Db& db = *db_;
  const std::int64_t now_in_ms = now_ms();
  // One query in claim order, over runs_by_due; the rows come one by one (no LIMIT), so the
  // ones a live holder has are skipped here (its expiry, or its process provably dead, as
  // take_lease decides) and do not crowd out the free ones.
  Db::Query q(*db.due_runs);
  q.bind(1, now);
  if (fingerprints) q.bind(2, wanted);
  while (out.size() < limit && q.step()) {
    Db::LeaseRow lease;
    lease.holder = q.text(12);
    lease.expires_at_ms = q.integer(13);
    lease.pid = q.integer(14);
    lease.pid_space = q.text(15);
    lease.started = q.integer(16);
    if (!lease.free(now_in_ms)) continue;
    out.push_back(db.summary_row(q, true));
  }
  return out;
}

bool SqliteStore::erase_run(std::string_view run_id) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("delete_run");
  Db::Transaction tx(db);
  const std::optional<Db::RunRow> run = db.find_run(run_id);
  if (!run) return false;
  // The lease rules of take_lease: a live holder (this object included) keeps the run.
  if (const std::optional<Db::LeaseRow> row = db.find_lease(run_id); row && !row->free(now_ms()))
    throw run_busy("trellis: run '" + std::string(run_id) + "' is being advanced by " + row->who() +
                   "): it is not deleted");
  Db::Query(*db.delete_checkpoints).bind(1, run->id).run();
  Db::Query(*db.delete_events).bind(1, run->id).run();
  Db::Query(*db.delete_effects).bind(1, run->id).run();
  Db::Query(*db.delete_requests).bind(1, run->id).run();
  Db::Query(*db.delete_run).bind(1, run->id).run();
  Db::Query(*db.delete_lease).bind(1, run_id).run();  // a new run of this id starts anew
  tx.commit();
  db.cache.erase(run->id);
  if (auto held = db.held.find(run_id); held != db.held.end()) db.held.erase(held);
  return true;
}

void SqliteStore::write_graph(const GraphShape& shape) {
  const std::string text = dump(nlohmann::json(shape));
  const std::string sum = trellis::detail::checksum_of(text);
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("put_graph");
  {
    // run() puts its graph on every start: an unchanged shape costs a read, not a commit.
    Db::Query q(*db.get_graph);
    q.bind(1, shape.fingerprint);
    if (q.step() && q.text(1) == sum) return;
  }
  Db::Query(*db.put_graph).bind(1, shape.fingerprint).bind(2, text).bind(3, sum).run();
}

std::optional<GraphShape> SqliteStore::read_graph(std::string_view fingerprint) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.version < 5) return std::nullopt;  // read-only over version 4: no graphs yet
  Db::Query q(*db.get_graph);
  q.bind(1, fingerprint);
  if (!q.step()) return std::nullopt;
  const std::string what = "the graph shape '" + std::string(fingerprint) + "'";
  const nlohmann::json record = db.record_of(q.text(0), q.text(1), what);
  try {
    return record.get<GraphShape>();
  } catch (const store_error& e) {
    db.refuse(what + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    db.refuse(what + ": " + e.what());
  }
}

void SqliteStore::write_cache(const CacheEntry& entry) {
  const std::string text = dump(nlohmann::json(entry));
  const std::string sum = trellis::detail::checksum_of(text);
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.read_only) db.refuse_write("put_cached");
  Db::Query(*db.put_cache_entry).bind(1, entry.key).bind(2, text).bind(3, sum).run();
}

std::optional<CacheEntry> SqliteStore::read_cache(std::string_view key) {
  std::lock_guard lock(m_);
  Db& db = *db_;
  if (db.version < 7) return std::nullopt;  // read-only over an older schema: no cache yet
  Db::Query q(*db.get_cache_entry);
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  const std::string what = "the cache entry '" + std::string(key) + "'";
  const nlohmann::json record = db.record_of(q.text(0), q.text(1), what);
  CacheEntry entry;
  if (const auto why = detail::decode_cache_entry(record, key, entry))
    db.refuse(what + ": " + *why);
  return entry;
}

}  // namespace trellis::agent
