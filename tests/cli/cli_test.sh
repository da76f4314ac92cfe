#!/usr/bin/env bash
# Drives the `trellis` command (run by ctest; docs/cli.md is the contract it checks).
#   cli_test.sh TRELLIS PROGRAM file|sqlite codes|story|bulk|worker|graphs
# PROGRAM embeds the same commands through cli::main and links a small graph
# (tests/cli/cli_test_program.cpp): it makes the runs; `trellis` (which does not link the graph)
# operates on them.
set -euo pipefail

trellis=$1
program=$2
kind=$3
mode=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/trellis_cli.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
if [[ $kind == sqlite ]]; then store=sqlite:$dir/runs.db; else store=$dir/runs; fi
export TRELLIS_USER=tester

fail() {
  {
    echo "FAIL ($kind $mode): $*"
    for f in "$dir"/*.out "$dir"/*.err; do
      [[ -s $f ]] && { echo "--- $(basename "$f"):"; cat "$f"; }
    done
  } >&2
  exit 1
}

# t NAME WANT ARGS...: `trellis --store $store ARGS`, stdout to NAME.out, stderr to NAME.err;
# fails unless it exits with WANT. p NAME WANT ARGS...: the same with the program.
n=0
t() {
  local name=$1 want=$2 rc=0
  shift 2
  "$trellis" --store "$store" "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  [[ $rc == "$want" ]] || fail "trellis $* exited with $rc, not $want"
}
p() {
  local name=$1 want=$2 rc=0
  shift 2
  "$program" --store "$store" "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  [[ $rc == "$want" ]] || fail "program $* exited with $rc, not $want"
}
# j NAME PYTHON: asserts PYTHON (d is NAME.out's JSON document, or its last line's) holds, and
# that every document of NAME.out is one docs/cli.schema.json describes: schema version 1, a
# known kind, every member the schema requires of that kind (and of the objects in its arrays).
schema=$(cd "$(dirname "$0")/../.." && pwd)/docs/cli.schema.json
j() {
  python3 -c '
import json, sys
schema = json.load(open(sys.argv[3]))
defs = schema["$defs"]
def resolve(s):
    return defs[s["$ref"].split("/")[-1]] if "$ref" in s else s
def check(value, s, where):
    s = resolve(s)
    for part in s.get("allOf", []):
        check(value, part, where)
    if s.get("type") == "object" and isinstance(value, dict):
        for m in s.get("required", []):
            assert m in value, f"{where}: no member {m}"
        for m, sub in s.get("properties", {}).items():
            if m in value and value[m] is not None:
                check(value[m], sub, where + "/" + m)
    if s.get("type") == "array" and isinstance(value, list):
        for i, v in enumerate(value):
            check(v, s["items"], f"{where}/{i}")
    if "enum" in s:
        allowed = s["enum"]
        assert value in allowed, f"{where}: {value!r} is not one of {allowed}"
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
for l in lines:
    doc = json.loads(l)
    assert doc["trellis_cli"] == 1, "no trellis_cli: 1"
    kind = doc["kind"]
    assert "doc_" + kind in defs, f"kind {kind} is not in the schema"
    check(doc, defs["doc_" + doc["kind"]], doc["kind"])
d = json.loads(lines[-1])
ok = eval(sys.argv[2])
sys.exit(0 if ok else 1)' "$dir/$1.out" "$2" "$schema" || fail "$1: $2 does not hold"
}
# err NAME TEXT: NAME.err is one line that contains TEXT.
err() {
  [[ $(wc -l <"$dir/$1.err") == 1 ]] || fail "$1: stderr is not one line"
  grep -qF -- "$2" "$dir/$1.err" || fail "$1: stderr does not say: $2"
}
status_of() {
  "$trellis" --store "$store" -o json runs show "$1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["status"])'
}
request_of() {
  "$trellis" --store "$store" -o json runs show "$1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["request"]["id"])'
}

case $mode in
  codes)
    # 2: usage (CLI11's parse errors too); --help is 0.
    t help 0 --help
    grep -q "approvals" "$dir/help.out" || fail "--help lists no commands"
    t subhelp 0 runs ls --help
    rc=0; "$trellis" >"$dir/none.out" 2>"$dir/none.err" || rc=$?
    [[ $rc == 2 ]] || fail "no arguments exited with $rc, not 2"
    t bogus 2 runs ls --bogus
    err bogus "--bogus"
    t badout 2 -o xml runs ls
    t nostore_cmd 2 runs frobnicate

    # 3: a mistyped store for a reading command; nothing is created.
    rc=0; "$trellis" --store "$dir/typo" runs ls >"$dir/typo.out" 2>"$dir/typo.err" || rc=$?
    [[ $rc == 3 ]] || fail "a mistyped FileStore path exited with $rc, not 3"
    err typo "$dir/typo"
    [[ ! -e $dir/typo ]] || fail "a reading command created $dir/typo"
    rc=0; "$trellis" --store "sqlite:$dir/typo.db" approvals ls >"$dir/typo2.out" 2>"$dir/typo2.err" || rc=$?
    [[ $rc == 3 ]] || fail "a mistyped SQLite path exited with $rc, not 3"
    [[ ! -e $dir/typo.db ]] || fail "a reading command created $dir/typo.db"
    rc=0; "$trellis" --store "$dir/typo" approve r --request 1 >"$dir/typo3.out" 2>"$dir/typo3.err" || rc=$?
    [[ $rc == 3 && ! -e $dir/typo ]] || fail "approve on a mistyped store exited with $rc or created it"
    : >"$dir/plain.txt"
    rc=0; "$trellis" --store "$dir/plain.txt" runs ls >"$dir/plain.out" 2>"$dir/plain.err" || rc=$?
    [[ $rc == 3 ]] || fail "a plain file as a store exited with $rc, not 3"

    # 1: another error (a store that cannot be opened: no server there).
    rc=0; "$trellis" --store postgresql://localhost/x runs ls >"$dir/pg.out" 2>"$dir/pg.err" || rc=$?
    [[ $rc == 1 ]] || fail "postgresql:// exited with $rc, not 1"
    err pg "PostgreSQL localhost"

    # The runs.
    p done 0 run r-done --state '{"route":"finish"}'
    p gate 0 run r-gate --state '{"route":"gate","count":7}'
    p exp 0 run r-exp --state '{"route":"expiring"}'
    p badstate 2 run r-bad --state '{"route": 5}'
    p badjson 2 run r-bad --state '{oops'
    err badjson "--state"

    t ls 0 runs ls
    grep -q "^r-gate  *WaitingApproval" "$dir/ls.out" || fail "runs ls does not list r-gate waiting"
    t lsj 0 -o json runs ls
    j lsj 'd["kind"] == "runs" and [r["run_id"] for r in d["runs"]] == ["r-done", "r-exp", "r-gate"]'
    j lsj '[r["status"] for r in d["runs"]] == ["Succeeded", "WaitingApproval", "WaitingApproval"]'
    t lsw 0 -o json runs ls --status waiting-approval --node gate
    j lsw '[r["run_id"] for r in d["runs"]] == ["r-gate"] and d["runs"][0]["request"] is not None'
    t lss 0 -o json runs ls --since 1h
    j lss 'len(d["runs"]) == 3'
    t lsf 0 -o json runs ls --since 2200-01-01T00:00:00Z
    j lsf 'd["runs"] == []'
    t badtime 2 runs ls --since yesterday
    err badtime "--since"
    t badstatus 2 runs ls --status Sleeping
    # Pages: after the last id of the page before, at most --limit; a graph prefix.
    t lsp1 0 -o json runs ls --limit 2
    j lsp1 '[r["run_id"] for r in d["runs"]] == ["r-done", "r-exp"]'
    t lsp2 0 -o json runs ls --limit 2 --after r-exp
    j lsp2 '[r["run_id"] for r in d["runs"]] == ["r-gate"]'
    fp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["fingerprint"][:6])' "$dir/lsj.out")
    t lsg 0 -o json runs ls --graph "$fp"
    j lsg 'len(d["runs"]) == 3'
    t lsg2 0 -o json runs ls --graph "x$fp"
    j lsg2 'd["runs"] == []'
    t badlimit 2 runs ls --limit many

    t show 0 -o json runs show r-gate
    j show 'd["kind"] == "run" and d["run"]["status"] == "WaitingApproval" and d["state"]["count"] == 7'
    j show 'd["request"]["action"] == "ship it" and d["request"]["proposed_input"] == {"count": 7}'
    j show 'd["request"]["risk_reason"] == "it goes out" and d["request"]["expires_at"] is None'
    j show 'd["request"]["asked_by"] == "gate" and d["cancel_requests"] == []'
    req=$(request_of r-gate)
    t approvals 0 -o json approvals ls
    j approvals '[(a["run_id"], a["id"]) for a in d["approvals"]] == [("r-exp", a0), ("r-gate", "'"$req"'")] if (a0 := d["approvals"][0]["id"]) else False'

    # 3: unknown run, unknown request.
    t unknown 3 runs show nope
    err unknown "nope"
    t unknown2 3 approve nope --request 1
    t unknownj 3 -o json runs history nope
    j unknownj 'd["kind"] == "error" and d["error"]["code"] == "agent.unknown_run" and d["error"]["exit"] == 3'
    t badreq 3 approve r-gate --request 99
    err badreq "r-gate"
    t badreq2 3 approve r-gate --request abc

    # 2: malformed JSON values name their option; nothing is written.
    t badinput 2 input r-gate --request "$req" --json '{"a":'
    err badinput "--json"
    [[ $(status_of r-gate) == WaitingApproval ]] || fail "a malformed --json changed the run"
    t badrun 2 runs show ../x

    # 5: expired.
    t expired 5 approve r-exp --request "$(request_of r-exp)"
    err expired "r-exp"
    [[ $(status_of r-exp) == WaitingApproval ]] || fail "an expired approval changed the run"

    # 0, then 4: a request decided is superseded.
    t approve 0 approve r-gate --request "$req" --as ana --comment "looks fine"
    grep -q "r-gate: request $req approved by ana" "$dir/approve.out" || fail "approve said: $(cat "$dir/approve.out")"
    # Without --graph the command cannot know whose run it is: it names both ways to go on.
    grep -qF "<program> resume r-gate (a graph file's run: trellis --graph FILE resume r-gate)" \
      "$dir/approve.out" || fail "approve's hint: $(cat "$dir/approve.out")"
    [[ $(status_of r-gate) == Queued ]] || fail "an approval did not leave the run Queued"
    t again 4 approve r-gate --request "$req"
    err again "$req"
    t againj 4 -o json reject r-gate --request "$req" --reason no
    j againj 'd["error"]["code"] == "agent.request_superseded" and d["error"]["exit"] == 4'

    # 4: cancelling a finished run; forking into an existing run.
    t cancel_done 4 cancel r-done
    err cancel_done "r-done"
    t fork_onto 4 fork r-done --at 0 --as r-gate
    p resume_waiting 4 resume r-exp
    err resume_waiting "r-exp"
    # 1: a store of a newer format is refused, named, and left as it was (read or write).
    newer=$dir/newer
    if [[ $kind == sqlite ]]; then
      cp "$dir/runs.db" "$newer.db"
      python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE trellis_schema SET version = 99"); c.commit(); c.close()' "$newer.db"
      newer_spec=sqlite:$newer.db
      snapshot() { sha256sum "$newer.db"; }
    else
      cp -r "$dir/runs" "$newer"
      python3 -c 'import json, sys; p = sys.argv[1] + "/@store.json"; d = json.load(open(p)); d["version"] = 99; open(p, "w").write(json.dumps(d))' "$newer"
      newer_spec=$newer
      snapshot() { (cd "$newer" && find . -type f -exec sha256sum {} + | sort; find . | sort); }
    fi
    before=$(snapshot)
    rc=0; "$trellis" --store "$newer_spec" runs ls >"$dir/newer.out" 2>"$dir/newer.err" || rc=$?
    [[ $rc == 1 ]] || fail "a newer store exited with $rc, not 1"
    err newer "99"
    rc=0; "$trellis" --store "$newer_spec" cancel r-gate >"$dir/newerw.out" 2>"$dir/newerw.err" || rc=$?
    [[ $rc == 1 ]] || fail "a write to a newer store exited with $rc, not 1"
    err newerw "99"
    [[ $(snapshot) == "$before" ]] || fail "a store of a newer format was changed"

    # Bulk forms without --dry-run or --yes are usage errors.
    t bulk 2 cancel --status Queued
    t gc_plain 2 gc --finished-before 1d
    ;;

  story)
    p gate 0 run r-1 --state '{"route":"gate"}'
    [[ $(status_of r-1) == WaitingApproval ]] || fail "r-1 does not wait"
    req=$(request_of r-1)
    # Approved from `trellis`, which does not link the graph: the run only becomes Queued.
    t approve 0 -o json approve r-1 --request "$req"
    j approve 'd["kind"] == "decision" and d["decision"] == "approve" and d["by"] == "tester" and d["status"] == "Queued"'
    [[ $(status_of r-1) == Queued ]] || fail "the approval ran the graph"
    p resume 0 -o json resume r-1
    j resume 'd["kind"] == "outcome" and d["status"] == "Succeeded" and d["state"]["approved_by"] == "tester"'
    t hist 0 -o json runs history r-1 --diff
    j hist '[c["status"] for c in d["checkpoints"]][-1] == "Succeeded" and any(c["decision"] and c["decision"]["by"] == "tester" for c in d["checkpoints"])'
    j hist 'any(ch["path"] == "/approved_by" and ch["old"] == "" and ch["new"] == "tester" for c in d["checkpoints"] for ch in c["changes"])'
    t histh 0 runs history r-1 --diff
    grep -q '  /approved_by: "" -> "tester"' "$dir/histh.out" || fail "history --diff shows no change of /approved_by"
    grep -q "(request $req approved by tester)" "$dir/histh.out" || fail "history --diff does not say who approved"
    t events 0 -o json runs events r-1
    j events 'd["kind"] == "events" and len(d["events"]) > 0 and all(b["seq"] > a["seq"] for a, b in zip(d["events"], d["events"][1:]))'
    t after 0 -o json runs events r-1 --after "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"][0]["seq"])' "$dir/events.out")"
    j after 'len(d["events"]) == '"$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["events"]) - 1)' "$dir/events.out")"
    t follow 0 -o json runs events r-1 --follow --poll 50  # a finished run: replayed, then it ends
    j follow 'd["kind"] == "event" and d["run_id"] == "r-1"'  # JSON lines, each checked

    # The run's hash chain (docs/formats.md, "Hash chain"): intact; then, in a FileStore, the
    # documented hash recomputed by a script, and checkpoint 0 changed by a careful forger (its
    # hash and its line's checksum recomputed): the next link is named broken, exit 6.
    t verify 0 runs verify r-1
    grep -q "^run 'r-1': intact: " "$dir/verify.out" || fail "runs verify: not intact"
    t verifyj 0 -o json runs verify r-1
    j verifyj 'd["kind"] == "chain" and d["intact"] and d["broken"] is None and d["from_seq"] == 0 and d["checkpoints"] >= 3'
    if [[ $kind == file ]]; then
      python3 - "$store/r-1/journal.jsonl" <<'PY' || fail "the documented hash does not hold, or the forger failed"
import hashlib, json, sys
path = sys.argv[1]
lines = open(path, encoding="utf-8").read().splitlines()
def canon(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
def hash_of(r):
    return hashlib.sha256(canon({k: v for k, v in r.items() if k != "hash"}).encode()).hexdigest()
first = json.loads(lines[0])
cp = dict(first["full"])
cp["seq"] = first["seq"]
assert hash_of(cp) == cp["hash"], "checkpoint 0's hash is not the documented one"
first["full"]["state"]["forged"] = True
cp["state"] = first["full"]["state"]
first["full"]["hash"] = hash_of(cp)
del first["checksum"]
body = canon(first)
lines[0] = body[:-1] + ',"checksum":"sha256:' + hashlib.sha256(body.encode()).hexdigest() + '"}'
open(path, "w", encoding="utf-8").write("\n".join(lines) + "\n")
PY
      t showforged 0 -o json runs show r-1  # the store reads the forged record: its checksum holds
      t broken 6 runs verify r-1
      # Checkpoint 1 is the first broken link: its prev_hash is not checkpoint 0's hash, or (a
      # delta record, whose prev_hash is implied by the record before it) its content no longer
      # matches its own hash.
      grep -Eq "broken at checkpoint 1: (its prev_hash is not the hash of checkpoint 0|its content does not match its hash)" "$dir/broken.out" ||
        fail "runs verify does not name checkpoint 1"
      t brokenj 6 -o json runs verify r-1
      j brokenj 'not d["intact"] and d["broken"]["record"] == "checkpoint" and d["broken"]["seq"] == 1'
    fi

    # Input answers a request with a value.
    p gate2 0 run r-2 --state '{"route":"gate"}'
    t input 0 input r-2 --request "$(request_of r-2)" --json '{"ok":[1,2]}'
    p resume2 0 -o json resume r-2
    j resume2 'd["state"]["answer"] == {"ok": [1, 2]}'
    # Reject fails the run.
    p gate3 0 run r-3 --state '{"route":"gate"}'
    t reject 0 reject r-3 --request "$(request_of r-3)" --reason "not now" --as bo
    [[ $(status_of r-3) == Failed ]] || fail "a rejection did not fail the run"

    # An at_most_once effect cut off by a crash: reconciled from `trellis`, resumed by the program.
    rc=0; TRELLIS_FAILPOINT=effect.after_call "$program" --store "$store" run r-pay --state '{"route":"pay"}' \
      >"$dir/killed.out" 2>"$dir/killed.err" || rc=$?
    [[ $rc == 137 ]] || fail "the failpoint did not kill the program ($rc)"
    p payresume 0 -o json resume r-pay
    j payresume 'd["status"] == "Failed" and d["reason"] == "reconciliation_required"'
    t effects 0 -o json runs effects r-pay
    j effects 'd["effects"][0]["name"] == "pay" and d["effects"][0]["status"] == "started" and d["effects"][0]["policy"] == "at_most_once"'
    key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["effects"][0]["key"])' "$dir/effects.out")
    t rec_usage 2 reconcile r-pay --key "$key" --happened --reason "ledger line 1"
    t rec_badjson 2 reconcile r-pay --key "$key" --happened --result '{x' --reason "ledger line 1"
    err rec_badjson "--result"
    t rec_both 2 reconcile r-pay --key "$key" --happened --did-not-happen --reason x
    t rec_wrong 4 reconcile r-1 --key "$key" --did-not-happen --reason x
    t rec 0 reconcile r-pay --key "$key" --happened --result '{"paid":"p-7"}' --reason "ledger line 1"
    [[ $(status_of r-pay) == Queued ]] || fail "a reconciliation did not leave the run Queued"
    t effects2 0 runs effects r-pay
    grep -q "happened (by tester: ledger line 1)" "$dir/effects2.out" || fail "runs effects shows no reconciliation"
    p payresume2 0 -o json resume r-pay
    j payresume2 'd["status"] == "Succeeded" and d["state"]["paid"] == "p-7"'

    # Fork: a new run from a checkpoint, resumed by the program.
    t fork 0 -o json fork r-1 --at 1 --as r-1b
    j fork 'd["kind"] == "fork" and d["run_id"] == "r-1b" and d["from"] == "r-1"'
    t fork_again 4 fork r-1 --at 1 --as r-1b
    t verifyfork 0 runs verify r-1b  # a fork starts a chain of its own
    t fork_missing 3 fork r-1 --at 999 --as r-1c
    p forkresume 0 -o json resume r-1b

    # Pictures: Mermaid and DOT from `trellis`; SVG through Graphviz's dot, a clear error without.
    t draw 0 runs draw r-1
    grep -q "^flowchart" "$dir/draw.out" || fail "runs draw printed no Mermaid flowchart"
    t drawdot 0 -o json runs draw r-1 --format dot
    j drawdot 'd["kind"] == "drawing" and "digraph" in d["text"]'
    if command -v dot >/dev/null; then
      t svg 0 runs draw r-1 --format svg
      grep -q "<svg" "$dir/svg.out" || fail "runs draw --format svg printed no SVG"
    fi
    rc=0; PATH=/nonexistent "$trellis" --store "$store" runs draw r-1 --format svg >"$dir/nodot.out" 2>"$dir/nodot.err" || rc=$?
    [[ $rc == 1 ]] || fail "svg without dot exited with $rc, not 1"
    err nodot "dot"
    t draw_missing 3 runs draw nope

    # One node on its own, dry: an effect without a receipt or stub is refused, a stub answers
    # it; nothing is written either way.
    p gate4 0 run r-s --state '{"route":"gate"}'
    seqs=$("$trellis" --store "$store" -o json runs history r-s | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["checkpoints"]))')
    p stepdry 1 step r-s --node pay
    err stepdry "pay"
    p stepstub 0 -o json step r-s --node pay --effect 'pay={"paid":"stub"}'
    j stepstub 'd["kind"] == "step" and not d["committed"] and d["next"] == {"kind": "goto", "node": "finish"} and d["effects"][0]["source"] == "stub" and d["state"]["paid"] == "stub"'
    p stepbad 2 step r-s --node pay --effect 'pay={nope'
    err stepbad "--effect pay"
    t effects_s 0 -o json runs effects r-s
    j effects_s 'd["effects"] == []'
    t hist_s 0 -o json runs history r-s
    j hist_s 'len(d["checkpoints"]) == '"$seqs"
    ;;

  bulk)
    # Cancel a run that another process is advancing: requested, then seen by that process.
    "$program" --store "$store" run r-slow --state '{"route":"loop"}' >"$dir/slow.out" 2>"$dir/slow.err" &
    pids+=($!)
    for ((i = 0; i < 100; ++i)); do
      [[ $(status_of r-slow 2>/dev/null || true) == Running ]] && break
      sleep 0.1
    done
    [[ $(status_of r-slow) == Running ]] || fail "r-slow did not start"
    t cancel_live 0 -o json cancel r-slow --reason "operator test"
    j cancel_live 'd["kind"] == "cancel" and d["request"] >= 1 and d["cancelled_now"] is False'
    wait "${pids[0]}" || fail "the program advancing r-slow exited with $?"
    pids=()
    [[ $(status_of r-slow) == Cancelled ]] || fail "the running run was not cancelled"
    t show 0 -o json runs show r-slow
    j show 'd["cancel_requests"][0]["by"] == "tester" and d["cancel_requests"][0]["handled"]'
    # Cancel a run nobody advances: cancelled now.
    p gate 0 run r-q --state '{"route":"gate"}'
    t cancel_now 0 -o json cancel r-q
    j cancel_now 'd["cancelled_now"] is True and d["status"] == "Cancelled"'
    # Bulk: --dry-run writes nothing; --yes acts.
    p gate2 0 run r-w1 --state '{"route":"gate"}'
    p gate3 0 run r-w2 --state '{"route":"gate"}'
    t dry 0 -o json cancel --status WaitingApproval --dry-run
    j dry 'd["kind"] == "cancel_many" and d["dry_run"] and [r["run_id"] for r in d["runs"]] == ["r-w1", "r-w2"]'
    [[ $(status_of r-w1) == WaitingApproval ]] || fail "--dry-run cancelled"
    t yes 0 -o json cancel --status WaitingApproval --yes
    [[ $(status_of r-w1) == Cancelled && $(status_of r-w2) == Cancelled ]] || fail "--yes did not cancel"
    # Delete and gc.
    p done 0 run r-d --state '{"route":"finish"}'
    t del 0 delete r-d
    t del_again 3 delete r-d
    t deldry 0 -o json delete --status Cancelled --dry-run
    j deldry 'd["dry_run"] and len(d["runs"]) == 4'
    p done2 0 run r-old --state '{"route":"finish"}'
    t gcdry 0 -o json gc --finished-before 2200-01-01T00:00:00Z --dry-run
    j gcdry '[r["run_id"] for r in d["runs"]] == ["r-old"]'
    t gcnone 0 -o json gc --finished-before 1d --yes --keep-last 1
    j gcnone 'd["runs"] == [] and d["keep_last"] == 1'
    t gc 0 -o json gc --finished-before 2200-01-01T00:00:00Z --yes
    t gone 3 runs show r-old
    ;;

  worker)
    # `trellis` links no graph: it offers worker and enqueue only to say why (usage, 2).
    t noworker 2 worker --for 1
    err noworker "worker needs the program's graph"
    t noenqueue 2 enqueue r-x
    err noenqueue "enqueue needs the program's graph"
    p bothmodes 2 worker --drain --for 1

    # enqueue: committed Queued, due at once or later (--at), with a priority; nothing runs.
    p e_fin 0 enqueue r-fin --state '{"route":"finish"}' --priority 3
    p e_gate 0 -o json enqueue r-gate --state '{"route":"gate"}'
    j e_gate 'd["kind"] == "enqueued" and d["status"] == "Queued" and d["priority"] == 0 and d["due"]'
    p e_exp 0 enqueue r-exp --state '{"route":"expiring"}' --priority 2
    p e_later 0 enqueue r-later --state '{"route":"finish"}' --priority 9 --at +1h
    p e_dup 4 enqueue r-fin
    err e_dup "r-fin"
    p e_badat 2 enqueue r-y --at 5m
    err e_badat "--at"
    p e_badstate 2 enqueue r-y --state '{"route": 5}'
    t e_none 3 runs show r-y
    t ls 0 -o json runs ls
    j ls '{r["run_id"]: (r["status"], r["priority"]) for r in d["runs"]} == {"r-exp": ("Queued", 2), "r-fin": ("Queued", 3), "r-gate": ("Queued", 0), "r-later": ("Queued", 9)}'
    j ls 'all(r["due"] for r in d["runs"]) and max(d["runs"], key=lambda r: r["due"])["run_id"] == "r-later"'
    t lst 0 runs ls
    grep -Eq '^r-later +Queued +start .* in (59|60)m +9$' "$dir/lst.out" || fail "runs ls does not show r-later due in an hour, priority 9"
    grep -Eq '^r-fin +Queued +start .* now +3$' "$dir/lst.out" || fail "runs ls does not show r-fin due now, priority 3"

    # --drain advances what is due, highest priority first, one run at a time, then exits: the
    # expired approval fails without a decision; r-later is not due; r-gate waits for a person.
    p drain 0 worker --drain
    [[ $(grep '^advanced ' "$dir/drain.out" | cut -d' ' -f2 | tr '\n' ' ') == "r-fin r-exp r-exp r-gate " ]] || fail "--drain did not advance r-fin, r-exp (twice), r-gate in that order"
    grep -q '^advanced r-exp Failed: nobody decided' "$dir/drain.out" || fail "the expired approval did not fail"
    grep -q 'stopped (drained): claimed 4, advanced 4, lost 0, errors 0' "$dir/drain.out" || fail "--drain's last line: $(tail -1 "$dir/drain.out")"
    [[ $(status_of r-fin) == Succeeded && $(status_of r-gate) == WaitingApproval ]] || fail "--drain left r-fin or r-gate elsewhere"
    [[ $(status_of r-later) == Queued ]] || fail "--drain advanced a run that is not due"

    # A run of another version of the graph is left alone and reported (once); --for ends.
    CLI_TEST_GRAPH_VERSION=2 p e_v2 0 enqueue r-v2 --state '{"route":"finish"}'
    p foreign 0 -o json worker --for 0.5 --poll 20
    j foreign 'd["kind"] == "worker_stopped" and d["why"] == "time" and d["foreign"] == 1 and d["advanced"] == 0'
    j foreign '[l for l in map(json.loads, open(sys.argv[1])) if l["kind"] == "worker_event"] == [l for l in map(json.loads, open(sys.argv[1])) if l["kind"] == "worker_event" and l["event"] == "foreign" and l["run_id"] == "r-v2"] != []'
    [[ $(status_of r-v2) == Queued ]] || fail "a worker advanced a run of another graph version"

    # A running worker picks up a decision recorded by `trellis`, and stops gracefully on
    # SIGTERM (exit 0, its last line says why).
    "$program" --store "$store" -o json worker --threads 2 --poll 50 --for 60 >"$dir/w.out" 2>"$dir/w.err" &
    pids+=($!)
    for ((i = 0; i < 200; ++i)); do grep -q worker_started "$dir/w.out" && break; sleep 0.05; done
    t approve 0 approve r-gate --request "$(request_of r-gate)"
    for ((i = 0; i < 200; ++i)); do [[ $(status_of r-gate) == Succeeded ]] && break; sleep 0.05; done
    [[ $(status_of r-gate) == Succeeded ]] || fail "the worker did not pick up the approval"
    kill -TERM "${pids[-1]}"
    rc=0; wait "${pids[-1]}" || rc=$?
    [[ $rc == 0 ]] || fail "a worker stopped by SIGTERM exited with $rc, not 0"
    j w 'd["kind"] == "worker_stopped" and d["why"] == "signal" and d["advanced"] >= 1 and d["errors"] == 0'
    j w 'any(l["kind"] == "worker_event" and l["event"] == "advanced" and l["run_id"] == "r-gate" and l["status"] == "Succeeded" for l in map(json.loads, open(sys.argv[1])))'

    # A second signal ends the worker at once (128 + SIGTERM), even in the middle of a step.
    p e_slow 0 enqueue r-slow --state '{"route":"slow"}'
    "$program" --store "$store" worker --poll 20 --for 60 >"$dir/w2.out" 2>"$dir/w2.err" &
    pids+=($!)
    for ((i = 0; i < 200; ++i)); do [[ $(status_of r-slow) == Running ]] && break; sleep 0.05; done
    [[ $(status_of r-slow) == Running ]] || fail "the worker did not start r-slow"
    kill -TERM "${pids[-1]}"
    # (once the first is handled: two signals sent together may arrive as one)
    for ((i = 0; i < 200; ++i)); do grep -q "signal again" "$dir/w2.err" && break; sleep 0.05; done
    grep -q "signal again" "$dir/w2.err" || fail "the worker did not say it stops gracefully"
    kill -TERM "${pids[-1]}"
    rc=0; wait "${pids[-1]}" || rc=$?
    [[ $rc == 143 ]] || fail "a worker given two SIGTERMs exited with $rc, not 143"
    ;;

  graphs)
    # Graph files (tests/cli/graphs): validate, run FILE, --graph FILE resume after approve,
    # step FILE (dry), draw FILE; the file actions write into --work-dir.
    graphs=$(cd "$(dirname "$0")" && pwd)/graphs
    work=$dir/work
    # q NAME WANT ARGS...: `trellis ARGS` without --store, in the empty directory $dir/cwd.
    mkdir "$dir/cwd"
    q() {
      local name=$1 want=$2 rc=0
      shift 2
      (cd "$dir/cwd" && "$trellis" "$@") >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
      [[ $rc == "$want" ]] || fail "trellis $* (in $dir/cwd) exited with $rc, not $want"
    }

    # validate: 0 for good files (warnings allowed), 1 with FILE:LINE:COL for a bad one; -o json
    # lists every diagnostic; nothing is written anywhere.
    q valid 0 validate "$graphs/note.yaml" "$graphs/gated.yaml"
    grep -qx "$graphs/note.yaml: valid" "$dir/valid.out" || fail "validate did not say note.yaml is valid"
    q invalid 1 validate "$graphs/note.yaml" "$graphs/bad.yaml"
    grep -q "^$graphs/bad.yaml:4:8: error: start names 'nowhere'.* \[unknown_node\]$" "$dir/invalid.err" ||
      fail "validate did not print bad.yaml:4:8: error: ... [unknown_node]"
    grep -q "^$graphs/bad.yaml:9:[0-9]*: error: .*'missing'" "$dir/invalid.err" ||
      fail "validate did not print every error of bad.yaml"
    q invalidj 1 -o json validate "$graphs/bad.yaml"
    j invalidj 'd["kind"] == "validation" and not d["ok"] and d["files"][0]["errors"] == 2'
    j invalidj '{(x["line"], x["column"], x["severity"], x["code"]) for x in d["diagnostics"] if x["line"] == 4} == {(4, 8, "error", "unknown_node")}'
    q missing 1 validate "$dir/nope.yaml"
    grep -q "nope.yaml.*error:.*\[load\]" "$dir/missing.err" || fail "validate of a missing file said: $(cat "$dir/missing.err")"
    [[ -z $(ls -A "$dir/cwd") ]] || fail "validate wrote into the current directory"

    # run FILE: durably in the store, the file actions in the run's work directory.
    t run 0 run "$graphs/note.yaml" --work-dir "$work" --run-id n-1 --input title=hello --input count=3
    grep -q "^n-1: Succeeded after 2 steps" "$dir/run.out" || fail "run FILE said: $(cat "$dir/run.out")"
    grep -q "^\[n-1\] step 1/[0-9]* write " "$dir/run.out" || fail "run FILE printed no progress lines"
    [[ $(cat "$work/n-1/note.txt") == "hello x3" ]] || fail "the run did not write its note"
    t show 0 -o json runs show n-1
    j show 'd["run"]["status"] == "Succeeded" and d["state"]["output"] == {"path": "note.txt", "title": "hello"}'
    t runid 0 -o json run "$graphs/note.yaml" --work-dir "$work" --input title=x
    j runid 'd["kind"] == "outcome" and __import__("re").fullmatch(r"note-\d{8}T\d{6}Z-[0-9a-f]{4}", d["run_id"]) is not None'
    # Inputs are typed by the file (a string input takes the text as it is): a missing or
    # ill-typed one is a usage error naming it, and no run is made.
    t text 0 -o json run "$graphs/note.yaml" --work-dir "$work" --run-id n-2 --input title=42
    j text 'd["state"]["inputs"] == {"title": "42", "count": 1}'
    t badinput 2 run "$graphs/note.yaml" --work-dir "$work" --run-id n-3 --input title=t --input count=many
    grep -q "note.yaml:[0-9]*:[0-9]*: error: input 'count'" "$dir/badinput.err" || fail "a bad input was not named: $(cat "$dir/badinput.err")"
    t noinput 2 run "$graphs/note.yaml" --work-dir "$work" --run-id n-3
    grep -q "input 'title'" "$dir/noinput.err" || fail "a missing input was not named"
    t undeclared 2 run "$graphs/note.yaml" --run-id n-3 --input title=t --input colour=red
    t none3 3 runs show n-3
    # Without --store: the FileStore "runs" and the work directory "trellis-work" in the
    # current directory.
    q here 0 run "$graphs/note.yaml" --run-id h-1 --input title=here
    [[ -d $dir/cwd/runs && $(cat "$dir/cwd/trellis-work/h-1/note.txt") == "here x1" ]] ||
      fail "run FILE without --store did not use ./runs and ./trellis-work"
    q noexist 2 run "$dir/nope.yaml"
    q nograph 2 resume n-1
    err nograph "--graph"

    # An approval-gated file graph: approved from `trellis`, resumed with --graph FILE.
    t gate 0 run "$graphs/gated.yaml" --work-dir "$work" --run-id g-1 --input what=ship
    [[ $(status_of g-1) == WaitingApproval ]] || fail "g-1 does not wait for its approval"
    t approve 0 approve g-1 --request "$(request_of g-1)" --as ana
    t badgraph 1 --graph "$graphs/bad.yaml" resume g-1
    grep -q "^$graphs/bad.yaml:4:8: error: " "$dir/badgraph.err" || fail "--graph with a bad file did not say where"
    [[ $(status_of g-1) == Queued ]] || fail "a bad --graph file changed the run"
    t resume 0 -o json --graph "$graphs/gated.yaml" --work-dir "$work" resume g-1
    j resume 'd["kind"] == "outcome" and d["status"] == "Succeeded" and d["state"]["output"] == {"reviewer": "ana"}'
    [[ $(cat "$work/g-1/approved.txt") == "ship by ana" ]] || fail "the resumed run did not write"
    # enqueue and worker with --graph FILE.
    t enqueue 0 --graph "$graphs/gated.yaml" enqueue g-2 --input what=later
    t drain 0 --graph "$graphs/gated.yaml" --work-dir "$work" worker --drain
    grep -q "^advanced g-2 WaitingApproval" "$dir/drain.out" || fail "the worker did not advance g-2"

    # step FILE: one node on a scratch run, dry: an effect needs a stub; nothing is written.
    q stepnostub 1 step "$graphs/note.yaml" --node write --input title=s
    err stepnostub "write_file"
    q step 0 -o json step "$graphs/note.yaml" --node write --input title=s --effect 'write_file={"path":"note.txt","size":4}'
    j step 'd["kind"] == "step" and not d["committed"] and d["next"] == {"kind": "goto", "node": "done"}'
    j step 'd["effects"][0]["source"] == "stub" and d["effects"][0]["args"]["content"] == "s x1\n" and d["state"]["state"] == {"path": "note.txt"}'
    q stepstate 0 -o json step "$graphs/gated.yaml" --node done --input what=w --state '{"reviewer":"bo"}'
    j stepstate 'd["next"] == {"kind": "halt"} and d["state"]["output"] == {"reviewer": "bo"}'
    q stepbad 2 step "$graphs/gated.yaml" --node done --input what=w --state '[1]'
    [[ $(ls -A "$dir/cwd") == "$(printf 'runs\ntrellis-work')" ]] || fail "step FILE wrote into the current directory"

    # draw FILE: Mermaid by default, DOT, SVG through Graphviz's dot.
    q draw 0 draw "$graphs/gated.yaml"
    grep -q "^flowchart" "$dir/draw.out" && grep -q '"ask"' "$dir/draw.out" || fail "draw FILE printed no Mermaid flowchart of gated.yaml"
    q drawdot 0 -o json draw "$graphs/gated.yaml" --format dot
    j drawdot 'd["kind"] == "graph_drawing" and d["name"] == "gated" and "digraph" in d["text"]'
    if command -v dot >/dev/null; then
      q drawsvg 0 draw "$graphs/gated.yaml" --format svg
      grep -q "<svg" "$dir/drawsvg.out" || fail "draw --format svg printed no SVG"
    fi
    q drawbad 1 draw "$graphs/bad.yaml"
    ;;

  *)
    echo "usage: $0 TRELLIS PROGRAM file|sqlite codes|story|bulk|worker|graphs" >&2
    exit 2
    ;;
esac
echo "ok"
