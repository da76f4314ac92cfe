// Run id validation and the protocol every store follows, written once over its backend.

#include "trellis/agent/store.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include <trellis/io/utc_time.hpp>

#include "checkpoint_codec.hpp"
#include "trellis/agent/chain.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/detail/store_protocol.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent {

void check_run_id(std::string_view id) {
  auto refuse = [&](const char* why) {
    throw invalid_run_id("trellis: invalid run id '" + std::string(id.substr(0, 160)) +
                         "': " + why);
  };
  if (id.empty()) refuse("it is empty");
  if (id.size() > 128) refuse("it is longer than 128 characters");
  if (id == "." || id == "..") refuse("'.' and '..' are not run ids");
  for (const char ch : id) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    if (!ok) refuse("only letters, digits, '-', '_' and '.' are allowed");
  }
}

// --- the defaults of Store's newer calls, for a Store written before them --------------------

std::vector<StoredEvent> Store::events_after(std::string_view run_id, std::uint64_t after_seq) {
  std::vector<nlohmann::json> all = events(run_id);
  std::vector<StoredEvent> out;
  for (std::size_t i = after_seq; i < all.size(); ++i)
    out.push_back(StoredEvent{i + 1, std::move(all[i])});
  return out;
}

std::uint64_t Store::request_cancel(const CancelRequest& request) {
  throw store_error("trellis: this store keeps no cancel requests (run '" + request.run_id + "')");
}

std::vector<CancelRequest> Store::cancel_requests(std::string_view, std::uint64_t) { return {}; }

std::vector<RunSummary> Store::list_runs(const RunFilter& filter) {
  std::vector<RunSummary> out;
  for (const std::string& id : runs()) {
    std::optional<Checkpoint> newest = latest(id);
    if (!newest) continue;
    std::optional<Checkpoint> first = checkpoint(id, 0);
    RunSummary s = summarize(*newest, first ? first->created_at : newest->created_at);
    if (filter.matches(s)) out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const RunSummary& a, const RunSummary& b) { return a.run_id < b.run_id; });
  if (filter.limit > 0 && out.size() > filter.limit) out.resize(filter.limit);
  return out;
}

std::size_t Store::count_runs(const RunFilter& filter) {
  RunFilter all = filter;
  all.limit = 0;
  return list_runs(all).size();
}

namespace {

/// Claim order: higher priority first, then the earliest due, then the run id.
bool claim_order(const RunSummary& a, const RunSummary& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.due != b.due) return a.due < b.due;
  return a.run_id < b.run_id;
}

/// Keeps the summaries due at or before `now`, of `fingerprints` (nullptr: any), in claim
/// order, at most `limit`.
std::vector<RunSummary> due_of(std::vector<RunSummary> all, const std::string& now,
                               const std::vector<std::string>* fingerprints, std::size_t limit) {
  std::erase_if(all, [&](const RunSummary& s) {
    if (s.due.empty() || s.due > now) return true;  // fixed-width UTC: text order is time order
    return fingerprints != nullptr && std::find(fingerprints->begin(), fingerprints->end(),
                                                s.fingerprint) == fingerprints->end();
  });
  std::sort(all.begin(), all.end(), claim_order);
  if (all.size() > limit) all.resize(limit);
  return all;
}

/// Takes the lease of each candidate in turn (skipping held ones) until `limit` are claimed;
/// keeps a run only when its newest checkpoint, read under the lease, is still due.
template <class TakeLease, class ReadLatest>
std::vector<Claim> claim_candidates(const std::vector<RunSummary>& candidates,
                                    const std::string& now, std::size_t limit, TakeLease take,
                                    ReadLatest read) {
  std::vector<Claim> out;
  for (const RunSummary& c : candidates) {
    if (out.size() >= limit) break;
    std::optional<Lease> lease = take(c.run_id);
    if (!lease) continue;
    std::optional<Checkpoint> newest;
    try {
      newest = read(c.run_id);
    } catch (const store_error&) {
      // A record this store cannot read (damaged, or written by a newer program): the run is
      // skipped (its lease drops here), never blocking the claims of every other run.
      continue;
    }
    if (!newest) continue;  // deleted meanwhile
    const std::optional<std::string> due = due_at(*newest);
    if (!due || *due > now) continue;  // advanced meanwhile by the holder we waited for
    out.push_back(Claim{std::move(*lease), std::move(*newest)});
  }
  return out;
}

}  // namespace

