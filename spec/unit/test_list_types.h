/* Job types' redact lists: test_types.c, on both backends. */
TEST_ENTRY(store_sqlite_types)
TEST_ENTRY_PG(store_pg_types)
TEST_ENTRY(redact_names_parse)
TEST_ENTRY(store_sqlite_branch_names)
TEST_ENTRY_PG(store_pg_branch_names)
