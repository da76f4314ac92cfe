#!/bin/sh
# Runs the command given inside a throw-away PostgreSQL cluster (pg_virtualenv, from Debian's
# postgresql-common: a new cluster on a free port, PGHOST/PGPORT/PGUSER/PGPASSWORD set, dropped
# afterwards; works as root and as an ordinary user). Exits 77, which ctest reports as skipped
# (SKIP_RETURN_CODE), when there is no pg_virtualenv or no server to run: a missing server is a
# visible skip, never a silent pass. Extra server settings: WITH_POSTGRES_OPTIONS="-o fsync=on".
set -u
if ! command -v pg_virtualenv >/dev/null 2>&1; then
  echo "with_postgres: no pg_virtualenv (Debian: postgresql, postgresql-common): skipped" >&2
  exit 77
fi
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "with_postgres: no PostgreSQL server installed (Debian: postgresql): skipped" >&2
  exit 77
fi
# As root, pg_virtualenv makes its cluster under one fixed name (/etc/postgresql/*/regress) and
# refuses to start while another one exists, ours or anybody's (a benchmark run by hand): -t
# keeps ours in a temporary directory instead, as for ordinary users. pg_createcluster would
# then give every such cluster the first port free in its empty directory (5432): a free port
# is chosen here. Ours still take turns on a lock, as root (ctest also gives these tests the
# RESOURCE_LOCK "postgres", so they do not hold a slot while they wait).
port=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  candidate=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 30000 + 20000))
  if [ -e "/var/run/postgresql/.s.PGSQL.$candidate" ] || [ -e "/tmp/.s.PGSQL.$candidate" ]; then
    continue
  fi
  if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Htan "sport = :$candidate" 2>/dev/null)" ]; then
    continue
  fi
  port=$candidate
  break
done
[ -n "$port" ] && export PGPORT="$port"
lock=${TMPDIR:-/tmp}/trellis-pg_virtualenv.lock
if [ "$(id -u)" = 0 ] && command -v flock >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  exec flock "$lock" pg_virtualenv -t ${WITH_POSTGRES_OPTIONS:--o fsync=off} "$@"
fi
# shellcheck disable=SC2086
exec pg_virtualenv -t ${WITH_POSTGRES_OPTIONS:--o fsync=off} "$@"
