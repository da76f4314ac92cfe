#!/usr/bin/env bash
# One run of measurements: trellis's state machine benchmarks (trellis_bench_machine), then the
# sm-cpp peer harness (hand-written switch, std::variant, Boost.MSM, Boost.Statechart,
# std::function, std::mutex, CAS, Boost.Signals2, oneTBB) built from a scratch copy, then the
# key figures of both side by side with issue 3's targets.
#
#   bench/run_machine_peers.sh           full run (several minutes, most of it the peers' build)
#   bench/run_machine_peers.sh --quick   smoke run (short samples, 1 repetition, few rounds)
#
# Environment (all optional):
#   TRELLIS_BUILD_DIR  build tree to use or create (default: <repo>/build-bench, Release)
#   TRELLIS_PEERS      the peers folder (default: <repo>/../shared/peers)
#   TRELLIS_BENCH_OUT  where the raw outputs and the table go (default: <build dir>/machine-peers)
#   TRELLIS_BENCH_REPETITIONS (default 5 for trellis; the peers use 9, as their README measures)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build_dir=${TRELLIS_BUILD_DIR:-$repo/build-bench}
peers=${TRELLIS_PEERS:-$repo/../shared/peers}
out=${TRELLIS_BENCH_OUT:-$build_dir/machine-peers}
reps=${TRELLIS_BENCH_REPETITIONS:-5}
peer_reps=9
peer_min_time=0.1
contended_args=(21 200)  # rounds, ms per round (sm-cpp README)
min_time=()
case "${1:-}" in
  --quick)
    reps=1 peer_reps=1 peer_min_time=0.05 contended_args=(3 50)
    min_time=(--benchmark_min_time=0.05)
    ;;
  "") ;;
  *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

# shellcheck source=bench/lib.sh
source "$here/lib.sh"
need_tools cmake python3
if [ ! -f "$peers/sm-cpp/CMakeLists.txt" ]; then
  echo "error: no sm-cpp peer harness at $peers/sm-cpp (set TRELLIS_PEERS)" >&2
  exit 1
fi
status=0

# --- trellis ---------------------------------------------------------------------------------
build_bench trellis_bench_machine

# --- sm-cpp, from a scratch copy (peer code never enters the project) --------------------------
# Built before anything is timed, so that neither side runs while the other compiles.
scratch_copy "$peers/sm-cpp" sm-cpp build
say "building the sm-cpp copy in $scratch"
cmake -S "$scratch/sm-cpp" -B "$scratch/sm-cpp/build" "${generator[@]}" >&2
cmake --build "$scratch/sm-cpp/build" >&2

mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

say "running trellis_bench_machine ($reps repetitions)"
"$build_dir/bench/trellis_bench_machine" --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out/trellis.json" --benchmark_out_format=json "${min_time[@]}" >&2 ||
  { say "trellis_bench_machine failed (a check or a lost update; see above)"; status=1; }

say "running sm_peers_bench ($peer_reps repetitions)"
"$scratch/sm-cpp/build/sm_peers_bench" --benchmark_repetitions="$peer_reps" \
  --benchmark_min_time="$peer_min_time" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out/peers.json" --benchmark_out_format=json >&2 ||
  { say "sm_peers_bench failed"; status=1; }

say "running sm_contended ${contended_args[*]}"
"$scratch/sm-cpp/build/sm_contended" "${contended_args[@]}" | tee "$out/peers_contended.txt" >&2 ||
  { say "sm_contended failed"; status=1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the table -------------------------------------------------------------------------------
say "raw results in $out; the table is also written to $out/table.md"
python3 "$here/machine_peers.py" --trellis "$out/trellis.json" --peers "$out/peers.json" \
  --contended "$out/peers_contended.txt" --load "$load_before -> $load_after" |
  tee "$out/table.md" || status=1
exit "$status"
