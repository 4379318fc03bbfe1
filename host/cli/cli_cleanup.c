/* cli_cleanup.c: `pawl cleanup` and `pawl run --retain`
 * (retention; include/pawl.h, "retention"), on the public API. cli.c
 * parses the command line; this file turns --retain into a policy, runs
 * the cleanup and prints what it removed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_retention_policy(const char *spec, pawl_retention_t **out,
                         char *err) {
  *out = NULL;
  if (spec && strcmp(spec, "off") == 0) return 0;
  char msg[512];
  /* The defaults: an empty policy text keeps every default. */
  int rc = pawl_retention_parse(spec ? spec : "", out, msg, sizeof msg);
  if (rc) return cli_fail(err, CLI_USAGE, "--retain: %s", msg);
  return 0;
}

int cli_cleanup_main(pawl_t *p, const cli_cleanup_args_t *a, char *err) {
  pawl_retention_t *pol = NULL;
  if (a->retain && strcmp(a->retain, "off") == 0)
    return cli_fail(err, CLI_USAGE,
                    "--retain off: pawl cleanup needs a policy (or leave "
                    "--retain out for the defaults)");
  int rc = cli_retention_policy(a->retain, &pol, err);
  if (rc) return rc;
  pawl_cleanup_opts_t o;
  pawl_cleanup_opts_init(&o);
  o.policy = pol;
  o.state = a->state;
  o.older_than_ms = a->older_than_ms;
  o.dry_run = a->dry_run;
  pawl_cleanup_result_t *r = NULL;
  rc = pawl_cleanup(p, &o, &r);
  pawl_retention_free(pol);
  if (rc)
    return cli_fail(err, rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL, "%s",
                    pawl_errmsg(p));
  const char *verb = r->dry_run ? "would be " : "";
  const char *what = r->archived ? "archived" : "deleted";
  if (a->json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_printf(&b,
                     "{\"dry_run\":%s,\"archived\":%s,\"removed\":%lld,"
                     "\"scanned\":%lld,\"by\":[",
                     r->dry_run ? "true" : "false",
                     r->archived ? "true" : "false", (long long)r->removed,
                     (long long)r->scanned);
    for (size_t i = 0; i < r->nrows; i++) {
      const pawl_cleanup_row_t *x = &r->rows[i];
      pawl__buf_printf(&b, "%s{\"state\":\"%s\",\"queue\":", i ? "," : "",
                       pawl_state_name(x->state));
      pawl__buf_json_string(&b, x->queue, strlen(x->queue));
      pawl__buf_puts(&b, ",\"type\":");
      pawl__buf_json_string(&b, x->type, strlen(x->type));
      pawl__buf_printf(&b, ",\"count\":%lld}", (long long)x->count);
    }
    pawl__buf_puts(&b, "]}");
    rc = cli_emit(&b, err);
    pawl__buf_free(&b);
  } else {
    printf("%lld finished jobs %s%s (%lld looked at)\n",
           (long long)r->removed, verb, what, (long long)r->scanned);
    if (r->nrows) {
      cli_table_t t = {.ncols = 4};
      static const char *const head[4] = {"STATE", "QUEUE", "TYPE", "JOBS"};
      cli_table_row(&t, head);
      for (size_t i = 0; i < r->nrows; i++) {
        char n[24];
        snprintf(n, sizeof n, "%lld", (long long)r->rows[i].count);
        const char *cells[4] = {pawl_state_name(r->rows[i].state),
                                r->rows[i].queue, r->rows[i].type, n};
        cli_table_row(&t, cells);
      }
      cli_table_print(&t, "");
      cli_table_free(&t);
    }
  }
  pawl_cleanup_free(r);
  return rc;
}
