/* test_list_batch.h: batches (issue 15): the contract suite on both
 * backends, and several processes ending one batch's children at once on
 * PostgreSQL. */
TEST_ENTRY(store_sqlite_batch_success)
TEST_ENTRY(store_sqlite_batch_failure)
TEST_ENTRY(store_sqlite_batch_cancel_recover)
TEST_ENTRY(store_sqlite_batch_metrics)
TEST_ENTRY(store_sqlite_batch_bad_input)
TEST_ENTRY(store_pg_batch_success)
TEST_ENTRY(store_pg_batch_failure)
TEST_ENTRY(store_pg_batch_cancel_recover)
TEST_ENTRY(store_pg_batch_metrics)
TEST_ENTRY(store_pg_batch_bad_input)
TEST_ENTRY(store_pg_batch_concurrent)
