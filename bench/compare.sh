#!/bin/sh
# bench/compare.sh: two revisions of pawl measured side by side on this
# machine, so that a change can show it kept the speed of the tree before
# it (bench/RESULTS.md, "The house split: side by side with the tree
# before it", is the method this script runs).
#
#   bench/compare.sh [--jobs N] [--rounds N] [--pg] [--no-callgrind] OLD [NEW]
#
# OLD and NEW are any git revisions of this repository (NEW: HEAD, without
# the working tree's uncommitted changes). Each is checked out in a git
# worktree of its own under a temp dir and built in Release (pawl and
# pawl_store_bench only); the build directory is kept under
# $PAWL_COMPARE_CACHE (default ~/.cache/pawl-compare), one per commit id,
# so that the next run measuring the same commit builds nothing. Then:
#
#   1. instructions (valgrind callgrind: the machine's load does not move
#      them) of the SQLite store's claim+complete and enqueue_many
#      (pawl_store_bench) and of pawl_enqueue_many (pawl bench), 20,000
#      jobs each, alternately OLD, NEW, OLD, NEW... (a build's counts move
#      by a few hundredths of a percent from run to run: the table shows
#      that spread next to the change);
#   2. wall time: `pawl bench --jobs N --runs 3 --latency-jobs 500`
#      alternately OLD, NEW, OLD, NEW... on SQLite, and with --pg on a
#      throwaway PostgreSQL server (spec/support/pg_server.sh, "bench":
#      PostgreSQL's default durability) with a database per revision, since
#      two revisions may migrate their schemas differently.
#
# The tables go to stdout, in markdown, ready for bench/RESULTS.md;
# progress goes to stderr, and every program's own output to a log kept
# next to the builds. The worktrees and the server are removed at the end,
# also after a failure or Ctrl-C; the builds stay. Nothing here needs
# `make`: LuaJIT's source is the current tree's third_party/luajit, or
# fetched by cmake/fetch-luajit.sh into the cache when that is missing.
#
# Exit status: 0 done, 1 a build or a run failed, 2 bad usage (an option
# out of its bounds, an unknown revision, a missing tool).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd -P)

# The instruction counts' size: the one bench/RESULTS.md records, so that
# figures of one run can be set against those of another.
cg_jobs=20000

usage() {
  cat <<'EOF'
usage: bench/compare.sh [options] OLD [NEW]

Builds the git revisions OLD and NEW (default: HEAD, without uncommitted
changes) in Release, each in a git worktree of its own, and measures them
side by side, alternately OLD, NEW, OLD, NEW: instruction counts
(valgrind callgrind, 20,000 jobs) of the SQLite store's claim+complete and
enqueue_many and of pawl_enqueue_many, then `pawl bench` wall time. Prints
markdown tables for bench/RESULTS.md on stdout.

options:
  --jobs N        jobs of each `pawl bench` wall-time run (default 20000;
                  1000 to 10000000)
  --rounds N      OLD, NEW rounds of each measurement (default 2; 1 to 20)
  --pg            the wall-time rounds on PostgreSQL too: a throwaway
                  server (spec/support/pg_server.sh), a database per revision
  --no-callgrind  skip the instruction counts (which need valgrind)
  --help          print this text

environment:
  PAWL_COMPARE_CACHE  where the builds are kept, one directory per commit
                      id, and the logs (default ~/.cache/pawl-compare)
  TMPDIR              where the worktrees and the benchmarks' databases go

Exit status: 0 done, 1 a build or a run failed, 2 bad usage.
EOF
}

usage_error() {
  echo "compare.sh: $*" >&2
  echo "usage: bench/compare.sh [--jobs N] [--rounds N] [--pg] [--no-callgrind] OLD [NEW]  (--help)" >&2
  exit 2
}

fail() {
  echo "compare.sh: $*" >&2
  exit 1
}

note() {
  echo "compare.sh: $*" >&2
}

