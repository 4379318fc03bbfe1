/* pawl_internal.h: the handle's layout, shared by the files of the engine
 * (never installed; the public API sees pawl_t as opaque). */
#ifndef PAWL_INTERNAL_H
#define PAWL_INTERNAL_H

#include <pthread.h>

#include "pawl.h"
#include "store.h"

struct host;

struct pawl {
  store_t *store;          /* owned; this handle's one connection */
  struct host *host;       /* the worker host started on this handle (owned
                              by the handle that started it), or the host a
                              sibling handle belongs to (borrowed) */
  int owns_host;
  pthread_mutex_t *gate;   /* the write gate of this handle and its
                              siblings (see store_config_t); owned by the
                              handle pawl_open() made */
  store_config_t cfg;      /* as opened; cfg.url is owned */
  char *node_id;           /* owned */
  char *principal;         /* owned; actor in history for operator actions */
  pawl_id_t incarnation;   /* this handle's lease token: a restarted node
                              with the same node id is a new incarnation */
  int64_t lease_ms;
  char errmsg[512];
};

/* Opens another handle on the same database, node and lease token, for
 * one of the host's threads (each thread has its own connection). */
int pawl__open_sibling(pawl_t *parent, const char *principal, pawl_t **out,
                       char *errbuf, size_t errlen);

/* Stops and frees the host started on `p` (host.c). */
void pawl__host_free(pawl_t *p);

/* Sets p->errmsg and returns rc. */
int pawl__fail(pawl_t *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
