/* store_contract_metrics.h: the metrics endpoint's part of the store
 * contract suite (store.h "metrics", through pawl__gauges),
 * written once for every backend; each backend's test file registers
 * METRICS_CONTRACT_TESTS the way it registers CONTRACT_TESTS. */
#ifndef PAWL_STORE_CONTRACT_METRICS_H
#define PAWL_STORE_CONTRACT_METRICS_H

#define METRICS_CONTRACT_TESTS(X) \
  X(metrics_gauges)               \
  X(metrics_refresh)

#define METRICS_CONTRACT_DECLARE(name) void contract_##name(const char *url);
METRICS_CONTRACT_TESTS(METRICS_CONTRACT_DECLARE)
#undef METRICS_CONTRACT_DECLARE

#endif