# bounded OPTION VALUE MIN MAX: sets num to VALUE, a decimal integer from
# MIN to MAX, or refuses it naming the option and its bounds.
bounded() {
  case $2 in
  '' | *[!0-9]*) usage_error "$1 must be an integer from $3 to $4, not '$2'" ;;
  esac
  num=$(printf '%s\n' "$2" | sed 's/^0*//')
  num=${num:-0}
  # More digits than MAX has is out of range, and would overflow the
  # shell's arithmetic before the comparison.
  if [ ${#num} -gt ${#4} ] || [ "$num" -lt "$3" ] || [ "$num" -gt "$4" ]; then
    usage_error "$1 $2 is out of range: it must be from $3 to $4"
  fi
}

jobs=20000
rounds=2
pg=0
callgrind=1
old_rev=""
new_rev=""
nrevs=0
add_rev() {
  nrevs=$((nrevs + 1))
  case $nrevs in
  1) old_rev=$1 ;;
  2) new_rev=$1 ;;
  *) usage_error "too many revisions: '$old_rev' '$new_rev' '$1' (OLD and NEW only)" ;;
  esac
}
while [ $# -gt 0 ]; do
  case $1 in
  --help | -h)
    usage
    exit 0
    ;;
  --jobs | --rounds)
    [ $# -ge 2 ] || usage_error "$1 needs a value"
    opt=$1
    val=$2
    shift 2
    ;;
  --jobs=* | --rounds=*)
    opt=${1%%=*}
    val=${1#*=}
    shift
    ;;
  --pg)
    pg=1
    shift
    continue
    ;;
  --no-callgrind)
    callgrind=0
    shift
    continue
    ;;
  --)
    shift
    for r in "$@"; do add_rev "$r"; done
    break
    ;;
  -*) usage_error "unknown option $1" ;;
  *)
    add_rev "$1"
    shift
    continue
    ;;
  esac
  case $opt in
  --jobs)
    bounded --jobs "$val" 1000 10000000
    jobs=$num
    ;;
  --rounds)
    bounded --rounds "$val" 1 20
    rounds=$num
    ;;
  esac
done
[ "$nrevs" -ge 1 ] || usage_error "OLD is missing: the revision to compare with"
[ "$nrevs" -ge 2 ] || new_rev=HEAD

# ---- the revisions ------------------------------------------------------
for tool in git cmake awk; do
  command -v "$tool" >/dev/null 2>&1 || usage_error "$tool not found: install it"
done
git -C "$root" rev-parse --git-dir >/dev/null 2>&1 ||
  usage_error "$root is not a git checkout: the revisions come from its history"
