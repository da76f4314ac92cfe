#!/usr/bin/env bash
# Runs trellis_bench_contended (bench/kit.cpp) PASSES times, each in a session of its own whose
# scheduler autogroup gets nice -20 when this user may raise priority (root or CAP_SYS_NICE):
# on a shared machine with autogroup scheduling, nice alone does not lift a process above other
# sessions, and the sending threads could not run at once, which the kit would report as "not
# overlapped". Without the right, it runs at normal priority and says so.
#   bench/run_contended.sh [BINARY] [PASSES] [extra Google Benchmark flags...]
# Output: each pass's table and summary, prefixed with the date and load average.
set -euo pipefail
bin=${1:-build-bench/bench/trellis_bench_contended}
passes=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
[ -x "$bin" ] || { echo "run_contended: no executable $bin (build trellis_bench_contended)" >&2; exit 2; }
status=0
for pass in $(seq 1 "$passes"); do
  echo "== pass $pass of $passes, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  setsid sh -c '
    if echo -20 2>/dev/null > /proc/self/autogroup && renice -n -20 -p $$ >/dev/null 2>&1; then
      echo "(autogroup nice -20)"
    else
      echo "(normal priority: cannot raise it)"
    fi
    exec "$@"' run_contended "$bin" --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true "$@" 2>&1 || status=1
done
exit $status
