/* pawl_internal.h: the handle's layout, shared by the files of the engine
 * (never installed; the public API sees pawl_t as opaque). */
#ifndef PAWL_INTERNAL_H
#define PAWL_INTERNAL_H

#include "pawl.h"
#include "store.h"

struct pawl {
  store_t *store;          /* owned; this handle's one connection */
  char *node_id;           /* owned */
  char *principal;         /* owned; actor in history for operator actions */
  pawl_id_t incarnation;   /* this handle's lease token: a restarted node
                              with the same node id is a new incarnation */
  int64_t lease_ms;
  char errmsg[512];
};

/* Sets p->errmsg and returns rc. */
int pawl__fail(pawl_t *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
