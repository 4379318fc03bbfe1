/* cli_queue.c: `pawl queue list|pause|resume|set` on the
 * public API's queues section: pausing a whole queue (persisted: every
 * node stops claiming from it), resuming it, and its own age boost. Text
 * for people, --json for tools (list: JSON Lines, one queue a line). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "cli_admin.h"
#include "iso8601.h"
#include "pawl.h"

static int q_lib_fail(pawl_t *p, int rc, char *err, size_t errlen) {
  snprintf(err, errlen, "%s", pawl_errmsg(p));
  return rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL;
}

/* A duration for people: "15m", "90s", "1h30m", "none" for 0. */
static void q_dur(int64_t ms, char *out, size_t len) {
  if (ms <= 0) snprintf(out, len, "none");
  else if (ms % 1000) snprintf(out, len, "%lldms", (long long)ms);
  else if (ms % 60000) snprintf(out, len, "%llds", (long long)(ms / 1000));
  else if (ms % 3600000) snprintf(out, len, "%lldm", (long long)(ms / 60000));
  else snprintf(out, len, "%lldh", (long long)(ms / 3600000));
}

static void q_json_str(pawl_buf_t *b, const char *s) {
  if (s) pawl__buf_json_string(b, s, strlen(s));
  else pawl__buf_puts(b, "null");
}

static void q_json_time(pawl_buf_t *b, int64_t ms) {
  char t[ISO8601_STRLEN];
  if (!ms) {
    pawl__buf_puts(b, "null");
    return;
  }
  pawl__iso8601_format(ms, t);
  pawl__buf_printf(b, "\"%s\"", t);
}

static int q_list(pawl_t *p, int json, char *err, size_t errlen) {
  pawl_queue_info_t *q = NULL;
  size_t n = 0;
  int rc = pawl_queues(p, &q, &n);
  if (rc) return q_lib_fail(p, rc, err, errlen);
  if (json) {
    for (size_t i = 0; i < n && !rc; i++) {
      pawl_buf_t b;
      pawl__buf_init(&b);
      pawl__buf_puts(&b, "{\"queue\":");
      q_json_str(&b, q[i].name);
      pawl__buf_printf(&b, ",\"paused\":%s,\"paused_at\":",
                       q[i].paused ? "true" : "false");
      q_json_time(&b, q[i].paused_at);
      pawl__buf_puts(&b, ",\"paused_by\":");
      q_json_str(&b, q[i].paused_by);
      pawl__buf_puts(&b, ",\"reason\":");
      q_json_str(&b, q[i].reason);
      pawl__buf_puts(&b, ",\"counts\":{");
      for (int s = 0; s < PAWL_STATE_COUNT; s++)
        pawl__buf_printf(&b, "%s\"%s\":%lld", s ? "," : "",
                         pawl_state_name(s), (long long)q[i].count[s]);
      pawl__buf_printf(&b, "},\"oldest_due_ms\":%lld,\"age_boost_ms\":",
                       (long long)q[i].oldest_due_ms);
      if (q[i].age_boost_ms < 0) pawl__buf_puts(&b, "null");
      else pawl__buf_printf(&b, "%lld", (long long)q[i].age_boost_ms);
      pawl__buf_printf(&b, ",\"effective_age_boost_ms\":%lld}",
                       (long long)q[i].effective_age_boost_ms);
      rc = cli_emit(&b, err);
      pawl__buf_free(&b);
    }
  } else {
    static const char *const head[] = {
        "QUEUE",  "PAUSED",   "PENDING", "RUNNING", "SUCCEEDED", "FAILED",
        "CANCELED", "PAUSED_JOBS", "BLOCKED", "OLDEST_DUE", "AGE_BOOST"};
    cli_table_t t = {.ncols = sizeof head / sizeof *head};
    cli_table_row(&t, head);
    for (size_t i = 0; i < n; i++) {
      char c[PAWL_STATE_COUNT][24], age[32], boost[48], paused[16];
      for (int s = 0; s < PAWL_STATE_COUNT; s++)
        snprintf(c[s], sizeof c[s], "%lld", (long long)q[i].count[s]);
      int64_t w = q[i].oldest_due_ms / 1000;
      if (q[i].oldest_due_ms <= 0) snprintf(age, sizeof age, "-");
      else if (w < 60) snprintf(age, sizeof age, "%llds", (long long)w);
      else if (w < 3600)
        snprintf(age, sizeof age, "%lldm%llds", (long long)(w / 60),
                 (long long)(w % 60));
      else
        snprintf(age, sizeof age, "%lldh%lldm", (long long)(w / 3600),
                 (long long)(w % 3600 / 60));
      char d[32];
      q_dur(q[i].effective_age_boost_ms, d, sizeof d);
      snprintf(boost, sizeof boost, "%s%s", d,
               q[i].age_boost_ms < 0 ? " (database)" : "");
      snprintf(paused, sizeof paused, "%s", q[i].paused ? "yes" : "no");
      const char *row[] = {q[i].name, paused, c[0], c[1], c[2], c[3],
                           c[4],      c[5],   c[6], age,  boost};
      cli_table_row(&t, row);
    }
    if (t.oom) {
      rc = CLI_FAIL;
      snprintf(err, errlen, "out of memory");
    } else {
      cli_table_print(&t, "");
    }
    cli_table_free(&t);
    /* Who paused what, and why: one line each under the table. */
    for (size_t i = 0; !rc && i < n; i++) {
      if (!q[i].paused) continue;
      char when[ISO8601_STRLEN];
      cli_time(q[i].paused_at, when);
      pawl_buf_t b;
      pawl__buf_init(&b);
      pawl__buf_puts(&b, "paused: ");
      cli_text(&b, q[i].name);
      pawl__buf_printf(&b, " since %s by ", when);
      cli_text(&b, q[i].paused_by ? q[i].paused_by : "?");
      if (q[i].reason) {
        pawl__buf_puts(&b, ": ");
        cli_text(&b, q[i].reason);
      }
      if (!b.oom) puts(pawl__buf_cstr(&b));
      pawl__buf_free(&b);
    }
  }
  pawl_queues_free(q, n);
  return rc;
}

