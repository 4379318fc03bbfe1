/* test_list_metrics.h: the metrics endpoint's gauges: the
 * contract suite on both backends. */
TEST_ENTRY(store_sqlite_metrics_gauges)
TEST_ENTRY(store_sqlite_metrics_refresh)
TEST_ENTRY_PG(store_pg_metrics_gauges)
TEST_ENTRY_PG(store_pg_metrics_refresh)
