#!/usr/bin/env bash
# Builds and runs trellis's main demo (examples/signal_graph.cpp) in build/release.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
./scripts/deps.sh

step "configure build/release (Release, examples and benchmarks on, tests off)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTRELLIS_BUILD_EXAMPLES=ON -DTRELLIS_BUILD_BENCH=ON -DTRELLIS_BUILD_TESTS=OFF

step "build the demo"
cmake --build build/release --target signal_graph -j "${TRELLIS_JOBS:-2}"

step "run build/release/examples/signal_graph"
./build/release/examples/signal_graph
