/* gauges.c: what the metrics endpoint's gauges read of the store,
 * for the runner, which sees no store header (pawl_internal.h). */
#include "handle.h"
#include "pawl_internal.h"
#include "store.h"

_Static_assert(PAWL__MINUTES_KEPT == STORE_TP_KEEP,
               "the runner's idea of how long buckets are kept");

typedef struct gauges_ctx {
  pawl__gauge_cb cb;
  void *data;
} gauges_ctx_t;

static int gauges_row(const store_stat_row_t *row, void *data) {
  gauges_ctx_t *c = data;
  if (row->state < 0 || row->state >= PAWL_STATE_COUNT) return 0;
  pawl__gauge_row_t g = {.queue = row->queue,
                         .state = row->state,
                         .count = row->count,
                         .since = row->since,
                         .oldest_due = row->oldest_due};
  return c->cb(&g, c->data);
}

int pawl__gauges(pawl_t *p, int64_t since, int full, int64_t *now,
                 pawl__gauge_cb cb, void *data) {
  p->errmsg[0] = 0;
  gauges_ctx_t c = {cb, data};
  int64_t t = pawl__store_now(p->store);
  if (now) *now = t;
  return pawl__from_store(p, p->store->ops->metrics.gauges(
                                 p->store, t, since, full, gauges_row, &c));
}

int64_t pawl__minute_of(int64_t ms) { return store_tp_minute(ms); }
