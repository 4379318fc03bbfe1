/* test_metrics.c: the metrics endpoint's pieces that need no database
 * server: label escaping (the text format's rules) and the options a
 * host refuses. The endpoint itself is driven through `pawl run` by
 * spec/functional/metrics_spec.lua; the gauges by store_contract_metrics.c. */
#include <string.h>

#include "buf.h"
#include "metrics.h"
#include "pawl.h"
#include "unit.h"

void test_metrics_label_escapes(void) {
  pawl_buf_t b = {0};
  pawl__metrics_label(&b, "a\"b\\c\nd");
  CHECK_STR(pawl__buf_cstr(&b), "a\\\"b\\\\c\\nd");
  pawl__buf_reset(&b);
  pawl__metrics_label(&b, "caf\xc3\xa9 \xff!"); /* invalid UTF-8: U+FFFD */
  CHECK_STR(pawl__buf_cstr(&b), "caf\xc3\xa9 \xef\xbf\xbd!");
  pawl__buf_free(&b);
}

static pawl_t *open_tmp(const char *name) {
  char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.create = 1;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "pawl_open: %s", err);
  return p;
}

void test_metrics_bad_options(void) {
  pawl_t *p = open_tmp("m");
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.scripts_dir = unit_tmpdir();
  pawl_metrics_opts_t mo = {.listen = "127.0.0.1:0"};
  ho.metrics = &mo;
  /* Step mode has no threads to serve it. */
  CHECK_INT(pawl_step_start(p, &ho), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "the metrics endpoint needs pawl_start()") != NULL);
  /* Numbers out of range, named with their range. */
  mo.refresh_ms = 50;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "refresh_ms must be 0 or between 100 and "
                               "3600000 (got 50)") != NULL);
  mo.refresh_ms = 1000;
  mo.recount_ms = 500;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "recount_ms must be 0 or between refresh_ms "
                               "(1000) and 1200000 (got 500)") != NULL);
  mo.recount_ms = 0;
  mo.listen = NULL;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK(strstr(pawl_errmsg(p), "listen (ADDRESS:PORT) is required") != NULL);
  /* Refused starts leave nothing behind: a good one works. */
  mo.listen = "127.0.0.1:0";
  CHECK_OK(pawl_start(p, &ho));
  pawl_stop(p, PAWL_STOP_NOW);
  CHECK_OK(pawl_wait(p, -1));
  pawl_close(p);
}
