/* fault_store.c: TEST-ONLY: the store that refuses what the fault plan
 * says (host/core/fault.h has the plan's grammar).
 *
 * pawl__store_open() passes every store it opens through
 * pawl__fault_store_wrap(). Without a plan nothing changes. With a plan
 * that touches the store, its ops table is replaced by a copy whose finish
 * and claim consult the plan before calling the backend's own; everything
 * else is the backend's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "fault.h"
#include "store.h"

typedef struct fault_ops {
  struct store_ops ops;           /* first: st->ops points here */
  const struct store_ops *orig;   /* the backend's own */
} fault_ops_t;

static const struct store_ops *fault_orig(store_t *st) {
  return ((const fault_ops_t *)st->ops)->orig;
}

static int fault_finish(store_t *st, const pawl_id_t *token,
                        const pawl_outcome_t *outs, size_t n, int *rcs) {
  size_t k = 0;
  int rc = pawl__fault_finish(outs, n, &k);
  if (rc == PAWL_EUNAVAIL)
    return pawl__store_fail(st, PAWL_EUNAVAIL,
                            "finish jobs: database unreachable: fault "
                            "injected (PAWL_TEST_FAULTS)");
  if (rc) {
    char id[PAWL_ID_STRLEN];
    pawl_id_format(&outs[k].id, id);
    return pawl__store_fail(st, PAWL_EINVAL,
                            "finish jobs: the outcome of job %s is refused "
                            "as bad data: fault injected (PAWL_TEST_FAULTS)",
                            id);
  }
  return fault_orig(st)->terminal.finish(st, token, outs, n, rcs);
}

static int fault_claim(store_t *st, const store_claim_t *c, pawl_job_t ***out,
                       size_t *n) {
  if (pawl__fault_hit(FAULT_CLAIM))
    return pawl__store_fail(st, PAWL_EUNAVAIL,
                            "claim jobs: database unreachable: fault injected "
                            "(PAWL_TEST_FAULTS)");
  return fault_orig(st)->claim.claim(st, c, out, n);
}

static void fault_close(store_t *st) {
  fault_ops_t *f = (fault_ops_t *)st->ops;
  st->ops = f->orig;
  pawl__free(f);
  st->ops->close(st);
}

int pawl__fault_store_wrap(store_t **stp, char *errbuf, size_t errlen) {
  store_t *st = *stp;
  int rc = pawl__fault_open(errbuf, errlen);
  if (rc == 0) return 0;
  fault_ops_t *f = rc > 0 ? pawl__malloc(sizeof *f) : NULL;
  if (rc > 0 && !f) {
    snprintf(errbuf, errlen, "out of memory");
    rc = PAWL_ENOMEM;
  }
  if (rc < 0) {
    st->ops->close(st);
    *stp = NULL;
    return rc;
  }
  f->ops = *st->ops;
  f->orig = st->ops;
  f->ops.terminal.finish = fault_finish;
  f->ops.claim.claim = fault_claim;
  f->ops.close = fault_close;
  st->ops = &f->ops;
  return 0;
}
