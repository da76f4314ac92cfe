#!/usr/bin/env bash
# Compares two builds of the same Google Benchmark binary, case by case, in one run:
#
#   bench/compare_baseline.sh BASELINE_BINARY NEW_BINARY FILTER [EXTRA_ARGS...]
#
# For every benchmark matching FILTER (a --benchmark_filter regex), runs the baseline, then the
# new binary on that case alone (interleaved, so slow drift of a shared machine hits both), each
# with 10 repetitions, and takes the median CPU time. Prints one Markdown row per case with
# new/baseline; the limit is 1.05, or 1.10 when the baseline is under 5 ns. A case over its
# limit is run again (both binaries) once, and the second ratio is the one judged. Exit status 1
# if a case is still over its limit. Set REPS to change the repetitions (default 10).
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
base=$1 new=$2 filter=$3
shift 3
reps=${REPS:-10}
for b in "$base" "$new"; do
  [ -x "$b" ] || { echo "error: $b is not an executable" >&2; exit 2; }
done

# median_cpu BINARY CASE: the median CPU time of CASE, in ns.
median_cpu() {
  local out
  out=$(mktemp)
  "$1" --benchmark_filter="^$(printf '%s' "$2" | sed 's/[][\\.*^$+?(){}|]/\\&/g')\$" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json "${@:3}" \
    >/dev/null 2>&1
  python3 - "$out" <<'EOF'
import json, sys
scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
runs = json.load(open(sys.argv[1]))["benchmarks"]
# The median aggregate; a single repetition reports its one run instead.
b = next((b for b in runs if b.get("aggregate_name") == "median"), runs[0])
print(f'{b["cpu_time"] * scale[b.get("time_unit", "ns")]:.6g}')
EOF
  rm -f "$out"
}

# judge BASE_NS NEW_NS: prints "ratio limit ok|over".
judge() {
  python3 -c '
import sys
b, n = float(sys.argv[1]), float(sys.argv[2])
limit = 1.10 if b < 5 else 1.05
r = n / b
verdict = "ok" if r <= limit else "over"
print(f"{r:.3f} {limit:.2f} {verdict}")' "$1" "$2"
}

mapfile -t cases < <("$new" --benchmark_list_tests --benchmark_filter="$filter")
[ ${#cases[@]} -gt 0 ] || { echo "error: no case matches '$filter'" >&2; exit 2; }

status=0
echo "| case | baseline CPU ns (median of $reps) | new CPU ns | new/baseline | limit | verdict |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
for c in "${cases[@]}"; do
  b=$(median_cpu "$base" "$c" "$@")
  n=$(median_cpu "$new" "$c" "$@")
  read -r ratio limit verdict < <(judge "$b" "$n")
  note=""
  if [ "$verdict" = over ]; then
    first=$ratio
    b=$(median_cpu "$base" "$c" "$@")
    n=$(median_cpu "$new" "$c" "$@")
    read -r ratio limit verdict < <(judge "$b" "$n")
    note=" (repeated; first run $first)"
  fi
  [ "$verdict" = ok ] || status=1
  echo "| $c | $b | $n | $ratio | $limit | $verdict$note |"
done
exit $status
