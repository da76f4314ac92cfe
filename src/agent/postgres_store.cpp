// PostgresStore: runs in a PostgreSQL schema (the model is in postgres_store.hpp).
//
// Writes come in two modes. The fast one (a commit or an effect record of a run whose newest
// seq this object knows) guesses the run's row from what it saw last and sends ONE statement
// that checks every guess in its WHERE clause (run, newest seq, lease holder and epoch) and
// writes only when they all hold: one round trip, one implicit transaction. When the guess was
// wrong (the statement matched nothing) or the protocol refused on it, the call is made again
// in the checked mode: BEGIN, the run's row read FOR UPDATE (so nothing changes under the
// checks), the protocol's checks on what was read, the same statements, COMMIT. So every
// refusal is decided on the row as it is, never on the guess.
//
// Every checkpoint row is a full record (the chain format's {"seq":N,"full":{...}}): a row is
// read alone; PostgreSQL compresses large ones (TOAST).

#include "trellis/agent/postgres_store.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <utility>

#include <trellis/io/checksum.hpp>
#include <trellis/io/json_text.hpp>

#include "checkpoint_codec.hpp"
#include "lease_holder.hpp"
#include "postgres_connection.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/base/enumeration.hpp"
#include "trellis/base/error.hpp"

namespace trellis::agent {

namespace {

using detail::pg::Connection;
using detail::pg::Param;
using detail::pg::Result;
using detail::pg::Statement;

// The schema as the steps that built it: kMigrations[v] takes a schema from version v to v + 1
// (version 0: empty). Run inside the schema check's transaction, under an advisory lock, so
// concurrent openers create or upgrade it once.
constexpr const char* kMigrations[] = {
    // 1: runs (index and lease), checkpoints, effects, events, cancel requests, graph shapes.
    R"sql(
CREATE TABLE trellis_schema(version integer NOT NULL);
CREATE TABLE runs(
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id text COLLATE "C" NOT NULL UNIQUE,
  newest_seq bigint,
  status text NOT NULL DEFAULT '',
  reason text NOT NULL DEFAULT '',
  finished boolean NOT NULL DEFAULT false,
  next_node text NOT NULL DEFAULT '',
  step bigint NOT NULL DEFAULT 0,
  created_at text COLLATE "C" NOT NULL DEFAULT '',
  updated_at text COLLATE "C" NOT NULL DEFAULT '',
  fingerprint text COLLATE "C" NOT NULL DEFAULT '',
  request text NOT NULL DEFAULT '',
  due text COLLATE "C",
  priority integer NOT NULL DEFAULT 0,
  lease_holder text,
  lease_epoch bigint NOT NULL DEFAULT 0,
  lease_owner text NOT NULL DEFAULT '',
  lease_until timestamptz,
  effects_put bigint NOT NULL DEFAULT 0,
  requests bigint NOT NULL DEFAULT 0);
CREATE INDEX runs_due ON runs(due) WHERE due IS NOT NULL;
CREATE INDEX runs_by_status ON runs(status, run_id);
CREATE TABLE checkpoints(
  run bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  record text NOT NULL,
  checksum text NOT NULL,
  PRIMARY KEY(run, seq));
CREATE TABLE effects(
  run bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key text COLLATE "C" NOT NULL,
  ordinal bigint NOT NULL,
  record text NOT NULL,
  checksum text NOT NULL,
  PRIMARY KEY(run, key));
CREATE INDEX effects_in_order ON effects(run, ordinal);
CREATE TABLE events(
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  event text NOT NULL);
CREATE INDEX events_by_run ON events(run, id);
CREATE TABLE cancel_requests(
  run bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  id bigint NOT NULL,
  record text NOT NULL,
  checksum text NOT NULL,
  PRIMARY KEY(run, id));
CREATE TABLE graphs(
  fingerprint text COLLATE "C" PRIMARY KEY,
  shape text NOT NULL,
  checksum text NOT NULL);
)sql",
    // 2: cache entries (store-wide, not a run's: deleting a run keeps them); the version also
    // covers the hash chain's members in checkpoint and effect records, which an older build
    // would rewrite without them.
    R"sql(
CREATE TABLE cache_entries(
  key text COLLATE "C" PRIMARY KEY,
  entry text NOT NULL,
  checksum text NOT NULL);
)sql",
};
static_assert(std::size(kMigrations) == static_cast<std::size_t>(PostgresStore::schema_version));

// The database's clock as the UTC text checkpoints carry (fixed width: text order is time
// order), comparable with the "C"-collated due column.
constexpr const char* kNowText =
    R"((to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') COLLATE "C"))";

constexpr const char* kSummaryColumns =
    "run_id, status, reason, next_node, step, newest_seq, created_at, updated_at, fingerprint, "
    "request, coalesce(due, ''), priority";

std::string dump(const nlohmann::json& j) {
  try {
    return j.dump();
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: PostgreSQL store: a record cannot be encoded: ") +
                      e.what());
  }
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(std::uint64_t v) { return std::to_string(v); }

// A text[] literal: {"a","b"} with quotes and backslashes escaped.
std::string text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (const char ch : items[i]) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  return out + "}";
}

