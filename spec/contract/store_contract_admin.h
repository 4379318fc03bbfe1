/* store_contract_admin.h: the admin part of the store contract suite
 * (bulk actions, statistics, nodes, locks, filtered listings), written once
 * for every backend like store_contract.h; each backend's test file
 * registers ADMIN_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_ADMIN_H
#define PAWL_STORE_CONTRACT_ADMIN_H

#define ADMIN_CONTRACT_TESTS(X) \
  X(admin_bulk_retry)           \
  X(admin_bulk_filters)         \
  X(admin_bulk_bad_input)       \
  X(admin_bulk_skips_changed)   \
  X(admin_bulk_refused_key)     \
  X(admin_bulk_batches)         \
  X(admin_bulk_cancel_running)  \
  X(admin_list_filters)         \
  X(admin_stats)                \
  X(admin_throughput)           \
  X(admin_nodes)                \
  X(admin_locks)

#define ADMIN_CONTRACT_DECLARE(name) void contract_##name(const char *url);
ADMIN_CONTRACT_TESTS(ADMIN_CONTRACT_DECLARE)
#undef ADMIN_CONTRACT_DECLARE

#endif
