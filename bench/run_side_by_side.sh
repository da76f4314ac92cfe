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

say() { printf '==> %s\n' "$*" >&2; }

for tool in cmake node npm python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool is needed and not on PATH" >&2; exit 1; }
done
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
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  say "configuring $build_dir (Release, benchmarks only)"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTRELLIS_BUILD_BENCH=ON -DTRELLIS_BUILD_TESTS=OFF -DTRELLIS_BUILD_EXAMPLES=OFF >&2
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
if [ "$build_type" != Release ]; then
  echo "error: $build_dir is a '$build_type' build; figures need Release (set TRELLIS_BUILD_DIR)" >&2
  exit 1
fi
say "building trellis_bench_yardstick"
cmake --build "$build_dir" --target trellis_bench_yardstick >&2

mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
say "running trellis yardstick ($reps repetitions)"
"$build_dir/bench/trellis_bench_yardstick" --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json "${min_time[@]}" \
  >"$out/trellis.json"

# --- alien-signals, from a scratch copy (peer code never enters the project) --------------------
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
say "copying $peers/reactive-js to $scratch and installing its dependencies"
tar -C "$peers" --exclude=node_modules -cf - reactive-js | tar -C "$scratch" -xf -
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
