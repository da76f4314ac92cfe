#!/usr/bin/env bash
# One run of measurements: trellis's agent graph benchmarks (trellis_bench_agent), then the
# LangGraph.js harness (../shared/peers/langgraph-js) from a scratch copy, then the key figures
# of both side by side with issue 5's targets.
#
#   bench/run_agent_peers.sh           full run (about 5 minutes: trellis 3 repetitions, the
#                                      harness's own defaults of 7 repetitions, 200 invokes)
#   bench/run_agent_peers.sh --quick   smoke run (1 repetition each side, short samples)
#
# Environment (all optional):
#   TRELLIS_BUILD_DIR  build tree to use or create (default: <repo>/build-bench, Release)
#   TRELLIS_PEERS      the peers folder (default: <repo>/../shared/peers)
#   TRELLIS_BENCH_OUT  where the raw outputs and the table go (default: <build dir>/agent-peers)
#   TRELLIS_BENCH_DIR  where trellis_bench_agent puts its stores (default /tmp: the disk under test)
#   TRELLIS_BENCH_REPETITIONS (default 3 for trellis)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build_dir=${TRELLIS_BUILD_DIR:-$repo/build-bench}
peers=${TRELLIS_PEERS:-$repo/../shared/peers}
out=${TRELLIS_BENCH_OUT:-$build_dir/agent-peers}
reps=${TRELLIS_BENCH_REPETITIONS:-3}
peer_args=(--reps 7 --n 1000 --invokes 200)
min_time=()
case "${1:-}" in
  --quick)
    reps=1
    peer_args=(--reps 1 --n 1000 --invokes 20 --warm 1)
    min_time=(--benchmark_min_time=0.05)
    ;;
  "") ;;
  *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
need_tools cmake python3 node npm
if [ ! -f "$peers/langgraph-js/bench.mjs" ]; then
  echo "error: no LangGraph.js peer harness at $peers/langgraph-js (set TRELLIS_PEERS)" >&2
  exit 1
fi
status=0

# --- trellis ---------------------------------------------------------------------------------
build_bench trellis_bench_agent

# --- LangGraph.js, from a scratch copy (peer code never enters the project) --------------------
# Installed (better-sqlite3 compiles natively, about a minute) before anything is timed.
scratch_copy "$peers/langgraph-js" langgraph-js node_modules
say "running npm ci in the langgraph-js copy in $scratch"
(cd "$scratch/langgraph-js" && npm ci --no-audit --no-fund >&2)

mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

say "running trellis_bench_agent ($reps repetitions)"
"$build_dir/bench/trellis_bench_agent" --benchmark_repetitions="$reps" \
  --benchmark_out="$out/trellis.json" --benchmark_out_format=json "${min_time[@]}" \
  | tee "$out/trellis.txt" >&2 ||
  { say "trellis_bench_agent failed (a check; see above)"; status=1; }

say "running the LangGraph.js harness: node bench.mjs ${peer_args[*]}"
(cd "$scratch/langgraph-js" && node bench.mjs "${peer_args[@]}" --json "$out/langgraph.json" >/dev/null) ||
  { say "the LangGraph.js harness failed"; status=1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the table -------------------------------------------------------------------------------
say "load $load_before -> $load_after; raw results in $out; the table is also in $out/table.md"
python3 "$here/agent_peers.py" "$out/trellis.json" "$out/langgraph.json" | tee "$out/table.md" ||
  status=1
exit "$status"
