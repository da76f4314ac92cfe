#!/usr/bin/env bash
# The cost of including a trellis header: preprocessed lines and the wall time g++ takes to
# compile an empty main() that includes it (-std=c++20 -O2, the median of N runs, default 5).
#
#   bench/header_cost.sh [--baseline <checkout>] [--runs N] [header...]
#
# With --baseline, each header is measured in the baseline checkout too (its include/ dir),
# alternating baseline and this tree run by run, and the ratio is printed. A header the
# baseline does not have shows "-". Headers default to the issue 11 targets below.
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=""
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baseline="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) break ;;
  esac
done
headers=("$@")
if [ ${#headers[@]} -eq 0 ]; then
  headers=(trellis/reactive.hpp trellis/reactive/context.hpp trellis/machine/state_machine.hpp
           trellis/persist/durable_state_machine.hpp trellis/agent/graph.hpp trellis/trellis.hpp)
fi
cxx="${CXX:-g++}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# lines <include dir> <header>: preprocessed lines, or "-" when the header is not there.
lines() {
  [ -f "$1/$2" ] || { echo "-"; return; }
  printf '#include <%s>\nint main() {}\n' "$2" > "$work/t.cpp"
  "$cxx" -std=c++20 -O2 -I "$1" -E "$work/t.cpp" | wc -l
}
# seconds <include dir> <header>: one compile's wall time.
seconds() {
  printf '#include <%s>\nint main() {}\n' "$2" > "$work/t.cpp"
  local start end
  start=$(date +%s.%N)
  "$cxx" -std=c++20 -O2 -I "$1" -c "$work/t.cpp" -o "$work/t.o"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {print b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf '%-44s %10s %8s' header lines seconds
[ -n "$baseline" ] && printf ' %10s %8s %7s' "base lines" "base s" ratio
printf '\n'
for h in "${headers[@]}"; do
  new_times=() base_times=()
  have_base=""
  [ -n "$baseline" ] && [ -f "$baseline/include/$h" ] && have_base=1
  for _ in $(seq "$runs"); do
    [ -n "$have_base" ] && base_times+=("$(seconds "$baseline/include" "$h")")
    new_times+=("$(seconds include "$h")")
  done
  new=$(printf '%s\n' "${new_times[@]}" | median)
  printf '%-44s %10s %8.2f' "$h" "$(lines include "$h")" "$new"
  if [ -n "$baseline" ]; then
    if [ -n "$have_base" ]; then
      base=$(printf '%s\n' "${base_times[@]}" | median)
      printf ' %10s %8.2f %7.2f' "$(lines "$baseline/include" "$h")" "$base" \
        "$(awk -v a="$new" -v b="$base" 'BEGIN {print a / b}')"
    else
      printf ' %10s %8s %7s' - - -
    fi
  fi
  printf '\n'
done
echo "($cxx $("$cxx" -dumpfullversion), median of $runs, load: $(cut -d' ' -f1-3 /proc/loadavg))"
