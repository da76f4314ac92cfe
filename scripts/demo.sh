#!/usr/bin/env bash
# Builds and runs trellis's main demo (examples/draft_review_revise.cpp) in build/release:
# a durable agent graph that pauses for an approval; the `trellis` command (a program that does
# not link the graph) lists it, shows what it asks and records the approval; the example's own
# `resume` finishes it; the command shows its history and draws its path.
# Then examples/refund_agent.cpp: a refund paid once, even when the process is killed after
# the payment and resumed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
./scripts/deps.sh

step "configure build/release (Release, examples and benchmarks on, tests off)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTRELLIS_BUILD_EXAMPLES=ON -DTRELLIS_BUILD_BENCH=ON -DTRELLIS_BUILD_TESTS=OFF

step "build the demo"
cmake --build build/release --target draft_review_revise refund_agent trellis_command \
  -j "${TRELLIS_JOBS:-2}"

runs=build/release/draft_review_revise.runs
rm -rf "$runs"  # a fresh run-7 each time

step "run build/release/examples/draft_review_revise (it pauses at the approval gate)"
./build/release/examples/draft_review_revise --store "$runs"

trellis=./build/release/trellis
step "trellis runs ls, trellis approvals ls: what runs, what waits for a person"
"$trellis" runs ls --store "$runs"
"$trellis" approvals ls --store "$runs"
request=$("$trellis" approvals ls --store "$runs" -o json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["approvals"][0]["id"])')

step "trellis approve (records the decision; runs nothing: the run is Queued)"
"$trellis" approve run-7 --request "$request" --as "$(id -un)" --comment "ship it" --store "$runs"

step "the example's own resume runs the approved step"
./build/release/examples/draft_review_revise --store "$runs" resume run-7

step "trellis runs history --diff, trellis runs draw: what each step changed, the path taken"
"$trellis" runs history run-7 --diff --store "$runs"
"$trellis" runs draw run-7 --store "$runs"

shop=build/release/refund_agent.runs
rm -rf "$shop"  # a fresh ledger each time

step "a refund of 25.00 with build/release/examples/refund_agent (each effect runs once)"
./build/release/examples/refund_agent "$shop" start r-1 25

step "a refund of 40.00, killed right after the payment's receipt was committed"
TRELLIS_FAILPOINT=effect.after_receipt ./build/release/examples/refund_agent "$shop" start r-2 40 ||
  echo "(killed, exit status $?)"

step "resume it (the refund is replayed from its receipt, not paid again)"
./build/release/examples/refund_agent "$shop" resume r-2

step "the payment ledger: one line per refund paid"
cat "$shop/payments.ledger"
