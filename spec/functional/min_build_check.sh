#!/bin/sh
# min_build_check.sh BUILD: checks that a build configured without its
# optional libraries (cmake -DPAWL_WITH_POSTGRES=OFF -DPAWL_WITH_HTTP=OFF
# -DPAWL_WITH_CURL=OFF; make test-min) needs none of them: libpawl.so,
# libpawl.a, the pawl program and the Lua module (lua/pawl.so) neither
# load libpq, libcurl nor libmicrohttpd (ldd) nor name a symbol of theirs
# (PQ*, curl_*, MHD_*: nm -u of the dynamic ones, nm of the archive), and
# pawl.pc does not ask for them. Prints every finding and exits 1 if there
# is one; a file that is not there is a finding too.
set -u
b=${1:?usage: min_build_check.sh BUILD}
bad=0
say() {
  echo "min_build_check: $*" >&2
  bad=1
}

LIBS='libpq\.so|libcurl\.so|libcurl-gnutls\.so|libmicrohttpd\.so'
SYMS='^(PQ[a-zA-Z]|pg_encoding|lo_[a-z]|curl_|Curl_|MHD_)'

for f in libpawl.so libpawl.a pawl lua/pawl.so pawl.pc; do
  [ -f "$b/$f" ] || say "$b/$f is not there"
done

for f in libpawl.so pawl lua/pawl.so; do
  [ -f "$b/$f" ] || continue
  if ! deps=$(ldd "$b/$f" 2>&1); then
    say "ldd $b/$f failed: $deps"
    continue
  fi
  hit=$(printf '%s\n' "$deps" | grep -E "$LIBS")
  [ -z "$hit" ] || say "$b/$f loads an optional library:
$hit"
  hit=$(nm -D -u "$b/$f" | awk '{ print $NF }' | sed 's/@.*//' | grep -E "$SYMS")
  [ -z "$hit" ] || say "$b/$f needs symbols of an optional library:
$hit"
done

# The archive: every symbol, defined or not (its objects are linked into
# one; a defined PQ* would be a copy of libpq).
if [ -f "$b/libpawl.a" ]; then
  hit=$(nm "$b/libpawl.a" 2>/dev/null | awk 'NF >= 2 { print $NF }' | grep -E "$SYMS" | sort -u)
  [ -z "$hit" ] || say "$b/libpawl.a names symbols of an optional library:
$hit"
fi

if [ -f "$b/pawl.pc" ]; then
  hit=$(grep -nE -- '-lpq|-lcurl|-lmicrohttpd' "$b/pawl.pc")
  [ -z "$hit" ] || say "$b/pawl.pc asks for an optional library:
$hit"
fi

[ $bad -eq 0 ] && echo "min_build_check: $b needs none of libpq, libcurl, libmicrohttpd"
exit $bad
