#!/bin/sh
# compare_check.sh SOURCE_DIR: bench/compare.sh's refusals. Bad options,
# bounds, unknown revisions and a missing valgrind or psql are refused
# with exit status 2 and a message naming what was wrong, before anything
# is built: no worktree is added, nothing is written to TMPDIR. Nothing is
# built or measured here, so it takes a second: the cache directory given
# lies under a plain file, so that a refusal that failed to happen would
# end at once at the cache's mkdir (exit status 1) instead of building.
set -eu
src=$1
script=$src/bench/compare.sh
fail() {
  echo "compare_check: $*" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
: >"$work/file"
export PAWL_COMPARE_CACHE="$work/file/cache" TMPDIR="$work/tmp"
worktrees_before=$(git -C "$src" worktree list --porcelain)

# run ARGS...: compare.sh ARGS, as the test's command line names it;
# sets rc, and leaves stdout and stderr in $work/out and $work/err.
run() {
  set +e
  "$script" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  set -e
}

# refused TEXT ARGS...: compare.sh ARGS exits 2 and says TEXT on stderr.
refused() {
  text=$1
  shift
  run "$@"
  [ "$rc" = 2 ] || fail "compare.sh $*: exit status $rc, expected 2; stderr: $(cat "$work/err")"
  grep -qF -- "$text" "$work/err" ||
    fail "compare.sh $*: stderr does not say '$text': $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "compare.sh $*: printed on stdout: $(cat "$work/out")"
}

# --help: the whole usage on stdout, nothing on stderr, also through sh.
set +e
sh "$script" --help >"$work/out" 2>"$work/err"
rc=$?
set -e
[ "$rc" = 0 ] || fail "sh compare.sh --help: exit status $rc; stderr: $(cat "$work/err")"
[ ! -s "$work/err" ] || fail "sh compare.sh --help wrote on stderr: $(cat "$work/err")"
for text in "usage: bench/compare.sh [options] OLD [NEW]" "--jobs N" "1000 to 10000000" \
  "--rounds N" "1 to 20" "--pg" "--no-callgrind" "PAWL_COMPARE_CACHE"; do
  grep -qF -- "$text" "$work/out" || fail "compare.sh --help does not say '$text'"
done

# Bounds, each named with its range; the bounds themselves pass (the run
# then stops at the unknown revision, not at the option).
refused "--jobs 5 is out of range: it must be from 1000 to 10000000" --jobs 5
refused "--jobs 999 is out of range: it must be from 1000 to 10000000" --jobs 999 HEAD
refused "--jobs 10000001 is out of range" --jobs=10000001 HEAD
refused "--jobs 99999999999999999999 is out of range" --jobs 99999999999999999999 HEAD
refused "--jobs 00000000000000000000999 is out of range" --jobs 00000000000000000000999 HEAD
refused "--jobs must be an integer from 1000 to 10000000, not '-5000'" --jobs -5000 HEAD
refused "--jobs must be an integer from 1000 to 10000000, not '2e4'" --jobs 2e4 HEAD
refused "--jobs must be an integer from 1000 to 10000000, not ''" --jobs "" HEAD
refused "--jobs must be an integer from 1000 to 10000000, not ' 5000'" --jobs " 5000" HEAD
refused "--jobs needs a value" --jobs
refused "--rounds 0 is out of range: it must be from 1 to 20" --rounds 0 HEAD
refused "--rounds 21 is out of range: it must be from 1 to 20" --rounds=21 HEAD
refused "--rounds must be an integer from 1 to 20, not 'two'" --rounds two HEAD
refused "unknown revision 'nosuchrev'" --jobs 1000 --rounds 1 nosuchrev
refused "unknown revision 'nosuchrev'" --jobs 10000000 --rounds 20 nosuchrev
refused "unknown revision 'nosuchrev'" --jobs=0001000 --rounds=020 nosuchrev

# Revisions: each unknown one named, OLD or NEW; a tree is not a commit.
refused "unknown revision 'nosuchrev' (OLD)" nosuchrev
refused "unknown revision 'nosuchrev' (OLD)" nosuchrev HEAD
refused "unknown revision 'nosuchrev2' (NEW)" HEAD nosuchrev2
refused "unknown revision 'HEAD^{tree}' (OLD)" 'HEAD^{tree}'
refused "unknown revision 'no such rev' (NEW)" HEAD 'no such rev'
refused "unknown revision '-x' (OLD)" -- -x
refused "OLD is missing" --pg
refused "too many revisions" HEAD HEAD HEAD
refused "unknown option --bogus" --bogus HEAD
refused "unknown option -j" -j 4 HEAD

# A missing tool, on a PATH that has everything this machine has but it:
# refused with what to install, before any build (HEAD is a valid
# revision here, so only the check stands between it and a build).
mkdir "$work/bin"
for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  [ -d "$dir" ] || continue
  for f in "$dir"/*; do
    name=${f##*/}
    case $name in valgrind | psql) continue ;; esac
    [ -e "$work/bin/$name" ] || ln -s "$f" "$work/bin/$name"
  done
done
(
  PATH=$work/bin
  refused "valgrind not found: install it (apt-get install valgrind) or pass --no-callgrind" HEAD
  refused "--pg: psql not found" --pg --no-callgrind HEAD
)

# Nothing was started or written by any of these. And a run that gets
# past the checks does reach the cache's mkdir (so that the refusals above
# are the checks', not that mkdir's).
run --no-callgrind HEAD
[ "$rc" = 1 ] && grep -qF "cannot create the cache directory $work/file/cache" "$work/err" ||
  fail "compare.sh --no-callgrind HEAD with the cache under a file: exit status $rc: $(cat "$work/err")"
[ "$(git -C "$src" worktree list --porcelain)" = "$worktrees_before" ] ||
  fail "compare.sh left a worktree: $(git -C "$src" worktree list)"
[ -z "$(ls -A "$work/tmp")" ] || fail "compare.sh left files in TMPDIR: $(ls -A "$work/tmp")"
echo "compare_check: ok"
