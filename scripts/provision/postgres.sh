#!/usr/bin/env bash
# PostgreSQL 15 (Debian's postgresql-15): one throwaway cluster for the tests and the wire
# bench, initdb'd as an unprivileged user (`postgres` when run as root, else the caller),
# trust auth, listening on 127.0.0.1:$KOINII_PG_PORT (default 15432) only. Its data lives in
# $KOINII_PG_DIR (default /var/lib/koinii-pg as root, else $TMPDIR/koinii-pg-<uid>); delete
# that directory to start over. Exports KOINII_TEST_PG_URL.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
BIN=${KOINII_PG_BIN:-/usr/lib/postgresql/15/bin}
PORT=${KOINII_PG_PORT:-15432}
if is_root; then DIR=${KOINII_PG_DIR:-/var/lib/koinii-pg}; else DIR=${KOINII_PG_DIR:-${TMPDIR:-/tmp}/koinii-pg-$(id -u)}; fi
URL="postgres://postgres@127.0.0.1:$PORT/postgres"

[ -x "$BIN/postgres" ] || need_debs postgresql-15
[ -x "$BIN/postgres" ] || die "postgresql-15 is installed but $BIN/postgres is missing (set KOINII_PG_BIN)"

if ! "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
  checking && die "check: PostgreSQL is not up on 127.0.0.1:$PORT"
  if is_root; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    as_owner() { runuser -u postgres -- "$@"; }
  else
    as_owner() { "$@"; }
  fi
  mkdir -p "$DIR/run"
  is_root && chown -R postgres: "$DIR"
  if [ ! -f "$DIR/data/PG_VERSION" ]; then
    say "initdb $DIR/data"
    as_owner "$BIN/initdb" -D "$DIR/data" -A trust -U postgres --no-sync >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed (log above, $DIR/initdb.log)"; }
  fi
  # The server gets neither this script's stdout (the caller reads it to the end) nor stdin.
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -w -t 60 -l "$DIR/postgres.log" \
    -o "-p $PORT -k $DIR/run -c listen_addresses=127.0.0.1" start </dev/null >>"$DIR/pg_ctl.log" 2>&1 \
    || { tail -n 20 "$DIR/postgres.log" >&2; die "PostgreSQL did not start (log above, $DIR/postgres.log)"; }
  say "started PostgreSQL on 127.0.0.1:$PORT, data $DIR/data, log $DIR/postgres.log"
fi
export_env KOINII_TEST_PG_URL "$URL"
