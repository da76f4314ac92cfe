// The RAII layer over libpq that PostgresStore uses (postgres_connection.hpp).

#include "postgres_connection.hpp"

#include <poll.h>

#include <charconv>
#include <string_view>
#include <utility>

namespace trellis::agent::detail::pg {

std::int64_t Result::integer(int row, int col) const {
  const char* p = PQgetvalue(r_.get(), row, col);
  const int n = PQgetlength(r_.get(), row, col);
  std::int64_t v = 0;
  std::from_chars(p, p + n, v);
  return v;
}

std::uint64_t Result::affected() const {
  const char* t = r_ ? PQcmdTuples(r_.get()) : "";
  std::uint64_t v = 0;
  std::from_chars(t, t + std::char_traits<char>::length(t), v);
  return v;
}

std::string quote_identifier(const std::string& name) {
  std::string out = "\"";
  for (const char ch : name) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

namespace {

std::string trimmed(const char* message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

}  // namespace

void Connection::on_notice(void* self, const PGresult* notice) {
  // Notices are ignored, except the server's word that it ends the session, which arrives
  // while the connection is idle (pg_terminate_backend: FATAL 57P01; a shutdown: 57P01 or
  // 57P02): the connection is broken from then on, before its end of file is read.
  const char* severity = PQresultErrorField(notice, PG_DIAG_SEVERITY_NONLOCALIZED);
  const char* state = PQresultErrorField(notice, PG_DIAG_SQLSTATE);
  const std::string_view s = severity ? severity : "";
  if (s == "FATAL" || s == "PANIC" || (state && std::string_view(state).starts_with("57P")))
    static_cast<Connection*>(self)->broken_ = true;
}

Connection::Connection(const std::string& url, std::chrono::milliseconds connect_timeout,
                       const std::string& application_name, const std::string& setup) {
  // libpq counts the timeout in whole seconds (and treats 1 as 2).
  const std::string seconds =
      std::to_string(std::max<long long>(1, (connect_timeout.count() + 999) / 1000));
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url.c_str(), seconds.c_str(), application_name.c_str(), nullptr};
  c_ = PQconnectdbParams(keys, values, 1);
  if (c_ == nullptr) throw store_error("trellis: PostgreSQL store: out of memory connecting");
  const char* host = PQhost(c_);
  const char* port = PQport(c_);
  const char* db = PQdb(c_);
  where_ = std::string("PostgreSQL ") + (host && *host ? host : "localhost") + ":" +
           (port && *port ? port : "5432") + "/" + (db ? db : "");
  if (PQstatus(c_) != CONNECTION_OK) {
    const std::string message = trimmed(PQerrorMessage(c_));
    PQfinish(c_);
    c_ = nullptr;
    throw store_error("trellis: " + where_ + ": cannot connect: " + message);
  }
  PQsetNoticeReceiver(c_, &Connection::on_notice, this);
  if (!setup.empty()) {
    try {
      exec(setup, "set up the connection");
    } catch (...) {
      PQfinish(c_);
      c_ = nullptr;
      throw;
    }
  }
}

Connection::~Connection() {
  if (c_) PQfinish(c_);
}

bool Connection::usable() {
  if (broken()) return false;
  // Read all the input there is. A connection the server ended while idle
  // (pg_terminate_backend, a shutdown) sent its word (on_notice marks the connection broken)
  // and then its end of file, which only a further read sees: else a write would be sent on
  // the dead connection and reported as perhaps committed.
  for (int reads = 0; reads < 8; ++reads) {
    if (PQconsumeInput(c_) == 0 || broken()) return false;
    pollfd ready{PQsocket(c_), POLLIN, 0};
    if (::poll(&ready, 1, 0) <= 0) break;
  }
  while (PGnotify* n = PQnotifies(c_)) PQfreemem(n);
  return PQstatus(c_) == CONNECTION_OK && PQtransactionStatus(c_) == PQTRANS_IDLE;
}

void Connection::fail(const std::string& what, const std::string& message) const {
  throw store_error("trellis: " + where_ + ": " + what + ": " + message);
}

void Connection::lost(const std::string& what) {
  broken_ = true;
  throw connection_lost("trellis: " + where_ + ": " + what +
                            ": the connection was lost: " + trimmed(PQerrorMessage(c_)),
                        sent_commit_);
}

void Connection::exec(const std::string& sql, const std::string& what) {
  Result r(PQexec(c_, sql.c_str()));
  const ExecStatusType st = r.get() ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
  if (PQstatus(c_) != CONNECTION_OK) lost(what);
  fail(what, trimmed(r.get() ? PQresultErrorMessage(r.get()) : PQerrorMessage(c_)));
}

void Connection::rollback_if_open() noexcept {
  if (c_ == nullptr || broken()) return;
  if (PQtransactionStatus(c_) == PQTRANS_IDLE) return;
  Result r(PQexec(c_, "ROLLBACK"));
  if (PQtransactionStatus(c_) != PQTRANS_IDLE) broken_ = true;
}

Result Connection::one(Statement s) {
  std::vector<Statement> batch;
  batch.push_back(std::move(s));
  return std::move(run(batch).front());
}

std::vector<Result> Connection::run(const std::vector<Statement>& batch) {
  const std::string what = batch.empty() || batch.front().name == nullptr
                               ? std::string("a statement")
                               : std::string("statement ") + batch.front().name;
  if (broken()) lost(what);
  if (PQenterPipelineMode(c_) != 1) lost(what);
  // What was sent, in order: a prepare (index into batch, true) or a query (index, false).
  std::vector<std::pair<std::size_t, bool>> sent;
  std::vector<const char*> values;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Statement& s = batch[i];
    const int n = static_cast<int>(s.params.size());
    if (s.name != nullptr && !prepared_.contains(s.name)) {
      if (PQsendPrepare(c_, s.name, s.sql.c_str(), n, nullptr) != 1) lost(what);
      sent.emplace_back(i, true);
    }
    values.clear();
    for (const Param& p : s.params) values.push_back(p ? p->c_str() : nullptr);
    const int ok =
        s.name != nullptr
            ? PQsendQueryPrepared(c_, s.name, n, values.data(), nullptr, nullptr, 0)
            : PQsendQueryParams(c_, s.sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0);
    if (s.commits) sent_commit_ = true;
    if (ok != 1) lost(what);
    sent.emplace_back(i, false);
  }
  if (PQpipelineSync(c_) != 1) lost(what);

  std::vector<Result> results(batch.size());
  std::string error;
  for (const auto& [index, is_prepare] : sent) {
    Result r(PQgetResult(c_));
    if (r.get() == nullptr) lost(what);
    while (PGresult* extra = PQgetResult(c_)) PQclear(extra);
    const ExecStatusType st = PQresultStatus(r.get());
    if (st == PGRES_FATAL_ERROR && error.empty()) {
      if (PQstatus(c_) != CONNECTION_OK) lost(what);
      error = trimmed(PQresultErrorMessage(r.get()));
      if (batch[index].name) error += " (statement " + std::string(batch[index].name) + ")";
    }
    if (is_prepare) {
      if (st == PGRES_COMMAND_OK) prepared_.insert(batch[index].name);
    } else {
      results[index] = std::move(r);
    }
  }
  {
    Result sync(PQgetResult(c_));
    if (sync.get() == nullptr || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) lost(what);
  }
  if (PQexitPipelineMode(c_) != 1) lost(what);
  if (!error.empty()) {
    rollback_if_open();
    fail(what, error);
  }
  return results;
}

Pool::Pool(std::string url, std::chrono::milliseconds connect_timeout, std::string application_name,
           std::string setup, std::size_t size)
    : url_(std::move(url)),
      timeout_(connect_timeout),
      application_name_(std::move(application_name)),
      setup_(std::move(setup)),
      size_(size == 0 ? 1 : size) {}

std::unique_ptr<Connection> Pool::connect() const {
  return std::make_unique<Connection>(url_, timeout_, application_name_, setup_);
}

Pool::Borrowed Pool::borrow() {
  std::unique_lock lock(m_);
  for (;;) {
    while (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      if (c->usable()) {
        c->reset_call();
        return Borrowed(*this, std::move(c));
      }
      --open_;  // it broke while idle (the server ended it): dropped
    }
    if (open_ < size_) {
      ++open_;
      lock.unlock();
      try {
        return Borrowed(*this, connect());
      } catch (...) {
        lock.lock();
        --open_;
        cv_.notify_one();
        throw;
      }
    }
    cv_.wait(lock);
  }
}

void Pool::give_back(std::unique_ptr<Connection> c) noexcept {
  if (c) c->rollback_if_open();
  std::unique_ptr<Connection> dropped;
  {
    std::lock_guard lock(m_);
    if (c && !c->broken()) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
      dropped = std::move(c);
    }
  }
  cv_.notify_one();
}

Pool::Borrowed::~Borrowed() {
  if (pool_) pool_->give_back(std::move(c_));
}

}  // namespace trellis::agent::detail::pg