std::vector<Claim> Store::claim(const ClaimRequest& request) {
  const std::string now = detail::format_time(std::chrono::system_clock::now());
  const std::vector<RunSummary> candidates =
      due_of(list_runs(), now, &request.fingerprints, request.limit * 4 + 8);
  return claim_candidates(
      candidates, now, request.limit,
      [&](const std::string& id) -> std::optional<Lease> {
        try {
          return lease(id, request.owner);
        } catch (const run_busy&) {
          return std::nullopt;
        }
      },
      [&](const std::string& id) { return latest(id); });
}

std::vector<RunSummary> Store::due_runs(std::size_t limit) {
  return due_of(list_runs(), detail::format_time(std::chrono::system_clock::now()), nullptr, limit);
}

bool Store::wait_for_work(std::chrono::milliseconds timeout, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, timeout, [] { return false; });
  return false;
}

void Store::delete_run(std::string_view run_id) {
  throw store_error("trellis: this store cannot delete runs (run '" + std::string(run_id) + "')");
}

void Store::put_graph(const GraphShape&) {}

std::optional<GraphShape> Store::graph(std::string_view) { return std::nullopt; }

std::optional<CacheEntry> Store::cached(std::string_view key) {
  check_cache_key(key);
  return std::nullopt;
}

void Store::put_cached(const CacheEntry& entry) { check_cache_key(entry.key); }

}  // namespace trellis::agent

// --- the protocol every store follows (detail/store_protocol.hpp) ----------------------------