# resolve WHICH REV: sets sha to REV's commit id, or refuses REV by name.
resolve() {
  sha=$(git -C "$root" rev-parse --verify --quiet --end-of-options "$2^{commit}" 2>/dev/null) ||
    usage_error "unknown revision '$2' ($1): not a commit of $root"
}
resolve OLD "$old_rev"
old_sha=$sha
resolve NEW "$new_rev"
new_sha=$sha
old_short=$(git -C "$root" rev-parse --short=7 "$old_sha")
new_short=$(git -C "$root" rev-parse --short=7 "$new_sha")
if [ "$nrevs" -lt 2 ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  note "the working tree has uncommitted changes; NEW is HEAD ($new_short) without them"
fi

# ---- what it needs, checked before anything is built --------------------
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null 2>&1; then
  usage_error "valgrind not found: install it (apt-get install valgrind) or pass --no-callgrind"
fi
if [ "$pg" = 1 ]; then
  command -v psql >/dev/null 2>&1 ||
    usage_error "--pg: psql not found: install PostgreSQL (apt-get install postgresql)"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
    usage_error "--pg: no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb): install it (apt-get install postgresql)"
fi
if [ -n "${PAWL_COMPARE_CACHE:-}" ]; then
  cache=$PAWL_COMPARE_CACHE
elif [ -n "${HOME:-}" ]; then
  cache=$HOME/.cache/pawl-compare
else
  usage_error "neither PAWL_COMPARE_CACHE nor HOME is set: where should the builds go?"
fi
mkdir -p "$cache/logs" || fail "cannot create the cache directory $cache"
cache=$(cd "$cache" && pwd -P)
log=$cache/logs/compare-$(date -u +%Y%m%dT%H%M%SZ)-$$.log
: >"$log"

# ---- cleanup: worktrees, the server, a half-made build, the temp dir ----
tmp=""
pgstate=""
partial=""
cleanup() {
  status=$?
  trap - EXIT INT TERM HUP
  if [ -n "$pgstate" ]; then
    sh "$root/spec/support/pg_server.sh" stop "$pgstate" >/dev/null 2>&1 || true
  fi
  if [ -n "$tmp" ]; then
    for wt in "$tmp"/wt-*; do
      [ -e "$wt" ] || continue
      git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || {
        rm -rf "$wt"
        git -C "$root" worktree prune
      }
    done
    rm -rf "$tmp"
  fi
  if [ -n "$partial" ]; then rm -rf "$partial"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pawl-compare-XXXXXX")
note "OLD $old_short, NEW $new_short; log: $log"

# ---- builds ---------------------------------------------------------------
luajit=$root/third_party/luajit
if [ ! -f "$luajit/src/lj_record.c" ]; then
  luajit=$cache/luajit
  note "no LuaJIT source in $root/third_party/luajit: fetching it into $luajit"
  sh "$root/cmake/fetch-luajit.sh" "$luajit" >>"$log" 2>&1 ||
    fail "cmake/fetch-luajit.sh $luajit failed (see $log)"
fi
luajit=$(cd "$luajit" && pwd -P)

# What a cached build was made with: a build of the same commit by another
# compiler is not the same build.
stamp="pawl compare build: Release, targets pawl pawl_store_bench
$(${CC:-cc} --version 2>/dev/null | head -n 1)
$(cmake --version | head -n 1)"

# build ROLE SHA: sets bin to SHA's build directory, building it unless
# the cache has it. The build goes to a directory of this process's own
# and is renamed into place once complete, so that an interrupted build,
# or another run building the same commit, never leaves a half-made one
# where a complete one is expected.
build() {
  bin=$cache/$2
  if [ -f "$bin/compare-stamp" ] && [ "$(cat "$bin/compare-stamp")" = "$stamp" ] &&
    [ -x "$bin/pawl" ] && [ -x "$bin/pawl_store_bench" ]; then
    note "$1 $(echo "$2" | cut -c1-7): cached build $bin"
    return 0
  fi
  wt=$tmp/wt-$1
  note "$1 $(echo "$2" | cut -c1-7): building in $wt (log: $log)"
  git -C "$root" worktree add --detach "$wt" "$2" >>"$log" 2>&1 ||
    fail "git worktree add $wt $2 failed (see $log)"
  mkdir -p "$wt/third_party"
  [ -e "$wt/third_party/luajit" ] || ln -s "$luajit" "$wt/third_party/luajit"
  partial=$cache/.building-$2-$$
  rm -rf "$partial"
  if ! cmake -S "$wt" -B "$partial" -DCMAKE_BUILD_TYPE=Release >>"$log" 2>&1 ||
    ! cmake --build "$partial" -j"$(nproc)" --target pawl pawl_store_bench >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    fail "the build of $1 ($2) failed (the whole output: $log)"
  fi
  printf '%s\n' "$stamp" >"$partial/compare-stamp"
  if [ -f "$bin/compare-stamp" ] && [ "$(cat "$bin/compare-stamp")" = "$stamp" ]; then
    # Another run built the same commit meanwhile, and may be running it.
    rm -rf "$partial"
  else
    rm -rf "$bin"
    mv "$partial" "$bin"
  fi
  partial=""
  git -C "$root" worktree remove --force "$wt" >>"$log" 2>&1 || true
}
build old "$old_sha"
old_bin=$bin
build new "$new_sha"
new_bin=$bin

# ---- the machine ----------------------------------------------------------
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
model=${model:-$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1)}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
sqlite_version=$(pkg-config --modversion sqlite3 2>/dev/null || echo unknown)
cc_version=$(${CC:-cc} --version 2>/dev/null | head -n 1)
subject() { git -C "$root" log -1 --format=%s "$1"; }

# 1234567 -> 1,234,567 (anything else as it is).
commas() {
  awk -v n="$1" 'BEGIN {
    s = ""
    if (n ~ /^[0-9]+$/)
      while (length(n) > 3) { s = "," substr(n, length(n) - 2) s; n = substr(n, 1, length(n) - 3) }
    print n s
  }'
}

