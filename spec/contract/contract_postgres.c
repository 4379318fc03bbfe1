/* contract_postgres.c: the store contract suite (store_contract*.c,
 * written once for both backends) run on PostgreSQL, each contract test as
 * the unit test store_pg_NAME in a fresh schema of its own on the test
 * run's throwaway server (pgtest.h). What only PostgreSQL has is tested in
 * spec/unit/test_store_postgres.c. */
#include "pgtest.h"
#include "store_contract.h"
#include "store_contract_admin.h"
#include "store_contract_ordering.h"
#include "store_contract_sigrep.h"
#include "store_contract_authority.h"
#include "store_contract_batch.h"
#include "store_contract_fanout.h"
#include "store_contract_deps.h"
#include "store_contract_deps_mix.h"
#include "store_contract_steps.h"
#include "store_contract_steps_mix.h"
#include "store_contract_top.h"
#include "store_contract_metrics.h"
#include "unit.h"

#define CONTRACT_PG(name) \
  void test_store_pg_##name(void) { contract_##name(pgtest_url(#name)); }
CONTRACT_TESTS(CONTRACT_PG)
ADMIN_CONTRACT_TESTS(CONTRACT_PG)
ORDERING_CONTRACT_TESTS(CONTRACT_PG)
SIGREP_CONTRACT_TESTS(CONTRACT_PG)
AUTHORITY_CONTRACT_TESTS(CONTRACT_PG)
BATCH_CONTRACT_TESTS(CONTRACT_PG)
FANOUT_CONTRACT_TESTS(CONTRACT_PG)
DEPS_CONTRACT_TESTS(CONTRACT_PG)
DEPS_MIX_CONTRACT_TESTS(CONTRACT_PG)
STEPS_CONTRACT_TESTS(CONTRACT_PG)
STEPS_MIX_CONTRACT_TESTS(CONTRACT_PG)
TOP_CONTRACT_TESTS(CONTRACT_PG)
METRICS_CONTRACT_TESTS(CONTRACT_PG)