namespace trellis::agent::detail {

namespace {

void check_token_run(const std::string& run_id, const LeaseToken& lease) {
  if (!lease.empty() && lease.run_id != run_id)
    throw run_busy("trellis: run '" + run_id + "': the lease token is for run '" + lease.run_id +
                   "'");
}

void hold(RunWrite& run, const std::string& run_id, const LeaseToken& lease) {
  check_token_run(run_id, lease);
  if (auto refused = run.hold_lease(lease))
    throw run_busy("trellis: run '" + run_id + "': this worker's lease (epoch " +
                   std::to_string(refused->epoch) + ") " + refused->why);
}

}  // namespace

// A record that arrives without a hash (from a direct user of the Store) is sealed here; the
// run loop, the operations and the effect protocol seal what they write themselves, where the
// predecessor is in memory (no read: PostgreSQL's commit stays one statement).

Checkpoint StoreProtocol::sealed(const Checkpoint& c, std::string_view prev_hash) {
  Checkpoint out = c;
  out.receipts.clear();
  for (const std::string& key : out.effects) {
    std::optional<EffectRecord> e = read_effect(c.run_id, key);
    out.receipts.push_back(e ? e->hash : std::string());
  }
  seal(out, prev_hash);
  return out;
}

void StoreProtocol::create(const Checkpoint& given) {
  check_run_id(given.run_id);
  std::optional<Checkpoint> own;
  if (given.hash.empty()) own = sealed(given, "");
  const Checkpoint& first = own ? *own : given;
  auto body = [&](RunWrite& run) {
    if (run.newest_seq()) throw run_busy("trellis: run '" + first.run_id + "' already exists");
    run.insert_first(first);
  };
  write_run(first.run_id, WriteKind::create, body);
}

void StoreProtocol::commit(const Checkpoint& given, std::uint64_t expected_seq,
                           const LeaseToken& lease) {
  check_run_id(given.run_id);
  std::optional<Checkpoint> own;
  if (given.hash.empty()) {
    // Its predecessor is the newest checkpoint, which never changes once the version check
    // below passes (and when it fails, nothing is written, whatever was sealed). The newest is
    // what every store reads fastest (a store's read of an older seq may walk its journal).
    const std::optional<Checkpoint> prev = read_latest(given.run_id);
    own = sealed(given, prev && prev->seq == expected_seq ? prev->hash : std::string());
  }
  const Checkpoint& next = own ? *own : given;
  auto body = [&](RunWrite& run) {
    const std::optional<std::uint64_t> newest = run.newest_seq();
    if (!newest) throw unknown_run("trellis: no run '" + next.run_id + "' in the store");
    if (*newest != expected_seq)
      throw run_busy("trellis: run '" + next.run_id + "' moved on (checkpoint " +
                     std::to_string(*newest) + ", expected " + std::to_string(expected_seq) +
                     "): another worker advanced it");
    if (next.seq != expected_seq + 1)
      throw store_error("trellis: run '" + next.run_id + "': checkpoint " +
                        std::to_string(next.seq) + " cannot follow " +
                        std::to_string(expected_seq));
    hold(run, next.run_id, lease);
    run.append(next);
  };
  write_run(next.run_id, WriteKind::commit, body);
}

std::optional<Checkpoint> StoreProtocol::latest(std::string_view run_id) {
  check_run_id(run_id);
  return read_latest(run_id);
}

std::optional<Checkpoint> StoreProtocol::checkpoint(std::string_view run_id, std::uint64_t seq) {
  check_run_id(run_id);
  return read_checkpoint(run_id, seq);
}

std::vector<Checkpoint> StoreProtocol::history(std::string_view run_id) {
  check_run_id(run_id);
  return read_history(run_id);
}

Lease StoreProtocol::lease(std::string_view run_id, std::string_view owner) {
  check_run_id(run_id);
  std::string holder;
  std::optional<Lease> taken = take_lease(run_id, owner, holder);
  if (!taken)
    throw run_busy("trellis: run '" + std::string(run_id) + "' is being advanced by " + holder);
  return std::move(*taken);
}

void StoreProtocol::renew(const LeaseToken& lease) {
  check_run_id(lease.run_id);
  if (lease.empty())
    throw run_busy("trellis: run '" + lease.run_id + "': an empty lease token renews nothing");
  auto body = [&](RunWrite& run) { hold(run, lease.run_id, lease); };
  write_run(lease.run_id, WriteKind::renew, body);
}

void StoreProtocol::put_effect(const EffectRecord& given, const LeaseToken& lease) {
  check_run_id(given.run_id);
  EffectRecord record = given;  // (copied here, outside the transaction: take_effect)
  if (record.hash.empty()) {
    const std::optional<Checkpoint> newest = read_latest(given.run_id);
    seal(record, newest ? newest->hash : std::string());
  }
  check_effect(record);
  auto body = [&](RunWrite& run) {
    if (!run.newest_seq())
      throw unknown_run("trellis: no run '" + record.run_id + "' in the store (effect '" +
                        record.name + "')");
    hold(run, record.run_id, lease);
    run.take_effect(std::move(record));
  };
  write_run(given.run_id, WriteKind::put_effect, body);  // (record moves into the backend)
}

std::optional<EffectRecord> StoreProtocol::effect(std::string_view run_id, std::string_view key) {
  check_run_id(run_id);
  return read_effect(run_id, key);
}

std::vector<EffectRecord> StoreProtocol::effects(std::string_view run_id) {
  check_run_id(run_id);
  return read_effects(run_id);
}

void StoreProtocol::append_event(std::string_view run_id, const nlohmann::json& event) {
  check_run_id(run_id);
  write_event(run_id, event);
}

std::vector<nlohmann::json> StoreProtocol::events(std::string_view run_id) {
  check_run_id(run_id);
  return read_events(run_id);
}

std::vector<StoredEvent> StoreProtocol::events_after(std::string_view run_id,
                                                     std::uint64_t after_seq) {
  check_run_id(run_id);
  return read_events_after(run_id, after_seq);
}

std::uint64_t StoreProtocol::request_cancel(const CancelRequest& request) {
  check_run_id(request.run_id);
  std::uint64_t id = 0;
  auto body = [&](RunWrite& run) {
    if (!run.newest_seq())
      throw unknown_run("trellis: no run '" + request.run_id + "' in the store");
    id = run.append_cancel_request(request);
  };
  write_run(request.run_id, WriteKind::request, body);
  return id;
}

std::vector<CancelRequest> StoreProtocol::cancel_requests(std::string_view run_id,
                                                          std::uint64_t after) {
  check_run_id(run_id);
  return read_cancel_requests(run_id, after);
}

std::vector<RunSummary> StoreProtocol::list_runs(const RunFilter& filter) {
  std::vector<RunSummary> out = read_summaries(filter);
  if (filter.limit > 0 && out.size() > filter.limit) out.resize(filter.limit);
  return out;
}

std::size_t StoreProtocol::count_runs(const RunFilter& filter) { return read_count(filter); }

void StoreProtocol::delete_run(std::string_view run_id) {
  check_run_id(run_id);
  if (!erase_run(run_id))
    throw unknown_run("trellis: no run '" + std::string(run_id) + "' in the store");
}

void StoreProtocol::put_graph(const GraphShape& shape) { write_graph(shape); }

std::optional<GraphShape> StoreProtocol::graph(std::string_view fingerprint) {
  return read_graph(fingerprint);
}

std::optional<CacheEntry> StoreProtocol::cached(std::string_view key) {
  check_cache_key(key);
  return read_cache(key);
}

void StoreProtocol::put_cached(const CacheEntry& entry) {
  check_cache_key(entry.key);
  // What a store could not read back as it is: unwritable_value, naming the member.
  CacheEntry kept = entry;
  try {
    check_member(kept.result, {"result"}, "a cache entry");
  } catch (const unwritable_value& e) {
    throw unwritable_value("cache entry " + entry.key, e.member(), e.reason());
  }
  write_cache(kept);
}

const char* write_name(WriteKind kind) noexcept {
  switch (kind) {
    case WriteKind::create:
      return "create";
    case WriteKind::commit:
      return "commit";
    case WriteKind::put_effect:
      return "put_effect";
    case WriteKind::renew:
      return "renew";
    case WriteKind::request:
      return "request_cancel";
  }
  return "a write";
}

// The primitives' defaults (see store_protocol.hpp).

void StoreProtocol::check_effect(const EffectRecord&) {}

std::uint64_t RunWrite::append_cancel_request(const CancelRequest& request) {
  throw store_error("trellis: this store keeps no cancel requests (run '" + request.run_id + "')");
}

std::vector<StoredEvent> StoreProtocol::read_events_after(std::string_view run_id,
                                                          std::uint64_t after_seq) {
  return Store::events_after(run_id, after_seq);
}

std::vector<CancelRequest> StoreProtocol::read_cancel_requests(std::string_view, std::uint64_t) {
  return {};
}

std::vector<RunSummary> StoreProtocol::read_summaries(const RunFilter& filter) {
  return Store::list_runs(filter);
}

std::size_t StoreProtocol::read_count(const RunFilter& filter) {
  RunFilter all = filter;
  all.limit = 0;
  return read_summaries(all).size();
}

bool StoreProtocol::erase_run(std::string_view run_id) {
  Store::delete_run(run_id);  // refuses
  return false;
}

std::vector<RunSummary> StoreProtocol::read_due(const std::string& now,
                                                const std::vector<std::string>* fingerprints,
                                                std::size_t limit) {
  return due_of(read_summaries(RunFilter{}), now, fingerprints, limit);
}

std::string StoreProtocol::store_now() {
  return trellis::agent::detail::format_time(std::chrono::system_clock::now());
}

std::vector<Claim> StoreProtocol::claim(const ClaimRequest& request) {
  if (request.fingerprints.empty() || request.limit == 0) return {};
  const std::string now = store_now();
  // More candidates than asked for: some are held (a live worker advances a Running run), some
  // moved on. When every candidate was held, look further, so runs held at the head of the
  // order never hide due runs behind them.
  std::vector<Claim> out;
  std::size_t tried = 0;
  for (std::size_t want = request.limit * 4 + 8;; want *= 4) {
    const std::vector<RunSummary> candidates = read_due(now, &request.fingerprints, want);
    const std::vector<RunSummary> fresh(
        candidates.begin() + static_cast<std::ptrdiff_t>(std::min(tried, candidates.size())),
        candidates.end());
    tried = candidates.size();
    std::vector<Claim> got = claim_candidates(
        fresh, now, request.limit - out.size(),
        [&](const std::string& id) {
          std::string holder;
          return take_lease(id, request.owner, holder);
        },
        [&](const std::string& id) { return read_latest(id); });
    for (Claim& c : got) out.push_back(std::move(c));
    if (out.size() >= request.limit || candidates.size() < want || want >= 65536) return out;
  }
}

std::vector<RunSummary> StoreProtocol::due_runs(std::size_t limit) {
  return read_due(store_now(), nullptr, limit);
}

void StoreProtocol::write_graph(const GraphShape&) {}

std::optional<GraphShape> StoreProtocol::read_graph(std::string_view) { return std::nullopt; }

void StoreProtocol::write_cache(const CacheEntry& entry) {
  throw store_error("trellis: this store keeps no cache entries (key " + entry.key + ")");
}

std::optional<CacheEntry> StoreProtocol::read_cache(std::string_view) { return std::nullopt; }

void StoreProtocol::apply_retention(const Retention& retention) {
  RetentionPlan plan;
  plan.keep_last = retention.keep_last;
  // created_at is fixed-width ISO-8601 UTC, so text order is time order.
  if (retention.finished_older_than)
    plan.finished_before = trellis::detail::format_utc(std::chrono::system_clock::now() -
                                                       *retention.finished_older_than);
  retain(plan);
}

}  // namespace trellis::agent::detail
