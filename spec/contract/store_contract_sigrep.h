/* store_contract_sigrep.h: the signals and replace part of the store
 * contract suite, written once for every backend like
 * store_contract.h; each backend's test file registers
 * SIGREP_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_SIGREP_H
#define PAWL_STORE_CONTRACT_SIGREP_H

#define SIGREP_CONTRACT_TESTS(X) \
  X(sig_approve)                 \
  X(sig_reject)                  \
  X(sig_double)                  \
  X(sig_unknown_and_keys)        \
  X(sig_timeout)                 \
  X(sig_late)                    \
  X(replace_pending)             \
  X(replace_running)             \
  X(replace_raced)               \
  X(replace_terminal)            \
  X(replace_signal_wait)         \
  X(replace_keeps_resource)

#define SIGREP_CONTRACT_DECLARE(name) void contract_##name(const char *url);
SIGREP_CONTRACT_TESTS(SIGREP_CONTRACT_DECLARE)
#undef SIGREP_CONTRACT_DECLARE

#endif
