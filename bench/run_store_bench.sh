#!/usr/bin/env bash
# Builds pawl_store_bench in Release and runs it, teeing everything to a log.
#
#   bench/run_store_bench.sh [pawl_store_bench options...]
#
# With no options the benchmark runs its defaults (5 runs, 100,000 jobs,
# 1,000,000 jobs of history: a few minutes). A separate build directory
# keeps the Release objects apart from the usual RelWithDebInfo build/.
# Environment: BUILD_DIR (default build-release), LOG (default
# $BUILD_DIR/store_bench-<UTC time>.log), TMPDIR (where the databases go).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-release}
log=${LOG:-$build/store_bench-$(date -u +%Y%m%dT%H%M%SZ).log}

# Others may be editing the tree: name the sources measured, taken just
# before the build.
sums=$(cd "$root" && sha256sum stores/sqlite/*.c stores/sqlite/*.h \
  host/api/pawl.c schema/sqlite/*.sql | sed 's/^/# /')

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target pawl_store_bench -j"$(nproc)"

mkdir -p "$(dirname "$log")"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $build/pawl_store_bench $*"
  echo "$sums"
  "$build/pawl_store_bench" "$@" 2>&1
} | tee "$log"
echo "log: $log"