bool valid_schema_name(const std::string& s) {
  if (s.empty() || s.size() > 63 || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

// The fast mode's guess did not hold: redo the call in the checked mode.
struct Missed {};

}  // namespace

struct PostgresStore::Db {
  PostgresStoreOptions options;
  std::string schema_q;  // the schema, quoted
  std::string channel;   // LISTEN/NOTIFY channel
  std::string ttl;       // "interval 'N milliseconds'"
  detail::pg::Pool pool;
  std::string where;
  /// The schema version the store reads: schema_version, or the older one a read-only open
  /// found (read as it is: the tables it lacks read as empty).
  int version = schema_version;

  // This object's knowledge: each run's newest seq as last seen (the fast mode's guess), and
  // the newest lease it took on each run (for the calls without a token).
  std::mutex m;
  std::map<std::string, std::uint64_t, std::less<>> newest;
  std::map<std::string, LeaseToken, std::less<>> held;

  // wait_for_work: one waiter polls the listening connection, the others wait for it.
  std::mutex listen_m;
  std::condition_variable_any listen_cv;
  std::unique_ptr<Connection> listener;
  bool polling = false;
  std::uint64_t generation = 0;
  int wake_fd = -1;

  // The statements (prepared once per connection, by name).
  std::string sql_take_lease, sql_release, sql_renew, sql_lease_row, sql_lock_run, sql_create,
      sql_commit, sql_put_effect, sql_insert_request, sql_claim, sql_due, sql_erase;

  Db(PostgresStoreOptions o, std::string setup)
      : options(std::move(o)),
        schema_q(detail::pg::quote_identifier(options.schema)),
        channel(options.schema + "_work"),
        ttl("interval '" + std::to_string(options.lease_ttl.count()) + " milliseconds'"),
        pool(options.url, options.connect_timeout, "trellis", std::move(setup),
             options.connections) {
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const std::string notify = "(SELECT 1 FROM pg_notify('" + channel + "', ''))";
    sql_take_lease =
        "INSERT INTO runs AS r(run_id, lease_holder, lease_epoch, lease_owner, lease_until) "
        "VALUES($1, $2, 1, $3, now() + " +
        ttl +
        ") ON CONFLICT (run_id) DO UPDATE SET lease_holder=excluded.lease_holder, "
        "lease_epoch=r.lease_epoch + 1, lease_owner=excluded.lease_owner, "
        "lease_until=excluded.lease_until WHERE r.lease_holder IS NULL OR r.lease_until < now() "
        "RETURNING lease_epoch";
    // A release that leaves the run Queued and due (an operator's decision or reconciliation,
    // a yield, all committed under this lease) notifies: the commit that made it Queued
    // notified while the lease still held the run, so a worker woken by it found nothing.
    sql_release = std::string(
                      "WITH u AS (UPDATE runs SET lease_holder=NULL, lease_owner='', "
                      "lease_until=NULL WHERE run_id=$1 AND lease_holder=$2 AND "
                      "lease_epoch=$3::bigint RETURNING status, due) SELECT CASE WHEN "
                      "status='Queued' AND due <= ") +
                  kNowText + " THEN " + notify + " END FROM u";
    sql_renew = "UPDATE runs SET lease_until=now() + " + ttl +
                " WHERE run_id=$1 AND lease_holder=$2 AND lease_epoch=$3::bigint";
    sql_lease_row =
        "SELECT lease_holder, lease_epoch, lease_owner, "
        "greatest(0, ceil(extract(epoch FROM lease_until - now()) * 1000))::bigint, "
        "lease_until IS NULL OR lease_until < now() FROM runs WHERE run_id=$1";
    sql_lock_run =
        "SELECT id, newest_seq, lease_holder, lease_epoch, lease_owner, requests FROM runs "
        "WHERE run_id=$1 FOR UPDATE";
    // $1 run, $2 seq, $3 status, $4 reason, $5 finished, $6 next node, $7 step, $8 created_at,
    // $9 fingerprint, $10 request, $11 due, $12 priority, $13 record, $14 checksum, $15 notify
    sql_create =
        "WITH r AS (INSERT INTO runs AS r(run_id, newest_seq, status, reason, finished, next_node, "
        "step, created_at, updated_at, fingerprint, request, due, priority) "
        "VALUES($1, $2::bigint, $3, $4, $5::boolean, $6, $7::bigint, $8, $8, $9, $10, $11, "
        "$12::integer) ON CONFLICT (run_id) DO UPDATE SET newest_seq=excluded.newest_seq, "
        "status=excluded.status, reason=excluded.reason, finished=excluded.finished, "
        "next_node=excluded.next_node, step=excluded.step, created_at=excluded.created_at, "
        "updated_at=excluded.updated_at, fingerprint=excluded.fingerprint, "
        "request=excluded.request, due=excluded.due, priority=excluded.priority, effects_put=0, "
        "requests=0 WHERE r.newest_seq IS NULL RETURNING id), "
        "c AS (INSERT INTO checkpoints(run, seq, record, checksum) SELECT id, $2::bigint, $13, $14 "
        "FROM r RETURNING run) SELECT run, CASE WHEN $15::boolean THEN " +
        notify + " END FROM c";
    // $1 run, $2 expected newest seq, $3 seq, $4 status, $5 reason, $6 finished, $7 next node,
    // $8 step, $9 updated_at, $10 fingerprint, $11 request, $12 due, $13 priority, $14 lease
    // holder (NULL: none checked), $15 epoch, $16 record, $17 checksum, $18 notify
    sql_commit =
        "WITH u AS (UPDATE runs SET newest_seq=$3::bigint, status=$4, reason=$5, "
        "finished=$6::boolean, next_node=$7, step=$8::bigint, updated_at=$9, fingerprint=$10, "
        "request=$11, due=$12, priority=$13::integer, lease_until=CASE WHEN $14::text IS NULL "
        "THEN lease_until ELSE now() + " +
        ttl +
        " END WHERE run_id=$1 AND newest_seq=$2::bigint AND ($14::text IS NULL OR "
        "(lease_holder=$14 AND lease_epoch=$15::bigint)) RETURNING id), "
        "c AS (INSERT INTO checkpoints(run, seq, record, checksum) SELECT id, $3::bigint, $16, $17 "
        "FROM u RETURNING run) SELECT run, CASE WHEN $18::boolean THEN " +
        notify + " END FROM c";
    // $1 run, $2 lease holder (NULL: none checked), $3 epoch, $4 key, $5 record, $6 checksum
    sql_put_effect =
        "WITH u AS (UPDATE runs SET effects_put=effects_put + 1, lease_until=CASE WHEN $2::text "
        "IS NULL THEN lease_until ELSE now() + " +
        ttl +
        " END WHERE run_id=$1 AND newest_seq IS NOT NULL AND ($2::text IS NULL OR "
        "(lease_holder=$2 AND lease_epoch=$3::bigint)) RETURNING id, effects_put) "
        "INSERT INTO effects AS e(run, key, ordinal, record, checksum) SELECT id, $4, effects_put, "
        "$5, $6 FROM u ON CONFLICT (run, key) DO UPDATE SET record=excluded.record, "
        "checksum=excluded.checksum RETURNING run";
    // $1 run row id, $2 request id, $3 record, $4 checksum
    sql_insert_request =
        "WITH u AS (UPDATE runs SET requests=$2::bigint WHERE id=$1::bigint RETURNING id) "
        "INSERT INTO cancel_requests(run, id, record, checksum) SELECT id, $2::bigint, $3, $4 "
        "FROM u RETURNING (SELECT 1 FROM pg_notify('" +
        channel + "', ''))";
    // $1 fingerprints, $2 limit, $3 holder prefix, $4 owner
    sql_claim = std::string("WITH c AS (SELECT id FROM runs WHERE due <= ") + kNowText +
                " AND fingerprint = ANY($1::text[]) AND (lease_holder IS NULL OR lease_until < "
                "now()) ORDER BY priority DESC, due, run_id LIMIT $2::bigint FOR UPDATE SKIP "
                "LOCKED), u AS (UPDATE runs r SET lease_epoch=r.lease_epoch + 1, "
                "lease_holder=$3 || '.' || r.id::text, lease_owner=$4, lease_until=now() + " +
                ttl +
                " FROM c WHERE r.id=c.id RETURNING r.id, r.run_id, r.lease_holder, r.lease_epoch, "
                "r.newest_seq, r.priority, r.due) SELECT u.run_id, u.lease_holder, u.lease_epoch, "
                "k.seq, k.record, k.checksum FROM u JOIN checkpoints k ON k.run=u.id AND "
                "k.seq=u.newest_seq ORDER BY u.priority DESC, u.due, u.run_id";
    sql_due =
        std::string("SELECT ") + kSummaryColumns +
        " FROM runs WHERE due <= $1 AND ($2::text[] IS NULL OR fingerprint = ANY($2::text[])) "
        "AND (lease_holder IS NULL OR lease_until < now()) ORDER BY priority DESC, due, "
        "run_id LIMIT $3::bigint";
    sql_erase =
        "DELETE FROM runs WHERE run_id=$1 AND newest_seq IS NOT NULL AND (lease_holder IS NULL OR "
        "lease_until < now()) RETURNING id";
  }
  ~Db() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  [[noreturn]] void refuse(const std::string& why) const {
    throw store_error("trellis: " + where + ": " + why);
  }
  [[noreturn]] void refuse_write(const char* what) const {
    throw store_error("trellis: " + where + ": opened read-only: " + what +
                      " is refused, nothing was written");
  }

  // Runs `call(connection)` on a borrowed connection; a read (or a write that surely did not
  // commit) that lost its connection is made again, once, on a new one.
  template <class F>
  auto with_connection(F&& call) {
    for (int attempt = 0;; ++attempt) {
      detail::pg::Pool::Borrowed c = pool.borrow();
      try {
        return call(*c);
      } catch (const detail::pg::connection_lost& e) {
        c.discard();
        if (attempt > 0 || e.maybe_committed())
          throw store_error(
              std::string(e.what()) +
              (e.maybe_committed() ? " (the write may or may not have been committed)" : ""));
      }
    }
  }

  // Parses a record after checking its checksum (a row edited outside trellis is refused).
  nlohmann::json record_of(const std::string& text, const std::string& checksum,
                           const std::string& what) const {
    if (trellis::detail::checksum_of(text) != checksum)
      refuse(what + " has a bad checksum: the record was edited or damaged");
    nlohmann::json record;
    if (auto refusal = trellis::detail::parse_json(text, record))
      refuse(what + " is not a record: " + refusal->detail);
    return record;
  }
  Checkpoint checkpoint_of(const std::string& run_id, std::int64_t seq, const std::string& text,
                           const std::string& checksum) const {
    const std::string what = "checkpoint " + std::to_string(seq) + " of run '" + run_id + "'";
    const nlohmann::json record = record_of(text, checksum, what);
    detail::CheckpointDecoder decoder;
    try {
      decoder.apply(record);
      return decoder.current();
    } catch (const store_error& e) {
      refuse(what + ": " + e.what());
    }
  }
  EffectRecord effect_of(const std::string& text, const std::string& checksum,
                         std::string_view run_id) const {
    const std::string what = "an effect record of run '" + std::string(run_id) + "'";
    const nlohmann::json record = record_of(text, checksum, what);
    try {
      return record.get<EffectRecord>();
    } catch (const store_error& e) {
      refuse(what + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
      refuse(what + ": " + e.what());
    }
  }
  RunSummary summary_of(const Result& r, int row) const {
    RunSummary s;
    s.run_id = r.text(row, 0);
    const std::string status = r.text(row, 1);
    const std::string reason = r.text(row, 2);
    const auto st = enumeration<RunStatus>::from_name(status);
    const auto re = enumeration<Reason>::from_name(reason);
    if (!st || !re)
      refuse("run '" + s.run_id + "' has an unknown " +
             (st ? "reason '" + reason : "status '" + status) + "' in its row");
    s.status = *st;
    s.reason = *re;
    s.node = r.text(row, 3);
    s.step = static_cast<std::uint64_t>(r.integer(row, 4));
    s.seq = static_cast<std::uint64_t>(r.integer(row, 5));
    s.created_at = r.text(row, 6);
    s.updated_at = r.text(row, 7);
    s.fingerprint = r.text(row, 8);
    s.request = r.text(row, 9);
    s.due = r.text(row, 10);
    s.priority = static_cast<int>(r.integer(row, 11));
    return s;
  }

  void saw(std::string_view run_id, std::uint64_t seq) {
    std::lock_guard lock(m);
    newest.insert_or_assign(std::string(run_id), seq);
  }
  void forget(std::string_view run_id) {
    std::lock_guard lock(m);
    if (auto it = newest.find(run_id); it != newest.end()) newest.erase(it);
  }
  std::optional<std::uint64_t> guess(std::string_view run_id) {
    std::lock_guard lock(m);
    auto it = newest.find(run_id);
    if (it == newest.end()) return std::nullopt;
    return it->second;
  }
  // The token a write checks: `lease`, or for an empty one this object's newest lease on the
  // run (nullopt: nothing is checked).
  std::optional<LeaseToken> token_for(std::string_view run_id, const LeaseToken& lease) {
    if (!lease.empty()) return lease;
    std::lock_guard lock(m);
    auto it = held.find(run_id);
    if (it == held.end()) return std::nullopt;
    return it->second;
  }

  // Why `token` does not hold its run's lease, from the row as it is.
  detail::LeaseRefusal refusal(Connection& c, const LeaseToken& token) {
    Result r = c.one(Statement{"lease_row", sql_lease_row, {token.run_id}, false});
    if (r.rows() == 0 || r.null(0, 0)) return detail::LeaseRefusal{token.epoch, "was released"};
    return detail::LeaseRefusal{token.epoch, "expired and was taken by '" + r.text(0, 2) +
                                                 "' (epoch " + r.text(0, 1) + ")"};
  }
};

namespace {

// The index columns of checkpoint `c` as the create and commit statements take them.
struct IndexParams {
  Param status, reason, finished, next_node, step, fingerprint, request, due, priority;
};
IndexParams index_params(const Checkpoint& c) {
  const std::optional<std::string> due = due_at(c);
  return IndexParams{std::string(enumeration<RunStatus>::name(c.status)),
                     std::string(enumeration<Reason>::name(c.reason)),
                     std::string(terminal(c.status) ? "true" : "false"),
                     c.next_node,
                     num(c.step),
                     c.fingerprint,
                     request_id(c),
                     due,
                     std::to_string(c.priority)};
}

std::string record_text(const Checkpoint& c) {
  return dump(detail::CheckpointEncoder(1).encode(c));
}

}  // namespace

// One run inside one write: the fast mode (no transaction: each write is one statement that
// checks the guesses) or the checked mode (a transaction holding the run's row locked).
class PostgresStore::Write final : public detail::RunWrite {
 public:
  Write(Db& db, Connection& c, std::string_view run_id, detail::WriteKind kind, bool checked)
      : db_(db), c_(c), run_id_(run_id), kind_(kind), checked_(checked) {}

  bool wrote() const noexcept { return wrote_; }

  // Checked mode: BEGIN and the run's row, locked (one round trip).
  void begin() {
    std::vector<Statement> batch;
    batch.push_back(Statement{nullptr, "BEGIN ISOLATION LEVEL READ COMMITTED", {}, false});
    batch.push_back(Statement{"lock_run", db_.sql_lock_run, {std::string(run_id_)}, false});
    std::vector<Result> r = c_.run(batch);
    if (r[1].rows() > 0) {
      row_id_ = r[1].integer(0, 0);
      if (!r[1].null(0, 1)) seq_ = static_cast<std::uint64_t>(r[1].integer(0, 1));
      if (!r[1].null(0, 2)) holder_ = r[1].text(0, 2);
      epoch_ = static_cast<std::uint64_t>(r[1].integer(0, 3));
      owner_ = r[1].text(0, 4);
      requests_ = static_cast<std::uint64_t>(r[1].integer(0, 5));
    }
  }
  void commit() { c_.one(Statement{nullptr, "COMMIT", {}, true}); }

  std::optional<std::uint64_t> newest_seq() override {
    if (checked_) return seq_;
    if (kind_ == detail::WriteKind::commit) return db_.guess(run_id_);  // set: fast mode
    return std::uint64_t{0};  // put_effect: the statement checks that the run exists
  }

  std::optional<detail::LeaseRefusal> hold_lease(const LeaseToken& lease) override {
    token_ = db_.token_for(run_id_, lease);
    if (kind_ == detail::WriteKind::renew) {
      // One statement, in either mode: it renews only while the token holds.
      Result r = c_.one(
          Statement{"renew", db_.sql_renew, {lease.run_id, lease.holder, num(lease.epoch)}, true});
      wrote_ = true;
      if (r.affected() == 1) return std::nullopt;
      return db_.refusal(c_, lease);
    }
    if (!checked_ || !token_) return std::nullopt;  // fast mode: the write checks it
    if (holder_ != token_->holder || epoch_ != token_->epoch) {
      if (holder_.empty()) return detail::LeaseRefusal{token_->epoch, "was released"};
      return detail::LeaseRefusal{
          token_->epoch, "expired and was taken by '" + owner_ + "' (epoch " + num(epoch_) + ")"};
    }
    return std::nullopt;
  }

  void insert_first(const Checkpoint& first) override {
    const std::string record = record_text(first);
    const IndexParams p = index_params(first);
    Result r = c_.one(Statement{"create",
                                db_.sql_create,
                                {first.run_id, num(first.seq), p.status, p.reason, p.finished,
                                 p.next_node, p.step, first.created_at, p.fingerprint, p.request,
                                 p.due, p.priority, record, trellis::detail::checksum_of(record),
                                 std::string(first.status == RunStatus::Queued ? "true" : "false")},
                                !checked_});
    wrote_ = true;
    if (r.rows() != 1) {
      if (!checked_) throw Missed{};
      throw run_busy("trellis: run '" + first.run_id + "' already exists");
    }
    saw_ = first.seq;
  }

  void append(const Checkpoint& next) override {
    const std::string record = record_text(next);
    const IndexParams p = index_params(next);
    const std::uint64_t expected = checked_ ? *seq_ : next.seq - 1;
    Result r = c_.one(Statement{
        "commit",
        db_.sql_commit,
        {next.run_id, num(expected), num(next.seq), p.status, p.reason, p.finished, p.next_node,
         p.step, next.created_at, p.fingerprint, p.request, p.due, p.priority,
         token_ ? Param(token_->holder) : Param(), token_ ? Param(num(token_->epoch)) : Param(),
         record, trellis::detail::checksum_of(record),
         std::string(next.status == RunStatus::Queued ? "true" : "false")},
        !checked_});
    wrote_ = true;
    if (r.rows() != 1) {
      if (!checked_) throw Missed{};
      db_.refuse("run '" + next.run_id + "': the commit matched no row under its lock");
    }
    saw_ = next.seq;
  }

  void put_effect(const EffectRecord& record) override {
    const std::string text = dump(detail::effect_json(record));
    Result r = c_.one(Statement{"put_effect",
                                db_.sql_put_effect,
                                {record.run_id, token_ ? Param(token_->holder) : Param(),
                                 token_ ? Param(num(token_->epoch)) : Param(), record.key, text,
                                 trellis::detail::checksum_of(text)},
                                !checked_});
    wrote_ = true;
    if (r.rows() != 1) {
      if (!checked_) throw Missed{};
      db_.refuse("run '" + record.run_id + "': the effect record matched no row under its lock");
    }
  }

  std::uint64_t append_cancel_request(const CancelRequest& request) override {
    // Checked mode only (the run's row is locked: no other writer takes the same id).
    CancelRequest kept = request;
    kept.id = requests_ + 1;
    const std::string text = dump(nlohmann::json(kept));
    Result r =
        c_.one(Statement{"insert_request",
                         db_.sql_insert_request,
                         {num(row_id_), num(kept.id), text, trellis::detail::checksum_of(text)},
                         false});
    wrote_ = true;
    if (r.rows() != 1) db_.refuse("run '" + request.run_id + "': its cancel request was not kept");
    return kept.id;
  }

  std::optional<std::uint64_t> saw() const noexcept { return saw_; }

 private:
  Db& db_;
  Connection& c_;
  std::string_view run_id_;
  detail::WriteKind kind_;
  bool checked_;
  bool wrote_ = false;
  std::optional<LeaseToken> token_;
  std::optional<std::uint64_t> saw_;
  // Checked mode: the run's row as locked.
  std::int64_t row_id_ = 0;
  std::optional<std::uint64_t> seq_;
  std::string holder_;
  std::uint64_t epoch_ = 0;
  std::string owner_;
  std::uint64_t requests_ = 0;
};

PostgresStore::PostgresStore(PostgresStoreOptions options) : options_(std::move(options)) {
  if (!valid_schema_name(options_.schema))
    throw invalid_option("trellis: PostgresStoreOptions::schema '" + options_.schema +
                         "': use 1-63 characters of [a-z0-9_], not starting with a digit");
  if (options_.lease_ttl.count() < 1)
    throw invalid_option("trellis: PostgresStoreOptions::lease_ttl must be at least 1 ms");
  std::string setup = "SET client_encoding TO 'UTF8'; SET search_path TO " +
                      detail::pg::quote_identifier(options_.schema);
  if (options_.read_only) setup += "; SET default_transaction_read_only TO on";
  db_ = std::make_unique<Db>(options_, setup);
  Db& db = *db_;
  detail::pg::Pool::Borrowed c = db.pool.borrow();
  db.where = c->where() + ", schema '" + options_.schema + "'";

  c->exec("BEGIN", "begin the schema check");
  // Opening for writing: one opener at a time checks (and creates, or upgrades) the schema.
  if (!options_.read_only)
    c->exec("SELECT pg_advisory_xact_lock(hashtext('trellis schema " + options_.schema + "'))",
            "lock the schema check");
  // What the schema holds before trellis touches it.
  int version = -1;
  std::vector<std::string> others;
  {
    Result r = c->one(Statement{nullptr,
                                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON "
                                "n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN "
                                "('r', 'p', 'v', 'm', 'f') ORDER BY 1",
                                {options_.schema},
                                false});
    bool has_schema = false;
    for (int i = 0; i < r.rows(); ++i) {
      const std::string name = r.text(i, 0);
      if (name == "trellis_schema")
        has_schema = true;
      else
        others.push_back(name);
    }
    if (has_schema) {
      Result v = c->one(Statement{nullptr, "SELECT max(version) FROM trellis_schema", {}, false});
      version =
          v.rows() == 1 && !v.null(0, 0) ? std::max<int>(0, static_cast<int>(v.integer(0, 0))) : 0;
    }
  }
  if (version > schema_version)
    db.refuse("schema version " + std::to_string(version) + " is newer than this build's (" +
              std::to_string(schema_version) + "); use a newer trellis");
  if (version == 0)
    db.refuse("trellis_schema holds no version trellis wrote: the schema is left as it was");
  if (version == -1 && !others.empty()) {
    std::string names;
    for (std::size_t i = 0; i < others.size() && i < 5; ++i) names += (i ? ", " : "") + others[i];
    if (others.size() > 5) names += ", ...";
    throw not_a_store("trellis: " + db.where + ": the schema holds tables of another program (" +
                      names +
                      ") and no trellis_schema: it belongs to something else, and is left as it "
                      "was (trellis uses only an empty schema or one it created)");
  }
  if (options_.read_only) {
    if (version == -1)
      throw not_a_store("trellis: " + db.where +
                        ": the schema holds no trellis store (opened read-only: nothing was "
                        "written)");
    db.version = version;
    c->exec("COMMIT", "end the schema check");
    return;
  }
  if (version == -1) c->exec("CREATE SCHEMA IF NOT EXISTS " + db.schema_q, "create the schema");
  for (int v = std::max(version, 0); v < schema_version; ++v)
    c->exec(kMigrations[v], "upgrade the schema to version " + std::to_string(v + 1));
  if (version == -1)
    c->exec("INSERT INTO trellis_schema(version) VALUES(" + std::to_string(schema_version) + ")",
            "record the schema version");
  else if (version < schema_version)
    c->exec("UPDATE trellis_schema SET version=" + std::to_string(schema_version),
            "record the schema version");
  c->exec("COMMIT", "commit the schema");
}

PostgresStore::~PostgresStore() = default;

const std::string& PostgresStore::where() const noexcept { return db_->where; }

void PostgresStore::write_run(std::string_view run_id, detail::WriteKind kind,
                              detail::RunBody<detail::RunWrite> body) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write(detail::write_name(kind));
  using detail::WriteKind;
  // The fast mode where a guess can be checked by the write itself.
  // (A create or a cancel request is rare: decided under the row's lock.)
  const bool fast = kind == WriteKind::renew || kind == WriteKind::put_effect ||
                    (kind == WriteKind::commit && db.guess(run_id).has_value());
  std::optional<std::uint64_t> saw = db.with_connection([&](Connection& c) {
    if (fast) {
      Write w(db, c, run_id, kind, false);
      try {
        body(w);
        return w.saw();
      } catch (const Missed&) {
        // The guess did not hold: decide on the row as it is.
      } catch (const detail::pg::connection_lost&) {
        throw;
      } catch (const trellis::error&) {
        if (w.wrote()) throw;  // refused by the database itself, not on a guess
      }
    }
    Write w(db, c, run_id, kind, true);
    w.begin();
    body(w);
    w.commit();
    return w.saw();
  });
  if (saw)
    db.saw(run_id, *saw);
  else if (kind == WriteKind::commit)
    db.forget(run_id);
}

namespace {
struct PostgresLease {
  PostgresStore* store;
  LeaseToken token;
};
}  // namespace

std::optional<Lease> PostgresStore::take_lease(std::string_view run_id, std::string_view owner,
                                               std::string& holder) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("lease");
  const std::string id = detail::new_lease_holder();
  std::optional<std::uint64_t> epoch = db.with_connection([&](Connection& c) {
    Result r = c.one(Statement{
        "take_lease", db.sql_take_lease, {std::string(run_id), id, std::string(owner)}, true});
    if (r.rows() == 1) return std::optional<std::uint64_t>(r.integer(0, 0));
    Result who = c.one(Statement{"lease_row", db.sql_lease_row, {std::string(run_id)}, false});
    holder = who.rows() == 1 ? "'" + who.text(0, 2) + "' (epoch " + who.text(0, 1) +
                                   ", lease for " + who.text(0, 3) + " ms more)"
                             : std::string("another worker");
    return std::optional<std::uint64_t>();
  });
  if (!epoch) return std::nullopt;
  LeaseToken token{std::string(run_id), id, *epoch};
  {
    std::lock_guard lock(db.m);
    db.held.insert_or_assign(std::string(run_id), token);
  }
  auto* handle = new PostgresLease{this, token};
  return Lease(std::move(token), Lease::Handle(handle, [](void* p) {
                 auto* l = static_cast<PostgresLease*>(p);
                 l->store->release(l->token);
                 delete l;
               }));
}

