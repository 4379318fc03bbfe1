/* postgres_absent.c: the PostgreSQL backend of a pawl built without it
 * (cmake -DPAWL_WITH_POSTGRES=OFF): CMake compiles this file in place of
 * stores/postgres/ (PAWL_PG_SOURCES), so that such a build neither links
 * nor mentions libpq, and a postgres URL is refused, as bad input that no
 * retry mends, with a message that says what is missing and how to get
 * it. The connection string is not repeated: it may hold a password. */
#include <stdio.h>

#include "store.h"

int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                              const char *conninfo, char *errbuf,
                              size_t errlen);

int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                              const char *conninfo, char *errbuf,
                              size_t errlen) {
  (void)cfg, (void)conninfo;
  *out = NULL;
  snprintf(errbuf, errlen,
           "postgres://...: this pawl was built without PostgreSQL (libpq); "
           "rebuild it with cmake -DPAWL_WITH_POSTGRES=ON to use a "
           "PostgreSQL database, or use sqlite:PATH");
  return PAWL_EINVAL;
}