/* --age-boost: a duration ("60s", "15m"), 0 (none), or "database" (the
 * database's setting again). */
static int q_parse_boost(const char *v, int64_t *ms, char *err,
                         size_t errlen) {
  if (strcmp(v, "database") == 0) {
    *ms = -1;
    return 0;
  }
  char e[256];
  if (pawl_duration_parse(v, ms, e, sizeof e) != 0) {
    snprintf(err, errlen,
             "--age-boost: %s (or 0 for none, \"database\" for the "
             "database's setting)",
             e);
    return CLI_USAGE;
  }
  if (*ms > PAWL_AGE_BOOST_MAX_MS) {
    snprintf(err, errlen,
             "--age-boost must be between 0 and %lld ms (30 days) (got %s)",
             (long long)PAWL_AGE_BOOST_MAX_MS, v);
    return CLI_USAGE;
  }
  return 0;
}

int cli_queue_main(pawl_t *p, const char *verb, const char *name,
                   const char *reason, const char *age_boost, int json,
                   char *err, size_t errlen) {
  int rc, changed = 0;
  if (strcmp(verb, "list") == 0) return q_list(p, json, err, errlen);
  if (strcmp(verb, "pause") == 0) {
    if ((rc = pawl_queue_pause(p, name, reason, &changed)))
      return q_lib_fail(p, rc, err, errlen);
  } else if (strcmp(verb, "resume") == 0) {
    if ((rc = pawl_queue_resume(p, name, &changed)))
      return q_lib_fail(p, rc, err, errlen);
    if (!changed) {
      /* Nothing to resume: most likely a mistyped name. */
      snprintf(err, errlen,
               "queue \"%.200s\" is not paused (`pawl queue list` shows the "
               "paused ones)",
               name);
      return CLI_FAIL;
    }
  } else { /* set */
    int64_t ms = 0;
    if ((rc = q_parse_boost(age_boost, &ms, err, errlen))) return rc;
    if ((rc = pawl_queue_set_age_boost(p, name, ms)))
      return q_lib_fail(p, rc, err, errlen);
    changed = 1;
  }
  if (json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_printf(&b, "{\"action\":\"%s\",\"queue\":", verb);
    q_json_str(&b, name);
    pawl__buf_printf(&b, ",\"changed\":%s}", changed ? "true" : "false");
    rc = cli_emit(&b, err);
    pawl__buf_free(&b);
    return rc;
  }
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_puts(&b, "queue ");
  cli_text(&b, name);
  if (strcmp(verb, "pause") == 0)
    pawl__buf_puts(&b, changed ? ": paused" : ": already paused");
  else if (strcmp(verb, "resume") == 0)
    pawl__buf_puts(&b, ": resumed");
  else
    pawl__buf_printf(&b, ": age boost %s", age_boost);
  if (!b.oom) puts(pawl__buf_cstr(&b));
  pawl__buf_free(&b);
  return 0;
}