void PostgresStore::release(const LeaseToken& token) noexcept {
  try {
    Db& db = *db_;
    {
      std::lock_guard lock(db.m);
      if (auto it = db.held.find(token.run_id);
          it != db.held.end() && it->second.holder == token.holder)
        db.held.erase(it);
    }
    db.with_connection([&](Connection& c) {
      // The row keeps its epoch: the next holder's is larger.
      c.one(Statement{
          "release", db.sql_release, {token.run_id, token.holder, num(token.epoch)}, true});
      return 0;
    });
  } catch (...) {
    // The lease expires by itself: a failed release only delays the next worker by the TTL.
  }
}

std::vector<Claim> PostgresStore::claim(const ClaimRequest& request) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("claim");
  if (request.fingerprints.empty() || request.limit == 0) return {};
  const std::string prefix = detail::new_lease_holder();
  Result rows = db.with_connection([&](Connection& c) {
    return c.one(Statement{"claim",
                           db.sql_claim,
                           {text_array(request.fingerprints), num(std::uint64_t{request.limit}),
                            prefix, request.owner},
                           true});
  });
  // The leases first (released by RAII if a checkpoint cannot be read), then the checkpoints.
  std::vector<Lease> leases;
  for (int i = 0; i < rows.rows(); ++i) {
    LeaseToken token{rows.text(i, 0), rows.text(i, 1),
                     static_cast<std::uint64_t>(rows.integer(i, 2))};
    {
      std::lock_guard lock(db.m);
      db.held.insert_or_assign(token.run_id, token);
    }
    auto* handle = new PostgresLease{this, token};
    leases.emplace_back(std::move(token), Lease::Handle(handle, [](void* p) {
                          auto* l = static_cast<PostgresLease*>(p);
                          l->store->release(l->token);
                          delete l;
                        }));
  }
  std::vector<Claim> out;
  for (int i = 0; i < rows.rows(); ++i) {
    Checkpoint newest;
    try {
      newest =
          db.checkpoint_of(rows.text(i, 0), rows.integer(i, 3), rows.text(i, 4), rows.text(i, 5));
    } catch (const store_error&) {
      continue;  // a record this store cannot read: skipped (its lease released below)
    }
    db.saw(newest.run_id, newest.seq);
    out.push_back(Claim{std::move(leases[static_cast<std::size_t>(i)]), std::move(newest)});
  }
  return out;
}

