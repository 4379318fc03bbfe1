/* store_contract_deps.h: dependencies between jobs (after/when,
 * chains, branches), the part of the store contract suite written once
 * for every backend like store_contract.h; each backend's test file
 * registers DEPS_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_DEPS_H
#define PAWL_STORE_CONTRACT_DEPS_H

#define DEPS_CONTRACT_TESTS(X) \
  X(deps_success)              \
  X(deps_failure_done)         \
  X(deps_fan_in)               \
  X(deps_fan_out_cascade)      \
  X(deps_retry_keeps_blocked)  \
  X(deps_manual_retry)         \
  X(deps_retry_reopens)        \
  X(deps_ended_parent)         \
  X(deps_chain)                \
  X(deps_branches)             \
  X(deps_recover_failed)       \
  X(deps_bad_input)

#define DEPS_CONTRACT_DECLARE(name) void contract_##name(const char *url);
DEPS_CONTRACT_TESTS(DEPS_CONTRACT_DECLARE)
#undef DEPS_CONTRACT_DECLARE

#endif
