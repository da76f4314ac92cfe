#!/usr/bin/env bash
# Checks examples/refund_agent on a fresh temporary directory (run by ctest).
#   refund_agent_test.sh BINARY small      a refund under the threshold runs to the end: each
#                                          effect ran once; ledger, receipt and outbox hold it once
#   refund_agent_test.sh BINARY approve    over the threshold it waits, nothing paid; approved,
#                                          it is paid once; a second decision is refused
#   refund_agent_test.sh BINARY reject     rejected: the run fails, nothing is paid
#   refund_agent_test.sh BINARY replay     killed right after the refund's receipt was committed
#                                          (effect.after_receipt): resumed, the refund is replayed
#                                          from its receipt, not paid again; killed right after
#                                          the refund's step was committed (step.after_commit@2):
#                                          resumed, the refund step is not run at all
#   refund_agent_test.sh BINARY reconcile  killed during the refund call (effect.after_call): the
#                                          ledger has the call, the store no receipt; resumed, the
#                                          at_most_once refund is not re-run: the run fails with
#                                          reconciliation_required, naming the key in the ledger
#   refund_agent_test.sh BINARY reissue    killed during the notice (effect.after_call@3): resumed,
#                                          the at_least_once notice is re-issued under the same
#                                          key, and the mail service drops the duplicate
#   refund_agent_test.sh BINARY bad_args   bad arguments and unknown runs: a message, non-zero
set -euo pipefail

bin=$1
mode=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/refund_agent.XXXXXX")
trap 'rm -rf "$dir"' EXIT
world=$dir/agent  # the program's DIR: runs/, payments.ledger, receipts/, outbox.log
ledger=$world/payments.ledger
outbox=$world/outbox.log

