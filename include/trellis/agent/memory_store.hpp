#pragma once
/// @file
/// `MemoryStore`: runs kept in memory (tests, short-lived tools). Thread-safe; nothing
/// survives the process. A lease does not expire (no lease_ttl): it is held until its Lease
/// is destroyed; its epoch counts the takings of the run's lease in this object.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trellis/agent/store.hpp"

namespace trellis::agent {

class MemoryStore final : public Store {
 public:
  using Store::commit;
  using Store::put_effect;

  void create(const Checkpoint& first) override;
  void commit(const Checkpoint& next, std::uint64_t expected_seq, const LeaseToken& lease) override;
  std::optional<Checkpoint> latest(std::string_view run_id) override;
  std::optional<Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) override;
  std::vector<Checkpoint> history(std::string_view run_id) override;
  std::vector<std::string> runs() override;
  Lease lease(std::string_view run_id, std::string_view owner) override;
  void renew(const LeaseToken& lease) override;
  void put_effect(const EffectRecord& record, const LeaseToken& lease) override;
  std::optional<EffectRecord> effect(std::string_view run_id, std::string_view key) override;
  std::vector<EffectRecord> effects(std::string_view run_id) override;
  void append_event(std::string_view run_id, const nlohmann::json& event) override;
  std::vector<nlohmann::json> events(std::string_view run_id) override;
  void apply_retention(const Retention& retention) override;

 private:
  struct Run {
    std::vector<Checkpoint> checkpoints;
    std::vector<nlohmann::json> events;
    std::vector<EffectRecord> effects;                             // in the order first started
    std::map<std::string, std::size_t, std::less<>> effect_index;  // key -> position
  };
  struct Held {
    std::string owner;
    std::string holder;
  };
  void release(const LeaseToken& token);
  void check_lease(const std::string& run_id, const LeaseToken& lease) const;

  std::mutex m_;
  std::map<std::string, Run, std::less<>> runs_;
  std::map<std::string, Held, std::less<>> leases_;           // run id -> its holder
  std::map<std::string, std::uint64_t, std::less<>> epochs_;  // run id -> newest epoch
};

}  // namespace trellis::agent