bool PostgresStore::wait_for_work(std::chrono::milliseconds timeout, std::stop_token stop) {
  Db& db = *db_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Wakes the waiter polling the socket (its poll() watches wake_fd) and the others.
  std::stop_callback wake(stop, [&db] {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(db.wake_fd, &one, sizeof one);
    { std::lock_guard lock(db.listen_m); }
    db.listen_cv.notify_all();
  });
  std::unique_lock lock(db.listen_m);
  const std::uint64_t generation = db.generation;
  for (;;) {
    if (stop.stop_requested()) return false;
    if (db.generation != generation) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (db.polling) {
      db.listen_cv.wait_until(lock, stop, deadline,
                              [&] { return db.generation != generation || !db.polling; });
      continue;
    }
    db.polling = true;
    std::unique_ptr<Connection> listener = std::move(db.listener);
    lock.unlock();
    bool told = false;
    try {
      if (!listener || listener->broken()) {
        listener = db.pool.connect();
        listener->exec("LISTEN " + detail::pg::quote_identifier(db.channel), "listen");
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd fds[2] = {{PQsocket(listener->raw()), POLLIN, 0}, {db.wake_fd, POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(std::max<std::int64_t>(0, left.count()))) > 0) {
        if (fds[1].revents != 0) {
          std::uint64_t drained = 0;
          [[maybe_unused]] const ssize_t n = ::read(db.wake_fd, &drained, sizeof drained);
        }
        if (fds[0].revents != 0) {
          if (PQconsumeInput(listener->raw()) == 0) listener.reset();
        }
      }
      if (listener) {
        while (PGnotify* n = PQnotifies(listener->raw())) {
          told = true;
          PQfreemem(n);
        }
      }
    } catch (const store_error&) {
      listener.reset();  // the server is unreachable: wait out the timeout as a plain sleep
      lock.lock();
      db.polling = false;
      db.listen_cv.notify_all();
      db.listen_cv.wait_until(lock, stop, deadline, [&] { return db.generation != generation; });
      return db.generation != generation;
    }
    lock.lock();
    db.polling = false;
    if (listener && !listener->broken()) db.listener = std::move(listener);
    if (told) ++db.generation;
    db.listen_cv.notify_all();
  }
}

std::optional<Checkpoint> PostgresStore::read_latest(std::string_view run_id) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"latest",
                           "SELECT k.seq, k.record, k.checksum FROM runs r JOIN checkpoints k ON "
                           "k.run=r.id AND k.seq=r.newest_seq WHERE r.run_id=$1",
                           {std::string(run_id)},
                           false});
  });
  if (r.rows() == 0) return std::nullopt;
  Checkpoint cp =
      db.checkpoint_of(std::string(run_id), r.integer(0, 0), r.text(0, 1), r.text(0, 2));
  db.saw(run_id, cp.seq);
  return cp;
}

