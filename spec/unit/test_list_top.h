/* test_list_top.h: what `pawl top` reads: the contract suite's
 * part on both backends. */
TEST_ENTRY(store_sqlite_top_throughput)
TEST_ENTRY(store_sqlite_top_running)
TEST_ENTRY(store_sqlite_top_snapshot)
TEST_ENTRY_PG(store_pg_top_throughput)
TEST_ENTRY_PG(store_pg_top_running)
TEST_ENTRY_PG(store_pg_top_snapshot)
