#pragma once
/// @file
/// The built-in actions of graph files (added by ActionRegistry::with_builtins()).
///
/// - `exec` (at_least_once; capability "exec:<command>"): params `{command: "git", args: [...],
///   timeout: "30s" | seconds, stdin: "text"}` (args: strings, or numbers and booleans passed as
///   their JSON text; timeout: a number of seconds or a text with a unit of ms, s, m or h; no
///   timeout: none, the stop token still applies; no stdin: /dev/null). `command` is looked up
///   in PATH unless it holds a '/' (then it is taken relative to the work directory). Runs in
///   the run's work directory, in a process group of its own, with an environment cleared but
///   for PATH (fixed: "/usr/local/bin:/usr/bin:/bin", unless `env_requires` lists PATH: then the
///   caller's, for the lookup too) and the graph's `env_requires` names. Result
///   `{exit_code, stdout, stderr, timed_out, truncated}` (a non-zero exit is a result, not an
///   error: route on it; a command killed by signal N exits 128+N; output beyond 1 MiB per
///   stream is cut, with `truncated: true`; bytes that are not UTF-8 become U+FFFD). The call
///   returns once the command has exited and its output is closed. A command that cannot start
///   (not found, not an executable file) is action_error; a timeout kills the process group
///   (SIGKILL) and reports `timed_out: true`, exit_code -1, with the output read until then. The
///   run's stop token kills the group likewise, and the call throws action_error (the node fails
///   after its stop: not a result).
/// - `read_file` (idempotent): params `{path}`; result `{path, content, size}`. The content is
///   text (UTF-8; a file that is not is action_error), at most 16 MiB.
/// - `write_file` (idempotent: the same params write the same bytes): params `{path, content}`;
///   writes atomically (a temporary file renamed over, fsync'd, then the directory); creates
///   missing directories below the work directory; a new file gets 0666 and a new directory
///   0777, less the umask, a rewritten file keeps its mode; result `{path, size}` (size: the
///   file's, in bytes, after the write). A param `append` is refused, naming append_file.
/// - `append_file` (at_least_once: a re-run after a crash between the append and its receipt
///   appends again; not cacheable): params `{path, content}`; appends, then fsyncs the file
///   (and the directory when it created the file); otherwise as write_file.
///
/// Params must be an object of the members listed (`null` counts as absent); an unknown
/// member or one of the wrong type is action_error naming the action and the param.
///
/// Paths of the file actions are relative to the run's work directory: an absolute path, a `..`
/// component, or a symbolic link that leads out of the work directory is refused
/// (action_error), nothing read or written; a link that stays inside is followed. The work
/// directory must exist (action_error otherwise).

#include "trellis/flow/action.hpp"

namespace trellis::flow {

/// Adds `exec`, `read_file`, `write_file` and `append_file` to `registry`.
void add_builtin_actions(ActionRegistry& registry);

}  // namespace trellis::flow
