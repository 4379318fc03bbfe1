/* store_contract_deps_mix.h: dependencies with replace, batches and
 * signals (found when they were merged), written once for every backend;
 * each backend's test file registers DEPS_MIX_CONTRACT_TESTS as it
 * registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_DEPS_MIX_H
#define PAWL_STORE_CONTRACT_DEPS_MIX_H

#define DEPS_MIX_CONTRACT_TESTS(X) \
  X(deps_replace_parent)           \
  X(deps_replace_child)            \
  X(deps_batch_child)              \
  X(deps_signal_refused)

#define DEPS_MIX_CONTRACT_DECLARE(name) void contract_##name(const char *url);
DEPS_MIX_CONTRACT_TESTS(DEPS_MIX_CONTRACT_DECLARE)
#undef DEPS_MIX_CONTRACT_DECLARE

#endif
