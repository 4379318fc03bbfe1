/* dbstats.c: see dbstats.h. One counter for the whole process: a
 * connection belongs to no host (several hosts in one process share it;
 * `pawl run` is one host). */
#include "dbstats.h"

#include <stdatomic.h>

static atomic_llong dbstats_reconnects;

void pawl__dbstats_reconnected(void) {
  atomic_fetch_add_explicit(&dbstats_reconnects, 1, memory_order_relaxed);
}

int64_t pawl__dbstats_reconnects(void) {
  return atomic_load_explicit(&dbstats_reconnects, memory_order_relaxed);
}
