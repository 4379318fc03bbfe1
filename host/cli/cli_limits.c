/* cli_limits.c: `pawl limit list|set|rm` (resource and rate
 * limits; include/pawl.h, "resource and rate limits"), on the public API.
 * cli.c parses and checks the command line (before anything is opened);
 * this file runs the verb and prints. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_admin.h"

/* "60s", "1500ms", "1h": a window as an operator wrote it. */
static void lim_window(int64_t ms, char *out, size_t len) {
  static const struct {
    int64_t ms;
    const char *unit;
  } units[] = {{604800000, "w"}, {86400000, "d"}, {3600000, "h"},
               {60000, "m"},     {1000, "s"},     {1, "ms"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (ms % units[i].ms == 0) {
      snprintf(out, len, "%lld%s", (long long)(ms / units[i].ms),
               units[i].unit);
      return;
    }
}

static void lim_json(pawl_buf_t *b, const pawl_limit_t *l) {
  char t[ISO8601_STRLEN];
  pawl__buf_puts(b, "{\"name\":");
  pawl__buf_json_string(b, l->name, strlen(l->name));
  if (l->max_running)
    pawl__buf_printf(b, ",\"max_running\":%lld", (long long)l->max_running);
  else
    pawl__buf_puts(b, ",\"max_running\":null");
  if (l->rate)
    pawl__buf_printf(b, ",\"rate\":%lld,\"rate_window_ms\":%lld",
                     (long long)l->rate, (long long)l->rate_window_ms);
  else
    pawl__buf_puts(b, ",\"rate\":null,\"rate_window_ms\":null");
  pawl__buf_printf(b, ",\"running\":%lld", (long long)l->running);
  if (l->rate && l->window_start) {
    pawl__iso8601_format(l->window_start, t);
    pawl__buf_printf(b, ",\"window_start\":\"%s\",\"window_count\":%lld", t,
                     (long long)l->window_count);
  } else {
    pawl__buf_puts(b, ",\"window_start\":null,\"window_count\":0");
  }
  pawl__iso8601_format(l->updated_at, t);
  pawl__buf_printf(b, ",\"updated_at\":\"%s\"}", t);
}

static int lim_list(pawl_t *p, int json, char *err) {
  pawl_limit_t *v = NULL;
  size_t n = 0;
  int rc = pawl_limits(p, &v, &n);
  if (rc) return cli_fail(err, CLI_FAIL, "%s", pawl_errmsg(p));
  int64_t now = pawl_now(p);
  cli_table_t t = {.ncols = 5};
  static const char *const head[5] = {"NAME", "MAX_RUNNING", "RUNNING",
                                      "RATE", "THIS_WINDOW"};
  if (!json) cli_table_row(&t, head);
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (size_t i = 0; i < n && !rc; i++) {
    const pawl_limit_t *l = &v[i];
    if (json) {
      pawl__buf_reset(&b);
      lim_json(&b, l);
      rc = cli_emit(&b, err);
      continue;
    }
    char max[24] = "-", running[24], rate[64] = "-", used[40] = "-";
    if (l->max_running)
      snprintf(max, sizeof max, "%lld", (long long)l->max_running);
    snprintf(running, sizeof running, "%lld", (long long)l->running);
    if (l->rate) {
      char w[24];
      lim_window(l->rate_window_ms, w, sizeof w);
      snprintf(rate, sizeof rate, "%lld/%s", (long long)l->rate, w);
      /* Starts in the window "now" is in (the stored one may be over). */
      int64_t cur = now - ((now % l->rate_window_ms) + l->rate_window_ms) %
                              l->rate_window_ms;
      snprintf(used, sizeof used, "%lld/%lld",
               (long long)(l->window_start == cur ? l->window_count : 0),
               (long long)l->rate);
    }
    const char *row[5] = {l->name, max, running, rate, used};
    cli_table_row(&t, row);
  }
  pawl__buf_free(&b);
  if (!json && !rc) {
    if (t.oom) rc = cli_fail(err, CLI_FAIL, "out of memory");
    else if (n) cli_table_print(&t, "");
    else printf("no limits\n");
  }
  cli_table_free(&t);
  pawl_limits_free(v, n);
  return rc;
}

int cli_limits_main(pawl_t *p, const cli_limit_args_t *a, char *err) {
  if (strcmp(a->verb, "list") == 0) return lim_list(p, a->json, err);
  int rc;
  if (strcmp(a->verb, "set") == 0)
    rc = pawl_limit_set(p, a->name, a->max_running, a->rate, a->window_ms);
  else
    rc = pawl_limit_remove(p, a->name);
  if (rc)
    return cli_fail(err, rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL, "%s",
                    pawl_errmsg(p));
  if (a->json) {
    /* The limit as it now is (set), or what was removed. */
    pawl_buf_t b;
    pawl__buf_init(&b);
    if (strcmp(a->verb, "rm") == 0) {
      pawl__buf_puts(&b, "{\"removed\":");
      pawl__buf_json_string(&b, a->name, strlen(a->name));
      pawl__buf_putc(&b, '}');
      rc = cli_emit(&b, err);
    } else {
      pawl_limit_t *v = NULL;
      size_t n = 0;
      if ((rc = pawl_limits(p, &v, &n)))
        rc = cli_fail(err, CLI_FAIL, "%s", pawl_errmsg(p));
      for (size_t i = 0; !rc && i < n; i++)
        if (strcmp(v[i].name, a->name) == 0) {
          lim_json(&b, &v[i]);
          rc = cli_emit(&b, err);
        }
      pawl_limits_free(v, n);
    }
    pawl__buf_free(&b);
    return rc;
  }
  if (strcmp(a->verb, "rm") == 0)
    printf("removed limit %s\n", a->name);
  else
    printf("limit %s set\n", a->name);
  return 0;
}
