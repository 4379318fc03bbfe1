/* errors.c: the errors every backend records the same way: a formatted
 * message on the store, and the refusals worded alike (no such job, an
 * attempt not held). */
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

int pawl__store_fail(store_t *st, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
  va_end(ap);
  return rc;
}

int pawl__store_no_job(store_t *st, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_ENOTFOUND, "no job with id %s", text);
}

int pawl__store_not_held(store_t *st, const pawl_id_t *id, int32_t attempt) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  return pawl__store_fail(st, PAWL_ELEASE,
                    "job %s is not running under attempt %d on this node",
                    text, (int)attempt);
}
