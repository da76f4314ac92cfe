#!/usr/bin/env bash
# Checks examples/durable_counter on a fresh temporary sidecar (run by ctest).
#   durable_counter_test.sh BINARY twice  run it twice: the second run recovers epoch 3 and
#                                         counts on from there
#   durable_counter_test.sh BINARY kill   start it with --slow, kill -9 it after a few steps,
#                                         run it again: it recovers the last printed step (or the
#                                         one after it, if the kill came between its write and its
#                                         line) and counts on from there
set -euo pipefail

bin=$1
mode=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/durable_counter.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
sidecar=$dir/counter.json

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.out; do
    [[ -e $f ]] && { echo "--- $(basename "$f"):"; cat "$f"; }
  done
  exit 1
}

# The lines a run that starts at epoch $1 prints for $2 steps, after its first line.
expected_steps() {
  local from=$1 steps=$2 i
  for ((i = from + 1; i <= from + steps; ++i)); do
    echo "step $i acknowledged: counter = $i"
  done
  echo "done: counter = $((from + steps)), epoch $((from + steps))"
}

case $mode in
  twice)
    "$bin" "$sidecar" 3 >"$dir/first.out" || fail "the first run exited with $?"
    { echo "fresh start at $sidecar: counter = 0"; expected_steps 0 3; } >"$dir/first.expected"
    diff -u "$dir/first.expected" "$dir/first.out" || fail "the first run's output differs"

    "$bin" "$sidecar" 2 >"$dir/second.out" || fail "the second run exited with $?"
    { echo "recovered from $sidecar at epoch 3: counter = 3"; expected_steps 3 2; } \
      >"$dir/second.expected"
    diff -u "$dir/second.expected" "$dir/second.out" || fail "the second run's output differs"
    ;;

  kill)
    "$bin" "$sidecar" 1000 --slow >"$dir/killed.out" &
    pid=$!
    for ((tries = 0; tries < 300; ++tries)); do  # up to 30 s for three steps
      (($(grep -c acknowledged "$dir/killed.out" || true) >= 3)) && break
      kill -0 "$pid" 2>/dev/null || fail "it exited before it was killed"
      sleep 0.1
    done
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    last=$(grep acknowledged "$dir/killed.out" | tail -n 1 | sed -E 's/^step ([0-9]+) .*/\1/')
    if ! [[ $last =~ ^[0-9]+$ ]] || ((last < 3)); then
      fail "no third acknowledged step within 30 s"
    fi
    grep -q '^done' "$dir/killed.out" && fail "it finished before it was killed"

    "$bin" "$sidecar" 2 >"$dir/rerun.out" || fail "the run after kill -9 exited with $?"
    first=$(head -n 1 "$dir/rerun.out")
    [[ $first =~ ^recovered\ from\ .*\ at\ epoch\ ([0-9]+):\ counter\ =\ ([0-9]+)$ ]] ||
      fail "the run after kill -9 did not say it recovered: '$first'"
    epoch=${BASH_REMATCH[1]}
    ((epoch == last || epoch == last + 1)) ||
      fail "recovered epoch $epoch, but the last acknowledged step was $last"
    ((BASH_REMATCH[2] == epoch)) || fail "recovered counter ${BASH_REMATCH[2]} at epoch $epoch"
    expected_steps "$epoch" 2 >"$dir/rerun.expected"
    tail -n +2 "$dir/rerun.out" | grep -v '^removed .* temporary file' |
      diff -u "$dir/rerun.expected" - || fail "the run after kill -9 did not count on from $epoch"
    echo "killed after step $last; the next run recovered epoch $epoch and counted on"
    ;;

  *)
    echo "usage: $0 BINARY twice|kill" >&2
    exit 2
    ;;
esac
echo "ok"