echo "## $old_short against $new_short (bench/compare.sh, $(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "- OLD $old_short ($old_sha): $(subject "$old_sha")"
echo "- NEW $new_short ($new_sha): $(subject "$new_sha")"
echo "- machine: $model, $(nproc) cores (nproc), Linux $(uname -r)"
echo "- builds: CMake Release, $cc_version, SQLite $sqlite_version"

# ---- 1. instructions ------------------------------------------------------
# ir FUNCTION ROLE PROGRAM ARGS...: the instructions executed inside
# FUNCTION (and what it calls) by PROGRAM ARGS under callgrind, in count;
# "-" when the program has no such function. A program that fails after
# counting (an old benchmark's own bug, say) keeps its count, with a note
# under the table; one that counted nothing is a failure.
ir() {
  func=$1
  role=$2
  shift 2
  rm -rf "$tmp/cg"
  mkdir "$tmp/cg"
  echo "## $role: valgrind --toggle-collect=$func $*" >>"$log"
  if valgrind --tool=callgrind --callgrind-out-file="$tmp/cg/out.%p" \
    --toggle-collect="$func" "$@" >"$tmp/cg.log" 2>&1; then
    status=0
  else
    status=$?
  fi
  cat "$tmp/cg.log" >>"$log"
  # A child the program forks writes a file of its own: count them all.
  # Each file states its count twice (summary: and totals:): one of them.
  count=$(awk '
    function add() { if (file != "") n += (s != "" ? s : t) }
    FNR == 1 { add(); file = FILENAME; s = ""; t = "" }
    $1 == "summary:" { s = $2 }
    $1 == "totals:" { t = $2 }
    END { add(); print n + 0 }' "$tmp/cg"/out.*)
  [ "$count" != 0 ] || count=-
  [ "$status" = 0 ] && return 0
  [ "$count" != - ] ||
    fail "$role: valgrind --tool=callgrind --toggle-collect=$func $* failed with status $status (see $log)"
  why=$(grep -v '^==[0-9]*==' "$tmp/cg.log" | tail -n 1)
  note "$role: ${1##*/} exited with status $status after counting: $why"
  echo "- $role's \`${1##*/}\` ($func) exited with status $status after counting: \`$why\`" >>"$tmp/cg.notes"
}

# cg_row LABEL FUNCTION PROGRAM ARGS...: one table row: OLD, NEW, OLD,
# NEW... for the rounds; the change of the means, and the largest spread
# of one revision's counts (the counts of one build move a little from
# run to run, with the threads' interleaving: a change within the spread
# is noise).
cg_row() {
  label=$1
  func=$2
  prog=$3
  shift 3
  olds=""
  news=""
  r=1
  while [ "$r" -le "$rounds" ]; do
    note "callgrind: $label, round $r/$rounds, OLD"
    ir "$func" OLD "$old_bin/$prog" "$@"
    olds="$olds $count"
    note "callgrind: $label, round $r/$rounds, NEW"
    ir "$func" NEW "$new_bin/$prog" "$@"
    news="$news $count"
    r=$((r + 1))
  done
  awk -v label="$label" -v olds="$olds" -v news="$news" '
    function commas(x,   s) {
      s = ""
      while (length(x) > 3) { s = "," substr(x, length(x) - 2) s; x = substr(x, 1, length(x) - 3) }
      return x s
    }
    # Sets mean[w], lo[w], hi[w] and text[w] from the list; 0 if a count
    # is missing.
    function stats(w, list,   k, i, v, sum) {
      k = split(list, v, " ")
      text[w] = ""
      sum = 0
      for (i = 1; i <= k; i++) {
        if (v[i] == "-") { text[w] = "n/a"; return 0 }
        text[w] = text[w] (i > 1 ? " / " : "") commas(v[i])
        sum += v[i]
        if (i == 1 || v[i] + 0 < lo[w]) lo[w] = v[i] + 0
        if (i == 1 || v[i] + 0 > hi[w]) hi[w] = v[i] + 0
      }
      mean[w] = sum / k
      return 1
    }
    BEGIN {
      ok = stats("o", olds) + stats("n", news) == 2
      change = spread = "-"
      if (ok) {
        change = sprintf("%+.2f%%", (mean["n"] - mean["o"]) * 100 / mean["o"])
        so = (hi["o"] - lo["o"]) * 100 / lo["o"]
        sn = (hi["n"] - lo["n"]) * 100 / lo["n"]
        # One count each (--rounds 1) has no spread to show.
        if (split(olds, v, " ") > 1) spread = sprintf("%.2f%%", so > sn ? so : sn)
      }
      printf "| %s | %s | %s | %s | %s |\n", label, text["o"], text["n"], change, spread
    }'
}

if [ "$callgrind" = 1 ]; then
  cgn=$(commas "$cg_jobs")
  : >"$tmp/cg.notes"
  echo
  if [ "$rounds" = 1 ]; then
    echo "Instructions (valgrind callgrind; the machine's load does not move them), one count each:"
  else
    echo "Instructions (valgrind callgrind; the machine's load does not move them), $rounds alternating rounds (OLD, NEW, OLD, NEW...), each cell's counts in round order; the change is of the means, the spread the largest of one revision's (max - min) / min:"
  fi
  echo
  echo '```sh'
  echo "valgrind --tool=callgrind --toggle-collect=claim_store \\"
  echo "  pawl_store_bench --history 0 --jobs $cg_jobs --runs 1 --only \"claim+complete b=100\""
  echo "valgrind --tool=callgrind --toggle-collect=enqueue_store \\"
  echo "  pawl_store_bench --history 0 --jobs $cg_jobs --runs 1 --only \"enqueue_many (1000/txn)\""
  echo "valgrind --tool=callgrind --toggle-collect=pawl_enqueue_many \\"
  echo "  pawl bench --jobs $cg_jobs --runs 1 --latency-jobs 0 --workers 1"
  echo '```'
  echo
  echo "| measurement | $old_short | $new_short | change | spread |"
  echo "|---|---|---|---|---|"
  cg_row "SQLite store claim+complete b=100, $cgn jobs" claim_store pawl_store_bench \
    --history 0 --jobs "$cg_jobs" --runs 1 --only "claim+complete b=100"
  cg_row "SQLite store enqueue_many, $cgn jobs" enqueue_store pawl_store_bench \
    --history 0 --jobs "$cg_jobs" --runs 1 --only "enqueue_many (1000/txn)"
  cg_row "\`pawl_enqueue_many\` (JSON check + store), $cgn jobs" pawl_enqueue_many pawl \
    bench --jobs "$cg_jobs" --runs 1 --latency-jobs 0 --workers 1
  if [ -s "$tmp/cg.notes" ]; then
    echo
    awk '!seen[$0]++' "$tmp/cg.notes"
  fi
fi

# ---- 2. wall time -----------------------------------------------------------
if [ "$pg" = 1 ]; then
  pgstate=$tmp/pg
  note "starting a throwaway PostgreSQL server"
  url=$(sh "$root/spec/support/pg_server.sh" start "$pgstate" bench 2>>"$log") ||
    fail "spec/support/pg_server.sh start failed (see $log)"
  pg_version=$(psql "$url" -XAtqc 'SHOW server_version' 2>>"$log") ||
    fail "psql cannot reach the server it started (see $log)"
  # One database per revision: each migrates its own schema.
  for role in old new; do
    psql "$url" -Xq -v ON_ERROR_STOP=1 -c "CREATE DATABASE pawl_compare_$role" >>"$log" 2>&1 ||
      fail "CREATE DATABASE pawl_compare_$role failed (see $log)"
  done
  case $url in
  *@/postgres\?*) ;;
  *) fail "unexpected URL from pg_server.sh: $url" ;;
  esac
  old_db=$(printf '%s\n' "$url" | sed 's|@/postgres?|@/pawl_compare_old?|')
  new_db=$(printf '%s\n' "$url" | sed 's|@/postgres?|@/pawl_compare_new?|')
