#pragma once
/// @file
/// The built-in actions of graph files (added by ActionRegistry::with_builtins()).
///
/// - `exec` (at_least_once; capability "exec:<command>"): params `{command: "git", args: [...],
///   timeout: "30s" | seconds, stdin: "text"}`; `command` is looked up in PATH unless it holds a
///   '/'. Runs in the run's work directory with an environment cleared but for PATH (fixed:
///   "/usr/local/bin:/usr/bin:/bin") and the graph's `env_requires` names. Result
///   `{exit_code, stdout, stderr, timed_out}` (a non-zero exit is a result, not an error: route
///   on it; output beyond 1 MiB per stream is cut, with `truncated: true`). A command that
///   cannot start is action_error; a timeout kills the process group (SIGKILL) and reports
///   `timed_out: true`, exit_code -1. The run's stop token kills it likewise.
/// - `read_file` (idempotent): params `{path}`; result `{path, content, size}`. The content is
///   text (UTF-8; a file that is not is action_error), at most 16 MiB.
/// - `write_file` (idempotent: the same params write the same bytes): params `{path, content,
///   append: false}`; writes atomically (a temporary file renamed over, fsync'd) unless
///   appending; creates missing directories below the work directory; result `{path, size}`.
///
/// Paths of the file actions are relative to the run's work directory: an absolute path, a `..`
/// component, or a symbolic link that leads out of the work directory is refused
/// (action_error), nothing read or written.

#include "trellis/flow/action.hpp"

namespace trellis::flow {

/// Adds `exec`, `read_file` and `write_file` to `registry`.
void add_builtin_actions(ActionRegistry& registry);

}  // namespace trellis::flow
