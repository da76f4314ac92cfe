#!/usr/bin/env bash
# Two worker processes share draft_review_revise's runs on one store (issue 15, section 5), run
# by ctest:
#   workers_story_test.sh TRELLIS DRAFT_REVIEW_REVISE file|sqlite|postgresql://...
# file and sqlite make a fresh store in a temporary directory; a postgresql:// (or postgres://)
# URL names an empty database (a throw-away server's, pg_virtualenv).
# Four runs are enqueued; two workers (--slow: each step takes a moment, so neither can take
# every run) advance them to the approval gate, each some of them; `trellis approve` records a
# decision for each while the workers run, and the workers pick the runs up and finish them.
# SIGTERM then stops both gracefully.
set -euo pipefail

trellis=$1
drr=$2
kind=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/workers_story.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
case $kind in
  file) store=$dir/runs ;;
  sqlite) store=sqlite:$dir/runs.db ;;
  postgresql://* | postgres://*) store=$kind ;;
  *)
    echo "usage: $0 TRELLIS DRAFT_REVIEW_REVISE file|sqlite|postgresql://..." >&2
    exit 2
    ;;
esac
export TRELLIS_USER=ana
runs=(w-1 w-2 w-3 w-4)

fail() {
  {
    echo "FAIL ($kind): $*"
    for f in "$dir"/*.out; do [[ -s $f ]] && { echo "--- $(basename "$f"):"; cat "$f"; }; done
  } >&2
  exit 1
}
# x NAME WANT COMMAND...: runs COMMAND, output (both streams) to NAME.out; fails unless it
# exits with WANT.
x() {
  local name=$1 want=$2 rc=0
  shift 2
  "$@" >"$dir/$name.out" 2>&1 || rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited with $rc, not $want"
}
# statuses: "RUN STATUS" per run, from `trellis runs ls -o json`.
statuses() {
  "$trellis" --store "$store" -o json runs ls |
    python3 -c 'import json,sys; print(" ".join(r["run_id"] + "=" + r["status"] for r in json.load(sys.stdin)["runs"]))'
}
# until_all STATUS: waits (at most 30 s) until every run has STATUS.
until_all() {
  local want="" r
  for r in "${runs[@]}"; do want+="${want:+ }$r=$1"; done
  local end=$((SECONDS + 30))
  while ((SECONDS < end)); do
    [[ $(statuses) == "$want" ]] && return 0
    sleep 0.1
  done
  fail "the runs are not all $1: $(statuses)"
}

# Four runs, started in the background: Queued, nothing runs them yet.
for r in "${runs[@]}"; do
  x "enqueue-$r" 0 "$drr" --store "$store" enqueue "$r" --state "{\"request\":\"topic $r\"}"
done
[[ $(statuses) == "w-1=Queued w-2=Queued w-3=Queued w-4=Queued" ]] || fail "enqueue ran something: $(statuses)"

# Two workers, two threads each, until stopped.
for w in a b; do
  "$drr" --store "$store" --slow worker --name "worker-$w" --threads 2 --poll 50 --for 60 \
    >"$dir/worker-$w.out" 2>&1 &
  pids+=($!)
done

# Each run is drafted and reviewed, then waits at the gate; a person approves each, from the
# `trellis` command (which links no graph), while the workers run.
until_all WaitingApproval
for r in "${runs[@]}"; do
  request=$("$trellis" --store "$store" -o json runs show "$r" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["request"]["id"])')
  x "approve-$r" 0 "$trellis" --store "$store" approve "$r" --request "$request" --comment "go"
done
until_all Succeeded

# Graceful stop: both exit 0, and say why.
for p in "${pids[@]}"; do kill -TERM "$p"; done
for w in a b; do
  rc=0
  wait "${pids[0]}" || rc=$?
  pids=("${pids[@]:1}")
  [[ $rc == 0 ]] || fail "worker-$w exited with $rc, not 0"
  grep -q "^worker worker-$w stopped (signal): .* lost 0, errors 0" "$dir/worker-$w.out" ||
    fail "worker-$w did not stop gracefully without errors"
done

# Both workers advanced runs; each run was advanced to its gate once and, after its approval,
# to its end once, by one of them; every run did the three steps once each.
for w in a b; do
  grep -q "^advanced w-" "$dir/worker-$w.out" || fail "worker-$w advanced no run"
done
for r in "${runs[@]}"; do
  [[ $(cat "$dir"/worker-?.out | grep -c "^advanced $r WaitingApproval$") == 1 ]] ||
    fail "$r was not advanced to its gate exactly once"
  [[ $(cat "$dir"/worker-?.out | grep -c "^advanced $r Succeeded$") == 1 ]] ||
    fail "$r's approval was not picked up exactly once"
  done_steps=$("$trellis" --store "$store" -o json runs show "$r" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["done"])')
  [[ $done_steps == "['draft', 'review', 'revise']" ]] || fail "$r did $done_steps"
done
echo "ok"
