/* test_list.h: every C unit test, one TEST_ENTRY(name) per line, by module.
 * CMake reads these lines to register each test with ctest. */
#include "test_list_uuid7.h"
#include "test_list_json.h"
#include "test_list_store.h"
#include "test_list_store_pg.h"
#include "test_list_api.h"
#include "test_list_iso8601.h"
#include "test_list_bounds.h"
#include "test_list_signal.h"
