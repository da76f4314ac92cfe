// SPDX-License-Identifier: MIT
// The `trellis` command: operate durable agent runs in any store, without the program's graph;
// validate, run, step and draw graph files (docs/cli.md); serve the operator console
// (`trellis serve`, docs/console.md).

#include "trellis/cli/graph_runner.hpp"
#include "trellis/web/serve.hpp"

int main(int argc, char** argv) {
  return trellis::agent::cli::run_commands(argc, argv, nullptr, nullptr,
                                           {trellis::web::serve_extra()});
}
