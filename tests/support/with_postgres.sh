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
# shellcheck disable=SC2086
exec pg_virtualenv ${WITH_POSTGRES_OPTIONS:--o fsync=off} "$@"
