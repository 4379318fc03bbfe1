#!/bin/sh
# pg_server.sh: a throwaway PostgreSQL server for tests and benchmarks.
#
#   pg_server.sh start STATE [test|bench]   start one; prints its URL
#   pg_server.sh stop STATE                 stop it and delete its data
#   pg_server.sh url STATE                  print the URL of a running one
#   pg_server.sh restart STATE [SECONDS]    stop it (fast shutdown: sessions
#                                           are cut), stay down SECONDS (0),
#                                           start it again on the same port
#   pg_server.sh down STATE                 stop it (fast shutdown), keeping
#                                           its data and port
#   pg_server.sh up STATE                   start a server stopped by `down`
#
# STATE is a directory of ours (build/pgtest, say) holding only two small
# files: `url` and `dir`. The data and the unix socket live in a fresh
# directory under /tmp (`dir` names it): the socket path must stay short,
# and the `postgres` OS user must be able to reach it.
#
# initdb and postgres refuse to run as root, so as root they run as the
# `postgres` user (created by Debian's postgresql packages); as anyone else,
# as that user. The server listens on a unix socket in its directory and on
# 127.0.0.1 at a free port; "trust" authentication, for local tests only.
#
# `test` (the default) turns durability off (fsync, synchronous commit): a
# test never survives a machine crash anyway. `bench` keeps PostgreSQL's
# defaults, so measured commits cost what they cost in production.
set -eu

cmd=${1:-}
state=${2:-}
mode=${3:-test}
[ -n "$cmd" ] && [ -n "$state" ] || {
  echo "usage: $0 start|stop|url STATE [test|bench]" >&2
  exit 2
}

pgbin() {
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  echo "pg_server.sh: no PostgreSQL server found (/usr/lib/postgresql/*/bin/initdb): run make deps" >&2
  return 1
}

# Runs a server program as the user that may run it.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the server in $dir on $port with the options of $mode.
server_start() {
  if [ "$mode" = test ]; then
    durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  else
    durability=""
  fi
  as_pg "$(pgbin)/pg_ctl" start -D "$dir/data" -w -t 30 -l "$dir/server.log" \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 $durability" \
    >/dev/null 2>&1
}

stop() {
  [ -f "$state/dir" ] || return 0
  dir=$(cat "$state/dir")
  if [ -d "$dir/data" ]; then
    as_pg "$(pgbin)/pg_ctl" stop -D "$dir/data" -m immediate -w >/dev/null 2>&1 || true
  fi
  case "$dir" in /tmp/pawl-pg-*) rm -rf "$dir" ;; esac
  rm -f "$state/dir" "$state/url" "$state/port" "$state/mode"
}

case "$cmd" in
stop)
  stop
  ;;
url)
  cat "$state/url"
  ;;
restart | down | up)
  dir=$(cat "$state/dir")
  port=$(cat "$state/port")
  mode=$(cat "$state/mode")
  if [ "$cmd" != up ]; then
    as_pg "$(pgbin)/pg_ctl" stop -D "$dir/data" -m fast -w >/dev/null
  fi
  if [ "$cmd" = restart ]; then sleep "${3:-0}"; fi
  if [ "$cmd" != down ]; then
    server_start || {
      tail -20 "$dir/server.log" >&2
      exit 1
    }
  fi
  ;;
start)
  if [ "$mode" = test ] && [ -n "${PAWL_TEST_NO_PG:-}" ]; then
    echo "*** PAWL_TEST_NO_PG is set: every PostgreSQL test is SKIPPED ***"
    exit 0
  fi
  bin=$(pgbin)
  mkdir -p "$state"
  stop # a server left over from an interrupted run
  dir=$(mktemp -d /tmp/pawl-pg-XXXXXX)
  echo "$dir" >"$state/dir"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || {
      echo "pg_server.sh: no postgres user: install the postgresql packages (make deps)" >&2
      exit 1
    }
    chown postgres "$dir"
  fi
  chmod 700 "$dir"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
    --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  # A free port: try a few from a per-process starting point; a port taken
  # by another process makes the start fail fast, and we move on.
  port=$((20000 + $$ % 20000))
  tries=0
  while :; do
    if server_start; then
      break
    fi
    tries=$((tries + 1))
    if [ $tries -ge 20 ]; then
      echo "pg_server.sh: could not start PostgreSQL:" >&2
      tail -20 "$dir/server.log" >&2 || true
      exit 1
    fi
    port=$((port + 1))
  done
  url="postgresql://postgres@/postgres?host=$dir&port=$port"
  echo "$port" >"$state/port"
  echo "$mode" >"$state/mode"
  echo "$url" >"$state/url"
  echo "$url"
  ;;
*)
  echo "usage: $0 start|stop|url|restart|down|up STATE [test|bench|SECONDS]" >&2
  exit 2
  ;;
esac