std::optional<Checkpoint> PostgresStore::read_checkpoint(std::string_view run_id,
                                                         std::uint64_t seq) {
  Db& db = *db_;
  if (seq > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"checkpoint_at",
                           "SELECT k.seq, k.record, k.checksum FROM runs r JOIN checkpoints k ON "
                           "k.run=r.id WHERE r.run_id=$1 AND k.seq=$2::bigint",
                           {std::string(run_id), num(seq)},
                           false});
  });
  if (r.rows() == 0) return std::nullopt;
  return db.checkpoint_of(std::string(run_id), r.integer(0, 0), r.text(0, 1), r.text(0, 2));
}

std::vector<Checkpoint> PostgresStore::read_history(std::string_view run_id) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"history",
                           "SELECT k.seq, k.record, k.checksum FROM runs r JOIN checkpoints k ON "
                           "k.run=r.id WHERE r.run_id=$1 ORDER BY k.seq",
                           {std::string(run_id)},
                           false});
  });
  std::vector<Checkpoint> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(
        db.checkpoint_of(std::string(run_id), r.integer(i, 0), r.text(i, 1), r.text(i, 2)));
  return out;
}

std::vector<std::string> PostgresStore::runs() {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{
        "runs", "SELECT run_id FROM runs WHERE newest_seq IS NOT NULL ORDER BY run_id", {}, false});
  });
  std::vector<std::string> ids;
  for (int i = 0; i < r.rows(); ++i) ids.push_back(r.text(i, 0));
  return ids;
}

