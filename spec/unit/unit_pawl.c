/* unit_pawl.c: see unit_pawl.h. */
#include "unit_pawl.h"

#include <stdatomic.h>

#include "unit.h"

int64_t unit_clock(void *data) {
  return atomic_load((_Atomic int64_t *)data);
}

pawl_t *unit_open_clocked(const char *url, const char *node,
                          _Atomic int64_t *now, int64_t lease_ms) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.node_id = node;
  o.principal = "tester";
  o.clock = unit_clock;
  o.clock_data = (void *)now;
  o.lease_ms = lease_ms;
  o.age_boost_ms = 0;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open(%s): %s", url, err);
  return p;
}
