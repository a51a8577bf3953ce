#!/usr/bin/env bash
# Runs a command with ORCHESTRATOR_TEST_PG_URL pointing at a PostgreSQL server.
# Uses the given URL when set; otherwise starts a throwaway cluster on 127.0.0.1
# and a free port (as the postgres user when run as root, since initdb refuses
# root) and stops it when the command ends, whatever its exit status.
set -euo pipefail

if [ -n "${ORCHESTRATOR_TEST_PG_URL:-}" ]; then
  exec "$@"
fi

bindir=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/pg_ctl" ] && bindir="$d"
done
if [ -z "$bindir" ] && command -v pg_ctl >/dev/null 2>&1; then
  bindir=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
fi
if [ -z "$bindir" ]; then
  echo "with-postgres: no pg_ctl found; install PostgreSQL or set ORCHESTRATOR_TEST_PG_URL" >&2
  exit 1
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    su postgres -s /bin/bash -c "$*"
  else
    bash -c "$*"
  fi
}

dir=$(mktemp -d /tmp/orchestrator-pg.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

stop() {
  as_owner "'$bindir/pg_ctl' -D '$dir/data' -m immediate stop" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

as_owner "'$bindir/initdb' -D '$dir/data' -A trust -U postgres --no-sync" >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_owner "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w \
  -o \"-k '$dir' -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\" start" \
  >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

export ORCHESTRATOR_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
set +e
"$@"
status=$?
exit $status