std::optional<EffectRecord> PostgresStore::read_effect(std::string_view run_id,
                                                       std::string_view key) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"effect",
                           "SELECT e.record, e.checksum FROM effects e JOIN runs r ON e.run=r.id "
                           "WHERE r.run_id=$1 AND e.key=$2",
                           {std::string(run_id), std::string(key)},
                           false});
  });
  if (r.rows() == 0) return std::nullopt;
  return db.effect_of(r.text(0, 0), r.text(0, 1), run_id);
}

std::vector<EffectRecord> PostgresStore::read_effects(std::string_view run_id) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"effects",
                           "SELECT e.record, e.checksum FROM effects e JOIN runs r ON e.run=r.id "
                           "WHERE r.run_id=$1 ORDER BY e.ordinal",
                           {std::string(run_id)},
                           false});
  });
  std::vector<EffectRecord> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back(db.effect_of(r.text(i, 0), r.text(i, 1), run_id));
  return out;
}

void PostgresStore::write_event(std::string_view run_id, const nlohmann::json& event) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("append_event");
  const std::string text = dump(event);
  db.with_connection([&](Connection& c) {
    // Events are observability, not part of a commit: their transaction does not wait for its
    // WAL to reach the disk (as SqliteStore writes them with synchronous off). The next step's
    // commit flushes the WAL up to itself, events before it included; a server crash loses at
    // most the events no commit flushed since (wal_writer_delay's worth). One round trip.
    std::vector<Statement> batch;
    batch.push_back(Statement{nullptr, "BEGIN", {}, false});
    batch.push_back(Statement{nullptr, "SET LOCAL synchronous_commit TO off", {}, false});
    batch.push_back(Statement{"insert_event",
                              "INSERT INTO events(run, event) SELECT id, $2 FROM runs WHERE "
                              "run_id=$1 AND newest_seq IS NOT NULL",
                              {std::string(run_id), text},
                              false});
    batch.push_back(Statement{nullptr, "COMMIT", {}, true});
    c.run(batch);
    return 0;
  });
}