# To stderr: fail may run in a $(...) whose stdout is captured (set -e then stops the script).
fail() {
  {
    echo "FAIL: $*"
    for f in "$dir"/*.out "$ledger" "$outbox"; do
      [[ -e $f ]] && { echo "--- $(basename "$f"):"; cat "$f"; }
    done
  } >&2
  exit 1
}

# run NAME WANT ARGS...: runs the program on $world with ARGS (and the environment settings in
# $extra, such as a failpoint), output to NAME.out; fails unless it exits with WANT (137: killed
# by SIGKILL).
extra=()
run() {
  local name=$1 want=$2 rc=0
  shift 2
  env "${extra[@]}" "$bin" "$world" "$@" >"$dir/$name.out" 2>&1 || rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited with $rc, not $want"
}

# The output with timings, keys and the directory made stable.
normal() {
  sed -E -e 's/ [0-9]+\.[0-9] ms$/ T ms/' -e 's/[0-9a-f]{64}/KEY64/g' \
    -e 's/key [0-9a-f]{12}/key KEY/g' -e "s|$world|DIR|g" "$1"
}
same() {  # same NAME: NAME.out, normalized, is NAME.expected
  normal "$dir/$1.out" | diff -u "$dir/$1.expected" - || fail "$1's output differs"
}
has() { grep -qxF -- "$2" "$dir/$1.out" || fail "$1 does not say: $2"; }
lacks() { ! grep -q -- "$2" "$dir/$1.out" || fail "$1 says what it must not: $2"; }

# The 12-digit key an output line gives an effect ("  effect NAME, key K: ...").
short_key() { sed -n -E "s/^  effect $2, key ([0-9a-f]{12}): .*/\1/p" "$dir/$1.out" | head -n 1; }
# The full key `show` lists for effect NAME, and its issued count and status.
show_field() {  # show_field NAME EFFECT FIELD(key|issued|status), from NAME.out
  awk -v e="$2" -v f="$3" '$1 == e && NF >= 6 {
    if (f == "key") print $NF; else if (f == "issued") print $5; else print $3 }' "$dir/$1.out"
}
# Ledger lines (refunds paid) under key $1, and in all.
paid_under() { grep -c "^$1 " "$ledger" 2>/dev/null || true; }
paid_total() { if [[ -e $ledger ]]; then wc -l <"$ledger"; else echo 0; fi; }
sent_under() { grep -c "^$1 " "$outbox" 2>/dev/null || true; }

# The full key of effect $2 from `show $1`, checked against the short key printed when it ran.
checked_key() {
  local run=$1 effect=$2 short=$3 full
  run "show-$run" 0 show "$run"
  full=$(show_field "show-$run" "$effect" key)
  [[ ${#full} == 64 ]] || fail "show $run lists no full key for $effect"
  [[ $full == "$short"* ]] || fail "$effect's printed key $short is not its stored key $full"
  echo "$full"
}

small_expected() {
  cat <<'TEXT'
starting r-1: a refund of 25.00
  plan: refund 25.00 for order r-1; no approval needed
[r-1] step 1/20 plan ✓ T ms
  payments: refunded 25.00 under key KEY (ledger line 1)
  effect refund, key KEY: ran
[r-1] step 2/20 refund ✓ T ms
  receipt: wrote DIR/receipts/r-1.txt
  effect write_receipt, key KEY: ran
[r-1] step 3/20 receipt ✓ T ms
  mail: sent the refund notice for order r-1
  effect notify, key KEY: ran
[r-1] step 4/20 notify ✓ T ms
[r-1] succeeded after 4 steps

done: refund rf-1 of 25.00 paid, receipt DIR/receipts/r-1.txt, customer notified
TEXT
}

paused_expected() {  # paused_expected RUN AMOUNT
  cat <<TEXT
starting $1: a refund of $2
  plan: refund $2 for order $1; over the approval threshold, a person signs off first
[$1] step 1/20 plan ✓ T ms
[$1] step 2/20 approval ✓ T ms
[$1] paused at approval: refund over 100.00

waiting for approval: refund $2 for order $1
  approve: refund_agent DIR approve $1 WHO
  reject:  refund_agent DIR reject $1 REASON
TEXT
}

case $mode in
  small)
    run start 0 start r-1 25
    small_expected >"$dir/start.expected"
    same start
    short=$(short_key start refund)
    grep -qxF "  payments: refunded 25.00 under key $short (ledger line 1)" "$dir/start.out" ||
      fail "the payment system was not called with the effect's key $short"
    key=$(checked_key r-1 refund "$short")
    [[ $(paid_total) == 1 && $(paid_under "$key") == 1 ]] || fail "the ledger does not hold one refund"
    grep -qxF "$key 25.00" "$ledger" || fail "the ledger's line is not '<key> 25.00'"
    for e in refund write_receipt notify; do
      [[ $(show_field show-r-1 "$e" status) == succeeded && $(show_field show-r-1 "$e" issued) == 1 ]] ||
        fail "show r-1 does not list $e as succeeded after one call"
    done
    has show-r-1 "r-1: succeeded, steps: 4; a refund of 25.00"
    has show-r-1 "effects: 3"
    notice=$(checked_key r-1 notify "$(short_key start notify)")
    [[ $(wc -l <"$outbox") == 1 && $(sent_under "$notice") == 1 ]] || fail "the outbox does not hold one notice"
    grep -qx "refund rf-1 of 25.00 for order r-1" "$world/receipts/r-1.txt" || fail "wrong receipt"
    run again 1 resume r-1
    has again "refund_agent: run 'r-1' has already succeeded (see: refund_agent $world show r-1)"
    ;;

  approve)
    run start 0 start r-2 250
    paused_expected r-2 250.00 >"$dir/start.expected"
    same start
    [[ $(paid_total) == 0 ]] || fail "something was paid before the approval"
    run early 1 resume r-2
    has early "refund_agent: run 'r-2' waits for approval: refund_agent $world approve r-2 WHO"
    run approve 0 approve r-2 ana
    {
      echo "r-2: approved by ana"
      echo "[r-2] resumed at approval"
      echo "[r-2] step 3/20 approval ✓ T ms"
      echo "  payments: refunded 250.00 under key KEY (ledger line 1)"
      echo "  effect refund, key KEY: ran"
      echo "[r-2] step 4/20 refund ✓ T ms"
      echo "  receipt: wrote DIR/receipts/r-2.txt"
      echo "  effect write_receipt, key KEY: ran"
      echo "[r-2] step 5/20 receipt ✓ T ms"
      echo "  mail: sent the refund notice for order r-2"
      echo "  effect notify, key KEY: ran"
      echo "[r-2] step 6/20 notify ✓ T ms"
      echo "[r-2] succeeded after 6 steps"
      echo
      echo "done: refund rf-1 of 250.00 paid, receipt DIR/receipts/r-2.txt, customer notified"
    } >"$dir/approve.expected"
    same approve
    key=$(checked_key r-2 refund "$(short_key approve refund)")
    [[ $(paid_total) == 1 && $(paid_under "$key") == 1 ]] || fail "the ledger does not hold one refund"
    has show-r-2 "r-2: succeeded, steps: 6; a refund of 250.00, approved by ana"
    grep -qx "approved by ana" "$world/receipts/r-2.txt" || fail "the receipt does not name ana"
    run twice 1 approve r-2 bob
    has twice "refund_agent: run 'r-2' has already succeeded (see: refund_agent $world show r-2)"
    [[ $(paid_total) == 1 ]] || fail "a second approval paid again"
    ;;

  reject)
    run start 0 start r-3 300
    paused_expected r-3 300.00 >"$dir/start.expected"
    same start
    run reject 3 reject r-3 "not eligible"
    {
      echo "r-3: rejected: not eligible"
      echo "[r-3] failed (approval_rejected): rejected: not eligible"
      echo
      echo "r-3 failed (approval_rejected)"
    } >"$dir/reject.expected"
    same reject
    run show 0 show r-3
    has show "r-3: failed (approval_rejected), steps: 2; a refund of 300.00"
    has show "effects: 0"
    [[ $(paid_total) == 0 && ! -e $outbox ]] || fail "a rejected refund was paid or announced"
    ;;

  replay)
    # Killed once the refund's receipt is committed, before its step is.
    extra=(TRELLIS_FAILPOINT=effect.after_receipt)
    run killed 137 start r-4 40
    extra=()
    lacks killed "effect refund"  # the kill came before the effect's line
    short=$(sed -n -E 's/^  payments: refunded 40.00 under key ([0-9a-f]{12}) .*/\1/p' "$dir/killed.out")
    [[ -n $short ]] || fail "the refund was not paid before the kill"
    key=$(checked_key r-4 refund "$short")
    has show-r-4 "r-4: stopped mid-run (resume it), steps: 1; a refund of 40.00"
    [[ $(show_field show-r-4 refund status) == succeeded ]] || fail "the receipt was not committed"
    run resume 0 resume r-4
    has resume "  effect refund, key $short: replayed from receipt (not called again)"
    lacks resume "payments:"
    has resume "done: refund rf-1 of 40.00 paid, receipt $world/receipts/r-4.txt, customer notified"
    [[ $(paid_total) == 1 && $(paid_under "$key") == 1 ]] || fail "the ledger does not hold one refund"
    run show 0 show r-4
    [[ $(show_field show refund issued) == 1 ]] || fail "the refund was issued again"

    # Killed once the refund's step is committed (plan is the first commit, refund the second):
    # the resume starts after it, so the refund is neither replayed nor paid.
    extra=(TRELLIS_FAILPOINT=step.after_commit@2)
    run killed2 137 start r-5 45
    extra=()
    has killed2 "  effect refund, key $(short_key killed2 refund): ran"
    run resume2 0 resume r-5
    has resume2 "resuming r-5 at receipt"
    lacks resume2 "effect refund"
    lacks resume2 "payments:"
    key5=$(checked_key r-5 refund "$(short_key killed2 refund)")
    [[ $(paid_total) == 2 && $(paid_under "$key5") == 1 ]] || fail "the ledger does not hold one refund for r-5"
    ;;

  reconcile)
    # Killed after the payment system was called, before the receipt: the call may have
    # happened (it did), and at_most_once never makes it again.
    extra=(TRELLIS_FAILPOINT=effect.after_call)
    run killed 137 start r-6 60
    extra=()
    short=$(sed -n -E 's/^  payments: refunded 60.00 under key ([0-9a-f]{12}) .*/\1/p' "$dir/killed.out")
    [[ -n $short ]] || fail "the refund call was not made before the kill"
    key=$(checked_key r-6 refund "$short")
    [[ $(show_field show-r-6 refund status) == started ]] || fail "the refund has a receipt"
    [[ $(paid_total) == 1 && $(paid_under "$key") == 1 ]] || fail "the ledger does not hold the one call"
    run resume 3 resume r-6
    has resume "  effect refund, key $short: started, no receipt: not re-run (at_most_once)"
    grep -q "^\[r-6\] failed (reconciliation_required): .*$key" "$dir/resume.out" ||
      fail "the failure does not name the key"
    has resume "r-6 failed (reconciliation_required)"
    has resume "  the refund under key $key may or may not have been paid"
    has resume "  payments ledger line 1: $key 60.00 -> it was paid, once; do not pay again"
    lacks resume "payments: refunded"
    [[ $(paid_total) == 1 && $(paid_under "$key") == 1 ]] || fail "the refund was paid again"
    run again 1 resume r-6
    has again "refund_agent: run 'r-6' has already failed (see: refund_agent $world show r-6)"
    run show 0 show r-6
    has show "r-6: failed (reconciliation_required), steps: 1; a refund of 60.00"
    has show "      payments ledger line 1: $key 60.00"
    [[ $(paid_total) == 1 && ! -e $outbox ]] || fail "the ledger or outbox changed after the failure"
    ;;

  reissue)
    # Killed during the third effect (refund, receipt, notify): the notice was sent, its
    # receipt not committed; at_least_once sends it again under the same key.
    extra=(TRELLIS_FAILPOINT=effect.after_call@3)
    run killed 137 start r-7 70
    extra=()
    has killed "  mail: sent the refund notice for order r-7"
    lacks killed "effect notify"
    run resume 0 resume r-7
    short=$(short_key resume notify)
    [[ -n $short ]] || fail "the resume printed no notify effect"
    has resume "  mail: key $short already sent: duplicate dropped"
    has resume "  effect notify, key $short: ran again (call 2 under the same key)"
    lacks resume "effect refund"
    lacks resume "payments:"
    key=$(checked_key r-7 notify "$short")
    [[ $(show_field show-r-7 notify issued) == 2 ]] || fail "show does not count two calls"
    [[ $(wc -l <"$outbox") == 1 && $(sent_under "$key") == 1 ]] || fail "the notice was sent twice"
    [[ $(paid_total) == 1 ]] || fail "the ledger does not hold one refund"
    ;;

  bad_args)
    run none 2
    grep -q "^usage: refund_agent DIR start RUN AMOUNT" "$dir/none.out" || fail "no usage line"
    for amount in abc -5 0 1.234 12. .5 1e3 99999999 " 5"; do
      run amount 2 start r-1 "$amount"
      has amount "refund_agent: '$amount' is not an amount: give a positive number with at most two decimals, up to 1000000 (like 25 or 249.90)"
    done
    run missing 2 start r-1
    grep -q "^usage:" "$dir/missing.out" || fail "a missing amount gave no usage line"
    run extra 2 start r-1 5 6
    run who 2 approve r-1
    run verb 2 refund r-1
    has verb "refund_agent: unknown command 'refund'"
    run id 2 start ../x 5
    grep -q "^refund_agent: '../x' is not a run id: " "$dir/id.out" || fail "a bad run id was taken"
    run unknown 1 show nope
    has unknown "refund_agent: no run 'nope' in $world"
    run unknown2 1 approve nope ana
    has unknown2 "refund_agent: no run 'nope' in $world"
    [[ $(paid_total) == 0 ]] || fail "bad arguments paid something"
    run start 0 start r-1 5
    run dup 1 start r-1 5
    has dup "refund_agent: run 'r-1' already exists in $world (see: refund_agent $world show r-1)"
    run late 1 approve r-1 ana
    has late "refund_agent: run 'r-1' has already succeeded (see: refund_agent $world show r-1)"
    [[ $(paid_total) == 1 ]] || fail "the ledger does not hold one refund"
    ;;

  *)
    echo "usage: $0 BINARY small|approve|reject|replay|reconcile|reissue|bad_args" >&2
    exit 2
    ;;
esac
echo "ok"
