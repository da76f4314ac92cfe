#pragma once
/// @file
/// `CancelRequest`: an operator's request that a run stop, kept in the run's request log
/// (Store::request_cancel) by whoever asks, in any process. The process advancing the run sees
/// it between steps (and, through the node's stop_token, within a step) and commits a Cancelled
/// checkpoint that answers it (Checkpoint::cancel_handled); a run nobody advances is cancelled
/// at once by the one who asks (operations.hpp: cancel_run).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace trellis::agent {

struct CancelRequest {
  std::string run_id;
  std::uint64_t id = 0;  ///< 1, 2, ... in the run's log, given by Store::request_cancel
  std::string by;        ///< who asked
  std::string reason;    ///< why
  std::string at;        ///< ISO-8601 UTC, when

  friend bool operator==(const CancelRequest&, const CancelRequest&) = default;
};

void to_json(nlohmann::json& j, const CancelRequest& r);
void from_json(const nlohmann::json& j, CancelRequest& r);

}  // namespace trellis::agent
