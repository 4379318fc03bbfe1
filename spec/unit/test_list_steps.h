/* test_list_steps.h: restartable steps and job instances: the
 * contract suite on SQLite and on PostgreSQL. */
TEST_ENTRY(store_sqlite_steps_record)
TEST_ENTRY(store_sqlite_steps_lease_guard)
TEST_ENTRY(store_sqlite_steps_lost_attempt)
TEST_ENTRY(store_sqlite_steps_bad_input)
TEST_ENTRY(store_sqlite_steps_instances)
TEST_ENTRY(store_sqlite_steps_instance_taken)
TEST_ENTRY_PG(store_pg_steps_record)
TEST_ENTRY_PG(store_pg_steps_lease_guard)
TEST_ENTRY_PG(store_pg_steps_lost_attempt)
TEST_ENTRY_PG(store_pg_steps_bad_input)
TEST_ENTRY_PG(store_pg_steps_instances)
TEST_ENTRY_PG(store_pg_steps_instance_taken)
