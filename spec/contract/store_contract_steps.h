/* store_contract_steps.h: the restartable steps and job instances part of
 * the store contract suite, written once for every backend
 * like store_contract.h; each backend's test file registers
 * STEPS_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_STEPS_H
#define PAWL_STORE_CONTRACT_STEPS_H

#define STEPS_CONTRACT_TESTS(X) \
  X(steps_record)               \
  X(steps_lease_guard)          \
  X(steps_lost_attempt)         \
  X(steps_bad_input)            \
  X(steps_instances)            \
  X(steps_instance_taken)

#define STEPS_CONTRACT_DECLARE(name) void contract_##name(const char *url);
STEPS_CONTRACT_TESTS(STEPS_CONTRACT_DECLARE)
#undef STEPS_CONTRACT_DECLARE

#endif
