// MemoryStore: the Store contract over in-memory vectors, under one mutex.

#include "trellis/agent/memory_store.hpp"

#include <algorithm>
#include <chrono>

#include "checkpoint_codec.hpp"
#include "lease_holder.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/graph.hpp"

namespace trellis::agent {

void MemoryStore::create(const Checkpoint& first) {
  check_run_id(first.run_id);
  Checkpoint kept = first;
  detail::check_writable(kept);  // what the persistent stores could not write, refused alike
  std::lock_guard lock(m_);
  auto [it, fresh] = runs_.try_emplace(first.run_id);
  if (!fresh) throw run_busy("trellis: run '" + first.run_id + "' already exists");
  it->second.checkpoints.push_back(std::move(kept));
}

// Under m_: `lease` (unless empty: the no-token overloads) must hold the run's lease. A lease
// taken through this object cannot expire, so the empty token needs no check.
void MemoryStore::check_lease(const std::string& run_id, const LeaseToken& lease) const {
  if (lease.empty()) return;
  if (lease.run_id != run_id)
    throw run_busy("trellis: run '" + run_id + "': the lease token is for run '" + lease.run_id +
                   "'");
  auto it = leases_.find(run_id);
  if (it == leases_.end() || it->second.holder != lease.holder)
    throw run_busy("trellis: run '" + run_id + "': this worker's lease (epoch " +
                   std::to_string(lease.epoch) + ") " +
                   (it == leases_.end() ? std::string("was released")
                                        : "is now held by '" + it->second.owner + "'"));
}

void MemoryStore::commit(const Checkpoint& next, std::uint64_t expected_seq,
                         const LeaseToken& lease) {
  check_run_id(next.run_id);
  Checkpoint kept = next;
  detail::check_writable(kept);
  std::lock_guard lock(m_);
  auto it = runs_.find(next.run_id);
  if (it == runs_.end()) throw unknown_run("trellis: no run '" + next.run_id + "' in the store");
  const Checkpoint& newest = it->second.checkpoints.back();
  if (newest.seq != expected_seq)
    throw run_busy("trellis: run '" + next.run_id + "' moved on (checkpoint " +
                   std::to_string(newest.seq) + ", expected " + std::to_string(expected_seq) +
                   "): another worker advanced it");
  if (next.seq != expected_seq + 1)
    throw store_error("trellis: run '" + next.run_id + "': checkpoint " + std::to_string(next.seq) +
                      " cannot follow " + std::to_string(expected_seq));
  check_lease(next.run_id, lease);
  it->second.checkpoints.push_back(std::move(kept));
}

std::optional<Checkpoint> MemoryStore::latest(std::string_view run_id) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.checkpoints.back();
}

std::optional<Checkpoint> MemoryStore::checkpoint(std::string_view run_id, std::uint64_t seq) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  for (const Checkpoint& c : it->second.checkpoints)
    if (c.seq == seq) return c;
  return std::nullopt;
}

std::vector<Checkpoint> MemoryStore::history(std::string_view run_id) {
  check_run_id(run_id);
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

Lease MemoryStore::lease(std::string_view run_id, std::string_view owner) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  const std::string holder = detail::new_lease_holder();
  auto [it, fresh] = leases_.try_emplace(std::string(run_id), Held{std::string(owner), holder});
  if (!fresh)
    throw run_busy("trellis: run '" + std::string(run_id) + "' is being advanced by '" +
                   it->second.owner + "'");
  LeaseToken token{std::string(run_id), holder, ++epochs_[std::string(run_id)]};
  auto* handle = new MemoryLease{this, token};
  return Lease(std::move(token), Lease::Handle(handle, [](void* p) {
                 auto* l = static_cast<MemoryLease*>(p);
                 l->store->release(l->token);
                 delete l;
               }));
}

void MemoryStore::renew(const LeaseToken& lease) {
  check_run_id(lease.run_id);
  std::lock_guard lock(m_);
  if (lease.empty())
    throw run_busy("trellis: run '" + lease.run_id + "': an empty lease token renews nothing");
  check_lease(lease.run_id, lease);
}

void MemoryStore::release(const LeaseToken& token) {
  std::lock_guard lock(m_);
  if (auto it = leases_.find(token.run_id);
      it != leases_.end() && it->second.holder == token.holder)
    leases_.erase(it);
}

void MemoryStore::put_effect(const EffectRecord& record, const LeaseToken& lease) {
  check_run_id(record.run_id);
  EffectRecord kept = record;
  detail::check_writable(kept);
  std::lock_guard lock(m_);
  auto it = runs_.find(record.run_id);
  if (it == runs_.end())
    throw unknown_run("trellis: no run '" + record.run_id + "' in the store (effect '" +
                      record.name + "')");
  check_lease(record.run_id, lease);
  try {
    // Refuse what the persistent stores cannot hold (text that is not UTF-8), checking only
    // the free-form members: building the whole record's JSON would cost more than the put.
    for (const std::string* text : {&record.name, &record.error, &record.node})
      (void)nlohmann::json(*text).dump();
    (void)record.args.dump();
    (void)record.result.dump();
  } catch (const nlohmann::json::exception& e) {
    throw store_error("trellis: effect '" + record.name + "' of run '" + record.run_id +
                      "' cannot be stored: " + e.what());
  }
  Run& run = it->second;
  auto [at, fresh] = run.effect_index.try_emplace(record.key, run.effects.size());
  if (fresh)
    run.effects.push_back(std::move(kept));
  else
    run.effects[at->second] = std::move(kept);
}

std::optional<EffectRecord> MemoryStore::effect(std::string_view run_id, std::string_view key) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  auto at = it->second.effect_index.find(key);
  if (at == it->second.effect_index.end()) return std::nullopt;
  return it->second.effects[at->second];
}

std::vector<EffectRecord> MemoryStore::effects(std::string_view run_id) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return it->second.effects;
}

void MemoryStore::append_event(std::string_view run_id, const nlohmann::json& event) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) it->second.events.push_back(event);
}

std::vector<nlohmann::json> MemoryStore::events(std::string_view run_id) {
  check_run_id(run_id);
  std::lock_guard lock(m_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return it->second.events;
}

void MemoryStore::apply_retention(const Retention& retention) {
  // created_at is fixed-width ISO-8601 UTC, so text order is time order.
  const std::string cutoff =
      retention.finished_older_than
          ? detail::format_time(std::chrono::system_clock::now() - *retention.finished_older_than)
          : std::string();
  std::lock_guard lock(m_);
  for (auto it = runs_.begin(); it != runs_.end();) {
    auto& cps = it->second.checkpoints;
    if (!cutoff.empty() && terminal(cps.back().status) && cps.back().created_at < cutoff &&
        !leases_.contains(it->first)) {
      it = runs_.erase(it);
      continue;
    }
    if (retention.keep_last > 0 && cps.size() > retention.keep_last)
      cps.erase(cps.begin(), cps.end() - static_cast<std::ptrdiff_t>(retention.keep_last));
    ++it;
  }
}

}  // namespace trellis::agent
