/* store.c: what all backends share: opening by URL, the clock, errors and
 * the migration checksum. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store.h"

int store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen);
int store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen);

int store_open(store_t **out, const store_config_t *cfg, char *errbuf,
               size_t errlen) {
  const char *url = cfg->url;
  if (url == NULL || *url == '\0') {
    snprintf(errbuf, errlen, "no database URL given");
    return PAWL_EINVAL;
  }
  if (strncmp(url, "sqlite:", 7) == 0)
    return store_sqlite_open(out, cfg, url + 7, errbuf, errlen);
  /* PostgreSQL: a libpq URI as it is, or "postgres:" followed by any
   * libpq connection string ("postgres:host=/run/x dbname=jobs"). */
  if (strncmp(url, "postgres://", 11) == 0 ||
      strncmp(url, "postgresql://", 13) == 0)
    return store_postgres_open(out, cfg, url, errbuf, errlen);
  if (strncmp(url, "postgres:", 9) == 0) {
    if (url[9] == '\0') {
      snprintf(errbuf, errlen,
               "database URL postgres: has no connection string");
      return PAWL_EINVAL;
    }
    return store_postgres_open(out, cfg, url + 9, errbuf, errlen);
  }
  snprintf(errbuf, errlen,
           "database URL \"%s\" is not understood: expected sqlite:PATH, "
           "postgres://... or postgres:CONNINFO",
           url);
  return PAWL_EINVAL;
}

int64_t store_now(store_t *st) {
  if (st->clock) return st->clock(st->clock_data);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + st->skew_ms;
}

int store_fail(store_t *st, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
  va_end(ap);
  return rc;
}

/* CRC-32 (IEEE 802.3, reflected), bit by bit: it runs once per migration at
 * start-up, so a table would buy nothing. */
uint32_t store_crc32(const void *data, size_t len) {
  const unsigned char *p = data;
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < len; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return ~crc;
}
