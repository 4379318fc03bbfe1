/* store_contract_ordering.h: the per-key ordering part of the store
 * contract suite, written once for every backend like
 * store_contract.h; each backend's test file registers
 * ORDERING_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_ORDERING_H
#define PAWL_STORE_CONTRACT_ORDERING_H

#define ORDERING_CONTRACT_TESTS(X) \
  X(ordering_order)                \
  X(ordering_other_keys)           \
  X(ordering_hold_on_retry)        \
  X(ordering_skip_failed)          \
  X(ordering_release_dead_cancel)  \
  X(ordering_paused)               \
  X(ordering_recover_holds)        \
  X(ordering_bad_input)

#define ORDERING_CONTRACT_DECLARE(name) void contract_##name(const char *url);
ORDERING_CONTRACT_TESTS(ORDERING_CONTRACT_DECLARE)
#undef ORDERING_CONTRACT_DECLARE

#endif
