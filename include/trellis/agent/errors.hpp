#pragma once
/// @file
/// The agent layer's errors. Each is a snake_case class deriving from trellis::error; why a
/// run *ended* is not an exception but a reason code in its Outcome (see outcome.hpp).

#include <string>

#include "trellis/error.hpp"

namespace trellis::agent {

/// A node's failure that is worth retrying (a timeout, a rate limit, a connection reset): the
/// graph re-runs the node per its retry policy. Any other exception fails the run at once.
class transient_error : public error {
 public:
  using error::error;
};

/// Another worker is advancing this run (it holds the run's lease, or committed first).
class run_busy : public error {
 public:
  using error::error;
};

/// No run with this id exists in the store.
class unknown_run : public error {
 public:
  using error::error;
};

/// The run has already ended (succeeded or failed): it cannot be resumed.
class run_finished : public error {
 public:
  using error::error;
};

/// The run was stored by a graph with other nodes or another version.
class graph_mismatch : public error {
 public:
  using error::error;
};

/// A run id that could escape a store's namespace (path separators, "..", too long, empty).
class invalid_run_id : public error {
 public:
  using error::error;
};

/// The graph is misdeclared (no entry, a duplicate or unknown node name) or misused (resuming
/// a run that waits for approval without a decision).
class graph_error : public error {
 public:
  using error::error;
};

/// A store could not read or write (I/O, a corrupt record, a database error).
class store_error : public error {
 public:
  using error::error;
};

}  // namespace trellis::agent
