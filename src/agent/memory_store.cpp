// MemoryStore: the Store protocol (detail/store_protocol.hpp) over in-memory vectors, under one
// mutex.

#include "trellis/agent/memory_store.hpp"

#include <algorithm>
#include <utility>

#include <trellis/io/json_text.hpp>

#include "checkpoint_codec.hpp"
#include "lease_holder.hpp"
#include "trellis/agent/errors.hpp"

namespace trellis::agent {

// One run under m_ (held by write_run for the whole transaction).
class MemoryStore::Write final : public detail::RunWrite {
 public:
  Write(MemoryStore& store, std::string_view run_id) : store_(store), run_id_(run_id) {
    if (auto it = store_.runs_.find(run_id); it != store_.runs_.end()) run_ = &it->second;
  }

  std::optional<std::uint64_t> newest_seq() override {
    if (run_ == nullptr) return std::nullopt;
    return run_->checkpoints.back().seq;
  }

  // A lease taken through this object cannot expire, so the empty token needs no check.
  std::optional<detail::LeaseRefusal> hold_lease(const LeaseToken& lease) override {
    if (lease.empty()) return std::nullopt;
    auto it = store_.leases_.find(run_id_);
    if (it != store_.leases_.end() && it->second.holder == lease.holder) return std::nullopt;
    return detail::LeaseRefusal{lease.epoch, it == store_.leases_.end()
                                                 ? std::string("was released")
                                                 : "is now held by '" + it->second.owner + "'"};
  }

  void insert_first(const Checkpoint& first) override {
    Checkpoint kept = first;
    detail::check_writable(kept);  // what the persistent stores could not write, refused alike
    Run& run = store_.runs_[std::string(run_id_)];
    run.created_at = kept.created_at;
    run.checkpoints.push_back(std::move(kept));
  }

  void append(const Checkpoint& next) override {
    Checkpoint kept = next;
    detail::check_writable(kept);
    run_->checkpoints.push_back(std::move(kept));
  }

  void put_effect(const EffectRecord& record) override { take_effect(EffectRecord(record)); }

  // (Checked by check_effect, and copied, before the lock.)
  void take_effect(EffectRecord&& kept) override {
    auto [at, fresh] = run_->effect_index.try_emplace(kept.key, run_->effects.size());
    if (fresh) {
      run_->effects.push_back(std::move(kept));
    } else {
      retired_ = std::move(run_->effects[at->second]);  // freed after the lock (write_run)
      run_->effects[at->second] = std::move(kept);
    }
  }

  std::uint64_t append_cancel_request(const CancelRequest& request) override {
    CancelRequest kept = request;
    kept.id = run_->requests.empty() ? 1 : run_->requests.back().id + 1;
    run_->requests.push_back(std::move(kept));
    return run_->requests.back().id;
  }

 private:
  MemoryStore& store_;
  std::string_view run_id_;
  Run* run_ = nullptr;
  EffectRecord retired_;  // the record take_effect replaced
};

void MemoryStore::check_effect(const EffectRecord& record) {
  detail::check_writable(record);
  // Refuse what the persistent stores cannot hold (text that is not UTF-8), checking only the
  // free-form members: building the whole record's JSON would cost more than the put.
  const auto not_utf8 = [&](const std::string& what) {
    throw store_error("trellis: effect '" + record.name + "' of run '" + record.run_id +
                      "' cannot be stored: its " + what + " is not valid UTF-8");
  };
  for (const auto& [text, what] :
       {std::pair{&record.name, "name"}, std::pair{&record.error, "error"},
        std::pair{&record.node, "node"}})
    if (!trellis::detail::valid_utf8(*text)) not_utf8(what);
  if (!trellis::detail::valid_utf8_json(record.args)) not_utf8("args");
  if (!trellis::detail::valid_utf8_json(record.result)) not_utf8("result");
}

void MemoryStore::write_run(std::string_view run_id, detail::WriteKind,
                            detail::RunBody<detail::RunWrite> body) {
  std::unique_lock lock(m_);
  Write run(*this, run_id);
  body(run);
  lock.unlock();  // (then `run` is destroyed, with the record it replaced)
}

std::optional<Checkpoint> MemoryStore::read_latest(std::string_view run_id) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.checkpoints.back();
}

std::optional<Checkpoint> MemoryStore::read_checkpoint(std::string_view run_id, std::uint64_t seq) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  for (const Checkpoint& c : it->second.checkpoints)
    if (c.seq == seq) return c;
  return std::nullopt;
}

std::vector<Checkpoint> MemoryStore::read_history(std::string_view run_id) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return it->second.checkpoints;
}

std::vector<std::string> MemoryStore::runs() {
  std::lock_guard lock(m_);
  std::vector<std::string> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  return ids;
}

namespace {
struct MemoryLease {
  MemoryStore* store;
  LeaseToken token;
};
}  // namespace

std::optional<Lease> MemoryStore::take_lease(std::string_view run_id, std::string_view owner,
                                             std::string& holder) {
  std::lock_guard lock(m_);
  const std::string id = detail::new_lease_holder();
  auto [it, fresh] = leases_.try_emplace(std::string(run_id), Held{std::string(owner), id});
  if (!fresh) {
    holder = "'" + it->second.owner + "'";
    return std::nullopt;
  }
  LeaseToken token{std::string(run_id), id, ++epochs_[std::string(run_id)]};
  auto* handle = new MemoryLease{this, token};
  return Lease(std::move(token), Lease::Handle(handle, [](void* p) {
                 auto* l = static_cast<MemoryLease*>(p);
                 l->store->release(l->token);
                 delete l;
               }));
}

