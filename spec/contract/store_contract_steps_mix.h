/* store_contract_steps_mix.h: job instances with replace, batches and
 * chains (found when they were merged), written once for every backend;
 * each backend's test file registers STEPS_MIX_CONTRACT_TESTS as it
 * registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_STEPS_MIX_H
#define PAWL_STORE_CONTRACT_STEPS_MIX_H

#define STEPS_MIX_CONTRACT_TESTS(X) \
  X(steps_replace_instance)         \
  X(steps_identity_refused)

#define STEPS_MIX_CONTRACT_DECLARE(name) void contract_##name(const char *url);
STEPS_MIX_CONTRACT_TESTS(STEPS_MIX_CONTRACT_DECLARE)
#undef STEPS_MIX_CONTRACT_DECLARE

#endif
