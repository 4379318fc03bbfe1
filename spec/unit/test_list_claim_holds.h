/* test_list_claim_holds.h: claims that do not walk the jobs that cannot
 * run now (PostgreSQL: schema/postgres/V017__claim_holds.sql). */
TEST_ENTRY_PG(pg_claim_holds_plans)
TEST_ENTRY_PG_THREADS(pg_claim_holds_race_threads)
TEST_ENTRY_PG(pg_claim_holds_killed_mid_claim)
TEST_ENTRY_PG(pg_claim_holds_migration)
