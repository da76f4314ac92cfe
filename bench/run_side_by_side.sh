#!/usr/bin/env bash
# One run of measurements: trellis's yardstick (Context and ThreadSafeContext), then
# alien-signals on the same 13 cases (the reactive-js peer harness), then a Markdown table of
# CPU ns per iteration (medians) and the ratio trellis/alien-signals.
#
#   bench/run_side_by_side.sh            full run (about 5 minutes)
#   bench/run_side_by_side.sh --quick    smoke run (short samples, 1 repetition, 1 round)
#
# Environment (all optional):
#   TRELLIS_BUILD_DIR  build tree to use or create (default: <repo>/build-bench, Release)
#   TRELLIS_PEERS      the peers folder (default: <repo>/../shared/peers)
#   TRELLIS_BENCH_OUT  where the raw JSON and the table go (default: <build dir>/side-by-side)
#   TRELLIS_BENCH_REPETITIONS (default 5), TRELLIS_PEER_ROUNDS (default 3)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build_dir=${TRELLIS_BUILD_DIR:-$repo/build-bench}
peers=${TRELLIS_PEERS:-$repo/../shared/peers}
out=${TRELLIS_BENCH_OUT:-$build_dir/side-by-side}
reps=${TRELLIS_BENCH_REPETITIONS:-5}
rounds=${TRELLIS_PEER_ROUNDS:-3}
min_time=()
node_quick=()
case "${1:-}" in
  --quick) reps=1 rounds=1 min_time=(--benchmark_min_time=0.05) node_quick=(--quick) ;;
  "") ;;
  *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
need_tools cmake node npm python3
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "error: the peer harness needs node 20 or later, found $(node --version)" >&2
  exit 1
fi
if [ ! -f "$peers/reactive-js/bench.mjs" ]; then
  echo "error: no reactive-js peer harness at $peers/reactive-js (set TRELLIS_PEERS)" >&2
  exit 1
fi

# --- trellis ---------------------------------------------------------------------------------
build_bench trellis_bench_yardstick

mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "running trellis yardstick ($reps repetitions)"
"$build_dir/bench/trellis_bench_yardstick" --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json "${min_time[@]}" \
  >"$out/trellis.json"

# --- alien-signals, from a scratch copy (peer code never enters the project) --------------------
scratch_copy "$peers/reactive-js" reactive-js node_modules
say "installing the reactive-js copy's dependencies in $scratch"
(cd "$scratch/reactive-js" && npm install --no-audit --no-fund --loglevel=error >&2)

# bench.mjs runs each library in a child `node --expose-gc --single-threaded bench.mjs --lib X`
# (single-threaded: process CPU time is the benchmark thread's, GC included); run that child
# for alien-signals only, once per round, and let the joiner take the median over rounds.
rm -f "$out"/alien.*.json
for ((r = 1; r <= rounds; r++)); do
  say "running alien-signals, round $r of $rounds"
  (cd "$scratch/reactive-js" &&
    node --expose-gc --single-threaded bench.mjs --lib alien "${node_quick[@]}") |
    tail -n 1 >"$out/alien.$r.json"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the table -------------------------------------------------------------------------------
say "raw results in $out; the table is also written to $out/table.md"
python3 "$here/side_by_side.py" --trellis "$out/trellis.json" \
  --node-version "$(node --version)" --load "$load_before -> $load_after" \
  "$out"/alien.*.json | tee "$out/table.md"
