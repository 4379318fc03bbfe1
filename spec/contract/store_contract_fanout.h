/* store_contract_fanout.h: what one enqueue or one job may write
 * (docs/security.md, "What job code may write"), the store's part, written
 * once for every backend like store_contract.h: a batch's identity (found,
 * not made again), the depth kept on the job row, and the size caps every
 * enqueuer and every outcome meets. Each backend's test file registers
 * FANOUT_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_FANOUT_H
#define PAWL_STORE_CONTRACT_FANOUT_H

#define FANOUT_CONTRACT_TESTS(X) \
  X(fanout_batch_ident)          \
  X(fanout_depth)                \
  X(fanout_write_caps)

#define FANOUT_CONTRACT_DECLARE(name) void contract_##name(const char *url);
FANOUT_CONTRACT_TESTS(FANOUT_CONTRACT_DECLARE)
#undef FANOUT_CONTRACT_DECLARE

#endif
