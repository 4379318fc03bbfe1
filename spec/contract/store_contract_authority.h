/* store_contract_authority.h: job code's authority over other jobs and
 * the bounds of what it hands in (docs/security.md, "Authority over other
 * jobs"), as the store and the API enforce them, written once for every
 * backend like store_contract.h; each backend's test file registers
 * AUTHORITY_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_AUTHORITY_H
#define PAWL_STORE_CONTRACT_AUTHORITY_H

#define AUTHORITY_CONTRACT_TESTS(X) \
  X(auth_signal_owner)              \
  X(auth_replace_owner)             \
  X(auth_transition_owner)          \
  X(auth_host_locks)                \
  X(auth_input_bounds)

#define AUTHORITY_CONTRACT_DECLARE(name) void contract_##name(const char *url);
AUTHORITY_CONTRACT_TESTS(AUTHORITY_CONTRACT_DECLARE)
#undef AUTHORITY_CONTRACT_DECLARE

#endif
