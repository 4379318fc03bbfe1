/* test_list_steps_mix.h: job instances with replace, batches and chains:
 * the contract suite on both backends. */
TEST_ENTRY(store_sqlite_steps_replace_instance)
TEST_ENTRY(store_sqlite_steps_identity_refused)
TEST_ENTRY_PG(store_pg_steps_replace_instance)
TEST_ENTRY_PG(store_pg_steps_identity_refused)