fi

# wall STORE ROLE ROUND BIN [--db URL]: one `pawl bench`; its medians go
# to $tmp/wall as a line "STORE|ROLE|ROUND|bulk|single|processed|p50|p99".
wall() {
  store=$1
  role=$2
  round=$3
  prog=$4/pawl
  shift 4
  note "wall time: round $round/$rounds, $store, $(echo "$role" | tr '[:lower:]' '[:upper:]')"
  echo "## $store $role round $round: pawl bench --jobs $jobs --runs 3 --latency-jobs 500 $*" >>"$log"
  "$prog" bench --jobs "$jobs" --runs 3 --latency-jobs 500 "$@" >"$tmp/bench.out" 2>>"$log" ||
    fail "$prog bench failed (see $log)"
  cat "$tmp/bench.out" >>"$log"
  awk -F'|' -v key="$store|$role|$round" '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    { name = trim($2); v = trim($3) }
    name == "enqueue, 1000 per txn (jobs/s)" { f[1] = v }
    name == "enqueue, 1 per txn (jobs/s)" { f[2] = v }
    name == "processed no-op Lua jobs (jobs/s)" { f[3] = v }
    name == "pickup latency p50 (ms)" { f[4] = v }
    name == "pickup latency p99 (ms)" { f[5] = v }
    END {
      line = key
      for (i = 1; i <= 5; i++) line = line "|" (i in f ? f[i] : "?")
      print line
    }' "$tmp/bench.out" >>"$tmp/wall"
}

