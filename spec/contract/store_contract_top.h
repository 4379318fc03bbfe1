/* store_contract_top.h: what `pawl top` reads: the throughput
 * buckets, the longest-running jobs and the JSON snapshot, the part of the
 * store contract suite written once for every backend like
 * store_contract.h; each backend's test file registers TOP_CONTRACT_TESTS
 * the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_TOP_H
#define PAWL_STORE_CONTRACT_TOP_H

#define TOP_CONTRACT_TESTS(X) \
  X(top_throughput)           \
  X(top_running)              \
  X(top_snapshot)

#define TOP_CONTRACT_DECLARE(name) void contract_##name(const char *url);
TOP_CONTRACT_TESTS(TOP_CONTRACT_DECLARE)
#undef TOP_CONTRACT_DECLARE

#endif
