#!/usr/bin/env python3
"""Joins trellis's yardstick (Google Benchmark JSON) with alien-signals' results (the JSON
lines of `bench.mjs --lib alien`, one file per round) into one Markdown table.

trellis: CPU ns per iteration = the median aggregate over repetitions (or the single run
when there was one repetition). alien-signals: the median over rounds of each round's median
CPU sample, as bench.mjs itself reports it.
"""

import argparse
import json
import platform
import statistics
import sys

CASES = [
    "avoidablePropagation", "broadPropagation", "deepPropagation", "diamond", "mux",
    "repeatedObservers", "triangle", "unstable", "molBench", "cellx1000",
    "sbench_update1to1", "sbench_update1to1000", "cellx1000_build+dispose",
]
EXEMPT = {"molBench": "exempt (mostly fib(16))"}
TARGET_RATIO = 0.25
TSC_TARGET = 3.0
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def trellis_results(path):
    """{(context, case): (cpu ns per iteration, error message or None)}"""
    with open(path) as f:
        doc = json.load(f)
    medians, singles = {}, {}
    for b in doc["benchmarks"]:
        parts = b.get("run_name", b["name"]).split("/")
        if len(parts) != 3 or parts[0] != "yardstick":
            continue
        key = (parts[1], parts[2])
        err = b.get("error_message") if b.get("error_occurred") else None
        ns = b.get("cpu_time", float("nan")) * TO_NS[b.get("time_unit", "ns")]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = (ns, err)
        else:
            singles.setdefault(key, []).append((ns, err))
    for key, runs in singles.items():
        if key not in medians:
            errs = [e for _, e in runs if e]
            medians[key] = (statistics.median(ns for ns, _ in runs), errs[0] if errs else None)
    return medians, doc.get("context", {})


def alien_results(paths):
    """{case: (median CPU ns per iteration over rounds, all rounds ok)}"""
    rounds = {}
    for path in paths:
        with open(path) as f:
            for r in json.loads(f.read().strip().splitlines()[-1]):
                rounds.setdefault(r["case"], []).append((r["ns_cpu"], r["ok"]))
    return {c: (statistics.median(ns for ns, _ in v), all(ok for _, ok in v))
            for c, v in rounds.items()}


def fmt(ns):
    if ns != ns:  # NaN
        return "-"
    return f"{ns:,.0f}" if ns >= 100 else f"{ns:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trellis", required=True, help="Google Benchmark JSON of the yardstick")
    ap.add_argument("--node-version", default="?")
    ap.add_argument("--load", default="?", help="load average before -> after")
    ap.add_argument("alien", nargs="+", help="JSON line files of bench.mjs --lib alien")
    args = ap.parse_args()

    trellis, ctx = trellis_results(args.trellis)
    alien = alien_results(args.alien)

    print(f"{ctx.get('date', '?')}, {platform.node()}, {ctx.get('num_cpus', '?')} CPUs at "
          f"{ctx.get('mhz_per_cpu', '?')} MHz, load average {args.load}; "
          f"node {args.node_version}, {len(args.alien)} alien-signals round(s).")
    print("CPU time per iteration (one iteration = the case's Iteration line); trellis: median "
          "of the repetitions; alien-signals: median over rounds of the per-process median.")
    print()
    print("| case | trellis Context CPU ns/iter (median) | ThreadSafeContext "
          "| alien-signals CPU ns/iter | ratio trellis/alien "
          f"| target (<= {TARGET_RATIO}, molBench exempt) |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    missed, problems, tsc_ratios = [], [], []
    for case in CASES:
        ctx_ns, ctx_err = trellis.get(("Context", case), (float("nan"), "not run"))
        tsc_ns, tsc_err = trellis.get(("ThreadSafeContext", case), (float("nan"), "not run"))
        a_ns, a_ok = alien.get(case, (float("nan"), False))
        ratio = ctx_ns / a_ns if a_ns == a_ns and a_ns > 0 else float("nan")
        if ctx_err:
            problems.append(f"trellis Context {case}: {ctx_err}")
        if tsc_err:
            problems.append(f"trellis ThreadSafeContext {case}: {tsc_err}")
        if not a_ok:
            problems.append(f"alien-signals {case}: failed its checks or missing")
        if ctx_err or not a_ok:
            verdict = "error"
        elif case in EXEMPT:
            verdict = EXEMPT[case]
        elif ratio != ratio:
            verdict = "n/a"
        elif ratio <= TARGET_RATIO:
            verdict = "met"
        else:
            verdict = "**missed**"
            missed.append(case)
        if ctx_ns == ctx_ns and tsc_ns == tsc_ns and ctx_ns > 0:
            tsc_ratios.append((tsc_ns / ctx_ns, case))
        cell = lambda ns, err: ("ERROR " if err else "") + fmt(ns)
        print(f"| {case} | {cell(ctx_ns, ctx_err)} | {cell(tsc_ns, tsc_err)} "
              f"| {('FAIL ' if not a_ok else '') + fmt(a_ns)} "
              f"| {'-' if ratio != ratio else f'{ratio:.3f}'} | {verdict} |")
    print()
    if tsc_ratios:
        worst, worst_case = max(tsc_ratios)
        print(f"ThreadSafeContext / Context: at most {worst:.2f} ({worst_case}); "
              f"target <= {TSC_TARGET:g}.")
    print(f"Ratio target missed: {', '.join(missed) if missed else 'none'}.")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
