/* store.c: the store interface's dispatch: opening the backend a URL
 * names, and the clock every caller of the interface reads. What the
 * backends share is in stores/common/. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "iso8601.h"
#include "redact.h"
#include "store.h"

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen);
int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen);

/* Opens the backend the URL names. */
static int store_open_backend(store_t **out, const store_config_t *cfg,
                              char *errbuf, size_t errlen) {
  const char *url = cfg->url;
  if (url == NULL || *url == '\0') {
    snprintf(errbuf, errlen, "no database URL given");
    return PAWL_EINVAL;
  }
  if (strncmp(url, "sqlite:", 7) == 0)
    return pawl__store_sqlite_open(out, cfg, url + 7, errbuf, errlen);
  /* PostgreSQL: a libpq URI as it is, or "postgres:" followed by any
   * libpq connection string ("postgres:host=/run/x dbname=jobs"). */
  if (strncmp(url, "postgres://", 11) == 0 ||
      strncmp(url, "postgresql://", 13) == 0)
    return pawl__store_postgres_open(out, cfg, url, errbuf, errlen);
  if (strncmp(url, "postgres:", 9) == 0) {
    if (url[9] == '\0') {
      snprintf(errbuf, errlen,
               "database URL postgres: has no connection string");
      return PAWL_EINVAL;
    }
    return pawl__store_postgres_open(out, cfg, url + 9, errbuf, errlen);
  }
  char shown[512];
  pawl__redact_url(url, shown, sizeof shown); /* "postgresx://u:pw@..." */
  snprintf(errbuf, errlen,
           "database URL \"%s\" is not understood: expected sqlite:PATH, "
           "postgres://... or postgres:CONNINFO",
           shown);
  return PAWL_EINVAL;
}

int pawl__store_open(store_t **out, const store_config_t *cfg, char *errbuf,
                     size_t errlen) {
  store_t *st = NULL;
  int rc = store_open_backend(&st, cfg, errbuf, errlen);
  /* Tests only: a store that fails on purpose (host/core/fault.h). */
  if (!rc) rc = pawl__fault_store_wrap(&st, errbuf, errlen);
  if (!rc) *out = st;
  return rc;
}

int64_t pawl__store_now(store_t *st) {
  if (st->clock) return st->clock(st->clock_data);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + st->skew_ms;
}
