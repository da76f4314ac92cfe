#pragma once
/// @file
/// The `trellis serve` command (docs/console.md): the operator console over the store that
/// `--store` names, until SIGINT or SIGTERM. `serve_command()` is what the `trellis` command
/// runs for it; `serve_extra()` adds it to a program's own command line:
///
/// ```cpp
/// return trellis::agent::cli::run_commands(argc, argv, &store, nullptr,
///                                          {trellis::web::serve_extra()});
/// ```

#include <functional>
#include <string>
#include <vector>

#include "trellis/agent/store.hpp"
#include "trellis/cli/graph_runner.hpp"

namespace trellis::web {

/// Parses `args` (serve's options: --host, --port, --public-host, --tls-cert, --tls-key,
/// --insecure-http, --read-only, --users, --user, --trust-user-header, --max-body,
/// --new-token NAME, --help), then serves the console over `store()` until SIGINT or SIGTERM.
/// Returns the exit code: 0, 2 for bad usage, 1 for anything refused (printed on stderr).
int serve_command(const std::vector<std::string>& args,
                  const std::function<agent::Store&()>& store);

/// `serve` as an extra command of agent::cli::run_commands.
agent::cli::ExtraCommand serve_extra();

}  // namespace trellis::web
