/* test_list_fanout.h: what job code may write (docs/security.md): the
 * store's part of it on both backends. */
TEST_ENTRY(store_sqlite_fanout_batch_ident)
TEST_ENTRY(store_sqlite_fanout_depth)
TEST_ENTRY(store_sqlite_fanout_write_caps)
TEST_ENTRY_PG(store_pg_fanout_batch_ident)
TEST_ENTRY_PG(store_pg_fanout_depth)
TEST_ENTRY_PG(store_pg_fanout_write_caps)
