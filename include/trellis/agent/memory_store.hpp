#pragma once
/// @file
/// `MemoryStore`: runs kept in memory (tests, short-lived tools). Thread-safe; nothing
/// survives the process.

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trellis/agent/store.hpp"

namespace trellis::agent {

class MemoryStore final : public Store {
 public:
  void create(const Checkpoint& first) override;
  void commit(const Checkpoint& next, std::uint64_t expected_seq) override;
  std::optional<Checkpoint> latest(std::string_view run_id) override;
  std::optional<Checkpoint> checkpoint(std::string_view run_id, std::uint64_t seq) override;
  std::vector<Checkpoint> history(std::string_view run_id) override;
  std::vector<std::string> runs() override;
  Lease lease(std::string_view run_id, std::string_view owner) override;
  void put_effect(const EffectRecord& record) override;
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
  void release(const std::string& run_id);

  std::mutex m_;
  std::map<std::string, Run, std::less<>> runs_;
  std::map<std::string, std::string, std::less<>> leases_;  // run id -> owner
};

}  // namespace trellis::agent