std::vector<nlohmann::json> PostgresStore::read_events(std::string_view run_id) {
  std::vector<nlohmann::json> out;
  for (StoredEvent& e : read_events_after(run_id, 0)) out.push_back(std::move(e.event));
  return out;
}

std::vector<StoredEvent> PostgresStore::read_events_after(std::string_view run_id,
                                                          std::uint64_t after_seq) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(
        Statement{"events_after",
                  "SELECT e.id, e.event FROM events e JOIN runs r ON e.run=r.id WHERE "
                  "r.run_id=$1 AND e.id > $2::bigint ORDER BY e.id",
                  {std::string(run_id), num(std::min<std::uint64_t>(after_seq, INT64_MAX))},
                  false});
  });
  std::vector<StoredEvent> out;
  for (int i = 0; i < r.rows(); ++i) {
    StoredEvent e;
    e.seq = static_cast<std::uint64_t>(r.integer(i, 0));
    if (auto refusal = trellis::detail::parse_json(r.text(i, 1), e.event))
      db.refuse("an event of run '" + std::string(run_id) + "' is not JSON: " + refusal->detail);
    out.push_back(std::move(e));
  }
  return out;
}

void PostgresStore::retain(const detail::RetentionPlan& plan) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("apply_retention");
  db.with_connection([&](Connection& c) {
    std::vector<Statement> batch;
    batch.push_back(Statement{nullptr, "BEGIN ISOLATION LEVEL READ COMMITTED", {}, false});
    if (!plan.finished_before.empty())
      // Whole runs (their rows in every table go with them: ON DELETE CASCADE), unless a live
      // worker holds one: next time.
      batch.push_back(Statement{nullptr,
                                "DELETE FROM runs WHERE finished AND updated_at < $1 AND "
                                "(lease_holder IS NULL OR lease_until < now())",
                                {plan.finished_before},
                                false});
    if (plan.keep_last > 0)
      // Every row is a full record: the older ones simply go.
      batch.push_back(Statement{nullptr,
                                "DELETE FROM checkpoints k USING runs r WHERE k.run=r.id AND "
                                "k.seq <= r.newest_seq - $1::bigint",
                                {num(std::uint64_t{plan.keep_last})},
                                false});
    // Lease rows of ids that are not runs, once free.
    batch.push_back(Statement{nullptr,
                              "DELETE FROM runs WHERE newest_seq IS NULL AND (lease_holder IS "
                              "NULL OR lease_until < now())",
                              {},
                              false});
    batch.push_back(Statement{nullptr, "COMMIT", {}, true});
    c.run(batch);
    return 0;
  });
}

std::vector<CancelRequest> PostgresStore::read_cancel_requests(std::string_view run_id,
                                                               std::uint64_t after) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"requests_after",
                           "SELECT c.id, c.record, c.checksum FROM cancel_requests c JOIN runs r "
                           "ON c.run=r.id WHERE r.run_id=$1 AND c.id > $2::bigint ORDER BY c.id",
                           {std::string(run_id), num(std::min<std::uint64_t>(after, INT64_MAX))},
                           false});
  });
  std::vector<CancelRequest> out;
  for (int i = 0; i < r.rows(); ++i) {
    const std::string what =
        "cancel request " + r.text(i, 0) + " of run '" + std::string(run_id) + "'";
    const nlohmann::json record = db.record_of(r.text(i, 1), r.text(i, 2), what);
    try {
      out.push_back(record.get<CancelRequest>());
    } catch (const store_error& e) {
      db.refuse(what + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
      db.refuse(what + ": " + e.what());
    }
  }
  return out;
}

