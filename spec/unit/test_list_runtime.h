/* test_runtime.c: an attempt's run time is its body's, on both stores. */
TEST_ENTRY(runtime_sqlite_measured)
TEST_ENTRY(runtime_sqlite_bounds)
TEST_ENTRY(runtime_sqlite_batch)
TEST_ENTRY_PG(store_pg_runtime_measured)
TEST_ENTRY_PG(store_pg_runtime_bounds)
TEST_ENTRY_PG(store_pg_runtime_batch)
TEST_ENTRY(runtime_sqlite_ahead)
TEST_ENTRY_PG(store_pg_runtime_ahead)
