/* dbstats.h: process-wide counts of what the stores do that the metrics
 * endpoint reports but no caller sees: reconnects. Atomics;
 * any thread. */
#ifndef PAWL_DBSTATS_H
#define PAWL_DBSTATS_H

#include <stdint.h>

/* A store connection was lost and opened again (PostgreSQL). */
void pawl__dbstats_reconnected(void);
int64_t pawl__dbstats_reconnects(void);

#endif
