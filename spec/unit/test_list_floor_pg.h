/* test_list_floor_pg.h: PostgreSQL claims from their floor, under a pinned
 * horizon, and every way a row becomes claimable above a floor. */
TEST_ENTRY_PG(pg_floor_pinned)
TEST_ENTRY_PG(pg_floor_rewind_priority)
TEST_ENTRY_PG(pg_floor_rewind_past)
TEST_ENTRY_PG(pg_floor_rewind_release)
TEST_ENTRY_PG(pg_floor_rewind_time_held)
TEST_ENTRY_PG(pg_floor_rewind_key)
TEST_ENTRY_PG(pg_floor_rewind_parents)
TEST_ENTRY_PG(pg_floor_rewind_resume)
TEST_ENTRY_PG(pg_floor_rewind_late_commit)
TEST_ENTRY_PG(pg_floor_rewind_odd)
TEST_ENTRY_PG(pg_floor_next_due)
TEST_ENTRY_PG(pg_floor_dead_claim)
