#!/usr/bin/env bash
# The operator's story (issue 14, section 6), run by ctest: the `trellis` command (which links
# no graph) and the two agent examples (which embed the same commands through cli::main) on
# fresh FileStores.
#   operator_story_test.sh TRELLIS DRAFT_REVIEW_REVISE REFUND_AGENT
# start, list, show; approve from `trellis` while no process advances the run, then resume it
# with its program; fork and resume the fork; reconcile an at_most_once refund cut off by a
# kill, then resume it (paid once); cancel a run another process is advancing; delete.
set -euo pipefail

trellis=$1
drr=$2
refund=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/operator_story.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
export TRELLIS_USER=ana
docs=$dir/docs      # draft_review_revise's store
world=$dir/refunds  # refund_agent's DIR (its store is DIR/runs)

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
has() { grep -qF -- "$2" "$dir/$1.out" || fail "$1 does not say: $2"; }
field() {  # field STORE RUN PYTHON-EXPR-ON-d: a value from `trellis runs show -o json`
  "$trellis" --store "$1" -o json runs show "$2" | python3 -c "import json,sys; d=json.load(sys.stdin); print($3)"
}

# Start: the draft is written and reviewed, then the run pauses for a person.
x start 0 "$drr" --store "$docs"
has start "waiting for approval: revise the draft per the critique"
# List and show, from the `trellis` command.
x ls 0 "$trellis" --store "$docs" runs ls
grep -Eq '^run-7 +WaitingApproval +revise +2 ' "$dir/ls.out" || fail "runs ls does not show run-7 waiting (to go on at revise)"
x show 0 "$trellis" --store "$docs" runs show run-7
has show "  action:         revise the draft per the critique"
request=$(field "$docs" run-7 'd["request"]["id"]')
x approvals 0 "$trellis" --store "$docs" approvals ls
grep -Eq "^run-7 +$request +review " "$dir/approvals.out" || fail "approvals ls does not list run-7's request"

# Approve from `trellis` while nothing advances the run: it is only recorded (Queued).
x approve 0 "$trellis" --store "$docs" approve run-7 --request "$request" --comment "go"
has approve "run-7: request $request approved by ana"
[[ $(field "$docs" run-7 'd["run"]["status"]') == Queued ]] || fail "the approval ran the graph"
# Resume with the program that links the graph: the revision runs with the decision.
x resume 0 "$drr" --store "$docs" resume run-7
has resume "  revise: applying the critique"
has resume "run-7: Succeeded after 3 steps"
[[ $(field "$docs" run-7 'd["state"]["done"]') == "['draft', 'review', 'revise']" ]] || fail "the state is not the revised one"
x history 0 "$trellis" --store "$docs" runs history run-7 --diff
has history '  /revision: "" -> "Trellis runs agent graphs'

# Fork the run from its first checkpoint after the draft, and resume the fork: it reviews again.
x fork 0 "$trellis" --store "$docs" fork run-7 --at 1 --as run-8
x resume8 0 "$drr" --store "$docs" resume run-8
[[ $(field "$docs" run-8 'd["run"]["status"]') == WaitingApproval ]] || fail "the fork did not pause at review"

# Reconcile: the refund call is cut off by a kill after it was made, before its receipt.
x killed 137 env TRELLIS_FAILPOINT=effect.after_call "$refund" "$world" start r-6 60
x failed 3 "$refund" "$world" resume r-6
has failed "r-6 failed (reconciliation_required)"
key=$("$trellis" --store "$world/runs" -o json runs effects r-6 |
  python3 -c 'import json,sys; print(next(e["key"] for e in json.load(sys.stdin)["effects"] if e["name"] == "refund"))')
grep -q "^$key 60.00$" "$world/payments.ledger" || fail "the ledger does not hold the cut-off refund"
x reconcile 0 "$trellis" --store "$world/runs" reconcile r-6 --key "$key" --happened \
  --result '{"refund_id":"rf-1"}' --reason "payments ledger line 1"
x effects 0 "$trellis" --store "$world/runs" runs effects r-6
has effects "happened (by ana: payments ledger line 1)"
x paid 0 "$refund" "$world" resume r-6
has paid "done: refund rf-1 of 60.00 paid, receipt $world/receipts/r-6.txt, customer notified"
[[ $(wc -l <"$world/payments.ledger") == 1 ]] || fail "the refund was paid again"

# One node on its own: a dry step of the refund node pays nothing. Without a stub the refund is
# refused (exit 1, naming the effect); with one, the step answers from it; the ledger and the run
# are as they were.
x big 0 "$refund" "$world" start r-7 150
x appr 0 "$trellis" --store "$world/runs" approve r-7 --request \
  "$(field "$world/runs" r-7 'd["request"]["id"]')" --as ana
before=$(field "$world/runs" r-7 'd["run"]')
x dry 1 "$refund" "$world" step r-7 --node refund
has dry "refund"
x stub 0 "$refund" "$world" step r-7 --node refund --effect 'refund={"refund_id":"rf-stub"}'
[[ $(wc -l <"$world/payments.ledger") == 1 ]] || fail "a dry step paid"
[[ $(field "$world/runs" r-7 'd["run"]') == "$before" ]] || fail "a dry step changed the run"

# Cancel a run that another process is advancing: the request is committed, that process sees
# it between steps and stops the run (Cancelled, resumable).
"$drr" --store "$dir/slow" --slow >"$dir/slow.out" 2>&1 &
pid=$!
for ((tries = 0; tries < 300; ++tries)); do
  grep -q '^  draft:' "$dir/slow.out" && break
  sleep 0.1
done
x cancel 0 "$trellis" --store "$dir/slow" cancel run-7 --reason "wrong request"
has cancel "run-7: cancel requested"
wait "$pid" || true
pid=
[[ $(field "$dir/slow" run-7 'd["run"]["status"]') == Cancelled ]] || fail "the running run was not cancelled"
[[ $(field "$dir/slow" run-7 'd["cancel_requests"][0]["by"]') == ana ]] || fail "the cancel request does not say who"
x again 0 "$drr" --store "$dir/slow" resume run-7
[[ $(field "$dir/slow" run-7 'd["run"]["status"]') == WaitingApproval ]] || fail "the cancelled run did not resume"

# Delete the fork.
x delete 0 "$trellis" --store "$docs" delete run-8
x gone 3 "$trellis" --store "$docs" runs show run-8
echo "ok"