load_start=$(loadavg)
: >"$tmp/wall"
round=1
while [ "$round" -le "$rounds" ]; do
  wall SQLite old "$round" "$old_bin"
  wall SQLite new "$round" "$new_bin"
  if [ "$pg" = 1 ]; then
    wall PostgreSQL old "$round" "$old_bin" --db "$old_db"
    wall PostgreSQL new "$round" "$new_bin" --db "$new_db"
  fi
  round=$((round + 1))
done
load_end=$(loadavg)

echo
if [ "$rounds" = 1 ]; then
  echo "Wall time, \`pawl bench --jobs $jobs --runs 3 --latency-jobs 500\` (medians of 3), one round (OLD, NEW); load average $load_start at start, $load_end at the end:"
else
  echo "Wall time, \`pawl bench --jobs $jobs --runs 3 --latency-jobs 500\` (medians of 3), $rounds alternating rounds (OLD, NEW, OLD, NEW...), each cell's figures in round order; load average $load_start at start, $load_end at the end:"
fi
if [ "$pg" = 1 ]; then
  echo "PostgreSQL $pg_version from \`spec/support/pg_server.sh start DIR bench\` (durability at its defaults), one database per revision."
fi
echo
echo "| | enqueue 1000/txn (jobs/s) | enqueue 1/txn | processed (jobs/s) | pickup p50 (ms) | p99 (ms) |"
echo "|---|---|---|---|---|---|"
stores=SQLite
[ "$pg" = 1 ] && stores="SQLite PostgreSQL"
for store in $stores; do
  for role in old new; do
    if [ "$role" = old ]; then short=$old_short; else short=$new_short; fi
    awk -F'|' -v store="$store" -v role="$role" -v label="$store $short" '
      $1 == store && $2 == role {
        for (i = 4; i <= 8; i++) cell[i] = (cell[i] == "" ? "" : cell[i] " / ") $i
      }
      END {
        line = "| " label
        for (i = 4; i <= 8; i++) line = line " | " cell[i]
        print line " |"
      }' "$tmp/wall"
  done
done
note "done; every program's output is in $log"
