#!/usr/bin/env bash
# Builds and runs trellis's main demo (examples/draft_review_revise.cpp) in build/release:
# a durable agent graph that pauses for an approval, then, in a second process, approves.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
./scripts/deps.sh

step "configure build/release (Release, examples and benchmarks on, tests off)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTRELLIS_BUILD_EXAMPLES=ON -DTRELLIS_BUILD_BENCH=ON -DTRELLIS_BUILD_TESTS=OFF

step "build the demo"
cmake --build build/release --target draft_review_revise -j "${TRELLIS_JOBS:-2}"

runs=build/release/draft_review_revise.runs
rm -rf "$runs"  # a fresh run-7 each time

step "run build/release/examples/draft_review_revise (it pauses at the approval gate)"
./build/release/examples/draft_review_revise --store "$runs"

step "approve it (a second process resumes the paused run)"
./build/release/examples/draft_review_revise --store "$runs" approve "$(id -un)"