namespace {

// The filter's conditions over the runs table ($1..$5: status, since, node, the graph prefix,
// the page's start; NULL: no condition) and their values. run_id and fingerprint are "C"
// collated: byte order, as RunFilter::after says.
constexpr const char* kSummaryWhere =
    " FROM runs WHERE newest_seq IS NOT NULL AND ($1::text IS NULL OR status=$1) AND "
    "($2::text IS NULL OR updated_at >= $2) AND ($3::text IS NULL OR next_node=$3) AND "
    "($4::text IS NULL OR left(fingerprint, length($4))=$4) AND "
    "($5::text IS NULL OR run_id > $5)";

std::vector<Param> filter_params(const RunFilter& filter) {
  const auto text_or_null = [](const std::string& t) { return t.empty() ? Param() : Param(t); };
  return {
      filter.status ? Param(std::string(enumeration<RunStatus>::name(*filter.status))) : Param(),
      text_or_null(filter.since), text_or_null(filter.node), text_or_null(filter.graph),
      text_or_null(filter.after)};
}

}  // namespace

std::vector<RunSummary> PostgresStore::read_summaries(const RunFilter& filter) {
  Db& db = *db_;
  std::vector<Param> params = filter_params(filter);
  // LIMIT NULL: no limit.
  params.push_back(filter.limit > 0
                       ? Param(num(std::uint64_t{std::min<std::size_t>(filter.limit, INT64_MAX)}))
                       : Param());
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"summaries",
                           std::string("SELECT ") + kSummaryColumns + kSummaryWhere +
                               " ORDER BY run_id LIMIT $6::bigint",
                           std::move(params), false});
  });
  std::vector<RunSummary> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(db.summary_of(r, i));
  return out;
}

std::size_t PostgresStore::read_count(const RunFilter& filter) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"count_runs", std::string("SELECT count(*)") + kSummaryWhere,
                           filter_params(filter), false});
  });
  return static_cast<std::size_t>(std::stoull(r.text(0, 0)));
}

std::vector<RunSummary> PostgresStore::read_due(const std::string& now,
                                                const std::vector<std::string>* fingerprints,
                                                std::size_t limit) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"due",
                           db.sql_due,
                           {now, fingerprints ? Param(text_array(*fingerprints)) : Param(),
                            num(std::uint64_t{std::min<std::size_t>(limit, INT64_MAX)})},
                           false});
  });
  std::vector<RunSummary> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(db.summary_of(r, i));
  return out;
}

std::string PostgresStore::store_now() {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"now", std::string("SELECT ") + kNowText, {}, false});
  });
  return r.text(0, 0);
}

bool PostgresStore::erase_run(std::string_view run_id) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("delete_run");
  const bool erased = db.with_connection([&](Connection& c) {
    Result r = c.one(Statement{"erase", db.sql_erase, {std::string(run_id)}, true});
    if (r.rows() == 1) return true;
    Result who = c.one(Statement{"lease_row", db.sql_lease_row, {std::string(run_id)}, false});
    Result exists = c.one(Statement{"run_row",
                                    "SELECT 1 FROM runs WHERE run_id=$1 AND newest_seq IS NOT NULL",
                                    {std::string(run_id)},
                                    false});
    if (exists.rows() == 0) return false;
    throw run_busy("trellis: run '" + std::string(run_id) + "' is being advanced by '" +
                   (who.rows() ? who.text(0, 2) : std::string("another worker")) +
                   "': it is not deleted");
  });
  if (erased) {
    db.forget(run_id);
    std::lock_guard lock(db.m);
    if (auto it = db.held.find(run_id); it != db.held.end()) db.held.erase(it);
  }
  return erased;
}

void PostgresStore::write_graph(const GraphShape& shape) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("put_graph");
  const std::string text = dump(nlohmann::json(shape));
  const std::string sum = trellis::detail::checksum_of(text);
  db.with_connection([&](Connection& c) {
    // run() puts its graph on every start: an unchanged shape costs a read, not a write.
    Result r = c.one(Statement{"graph_sum",
                               "SELECT checksum FROM graphs WHERE fingerprint=$1",
                               {shape.fingerprint},
                               false});
    if (r.rows() == 1 && r.text(0, 0) == sum) return 0;
    c.one(Statement{"put_graph",
                    "INSERT INTO graphs(fingerprint, shape, checksum) VALUES($1, $2, $3) ON "
                    "CONFLICT (fingerprint) DO UPDATE SET shape=excluded.shape, "
                    "checksum=excluded.checksum",
                    {shape.fingerprint, text, sum},
                    true});
    return 0;
  });
}

std::optional<GraphShape> PostgresStore::read_graph(std::string_view fingerprint) {
  Db& db = *db_;
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"graph",
                           "SELECT shape, checksum FROM graphs WHERE fingerprint=$1",
                           {std::string(fingerprint)},
                           false});
  });
  if (r.rows() == 0) return std::nullopt;
  const std::string what = "the graph shape '" + std::string(fingerprint) + "'";
  const nlohmann::json record = db.record_of(r.text(0, 0), r.text(0, 1), what);
  try {
    return record.get<GraphShape>();
  } catch (const store_error& e) {
    db.refuse(what + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    db.refuse(what + ": " + e.what());
  }
}

void PostgresStore::write_cache(const CacheEntry& entry) {
  Db& db = *db_;
  if (options_.read_only) db.refuse_write("put_cached");
  const std::string text = dump(nlohmann::json(entry));
  const std::string sum = trellis::detail::checksum_of(text);
  db.with_connection([&](Connection& c) {
    c.one(Statement{"put_cache_entry",
                    "INSERT INTO cache_entries(key, entry, checksum) VALUES($1, $2, $3) ON "
                    "CONFLICT (key) DO UPDATE SET entry=excluded.entry, checksum=excluded.checksum",
                    {entry.key, text, sum},
                    true});
    return 0;
  });
}

std::optional<CacheEntry> PostgresStore::read_cache(std::string_view key) {
  Db& db = *db_;
  if (db.version < 2) return std::nullopt;  // read-only over schema 1: no cache yet
  Result r = db.with_connection([&](Connection& c) {
    return c.one(Statement{"cache_entry",
                           "SELECT entry, checksum FROM cache_entries WHERE key=$1",
                           {std::string(key)},
                           false});
  });
  if (r.rows() == 0) return std::nullopt;
  const std::string what = "the cache entry '" + std::string(key) + "'";
  const nlohmann::json record = db.record_of(r.text(0, 0), r.text(0, 1), what);
  CacheEntry entry;
  if (const auto why = detail::decode_cache_entry(record, key, entry))
    db.refuse(what + ": " + *why);
  return entry;
}

}  // namespace trellis::agent
