/* test_list_pg_hotpath.h: the PostgreSQL claim path's plan whatever the
 * planner believes, its first step's cost when idle, a heartbeat that
 * never waits for a lock, sessions that never compile a statement to
 * machine code, lookups by id that stay lookups on a young table, and
 * claims that write each row once. */
TEST_ENTRY_PG(pg_claim_walks_index_misjudged)
TEST_ENTRY_PG(pg_prepare_idle_writes_nothing)
TEST_ENTRY_PG(pg_heartbeat_skips_locked)
TEST_ENTRY_PG(pg_session_no_jit)
TEST_ENTRY_PG(pg_young_table_lookups)
TEST_ENTRY_PG(pg_claim_ahead_one_write)
