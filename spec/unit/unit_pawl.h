/* unit_pawl.h: opening pawl handles in C unit tests on an injected clock
 * (the contract tests of each feature share it). */
#ifndef PAWL_UNIT_PAWL_H
#define PAWL_UNIT_PAWL_H

#include <stdint.h>

#include "pawl.h"

/* A pawl_clock_fn reading the _Atomic int64_t that `data` points to
 * (atomic: a host's threads read it while the test moves it). */
int64_t unit_clock(void *data);

/* Opens `url` as node `node`, principal "tester", on the clock at *now,
 * with a lease of `lease_ms` and no age boost (claims in priority order,
 * so tests can predict them); fails the test if it cannot. The caller
 * closes the handle. */
pawl_t *unit_open_clocked(const char *url, const char *node,
                          _Atomic int64_t *now, int64_t lease_ms);

#endif
