/* cli_admin.c: `pawl stats`, `pawl nodes`, `pawl locks` and the bulk forms
 * of `pawl retry|cancel|pause|resume` (a filter instead of an id), on the
 * public API's administration section, so that scripts never need the
 * console. Text for people (aligned columns), --json for tools. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli_admin.h"
#include "iso8601.h"
#include "pawl.h"

static int adm_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int adm_fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

static int adm_lib_fail(pawl_t *p, int rc, char *err, size_t errlen) {
  return adm_fail(err, errlen, rc == PAWL_EINVAL ? 2 : 1, "%s",
                  pawl_errmsg(p));
}

/* Text that came from the database, safe for a terminal: control bytes
 * become \xNN (node ids and lock names are whatever their writers chose). */
static void adm_text(pawl_buf_t *b, const char *s) {
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c < 0x20 || *c == 0x7f) pawl__buf_printf(b, "\\x%02x", *c);
    else pawl__buf_putc(b, (char)*c);
  }
}

static void adm_time(int64_t ms, char out[ISO8601_STRLEN]) {
  if (ms == 0) snprintf(out, ISO8601_STRLEN, "-");
  else pawl__iso8601_format(ms, out);
}

static void adm_json_time(pawl_buf_t *b, int64_t ms) {
  char t[ISO8601_STRLEN];
  if (!ms) {
    pawl__buf_puts(b, "null");
    return;
  }
  pawl__iso8601_format(ms, t);
  pawl__buf_printf(b, "\"%s\"", t);
}

static void adm_json_str(pawl_buf_t *b, const char *s) {
  if (s) pawl__buf_json_string(b, s, strlen(s));
  else pawl__buf_puts(b, "null");
}

/* "3s", "4m12s", "2h5m", "3d4h": a wait for a person to read. */
static void adm_age(int64_t ms, char *out, size_t len) {
  int64_t s = ms / 1000;
  if (ms <= 0) snprintf(out, len, "-");
  else if (s < 60) snprintf(out, len, "%llds", (long long)s);
  else if (s < 3600) snprintf(out, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400) snprintf(out, len, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  else snprintf(out, len, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

/* ---- aligned tables ------------------------------------------------------ */

#define ADM_MAX_COLS 16

typedef struct adm_table {
  size_t ncols, nrows;
  char **cells;
  int oom;
} adm_table_t;

static void adm_row(adm_table_t *t, const char *const *cells) {
  if (t->oom) return;
  char **grown = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *grown);
  if (!grown) {
    t->oom = 1;
    return;
  }
  t->cells = grown;
  for (size_t c = 0; c < t->ncols; c++) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    adm_text(&b, cells[c] && *cells[c] ? cells[c] : "-");
    char *cell = pawl__buf_detach(&b);
    if (!cell) t->oom = 1;
    t->cells[t->nrows * t->ncols + c] = cell;
  }
  t->nrows++;
}

static void adm_table_print(const adm_table_t *t) {
  size_t w[ADM_MAX_COLS] = {0};
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols; c++) {
      const char *s = t->cells[r * t->ncols + c];
      size_t n = s ? strlen(s) : 0;
      if (n > w[c]) w[c] = n;
    }
  for (size_t r = 0; r < t->nrows; r++) {
    for (size_t c = 0; c < t->ncols; c++) {
      const char *s = t->cells[r * t->ncols + c];
      s = s ? s : "";
      if (c + 1 < t->ncols) printf("%-*s  ", (int)w[c], s);
      else printf("%s\n", s);
    }
  }
}

static void adm_table_free(adm_table_t *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
  free(t->cells);
}

static int adm_emit(pawl_buf_t *b, char *err, size_t errlen) {
  if (b->oom) return adm_fail(err, errlen, 1, "out of memory");
  pawl__buf_putc(b, '\n');
  fputs(pawl__buf_cstr(b), stdout);
  return 0;
}

/* ---- pawl stats ---------------------------------------------------------- */

static void adm_json_qstats(pawl_buf_t *b, const pawl_queue_stats_t *q) {
  pawl__buf_puts(b, "{\"queue\":");
  adm_json_str(b, q->queue);
  pawl__buf_puts(b, ",\"counts\":{");
  for (int s = 0; s < PAWL_STATE_COUNT; s++)
    pawl__buf_printf(b, "%s\"%s\":%lld", s ? "," : "", pawl_state_name(s),
               (long long)q->count[s]);
  pawl__buf_printf(b,
             "},\"finished_1m\":%lld,\"finished_5m\":%lld,\"finished_15m\":"
             "%lld,\"failed_1m\":%lld,\"failed_5m\":%lld,\"failed_15m\":%lld,"
             "\"oldest_due_ms\":%lld}",
             (long long)q->finished_1m, (long long)q->finished_5m,
             (long long)q->finished_15m, (long long)q->failed_1m,
             (long long)q->failed_5m, (long long)q->failed_15m,
             (long long)q->oldest_due_ms);
}

