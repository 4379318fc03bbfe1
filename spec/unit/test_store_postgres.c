/* test_store_postgres.c: the contract suite on PostgreSQL, and what only
 * PostgreSQL has: the advisory-locked migrator, column types, the claim's
 * plan, SKIP LOCKED between nodes, NOTIFY wakeups, reconnects and the
 * database clock. */
#include <pthread.h>
#include <sys/wait.h>

#include "pawl.h"
#include "pawl_internal.h"
#include "pgtest.h"
#include "store_contract.h"
#include "unit.h"

#define CONTRACT_PG(name) \
  void test_store_pg_##name(void) { contract_##name(pgtest_url(#name)); }
CONTRACT_TESTS(CONTRACT_PG)