void MemoryStore::release(const LeaseToken& token) {
  std::lock_guard lock(m_);
  if (auto it = leases_.find(token.run_id);
      it != leases_.end() && it->second.holder == token.holder)
    leases_.erase(it);
}

std::optional<EffectRecord> MemoryStore::read_effect(std::string_view run_id,
                                                     std::string_view key) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  auto at = it->second.effect_index.find(key);
  if (at == it->second.effect_index.end()) return std::nullopt;
  return it->second.effects[at->second];
}

std::vector<EffectRecord> MemoryStore::read_effects(std::string_view run_id) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return it->second.effects;
}

void MemoryStore::write_event(std::string_view run_id, const nlohmann::json& event) {
  nlohmann::json kept = event;  // copied before the lock
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) it->second.events.push_back(std::move(kept));
}

std::vector<nlohmann::json> MemoryStore::read_events(std::string_view run_id) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return it->second.events;
}

void MemoryStore::retain(const detail::RetentionPlan& plan) {
  std::lock_guard lock(m_);
  for (auto it = runs_.begin(); it != runs_.end();) {
    auto& cps = it->second.checkpoints;
    if (!plan.finished_before.empty() && terminal(cps.back().status) &&
        cps.back().created_at < plan.finished_before && !leases_.contains(it->first)) {
      it = runs_.erase(it);
      continue;
    }
    if (plan.keep_last > 0 && cps.size() > plan.keep_last)
      cps.erase(cps.begin(), cps.end() - static_cast<std::ptrdiff_t>(plan.keep_last));
    ++it;
  }
}

std::vector<StoredEvent> MemoryStore::read_events_after(std::string_view run_id,
                                                        std::uint64_t after_seq) {
  std::lock_guard lock(m_);
  std::vector<StoredEvent> out;
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return out;
  const std::vector<nlohmann::json>& events = it->second.events;
  for (std::size_t i = after_seq; i < events.size(); ++i) out.push_back({i + 1, events[i]});
  return out;
}

std::vector<CancelRequest> MemoryStore::read_cancel_requests(std::string_view run_id,
                                                             std::uint64_t after) {
  std::lock_guard lock(m_);
  std::vector<CancelRequest> out;
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return out;
  for (const CancelRequest& r : it->second.requests)
    if (r.id > after) out.push_back(r);
  return out;
}

std::vector<RunSummary> MemoryStore::read_summaries(const RunFilter& filter) {
  std::lock_guard lock(m_);
  std::vector<RunSummary> out;
  // std::map: ordered by run id; a page starts after its `after`.
  for (auto it = filter.after.empty() ? runs_.begin() : runs_.upper_bound(filter.after);
       it != runs_.end(); ++it) {
    if (filter.limit > 0 && out.size() == filter.limit) break;
    RunSummary s = summarize(it->second.checkpoints.back(), it->second.created_at);
    if (filter.matches(s)) out.push_back(std::move(s));
  }
  return out;
}

std::vector<RunSummary> MemoryStore::read_due(const std::string& now,
                                              const std::vector<std::string>* fingerprints,
                                              std::size_t limit) {
  struct Due {
    int priority;
    std::string due;
    const std::string* id;
  };
  std::lock_guard lock(m_);
  std::vector<Due> due;
  for (const auto& [id, run] : runs_) {
    const Checkpoint& newest = run.checkpoints.back();
    if (leases_.contains(id)) continue;  // a live holder: not claimable now
    if (fingerprints != nullptr && std::find(fingerprints->begin(), fingerprints->end(),
                                             newest.fingerprint) == fingerprints->end())
      continue;
    std::optional<std::string> at = due_at(newest);
    if (!at || *at > now) continue;
    due.push_back(Due{newest.priority, std::move(*at), &id});
  }
  const auto first = [](const Due& a, const Due& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.due != b.due) return a.due < b.due;
    return *a.id < *b.id;
  };
  const std::size_t n = std::min(limit, due.size());
  std::partial_sort(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(n), due.end(), first);
  std::vector<RunSummary> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Run& run = runs_.find(*due[i].id)->second;
    out.push_back(summarize(run.checkpoints.back(), run.created_at));
  }
  return out;
}

bool MemoryStore::erase_run(std::string_view run_id) {
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return false;
  if (auto held = leases_.find(run_id); held != leases_.end())
    throw run_busy("trellis: run '" + std::string(run_id) + "' is being advanced by '" +
                   held->second.owner + "': it is not deleted");
  runs_.erase(it);
  return true;
}

void MemoryStore::write_graph(const GraphShape& shape) {
  std::lock_guard lock(m_);
  graphs_.insert_or_assign(shape.fingerprint, shape);
}

std::optional<GraphShape> MemoryStore::read_graph(std::string_view fingerprint) {
  std::lock_guard lock(m_);
  auto it = graphs_.find(fingerprint);
  if (it == graphs_.end()) return std::nullopt;
  return it->second;
}

void MemoryStore::write_cache(const CacheEntry& entry) {
  std::lock_guard lock(m_);
  cache_.insert_or_assign(entry.key, entry);
}

std::optional<CacheEntry> MemoryStore::read_cache(std::string_view key) {
  std::lock_guard lock(m_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

}  // namespace trellis::agent
