#pragma once
/// @file
/// One committed checkpoint of a run: everything needed to continue it, written in one atomic
/// commit after every step (and at every pause, and when a decision on a pause is given). A
/// run is its sequence of checkpoints; the newest one is where it resumes, the older ones are
/// its history.

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/agent/fork_origin.hpp"
#include "trellis/agent/next_step.hpp"
#include "trellis/agent/outcome.hpp"
#include "trellis/agent/reconciliation.hpp"
#include "trellis/agent/resume.hpp"
#include "trellis/agent/run_status.hpp"

namespace trellis::agent {

/// A decision on a pause, as committed: by the checkpoint that leaves the pause (Running,
/// before the step it lets run) for Approve and Input, by the Failed checkpoint for Reject
/// and for a decision that came after the request expired. It is the audit trail of the
/// approval, and what the step sees again when it reruns after a crash.
struct Decision {
  Resume given;               ///< as passed to Graph::resume (reviewer, comment or reason, input)
  std::string decided_at;     ///< ISO-8601 UTC, when resume() received it
  std::uint64_t answers = 0;  ///< the seq of the WaitingApproval checkpoint it answers
  Interrupt request;          ///< that checkpoint's interrupt (with its approval request)

  friend bool operator==(const Decision&, const Decision&) = default;
};

struct Checkpoint {
  std::string run_id;
  std::uint64_t seq = 0;  ///< 0 for the first checkpoint of a run, +1 per commit
  RunStatus status = RunStatus::Queued;
  std::string next_node;               ///< the node to run next (the step in flight after a crash)
  std::uint64_t step = 0;              ///< steps completed
  std::uint32_t attempt = 0;           ///< failed attempts of next_node so far (transient errors)
  nlohmann::json state;                ///< the run's state, as to_json wrote it
  int schema = 1;                      ///< the state's schema version (for migrations)
  std::string fingerprint;             ///< the graph that wrote it (node names and user version)
  std::optional<Interrupt> interrupt;  ///< the pause, while WaitingApproval or after one
  std::string resume_node;  ///< the node that interrupted (it reruns when `then` is empty)
  /// While that node reruns after its pause(s): the step its effects are keyed by (the step
  /// of its first pause in a row), so what it did before pausing replays.
  std::optional<std::uint64_t> rerun_step;
  /// The decision on the pause this run left last, while the step it applies to has not
  /// committed (it survives retries and a cancellation), and in a Failed checkpoint the
  /// decision that failed the run. Absent in records written before decisions were stored.
  std::optional<Decision> decision;
  /// The id of the newest cancel request (Store::request_cancel) this run has answered, by a
  /// Cancelled checkpoint; carried by every later checkpoint, so a resume does not cancel again
  /// on a request that was answered. 0: none. A request with a larger id is pending.
  std::uint64_t cancel_handled = 0;
  /// In the Queued checkpoint that reopens a run failed with reconciliation_required: the
  /// operator's record (and nowhere else).
  std::optional<Reconciliation> reconciliation;
  /// In the first checkpoint (seq 0) of a forked run: the run and checkpoint it forked from,
  /// who forked it and when (and nowhere else). (The JSON member is written only when set.)
  std::optional<ForkOrigin> forked_from;
  /// While Waiting: when its timer fires (a Sleep, a retry backoff made durable), ISO-8601 UTC
  /// by the clock of the run call that committed it; on a Queued run enqueued for later
  /// (EnqueueOptions::at): when it may start. Empty otherwise. (The JSON member is written only
  /// when set.)
  std::string wake_at;
  /// The run's priority among runnable runs (Workers claim higher first; set by enqueue and
  /// carried by every checkpoint). (The JSON member is written only when not 0.)
  int priority = 0;
  Reason reason = Reason::none;
  std::string detail;
  std::string created_at;  ///< ISO-8601 UTC
  /// The idempotency keys of the effects the step made (their records: Store::effects).
  std::vector<std::string> effects;

  // --- the run's hash chain (chain.hpp; the JSON members are written only when set, so a
  // record of a release before hash chains has none) ---------------------------------------
  /// The hashes of the effect records named by `effects`, in the same order, as they were when
  /// this checkpoint was committed ("" for a record that has no hash).
  std::vector<std::string> receipts;
  /// The hash of the checkpoint before this one (empty for seq 0, and for a record of a
  /// release before hash chains).
  std::string prev_hash;
  /// This checkpoint's hash (chain.hpp: checkpoint_hash); empty while unsealed (a store seals
  /// a checkpoint committed without one).
  std::string hash;

 private:
  auto content() const {
    return std::tie(run_id, seq, status, next_node, step, attempt, state, schema, fingerprint,
                    interrupt, resume_node, rerun_step, decision, cancel_handled, reconciliation,
                    forked_from, wake_at, priority, reason, detail, created_at, effects);
  }

 public:
  /// Compares the content, not the seal (receipts, prev_hash, hash): a checkpoint read back
  /// from a store equals the one written, whether the writer or the store sealed it.
  friend bool operator==(const Checkpoint& a, const Checkpoint& b) {
    return a.content() == b.content();
  }
};

/// The id of the pause `cp` is (its request id, what a decision names): the decimal seq of
/// the WaitingApproval checkpoint. Empty when `cp` is not WaitingApproval.
std::string request_id(const Checkpoint& cp);

void to_json(nlohmann::json& j, const Interrupt& i);
void from_json(const nlohmann::json& j, Interrupt& i);
void to_json(nlohmann::json& j, const Decision& d);
void from_json(const nlohmann::json& j, Decision& d);
void to_json(nlohmann::json& j, const Checkpoint& c);
void from_json(const nlohmann::json& j, Checkpoint& c);

}  // namespace trellis::agent
