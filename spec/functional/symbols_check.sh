#!/bin/sh
# symbols_check.sh LIBPAWL.a [LIBPAWL.so]: checks the names libpawl gives
# the linker. Every global symbol the static library defines is pawl_
# (public, in include/pawl.h) or pawl__ (internal, as libuv's uv__), so
# that nothing clashes with an embedder's own log_init or buf_init; the
# shared library exports the public pawl_ functions and nothing else (no
# internal pawl__ name, and none of the LuaJIT it carries, so that a
# program with a Lua of its own keeps it). Prints each offender and exits
# 1 if there is one.
set -u
a=$1
so=${2:-}
bad=0
# nm -g --defined-only on an archive: "ADDR TYPE NAME" per symbol, plus
# member headers and blank lines.
# AddressSanitizer adds an __odr_asan.NAME beside each global NAME: the
# name it guards is the one checked.
out=$(nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' |
      sed 's/^__odr_asan[._]//' | grep -v '^pawl_' | sort -u)
if [ -n "$out" ]; then
  echo "$a defines global symbols without the pawl_ or pawl__ prefix:"
  echo "$out" | sed 's/^/  /'
  bad=1
fi
if [ -n "$so" ]; then
  out=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' |
        grep -v '^pawl_[a-z]' | sort -u)
  if [ -n "$out" ]; then
    echo "$so exports symbols that are not public pawl_ functions:"
    echo "$out" | sed 's/^/  /'
    bad=1
  fi
  n=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | grep -c '^pawl_[a-z]')
  if [ "$n" -eq 0 ]; then
    echo "$so exports no pawl_ function"
    bad=1
  fi
fi
exit $bad
