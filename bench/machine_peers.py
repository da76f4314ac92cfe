#!/usr/bin/env python3
"""Joins trellis_bench_machine's Google Benchmark JSON with the sm-cpp peer harness of the
same run (sm_peers_bench's JSON, sm_contended's text) into one Markdown table of key figures,
with issue 3's targets.

Single-threaded figures are CPU ns per send: the median aggregate over repetitions (or the
median of the runs when there was one repetition). Contended figures are total sends per
wall-clock second (real time), and the target is a ratio to the std::mutex baseline of the
same run. Exits 1 if a benchmark reported an error or an update was lost; a missed target
is printed, not an error.
"""

import argparse
import json
import re
import statistics
import sys

TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    """{run_name: row}, median aggregates preferred, else a row whose times are the medians
    of the runs; and the set of names whose runs reported an error."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"warning: cannot read {path}: {e}", file=sys.stderr)
        return {}, set(), {}
    medians, singles, errors = {}, {}, set()
    for b in doc.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if b.get("error_occurred"):
            errors.add(name)
            continue
        scale = TO_NS[b.get("time_unit", "ns")]
        row = dict(b, cpu_ns=b["cpu_time"] * scale, real_ns=b["real_time"] * scale)
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = row
        else:
            singles.setdefault(name, []).append(row)
    for name, rows in singles.items():
        if name not in medians:
            merged = dict(rows[0])
            for k, v in rows[0].items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    merged[k] = statistics.median(r[k] for r in rows)
            medians[name] = merged
    return medians, errors, doc.get("context", {})


def contended_text(path):
    """sm_contended's medians: {(form, threads): (M sends/s, overlapped M sends/s or None,
    cpu/wall or None)}"""
    res = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return res
    for line in lines:
        m = re.match(r"(.+?)\s+threads=(\d)\s+median\s+([\d.]+) M sends/s(.*)", line)
        if not m:
            continue
        form, threads, all_rounds, rest = m.group(1).strip(), int(m.group(2)), float(m.group(3)), m.group(4)
        over = re.search(r"([\d.]+) over the (\d+) rounds", rest)
        cpu = re.search(r"median cpu/wall ([\d.]+)", rest)
        res[(form, threads)] = (all_rounds,
                                float(over.group(1)) if over and int(over.group(2)) > 0 else None,
                                float(cpu.group(1)) if cpu else None)
    return res


def ns(rows, name, field="cpu_ns"):
    r = rows.get(name)
    return None if r is None else r.get(field)


def fmt_ns(v):
    return "—" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}")


def fmt_m(v):
    return "—" if v is None else f"{v / 1e6:.1f} M/s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trellis", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--contended", required=True)
    ap.add_argument("--load", default="?")
    a = ap.parse_args()

    t, t_err, ctx = load(a.trellis)
    p, p_err, _ = load(a.peers)
    c = contended_text(a.contended)
    failed = bool(t_err or p_err) or not t

    def peers(*forms, bench="LightTick"):
        cells = [f"{f} {fmt_ns(ns(p, f'{bench}<{f}>'))}" for f in forms]
        return ", ".join(cells)

    rows = []  # measure, trellis, baselines, peers, target, ok

    def single(measure, name, baselines, peer_cell, target):
        v = ns(t, name)
        ok = "—" if target is None or v is None else ("yes" if v <= target else "**no**")
        rows.append((measure, fmt_ns(v), ", ".join(f"{b} {fmt_ns(ns(t, 'baseline/' + b))}"
                                                   for b in baselines) or "—",
                     peer_cell, "—" if target is None else f"<= {target:g} ns", ok))

    single("StateMachine send, no observer (CPU ns)", "machine/StateMachine/send_fnptr",
           ["switch/send", "fnptr/send", "function/send"],
           peers("SwitchLight", "FnLight", "VariantLight", "MsmTuned", "StatechartLight"), 3)
    single("StateMachine send, lambda transition", "machine/StateMachine/send_lambda",
           ["switch/send"], "—", None)
    single("StateMachine send, one on_transition", "machine/StateMachine/on_transition/1",
           ["switch/on_transition"], peers("FnObsLight", "Signals2Light"), 10)
    single("StateMachine send, four on_transition", "machine/StateMachine/on_transition/4",
           [], "—", None)
    single("StateMachine send, state_is attached", "machine/StateMachine/state_is",
           ["switch/state_is"], "—", None)
    single("StateMachine rejected event", "machine/StateMachine/rejected",
           ["switch/rejected", "function/rejected"],
           peers("SwitchLight", "FnLight", "MsmTuned", "StatechartLight", bench="LightReject"), 3)
    single("ThreadSafeStateMachine send, uncontended", "machine/ThreadSafeStateMachine/send",
           ["mutex/send"], peers("MutexLight", "AtomicLight"), 15)

    for n in (1, 2, 4):
        tm = t.get(f"contended/ThreadSafeStateMachine/real_time/threads:{n}", {})
        bm = t.get(f"contended/baseline_mutex/real_time/threads:{n}", {})
        tv, bv = tm.get("sends_per_s"), bm.get("sends_per_s")
        lost = [x.get("lost") for x in (tm, bm) if x.get("lost") is not None]
        if any(x != 0 for x in lost):
            failed = True
        ratio = tv / bv if tv and bv else None
        overlap = (f"cpu/wall {tm.get('cpu_per_wall', float('nan')):.2f} vs "
                   f"{bm.get('cpu_per_wall', float('nan')):.2f}") if tm and bm else ""
        peer = []
        gb = p.get(f"Contended<MutexLight>/real_time/threads:{n}")
        if gb is not None:
            peer.append(f"Contended<MutexLight> {fmt_m(gb.get('items_per_second'))}")
        if (("mutex", n)) in c:
            allr, over, cw = c[("mutex", n)]
            s = f"sm_contended mutex {allr:.1f} M/s"
            if n == 2:
                s += f" (cpu/wall {cw:.2f}; overlapped rounds {'—' if over is None else f'{over:.1f} M/s'})"
            peer.append(s)
        target, ok = "0 lost", ("yes" if lost and all(x == 0 for x in lost) else "**no**")
        if n == 2:
            target = ">= 0.8x mutex, 0 lost"
            ok = "yes" if ok == "yes" and ratio is not None and ratio >= 0.8 else "**no**"
        rows.append((f"contended, {n} thread{'s' if n > 1 else ''} (total sends/s, wall)",
                     f"{fmt_m(tv)} (x{ratio:.2f} of mutex; lost {int(tm.get('lost', -1))}; {overlap})"
                     if ratio is not None else fmt_m(tv),
                     f"mutex {fmt_m(bv)} (lost {int(bm.get('lost', -1))})" if bm else "—",
                     "; ".join(peer) or "—", target, ok))

    for n in (1, 16, 256, 4096):
        name = f"machine/AsyncStateMachine/observed/{n}/process_time/real_time"
        base = f"baseline/async/observed/{n}/process_time/real_time"
        tr, br = t.get(name), t.get(base)

        def per(r):
            if r is None:
                return "—"
            return f"{fmt_ns(r['real_ns'] / n)} wall, {fmt_ns(r['cpu_ns'] / n)} process CPU"

        target = 100 if n == 256 else None
        ok = "—"
        if target is not None and tr is not None:
            ok = "yes" if tr["real_ns"] / n <= target else "**no**"
        rows.append((f"AsyncStateMachine, {n} sends then drain (ns per observed transition)",
                     per(tr), f"async {per(br)}",
                     peers("TbbAsyncLight") + " (CPU, waits every 256)" if n == 256 else "—",
                     "—" if target is None else f"<= {target} ns", ok))

    print(f"# trellis state machines beside sm-cpp (one run; load {a.load}; "
          f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz)")
    print()
    print("| measure | trellis | hand-written baseline (same binary) | sm-cpp peers (same run) "
          "| target | ok |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("Single-threaded rows: median CPU ns per send. Contended rows: all threads' sends per "
          "wall-clock second; cpu/wall near the thread count means the threads really ran at "
          "once (near 1: they took turns, so the run says little about contention).")
    for name in sorted(t_err):
        print(f"error: trellis {name} reported an error")
    for name in sorted(p_err):
        print(f"error: peer {name} reported an error")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
