/* test_list_authority.h: job code's authority over other jobs, the host's
 * lock names and input bounds: the contract suite on SQLite and on
 * PostgreSQL. */
TEST_ENTRY(store_sqlite_auth_signal_owner)
TEST_ENTRY(store_sqlite_auth_replace_owner)
TEST_ENTRY(store_sqlite_auth_transition_owner)
TEST_ENTRY(store_sqlite_auth_host_locks)
TEST_ENTRY(store_sqlite_auth_input_bounds)
TEST_ENTRY_PG(store_pg_auth_signal_owner)
TEST_ENTRY_PG(store_pg_auth_replace_owner)
TEST_ENTRY_PG(store_pg_auth_transition_owner)
TEST_ENTRY_PG(store_pg_auth_host_locks)
TEST_ENTRY_PG(store_pg_auth_input_bounds)
