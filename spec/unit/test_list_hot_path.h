/* test_list_hot_path.h: what the SQLite claim and finish execute and
 * write per job (test_hot_path.c). */
TEST_ENTRY(sqlite_claim_ahead_costs_no_probe)
TEST_ENTRY(sqlite_claim_take_no_statement_journal)
TEST_ENTRY(sqlite_finish_writes_per_job)
TEST_ENTRY(sqlite_finish_run_mixed)
TEST_ENTRY(sqlite_finish_run_repeat_first_wins)
