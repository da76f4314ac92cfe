#!/usr/bin/env bash
# Runs trellis_bench_agent_postgres (bench/agent_postgres.cpp) inside a throw-away PostgreSQL
# cluster: pg_virtualenv (Debian's postgresql-common; as root or as an ordinary user) makes a
# new cluster on a free port, sets libpq's environment (PGHOST, PGPORT, PGUSER, PGPASSWORD,
# PGDATABASE) for the benchmark, and drops the cluster afterwards. The cluster runs with
# fsync=on and synchronous_commit=on, the settings a user's server has (pg_virtualenv's own
# default is fsync=off, which would make every commit free): every commit waits for its WAL
# to reach the disk. The benchmark prints the server's settings before it starts.
#
#   bench/run_postgres.sh [Google Benchmark flags...]
#   e.g. bench/run_postgres.sh --benchmark_repetitions=5 --benchmark_filter='commit|upsert'
#
# Environment (optional):
#   TRELLIS_BUILD_DIR   build tree to use or create (default: <repo>/build-bench, Release)
#   TRELLIS_BENCH_BIN   a trellis_bench_agent_postgres already built (skips the build)
# Output: the date, core count and load average before and after, then the benchmark's table
# and its summary (the figures behind issue 15's targets).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build_dir=${TRELLIS_BUILD_DIR:-$repo/build-bench}
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

need_tools pg_virtualenv
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "error: no PostgreSQL server installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
bin=${TRELLIS_BENCH_BIN:-}
if [ -z "$bin" ]; then
  build_bench trellis_bench_agent_postgres
  bin=$build_dir/bench/trellis_bench_agent_postgres
fi
[ -x "$bin" ] || { echo "error: no executable $bin" >&2; exit 1; }

echo "== $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
pg_virtualenv -o fsync=on -o synchronous_commit=on "$bin" "$@" || status=$?
echo "== done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
