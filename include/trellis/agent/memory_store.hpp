#pragma once
/// @file
/// `MemoryStore`: runs kept in memory (tests, short-lived tools). Thread-safe; nothing
/// survives the process. A lease does not expire (no lease_ttl): it is held until its Lease
/// is destroyed; its epoch counts the takings of the run's lease in this object. It makes every
/// check of the Store contract (detail::StoreProtocol), as the persistent stores do, and keeps
/// every record they keep (cancel requests, graph shapes; listing walks the runs in memory).

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trellis/agent/detail/brief_mutex.hpp"
#include "trellis/agent/detail/store_protocol.hpp"
#include "trellis/agent/store.hpp"

namespace trellis::agent {

class MemoryStore final : public detail::StoreProtocol {
 public:
  std::vector<std::string> runs() override;

 private:
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct Run {
    std::vector<Checkpoint> checkpoints;
    std::vector<nlohmann::json> events;
    std::vector<EffectRecord> effects;  // in the order first started
    /// key -> position (hashed: a fan-out's items look their keys up under the store's lock)
    std::unordered_map<std::string, std::size_t, KeyHash, std::equal_to<>> effect_index;
    std::vector<CancelRequest> requests;
    std::string created_at;  // the first checkpoint's (retention may drop it)
  };
  struct Held {
    std::string owner;
    std::string holder;
  };
  class Write;
  void release(const LeaseToken& token);

  // The backend (detail/store_protocol.hpp).
  void check_effect(const EffectRecord& record) override;
  void write_run(std::string_view run_id, detail::WriteKind kind,
                 detail::RunBody<detail::RunWrite> body) override;
  std::optional<Lease> take_lease(std::string_view run_id, std::string_view owner,
                                  std::string& holder) override;
  std::optional<Checkpoint> read_latest(std::string_view run_id) override;
  std::optional<Checkpoint> read_checkpoint(std::string_view run_id, std::uint64_t seq) override;
  std::vector<Checkpoint> read_history(std::string_view run_id) override;
  std::optional<EffectRecord> read_effect(std::string_view run_id, std::string_view key) override;
  std::vector<EffectRecord> read_effects(std::string_view run_id) override;
  void write_event(std::string_view run_id, const nlohmann::json& event) override;
  std::vector<nlohmann::json> read_events(std::string_view run_id) override;
  void retain(const detail::RetentionPlan& plan) override;
  std::vector<StoredEvent> read_events_after(std::string_view run_id,
                                             std::uint64_t after_seq) override;
  std::vector<CancelRequest> read_cancel_requests(std::string_view run_id,
                                                  std::uint64_t after) override;
  std::vector<RunSummary> read_summaries(const RunFilter& filter) override;
  std::vector<RunSummary> read_due(const std::string& now,
                                   const std::vector<std::string>* fingerprints,
                                   std::size_t limit) override;
  bool erase_run(std::string_view run_id) override;
  void write_graph(const GraphShape& shape) override;
  std::optional<GraphShape> read_graph(std::string_view fingerprint) override;
  void write_cache(const CacheEntry& entry) override;
  std::optional<CacheEntry> read_cache(std::string_view key) override;

  detail::BriefMutex m_;
  std::map<std::string, CacheEntry, std::less<>> cache_;   // by key
  std::map<std::string, GraphShape, std::less<>> graphs_;  // by fingerprint
  std::map<std::string, Run, std::less<>> runs_;
  std::map<std::string, Held, std::less<>> leases_;           // run id -> its holder
  std::map<std::string, std::uint64_t, std::less<>> epochs_;  // run id -> newest epoch
};

}  // namespace trellis::agent