static void adm_stats_row(adm_table_t *t, const char *name,
                          const pawl_queue_stats_t *q) {
  char n[PAWL_STATE_COUNT][24], f[3][24], failed[24], age[32];
  for (int s = 0; s < PAWL_STATE_COUNT; s++)
    snprintf(n[s], sizeof n[s], "%lld", (long long)q->count[s]);
  snprintf(f[0], sizeof f[0], "%lld", (long long)q->finished_1m);
  snprintf(f[1], sizeof f[1], "%lld", (long long)q->finished_5m);
  snprintf(f[2], sizeof f[2], "%lld", (long long)q->finished_15m);
  snprintf(failed, sizeof failed, "%lld", (long long)q->failed_15m);
  adm_age(q->oldest_due_ms, age, sizeof age);
  const char *row[14] = {name, n[0], n[1], n[2], n[3], n[4], n[5], n[6],
                         f[0], f[1], f[2], failed, age, NULL};
  adm_row(t, row);
}

int cli_admin_stats(pawl_t *p, int json, char *err, size_t errlen) {
  pawl_stats_t *s = NULL;
  int rc = pawl_stats(p, &s);
  if (rc) return adm_lib_fail(p, rc, err, errlen);
  if (json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_puts(&b, "{\"at\":");
    adm_json_time(&b, s->at);
    pawl__buf_puts(&b, ",\"all\":");
    adm_json_qstats(&b, &s->all);
    pawl__buf_puts(&b, ",\"queues\":[");
    for (size_t i = 0; i < s->nqueues; i++) {
      if (i) pawl__buf_putc(&b, ',');
      adm_json_qstats(&b, &s->queues[i]);
    }
    pawl__buf_puts(&b, "]}");
    rc = adm_emit(&b, err, errlen);
    pawl__buf_free(&b);
  } else {
    static const char *const head[13] = {
        "QUEUE",  "PENDING",  "RUNNING",  "SUCCEEDED", "FAILED",
        "CANCELED", "PAUSED", "BLOCKED",  "DONE/1M",   "DONE/5M",
        "DONE/15M", "FAILED/15M", "OLDEST_DUE"};
    adm_table_t t = {.ncols = 13};
    adm_row(&t, head);
    for (size_t i = 0; i < s->nqueues; i++)
      adm_stats_row(&t, s->queues[i].queue, &s->queues[i]);
    adm_stats_row(&t, "(all)", &s->all);
    if (t.oom) rc = adm_fail(err, errlen, 1, "out of memory");
    else adm_table_print(&t);
    adm_table_free(&t);
  }
  pawl_stats_free(s);
  return rc;
}

/* ---- pawl nodes, pawl locks ---------------------------------------------- */

int cli_admin_nodes(pawl_t *p, int json, char *err, size_t errlen) {
  pawl_node_info_t *nodes = NULL;
  size_t n = 0;
  int rc = pawl_nodes(p, &nodes, &n);
  if (rc) return adm_lib_fail(p, rc, err, errlen);
  int64_t now = pawl_now(p);
  adm_table_t t = {.ncols = 8};
  static const char *const head[8] = {"ID",      "STATE",   "VERSION",
                                      "QUEUES",  "STARTED", "LAST_BEAT",
                                      "RUNNING", "INCARNATION"};
  if (!json) adm_row(&t, head);
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (size_t i = 0; i < n && !rc; i++) {
    const pawl_node_info_t *nd = &nodes[i];
    char inc[PAWL_ID_STRLEN];
    pawl_id_format(&nd->incarnation, inc);
    if (json) {
      pawl__buf_reset(&b);
      pawl__buf_puts(&b, "{\"id\":");
      adm_json_str(&b, nd->id);
      pawl__buf_puts(&b, ",\"state\":");
      adm_json_str(&b, nd->state);
      pawl__buf_puts(&b, ",\"stopped_at\":");
      adm_json_time(&b, nd->stopped_at);
      pawl__buf_printf(&b, ",\"incarnation\":\"%s\",\"version\":", inc);
      adm_json_str(&b, nd->version);
      pawl__buf_puts(&b, ",\"queues\":");
      adm_json_str(&b, nd->queues);
      pawl__buf_puts(&b, ",\"started_at\":");
      adm_json_time(&b, nd->started_at);
      pawl__buf_puts(&b, ",\"last_beat\":");
      adm_json_time(&b, nd->last_beat);
      pawl__buf_printf(&b, ",\"running\":%lld}", (long long)nd->running);
      rc = adm_emit(&b, err, errlen);
    } else {
      char started[ISO8601_STRLEN], beat[64], age[32], running[24];
      char state[ISO8601_STRLEN + 16];
      adm_time(nd->started_at, started);
      if (nd->stopped_at) {
        char at[ISO8601_STRLEN];
        adm_time(nd->stopped_at, at);
        snprintf(state, sizeof state, "stopped %s", at);
      } else {
        snprintf(state, sizeof state, "%s", nd->state);
      }
      adm_age(now - nd->last_beat, age, sizeof age);
      snprintf(beat, sizeof beat, "%s ago", now > nd->last_beat ? age : "0s");
      snprintf(running, sizeof running, "%lld", (long long)nd->running);
      const char *row[8] = {nd->id, state, nd->version,
                            nd->queues[0] ? nd->queues : "(all)", started,
                            beat, running, inc};
      adm_row(&t, row);
    }
  }
  pawl__buf_free(&b);
  if (!json && !rc) {
    if (t.oom) rc = adm_fail(err, errlen, 1, "out of memory");
    else if (n) adm_table_print(&t);
    else printf("no nodes\n");
  }
  adm_table_free(&t);
  pawl_nodes_free(nodes, n);
  return rc;
}

