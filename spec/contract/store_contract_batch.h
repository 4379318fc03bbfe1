/* store_contract_batch.h: the batches part of the store contract suite,
 * written once for every backend like store_contract.h; each
 * backend's test file registers BATCH_CONTRACT_TESTS the way it registers
 * CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_BATCH_H
#define PAWL_STORE_CONTRACT_BATCH_H

#define BATCH_CONTRACT_TESTS(X) \
  X(batch_success)              \
  X(batch_failure)              \
  X(batch_cancel_recover)       \
  X(batch_metrics)              \
  X(batch_bad_input)            \
  X(batch_replace_child)        \
  X(batch_signal_child)         \
  X(batch_limits)

#define BATCH_CONTRACT_DECLARE(name) void contract_##name(const char *url);
BATCH_CONTRACT_TESTS(BATCH_CONTRACT_DECLARE)
#undef BATCH_CONTRACT_DECLARE

#endif
