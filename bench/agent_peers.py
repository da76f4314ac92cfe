#!/usr/bin/env python3
"""Joins trellis_bench_agent's JSON (Google Benchmark, --benchmark_out) and the LangGraph.js
harness's JSON (bench.mjs --json) into one Markdown table of the key figures, with issue 5's
targets and a verdict for each.

    agent_peers.py TRELLIS_JSON LANGGRAPH_JSON

A missing LangGraph.js figure (SQLite not available, the harness failed) is shown as "-".
Exits 1 if a trellis benchmark reported an error or a figure behind a target is missing.
"""

import json
import re
import sys
from collections import defaultdict
from statistics import median


def load_trellis(path):
    """{(case, counter): value}: the median over repetitions (aggregate 'median' if present)."""
    with open(path) as f:
        data = json.load(f)
    samples = defaultdict(list)
    medians = {}
    errors = []
    for b in data.get("benchmarks", []):
        m = re.match(r"^((?:agent|baseline)/[A-Za-z0-9_]+(?:/[A-Za-z]+Store)?)", b.get("run_name", b["name"]))
        if not m:
            continue
        case = m.group(1)
        if b.get("error_occurred"):
            errors.append(f"{case}: {b.get('error_message', '?')}")
            continue
        for key, value in b.items():
            if not (key.startswith("time_per_") or key.endswith("_bytes_per_step")):
                continue
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[(case, key)] = float(value)
            else:
                samples[(case, key)].append(float(value))
    figures = {k: median(v) for k, v in samples.items()}
    figures.update(medians)
    return figures, errors, data.get("context", {})


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    t, errors, context = load_trellis(sys.argv[1])
    try:
        with open(sys.argv[2]) as f:
            lg = json.load(f)
    except (OSError, ValueError) as e:
        print(f"warning: no LangGraph.js figures ({e})", file=sys.stderr)
        lg = {}

    def tr(case, counter, scale=1e6):
        v = t.get((case, counter))
        return None if v is None else v * scale

    def peer(section, key, field, scale=1.0):
        v = lg.get(section, {}).get(key, {}).get(field)
        return None if v is None else v * scale

    n = lg.get("n_loop_steps") or 1000

    def fmt(v, digits=1):
        if v is None:
            return "-"
        return f"{v:,.{digits}f}"

    rows = []  # (figure, trellis, langgraph, target text, verdict)
    missing = False

    def row(label, value, peer_value, target=None, limit=None, digits=1):
        nonlocal missing
        verdict = ""
        if limit is not None:
            if value is None:
                verdict, missing = "no figure", True
            else:
                verdict = "met" if value <= limit else "MISSED"
        rows.append((label, fmt(value, digits), fmt(peer_value, digits), target or "", verdict))

    mem_step = tr("agent/loop/MemoryStore", "time_per_step")
    row("loop, us/step, MemoryStore (LG: MemorySaver, sync)", mem_step,
        peer("loop", "memory/sync", "us_per_step"), "<= 5 us", 5.0, 2)
    sq_step = tr("agent/loop/SqliteStore", "time_per_step")
    sq_base = tr("baseline/sqlite_upsert_commit", "time_per_step")
    row("loop, us/step, SqliteStore FULL (LG: SqliteSaver file, sync)", sq_step,
        peer("loop", "sqlite-file/sync", "us_per_step"), "", None, 0)
    row("  baseline: raw sqlite3 upsert-commit, WAL, FULL, us", sq_base, None, "", None, 0)
    row("  SqliteStore / baseline", None if not (sq_step and sq_base) else sq_step / sq_base, None,
        "<= 1.3x", 1.3, 2)
    fs_step = tr("agent/loop/FileStore", "time_per_step")
    fs_base = tr("baseline/append_fdatasync", "time_per_step")
    row("loop, us/step, FileStore", fs_step, None, "", None, 0)
    row("  baseline: raw write + fdatasync append, us", fs_base, None, "", None, 0)
    row("  FileStore / baseline", None if not (fs_step and fs_base) else fs_step / fs_base, None,
        "<= 1.3x", 1.3, 2)
    row("loop + 4 KiB, us/step, MemoryStore (LG: MemorySaver)",
        tr("agent/loop_4k/MemoryStore", "time_per_step"),
        peer("loop_payload_4k", "memory/sync", "us_per_step"), "", None, 2)
    row("loop + 4 KiB, us/step, SqliteStore (LG: SqliteSaver file)",
        tr("agent/loop_4k/SqliteStore", "time_per_step"),
        peer("loop_payload_4k", "sqlite-file/sync", "us_per_step"), "", None, 0)
    row("loop + 4 KiB, us/step, FileStore", tr("agent/loop_4k/FileStore", "time_per_step"), None,
        "", None, 0)
    lg_bytes = peer("loop_payload_4k", "sqlite-file/sync", "db_bytes_after_run")
    lg_bytes = None if lg_bytes is None else lg_bytes / n
    row("4 KiB unchanged, bytes/step, FileStore journal",
        tr("agent/loop_4k/FileStore", "journal_bytes_per_step", 1), None, "<= 400", 400, 0)
    row("4 KiB unchanged, bytes/step, SqliteStore records (SQL sum)",
        tr("agent/loop_4k/SqliteStore", "record_bytes_per_step", 1), None, "<= 400", 400, 0)
    row("4 KiB unchanged, bytes/step, SqliteStore db file (LG: db file / steps)",
        tr("agent/loop_4k/SqliteStore", "db_bytes_per_step", 1), lg_bytes, "", None, 0)
    row("draft -> review -> revise, us/run, MemoryStore (LG: invoke3 MemorySaver, sync)",
        tr("agent/three/MemoryStore", "time_per_run"), peer("invoke3", "memory/sync", "us_per_invoke"),
        "", None, 1)
    row("draft -> review -> revise, us/run, SqliteStore (LG: invoke3 SqliteSaver file, sync)",
        tr("agent/three/SqliteStore", "time_per_run"),
        peer("invoke3", "sqlite-file/sync", "us_per_invoke"), "", None, 0)
    row("draft -> review -> revise, us/run, FileStore", tr("agent/three/FileStore", "time_per_run"),
        None, "", None, 0)
    row("interrupt + resume, us, MemoryStore (LG: hitl MemorySaver, sync)",
        tr("agent/hitl/MemoryStore", "time_per_round_trip"),
        peer("hitl", "memory/sync", "us_round_trip"), "<= 1000 us", 1000.0, 1)
    row("interrupt + resume, us, SqliteStore (LG: hitl SqliteSaver file, sync)",
        tr("agent/hitl/SqliteStore", "time_per_round_trip"),
        peer("hitl", "sqlite-file/sync", "us_round_trip"), "", None, 0)
    row("interrupt + resume, us, FileStore", tr("agent/hitl/FileStore", "time_per_round_trip"), None,
        "", None, 0)

    print("| figure | trellis | LangGraph.js | target | verdict |")
    print("| --- | ---: | ---: | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("trellis: medians over repetitions; MemoryStore rows are CPU time, disk rows wall time. "
          "LangGraph.js: median of its repetitions (wall time, performance.now()); "
          f"node {lg.get('node', '?')}, load {lg.get('loadavg_start', '?')} -> {lg.get('loadavg_end', '?')}; "
          f"trellis load {context.get('load_avg', '?')}.")
    if lg and not lg.get("sqlite_available", True):
        print(f"LangGraph.js ran without SQLite: {lg.get('sqlite_error')}")
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors or missing else 0


if __name__ == "__main__":
    sys.exit(main())
