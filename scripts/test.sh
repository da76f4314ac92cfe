#!/usr/bin/env bash
# Builds trellis with its tests, examples and benchmarks in build/test and runs every test
# (benchmarks are built, not run). TRELLIS_WARNINGS_AS_ERRORS=ON turns warnings into errors. The
# library is compiled as a unity build (TRELLIS_UNITY_BUILD: a from-scratch build, faster), and
# -g1 keeps line tables only (a crash's backtrace), a quarter faster to build than -g.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
jobs="${TRELLIS_JOBS:-2}"
werror="${TRELLIS_WARNINGS_AS_ERRORS:-OFF}"

step "dependencies"
./scripts/deps.sh

step "configure build/test (RelWithDebInfo; tests, examples, benchmarks on; warnings as errors: $werror)"
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DTRELLIS_BUILD_TESTS=ON -DTRELLIS_BUILD_EXAMPLES=ON -DTRELLIS_BUILD_BENCH=ON \
  -DTRELLIS_WARNINGS_AS_ERRORS="$werror" -DTRELLIS_SANITIZE= -DTRELLIS_UNITY_BUILD=ON

step "build"
cmake --build build/test -j "$jobs"

step "run the tests"
ctest --test-dir build/test --output-on-failure --no-tests=error -j "$jobs"
