#!/usr/bin/env bash
# The graph-file examples, run with the `trellis` command (issue 16, section 4), by ctest:
#   graphs_test.sh TRELLIS EXAMPLES_GRAPHS_DIR
# 1. both files validate;
# 2. research.yaml fans out over three sources, pauses for an approval, `trellis approve`
#    records it, `--graph FILE resume` writes the report;
# 3. the same run killed with SIGKILL during its fan-out (each search waits a moment): resumed,
#    it runs again only the items without a receipt (every finished item keeps its one call);
# 4. release.yaml routes its errors: the announcement's command does not exist, the graph goes
#    on (`on_error: continue`) and the run ends Succeeded, completed_with_errors; its
#    `checklist` node ran release-checklist.yaml as a child run (a subgraph), listed with it,
#    whose output the release's output carries;
# 5. the same killed (SIGKILL) inside its child run, resumed: the child is continued;
# 6. a subgraph's approval, approved on the parent and (another run) on the child.
set -euo pipefail

trellis=$1
graphs=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/graphs_test.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
export TRELLIS_USER=ana
store=$dir/runs
work=$dir/work

fail() {
  {
    echo "FAIL: $*"
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
# jq-free JSON reading: python3 is in Debian's base of every CI image we use.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

research=$graphs/research.yaml
release=$graphs/release.yaml
sources="[\"$graphs/sources/checkpoints.txt\", \"$graphs/sources/approvals.txt\", \"$graphs/sources/fanout.txt\"]"

# 1. validate
x validate 0 "$trellis" validate "$research" "$release" "$graphs/release-checklist.yaml"

# 2. a run to its approval, approved, resumed to the report
x run1 0 "$trellis" run "$research" --store "$store" --work-dir "$work" --run-id r-1 \
  --input topic=durable --input "sources=$sources"
x show1 0 "$trellis" --store "$store" runs show r-1 -o json
[[ $(json "$dir/show1.out" 'd["run"]["status"]') == WaitingApproval ]] || fail "r-1 is not waiting"
request=$(json "$dir/show1.out" 'd["request"]["id"]')
x approve1 0 "$trellis" --store "$store" approve r-1 --request "$request" --comment "ship it"
x resume1 0 "$trellis" --store "$store" --graph "$research" --work-dir "$work" resume r-1
x show1b 0 "$trellis" --store "$store" runs show r-1 -o json
[[ $(json "$dir/show1b.out" 'd["run"]["status"]') == Succeeded ]] || fail "r-1 did not succeed"
grep -q "reviewed by ana" "$work/r-1/report.md" || fail "the report does not name the reviewer"
# Each item's result is exec's {exit_code, stdout, ...}: 2, 2 and 0 matching lines.
[[ $(grep -o '"stdout":"[0-9]*' "$work/r-1/report.md" | tr '\n' ' ') == '"stdout":"2 "stdout":"2 "stdout":"0 ' ]] ||
  fail "the report's counts are not 2, 2, 0"

# 3. killed during the fan-out, resumed: only unfinished items run again
"$trellis" run "$research" --store "$store" --work-dir "$work" --run-id r-2 \
  --input topic=durable --input "sources=$sources" --input pause=1 >"$dir/run2.out" 2>&1 &
pids+=($!)
finished=0
for _ in $(seq 1 200); do
  if "$trellis" --store "$store" runs effects r-2 -o json >"$dir/effects2.out" 2>/dev/null; then
    finished=$(json "$dir/effects2.out" 'sum(1 for e in d["effects"] if e["status"] == "succeeded")')
    [[ $finished -ge 1 ]] && break
  fi
  sleep 0.1
done
[[ $finished -ge 1 ]] || fail "no item of r-2 finished"
kill -9 "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true
before=$(json "$dir/effects2.out" \
  '" ".join(sorted(e["key"] for e in d["effects"] if e["status"] == "succeeded"))')
x resume2 0 "$trellis" --store "$store" --graph "$research" --work-dir "$work" resume r-2
x effects2b 0 "$trellis" --store "$store" runs effects r-2 -o json
for key in $before; do
  issued=$(json "$dir/effects2b.out" "[e['issued'] for e in d['effects'] if e['key'] == '$key'][0]")
  [[ $issued == 1 ]] || fail "item $key, finished before the kill, was called again ($issued calls)"
done
[[ $(json "$dir/effects2b.out" 'len(d["effects"])') == 3 ]] || fail "r-2 does not have 3 items"
[[ $(json "$dir/effects2b.out" 'sum(1 for e in d["effects"] if e["issued"] > 1)') -le 1 ]] ||
  fail "more than the item in flight was called twice"
x show2 0 "$trellis" --store "$store" runs show r-2 -o json
[[ $(json "$dir/show2.out" 'd["run"]["status"]') == WaitingApproval ]] || fail "r-2 did not reach review"

# 4. error routing
x run3 0 "$trellis" run "$release" --store "$store" --work-dir "$work" --run-id r-3 \
  --input version=1.4.0
x show3 0 "$trellis" --store "$store" runs show r-3 -o json
[[ $(json "$dir/show3.out" 'd["run"]["status"]') == Succeeded ]] || fail "r-3 did not succeed"
[[ $(json "$dir/show3.out" 'd["run"]["reason"]') == completed_with_errors ]] ||
  fail "r-3 is not completed_with_errors"
grep -q "announce" "$dir/show3.out" || fail "r-3's detail does not name the failed node"
x ls3 0 "$trellis" --store "$store" runs ls -o json
[[ $(json "$dir/ls3.out" '" ".join(sorted(r["run_id"] for r in d["runs"] if r["run_id"].startswith("r-3")))') == \
  "r-3 r-3.checklist.3" ]] || fail "runs ls does not list r-3 and its child run r-3.checklist.3"
x show3c 0 "$trellis" --store "$store" runs show r-3.checklist.3 -o json
[[ $(json "$dir/show3c.out" 'd["run"]["status"]') == Succeeded ]] || fail "the checklist did not succeed"
[[ $(json "$dir/show3.out" 'd["state"]["output"]["notes"]') == "Release 1.4.0" ]] ||
  fail "r-3's output does not carry the checklist's notes"
# 5. a subgraph under kill -9: the process dies right after the checklist's second step
#    commits (commits: tests, changelog, check, then the child's semver and notes); resumed, the
#    release's `checklist` node continues the same child run (no second child, no step of it
#    run again) and the release ends as before.
rc=0
TRELLIS_FAILPOINT="step.after_commit@5" "$trellis" run "$release" --store "$store" \
  --work-dir "$work" --run-id r-5 --input version=1.5.0 >"$dir/run5.out" 2>&1 || rc=$?
[[ $rc == 137 ]] || fail "r-5 was not killed at its fifth commit (exit $rc)"
x show5c 0 "$trellis" --store "$store" runs show r-5.checklist.3 -o json
[[ $(json "$dir/show5c.out" 'd["run"]["step"]') == 2 ]] || fail "the checklist is not at its third step"
x resume5 0 "$trellis" --store "$store" --graph "$release" --work-dir "$work" resume r-5
x show5 0 "$trellis" --store "$store" runs show r-5 -o json
[[ $(json "$dir/show5.out" 'd["state"]["output"]["notes"]') == "Release 1.5.0" ]] ||
  fail "r-5's output does not carry the checklist's notes"
x ls5 0 "$trellis" --store "$store" runs ls -o json
[[ $(json "$dir/ls5.out" '" ".join(sorted(r["run_id"] for r in d["runs"] if r["run_id"].startswith("r-5")))') == \
  "r-5 r-5.checklist.3" ]] || fail "r-5 has other child runs than r-5.checklist.3"
x effects5 0 "$trellis" --store "$store" runs effects r-5.checklist.3 -o json
[[ $(json "$dir/effects5.out" 'max(e["issued"] for e in d["effects"])') == 1 ]] ||
  fail "a step of the checklist ran again after the kill"
# 6. an approval inside a subgraph surfaces on the parent: approved on the parent, the
#    decision reaches the child; approved on the child, the parent goes on without one.
mkdir -p "$dir/ship/sub"
cat >"$dir/ship/parent.yaml" <<'YAML'
trellis_graph: 1
name: ship
version: "1"
start: sign
inputs:
  version: {type: string, required: true}
permissions: []
nodes:
  sign:
    subgraph: {graph: sub/signoff.yaml, inputs: {version: "${inputs.version}"}}
    assign: {by: "${result.by}"}
    next: done
  done:
    return: {signed_by: "${state.by}"}
YAML
cat >"$dir/ship/sub/signoff.yaml" <<'YAML'
trellis_graph: 1
name: signoff
version: "1"
start: ask
inputs:
  version: {type: string, required: true}
permissions: []
nodes:
  ask:
    approval: {request: "Ship ${inputs.version}?", proposed_input: {version: "${inputs.version}"}}
    assign: {by: "${decision.reviewer}"}
    next: done
  done:
    return: {by: "${state.by}"}
YAML
ship=$dir/ship/parent.yaml
x run6 0 "$trellis" run "$ship" --store "$store" --work-dir "$work" --run-id s-1 --input version=2.0.0
x show6 0 "$trellis" --store "$store" runs show s-1 -o json
[[ $(json "$dir/show6.out" 'd["request"]["action"]') == "Ship 2.0.0?" ]] ||
  fail "s-1 does not surface its child's request"
x approve6 0 "$trellis" --store "$store" approve s-1 --request "$(json "$dir/show6.out" 'd["request"]["id"]')"
x resume6 0 "$trellis" --store "$store" --graph "$ship" --work-dir "$work" resume s-1
x show6b 0 "$trellis" --store "$store" runs show s-1 -o json
[[ $(json "$dir/show6b.out" 'd["state"]["output"]["signed_by"]') == ana ]] ||
  fail "the decision on s-1 did not reach its child"
x run7 0 "$trellis" run "$ship" --store "$store" --work-dir "$work" --run-id s-2 --input version=2.0.1
x show7 0 "$trellis" --store "$store" runs show s-2.sign.0 -o json
x approve7 0 "$trellis" --store "$store" approve s-2.sign.0 --request "$(json "$dir/show7.out" 'd["request"]["id"]')" --as bo
grep -q "s-2 waited on it (a subgraph) and goes on with it" "$dir/approve7.out" ||
  fail "approving s-2.sign.0 does not say that s-2 goes on with it"
x resume7 0 "$trellis" --store "$store" --graph "$ship" --work-dir "$work" resume s-2
x show7b 0 "$trellis" --store "$store" runs show s-2 -o json
[[ $(json "$dir/show7b.out" 'd["state"]["output"]["signed_by"]') == bo ]] ||
  fail "s-2 did not go on after its child was approved"
echo "graphs: all good"
