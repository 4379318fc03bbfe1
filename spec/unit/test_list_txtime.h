/* test_txtime.c: SQLite transitions read their time under the write lock. */
TEST_ENTRY(txtime_sqlite_writes_read_time_locked)
TEST_ENTRY(txtime_sqlite_transitions_read_time_locked)
