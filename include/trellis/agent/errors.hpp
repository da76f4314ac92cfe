#pragma once
/// @file
/// The agent layer's errors (codes "agent.*", listed in docs/errors.md). Each is a snake_case
/// class deriving from trellis::error; why a run *ended* is not an exception but a reason code
/// in its Outcome (see outcome.hpp).

#include <string>
#include <string_view>
#include <utility>

#include "trellis/base/error.hpp"

namespace trellis::agent {

/// A node's failure that is worth retrying (a timeout, a rate limit, a connection reset): the
/// graph re-runs the node per its retry policy. Any other exception fails the run at once.
/// Code "agent.transient".
class transient_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// Another worker is advancing this run (it holds the run's lease, or committed first).
/// Code "agent.run_busy".
class run_busy : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// No run with this id exists in the store. Code "agent.unknown_run".
class unknown_run : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// The run has already ended (succeeded or failed): it cannot be resumed.
/// Code "agent.run_finished".
class run_finished : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// The run was stored by a graph with other nodes or another version.
/// Code "agent.graph_mismatch".
class graph_mismatch : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A run id that could escape a store's namespace (path separators, "..", too long, empty).
/// Code "agent.invalid_run_id".
class invalid_run_id : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// The graph is misdeclared (no entry, a duplicate or unknown node name) or misused (resuming
/// a run that waits for approval without a decision). Code "agent.graph".
class graph_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A store could not read or write (I/O, a corrupt record, a database error).
/// Code "agent.store".
class store_error : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// The store at a path is not a store: nothing there (and it was opened to read, so nothing
/// was created), or something that is not trellis's. Code "agent.not_a_store".
class not_a_store : public store_error {
 public:
  using store_error::store_error;
  std::string_view id() const noexcept override;
};

/// A decision named a request that is not the run's pending one any more: it was decided, or
/// the run moved on and paused again (a newer request). Nothing was written.
/// Code "agent.request_superseded".
class request_superseded : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A decision came after its request's expiry (ApprovalRequest::expires_at). Nothing was
/// written: the run fails with approval_expired when the process that advances it sees the
/// expiry. Code "agent.request_expired".
class request_expired : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A request id that names no pause of the run (not a number, or no WaitingApproval checkpoint
/// of that seq). Code "agent.unknown_request".
class unknown_request : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// The run's status does not allow the operation (cancel a finished run, reconcile a run that
/// did not fail with reconciliation_required, decide on a run that does not wait, delete a run
/// that is running). Nothing was written. Code "agent.run_conflict".
class run_conflict : public error {
 public:
  using error::error;
  std::string_view id() const noexcept override;
};

/// A dry step (Graph::step without commit) reached an effect that has no stored receipt and no
/// stub: it is not called. `name()` is the effect's name. Code "agent.effect_refused".
class effect_refused : public error {
 public:
  effect_refused(std::string name, const std::string& what) : error(what), name_(std::move(name)) {}
  std::string_view id() const noexcept override;
  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

/// An effect's call threw (its receipt holds the error): thrown by RunContext::effect on the
/// first call and, from the receipt, on every replay, so a node sees the same thing either way.
/// Code "agent.effect_failed".
class effect_failed : public error {
 public:
  effect_failed(std::string key, const std::string& what) : error(what), key_(std::move(key)) {}
  std::string_view id() const noexcept override;
  /// The idempotency key of the effect.
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

/// An at_most_once effect was started and has no receipt: it may or may not have happened, and
/// it is never re-run automatically. The graph fails the run with
/// Reason::reconciliation_required (a node cannot swallow it).
/// Code "agent.reconciliation_required".
class reconciliation_required : public error {
 public:
  reconciliation_required(std::string key, const std::string& what)
      : error(what), key_(std::move(key)) {}
  std::string_view id() const noexcept override;
  /// The idempotency key of the effect.
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

/// A child run (subgraph.hpp) failed: thrown into the parent's node by subgraph(), which the
/// parent's node may catch (a file graph's `on_error` routes it); uncaught, the parent fails
/// with Reason::node_error. `child()` is the child run's id; `cancelled()`: the child was
/// cancelled, and so is the parent (a node should let that one out, as a cancellation).
/// Code "agent.subgraph_failed".
class subgraph_failed : public error {
 public:
  subgraph_failed(std::string child, const std::string& what, bool cancelled = false)
      : error(what), child_(std::move(child)), cancelled_(cancelled) {}
  std::string_view id() const noexcept override;
  const std::string& child() const noexcept { return child_; }
  bool cancelled() const noexcept { return cancelled_; }

 private:
  std::string child_;
  bool cancelled_;
};

}  // namespace trellis::agent
