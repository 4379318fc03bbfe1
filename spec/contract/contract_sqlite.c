/* contract_sqlite.c: the store contract suite (store_contract*.c, written
 * once for both backends) run on SQLite, each contract test as the unit
 * test store_sqlite_NAME on a fresh database file in the test's temp dir.
 * What only SQLite has is tested in spec/unit/test_store_sqlite.c. */
#include <stdio.h>

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

static const char *sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

#define CONTRACT_SQLITE(name) \
  void test_store_sqlite_##name(void) { contract_##name(sqlite_url(#name)); }
CONTRACT_TESTS(CONTRACT_SQLITE)
ADMIN_CONTRACT_TESTS(CONTRACT_SQLITE)
ORDERING_CONTRACT_TESTS(CONTRACT_SQLITE)
SIGREP_CONTRACT_TESTS(CONTRACT_SQLITE)
AUTHORITY_CONTRACT_TESTS(CONTRACT_SQLITE)
BATCH_CONTRACT_TESTS(CONTRACT_SQLITE)
FANOUT_CONTRACT_TESTS(CONTRACT_SQLITE)
DEPS_CONTRACT_TESTS(CONTRACT_SQLITE)
DEPS_MIX_CONTRACT_TESTS(CONTRACT_SQLITE)
STEPS_CONTRACT_TESTS(CONTRACT_SQLITE)
STEPS_MIX_CONTRACT_TESTS(CONTRACT_SQLITE)
TOP_CONTRACT_TESTS(CONTRACT_SQLITE)
METRICS_CONTRACT_TESTS(CONTRACT_SQLITE)
