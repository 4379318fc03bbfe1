/* test_list_claim_hold.h: the SQLite claim walks no held job (V018). */
TEST_ENTRY(sqlite_claim_hold_plans)
TEST_ENTRY(sqlite_claim_hold_cost_flat)
TEST_ENTRY(sqlite_claim_hold_invariant)
TEST_ENTRY(sqlite_claim_hold_next_due)
TEST_ENTRY(sqlite_claim_hold_early_written)
TEST_ENTRY(sqlite_claim_hold_migrates)
TEST_ENTRY(sqlite_claim_hold_lanes_flat)
