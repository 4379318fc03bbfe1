/* types_sync.c: the loaded scripts' redact lists, written to the database
 * as a chore of the poller, like the recurring definitions
 * (ticker.c), so that step mode and a host on a libuv loop write them too.
 * See host.h, "pawl__types_chore". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"
#include "host.h"
#include "pawl_internal.h"

void pawl__types_chore(host_t *h, pawl_t *p, uint64_t *synced) {
  pthread_mutex_lock(&h->mu);
  uint64_t gen = h->types_gen;
  char *types = NULL;
  if (!h->stopping && gen != *synced && h->types_json)
    types = pawl__strdup(h->types_json); /* NULL: tried at the next chore */
  pthread_mutex_unlock(&h->mu);
  if (!types) return;
  if (pawl__types_sync(p, types) != 0) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                    "redact lists of the scripts not written");
    pawl__log_str(&line, "error", pawl_errmsg(p));
    pawl__log_end(&line);
  } else {
    *synced = gen;
  }
  pawl__free(types);
}
