#!/bin/sh
# make_deps_check.sh SOURCE_DIR: the Makefile's dependency sets. `make
# run` installs deps-build only, which holds what building and running
# pawl need and none of what only the tests need (a PostgreSQL server,
# nginx, LÖVE, Prometheus, node...); `make test` installs both. Read from
# `make -s print-deps-*` and from dry runs (`make -n`): nothing is
# installed or built.
set -eu
src=$1
fail() { echo "make_deps_check: $*" >&2; exit 1; }
build=" $(make -s -C "$src" --no-print-directory print-deps-build) "
tests=" $(make -s -C "$src" --no-print-directory print-deps-test) "
echo "deps-build:$build"
echo "deps-test:$tests"
# Only the tests need these.
for p in postgresql nginx libnginx-mod-http-lua love prometheus nodejs npm \
         lua-busted tmux luajit2 libluajit2-5.1-dev; do
  case "$build" in *" $p "*) fail "deps-build installs $p, which only the tests need";; esac
done
for p in postgresql nginx love prometheus lua-busted tmux; do
  case "$tests" in *" $p "*) ;; *) fail "deps-test lacks $p";; esac
done
# Building and running pawl need these.
for p in build-essential cmake pkg-config libsqlite3-dev libpq-dev libuv1-dev \
         libedit-dev libcurl4-openssl-dev libmicrohttpd-dev tzdata scdoc; do
  case "$build" in *" $p "*) ;; *) fail "deps-build lacks $p";; esac
done
# make run: the deps-build packages, then the pawl target only.
run=$(make -n -C "$src" --no-print-directory run)
echo "$run" | grep -q -- "--target pawl" || fail "make run does not build the pawl target alone"
echo "$run" | grep -q "ctest" && fail "make run runs tests"
echo "$run" | grep -q "npm ci" && fail "make run installs the cron reference library"
echo "$run" | grep -q "for p in.* scdoc" || fail "make run does not install the deps-build packages"
for p in postgresql nginx libnginx-mod-http-lua love prometheus nodejs lua-busted; do
  echo "$run" | grep -q -w -- "$p" && fail "make -n run names $p"
done
# make test: both sets, the reference library, everything built.
t=$(make -n -C "$src" --no-print-directory test)
echo "$t" | grep -q "for p in.* scdoc" || fail "make test does not install deps-build"
echo "$t" | grep -q "for p in.* postgresql" || fail "make test does not install deps-test"
echo "$t" | grep -q "npm ci" || fail "make test does not install the cron reference library"
echo "$t" | grep -q "ctest" || fail "make test runs no ctest"
echo "$t" | grep -q -- "--target" && fail "make test builds one target only"
echo "deps split: ok"