int cli_admin_locks(pawl_t *p, int json, char *err, size_t errlen) {
  pawl_lock_info_t *locks = NULL;
  size_t n = 0;
  int rc = pawl_locks(p, &locks, &n);
  if (rc) return adm_lib_fail(p, rc, err, errlen);
  int64_t now = pawl_now(p);
  adm_table_t t = {.ncols = 4};
  static const char *const head[4] = {"NAME", "OWNER", "ACQUIRED", "EXPIRES"};
  if (!json) adm_row(&t, head);
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (size_t i = 0; i < n && !rc; i++) {
    const pawl_lock_info_t *l = &locks[i];
    if (json) {
      pawl__buf_reset(&b);
      pawl__buf_puts(&b, "{\"name\":");
      adm_json_str(&b, l->name);
      pawl__buf_puts(&b, ",\"owner\":");
      adm_json_str(&b, l->owner);
      pawl__buf_puts(&b, ",\"acquired_at\":");
      adm_json_time(&b, l->acquired_at);
      pawl__buf_puts(&b, ",\"expires_at\":");
      adm_json_time(&b, l->expires_at);
      pawl__buf_printf(&b, ",\"expired\":%s}", l->expires_at <= now ? "true" : "false");
      rc = adm_emit(&b, err, errlen);
    } else {
      char acq[ISO8601_STRLEN], exp[ISO8601_STRLEN + 16];
      adm_time(l->acquired_at, acq);
      adm_time(l->expires_at, exp);
      if (l->expires_at <= now) strcat(exp, " (expired)");
      const char *row[4] = {l->name, l->owner, acq, exp};
      adm_row(&t, row);
    }
  }
  pawl__buf_free(&b);
  if (!json && !rc) {
    if (t.oom) rc = adm_fail(err, errlen, 1, "out of memory");
    else if (n) adm_table_print(&t);
    else printf("no locks\n");
  }
  adm_table_free(&t);
  pawl_locks_free(locks, n);
  return rc;
}

/* ---- bulk actions ---------------------------------------------------------- */

/* Asks on the terminal; 1 for yes. */
static int adm_confirm(const char *action, int64_t n) {
  fprintf(stderr, "%s %lld jobs? [y/N] ", action, (long long)n);
  fflush(stderr);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 0;
  return line[0] == 'y' || line[0] == 'Y';
}

int cli_admin_bulk(pawl_t *p, pawl_action_t action, const pawl_filter_t *f,
                   const char *reason, int yes, int json, char *err,
                   size_t errlen) {
  const char *name = pawl_action_name(action);
  int64_t n = 0;
  int rc = pawl_bulk_count(p, action, f, &n);
  if (rc) return adm_lib_fail(p, rc, err, errlen);
  if (n > CLI_CONFIRM_ABOVE && !yes) {
    if (!isatty(STDIN_FILENO))
      return adm_fail(err, errlen, 1,
                      "%lld jobs match: pass --yes to %s more than %d jobs "
                      "(standard input is not a terminal to confirm on)",
                      (long long)n, name, CLI_CONFIRM_ABOVE);
    if (!adm_confirm(name, n))
      return adm_fail(err, errlen, 1, "not confirmed: nothing changed");
  }
  /* At most the jobs counted (and confirmed): jobs that start matching
   * meanwhile wait for the next run. */
  pawl_filter_t g = *f;
  if (n <= 0x7fffffff && (g.limit == 0 || n < g.limit)) g.limit = (int)n;
  pawl_bulk_result_t r = {0, 0, 0};
  if (n > 0) rc = pawl_bulk(p, action, &g, reason, &r);
  if (json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_printf(&b,
               "{\"action\":\"%s\",\"matched\":%lld,\"changed\":%lld,"
               "\"skipped\":%lld,\"refused\":%lld}",
               name, (long long)n, (long long)r.changed, (long long)r.skipped,
               (long long)r.refused);
    int erc = adm_emit(&b, err, errlen);
    pawl__buf_free(&b);
    if (!rc) rc = erc;
  } else {
    printf("%s: %lld job%s", name, (long long)r.changed,
           r.changed == 1 ? "" : "s");
    if (r.skipped)
      printf(", %lld skipped (changed meanwhile)", (long long)r.skipped);
    if (r.refused)
      printf(", %lld refused (business key held by a live job)",
             (long long)r.refused);
    printf("\n");
  }
  if (rc) return adm_lib_fail(p, rc, err, errlen);
  return 0;
}
