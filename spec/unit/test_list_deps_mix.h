/* test_list_deps_mix.h: dependencies with replace, batches and signals:
 * the contract suite on both backends. */
TEST_ENTRY(store_sqlite_deps_replace_parent)
TEST_ENTRY(store_sqlite_deps_replace_child)
TEST_ENTRY(store_sqlite_deps_batch_child)
TEST_ENTRY(store_sqlite_deps_signal_refused)
TEST_ENTRY_PG(store_pg_deps_replace_parent)
TEST_ENTRY_PG(store_pg_deps_replace_child)
TEST_ENTRY_PG(store_pg_deps_batch_child)
TEST_ENTRY_PG(store_pg_deps_signal_refused)
