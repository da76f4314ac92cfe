#!/usr/bin/env bash
# Checks examples/draft_review_revise on a fresh temporary store directory (run by ctest).
#   draft_review_revise_test.sh BINARY approve  run it (it pauses at the gate), approve: done
#   draft_review_revise_test.sh BINARY reject   run it, reject: the run fails, and stays failed
#   draft_review_revise_test.sh BINARY kill     start it with --slow and kill -9 it after its
#                                               first committed step; run it again: it resumes
#                                               without redoing that step; approve with --slow
#                                               and kill -9 it mid-revision: the approval was
#                                               committed first, so the rerun continues the
#                                               revision with it, without asking again
set -euo pipefail

bin=$1
mode=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/draft_review_revise.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
store=$dir/runs
run() { "$bin" --store "$store" "$@"; }  # in the foreground only: & would fork a subshell

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.out; do
    [[ -e $f ]] && { echo "--- $(basename "$f"):"; cat "$f"; }
  done
  exit 1
}

# The lines of a step's progress (timings vary, so they are replaced by "T").
steps() { sed -E 's/ [0-9]+\.[0-9] ms$/ T ms/' "$1"; }

paused_tail() {
  cat <<TEXT
[run-7] paused at review: approve the revision

draft:
  Trellis runs agent graphs that survive a crash. It checkpoints every step.
critique:
  Say what happens after a crash.
waiting for approval: revise the draft per the critique
  approve: draft_review_revise --store $store approve
  reject:  draft_review_revise --store $store reject "reason"
TEXT
}

first_run() {
  run >"$dir/first.out" || fail "the first run exited with $?"
  {
    echo "starting run-7 in $store"
    echo "  draft: writing a first version"
    echo "[run-7] step 1/50 draft ✓ T ms"
    echo "  review: reading the draft"
    echo "[run-7] step 2/50 review ✓ T ms"
    paused_tail
  } >"$dir/first.expected"
  steps "$dir/first.out" | diff -u "$dir/first.expected" - || fail "the first run's output differs"
}

approved_tail() {
  cat <<TEXT
[run-7] resumed at revise
  revise: applying the critique
[run-7] step 3/50 revise ✓ T ms
[run-7] succeeded after 3 steps

revision:
  Trellis runs agent graphs that survive a crash. It checkpoints every step. After a crash it resumes at the first uncommitted step.
done
TEXT
}

case $mode in
  approve)
    first_run
    run approve ana >"$dir/approve.out" || fail "approve exited with $?"
    { echo "run-7: approved by ana"; approved_tail; } >"$dir/approve.expected"
    steps "$dir/approve.out" | diff -u "$dir/approve.expected" - || fail "approve's output differs"
    run >"$dir/again.out" || fail "the run after the end exited with $?"
    grep -qx "run-7 has already succeeded (steps: draft, review, revise); remove $store to start over" \
      "$dir/again.out" || fail "a finished run was not reported as finished"
    ;;

  reject)
    first_run
    run reject "too vague" >"$dir/reject.out" || fail "reject exited with $?"
    {
      echo "run-7: rejected: too vague"
      echo "[run-7] failed (approval_rejected): rejected: too vague"
      echo
      echo "run-7 failed: rejected: too vague (approval_rejected)"
    } >"$dir/reject.expected"
    diff -u "$dir/reject.expected" "$dir/reject.out" || fail "reject's output differs"
    run approve >"$dir/late.out" && fail "approving a failed run succeeded"
    grep -q "not waiting for approval" "$dir/late.out" || fail "a late approve was not refused"
    run >"$dir/again.out" || fail "the run after the end exited with $?"
    grep -q "^run-7 has already failed (steps: draft, review)" "$dir/again.out" ||
      fail "a failed run was not reported as failed"
    ;;

  kill)
    "$bin" --store "$store" --slow >"$dir/killed.out" &
    pid=$!
    for ((tries = 0; tries < 300; ++tries)); do  # up to 30 s for the first step
      grep -q '^\[run-7\] step 1/50 draft' "$dir/killed.out" && break
      kill -0 "$pid" 2>/dev/null || fail "it exited before it was killed"
      sleep 0.1
    done
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    grep -q '^\[run-7\] step 1/50 draft' "$dir/killed.out" || fail "no first step within 30 s"
    grep -q 'paused' "$dir/killed.out" && fail "it paused before it was killed"

    run >"$dir/rerun.out" || fail "the run after kill -9 exited with $?"
    first=$(head -n 1 "$dir/rerun.out")
    grep -q '^  draft:' "$dir/rerun.out" && fail "the run after kill -9 redid the committed draft"
    if [[ $first == "resuming run-7 at review; committed steps skipped: draft" ]]; then
      {
        echo "$first"
        echo "[run-7] resumed at review"
        echo "  review: reading the draft"
        echo "[run-7] step 2/50 review ✓ T ms"
        paused_tail
      } >"$dir/rerun.expected"
    elif [[ $first == "run-7 is paused (steps done: draft, review)" ]]; then
      # The kill came after review's commit, before its lines: nothing is left to redo.
      { echo "$first"; paused_tail | tail -n +2; } >"$dir/rerun.expected"
    else
      fail "the run after kill -9 did not resume after the draft: '$first'"
    fi
    steps "$dir/rerun.out" | diff -u "$dir/rerun.expected" - ||
      fail "the run after kill -9 did not resume where it stopped"

    # Killed mid-revision: the decision was committed before the revision started, so the
    # rerun continues the revision with it (and says who approved), without a new prompt.
    "$bin" --store "$store" --slow approve ana >"$dir/killed2.out" &
    pid=$!
    for ((tries = 0; tries < 300; ++tries)); do
      grep -q '^  revise:' "$dir/killed2.out" && break
      kill -0 "$pid" 2>/dev/null || fail "approve exited before it was killed"
      sleep 0.1
    done
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    grep -q 'succeeded' "$dir/killed2.out" && fail "the revision finished before it was killed"
    run >"$dir/rerun2.out" || fail "the run after the second kill exited with $?"
    {
      echo "resuming run-7 at revise (approved by ana); committed steps skipped: draft, review"
      approved_tail
    } >"$dir/rerun2.expected"
    steps "$dir/rerun2.out" | diff -u "$dir/rerun2.expected" - ||
      fail "after a kill mid-revision the rerun did not continue the approved revision"
    run approve ana >"$dir/late.out" && fail "approving a finished run succeeded"
    grep -q "not waiting for approval" "$dir/late.out" || fail "a second approval was not refused"
    echo "killed after the draft and mid-revision; each rerun resumed at the uncommitted step"
    ;;

  *)
    echo "usage: $0 BINARY approve|reject|kill" >&2
    exit 2
    ;;
esac
echo "ok"
