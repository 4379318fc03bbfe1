/* cli_output.c: what the `pawl` program prints: tables and fields of
 * jobs, history and log lines for people, JSON documents for programs, and
 * the escaping that keeps what jobs stored from driving the terminal. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h> /* isfinite, a macro: no libm needed */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "iso8601.h"
#include "json.h"
#include "pawl.h"

/* ---- text --------------------------------------------------------------- */

/* Appends s for a terminal: control characters (a newline in a payload, an
 * escape sequence in an error) are written as escapes, so one field stays
 * one line and cannot repaint the screen; so are C1 controls (which some
 * terminals obey), the line separators and bidirectional overrides (which
 * reorder what is shown), and bytes that are not UTF-8. */
void cli_text(pawl_buf_t *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '\n') pawl__buf_puts(b, "\\n");
      else if (c == '\t') pawl__buf_puts(b, "\\t");
      else if (c == '\r') pawl__buf_puts(b, "\\r");
      else if (c < 0x20 || c == 0x7f) pawl__buf_printf(b, "\\x%02x", c);
      else pawl__buf_putc(b, (char)c);
      i++;
      continue;
    }
    size_t k = pawl__json_utf8_len(p + i, n - i);
    if (k == 0) {
      pawl__buf_printf(b, "\\x%02x", c);
      i++;
      continue;
    }
    uint32_t cp = p[i] & (0xFF >> (k + 1));
    for (size_t j = 1; j < k; j++) cp = (cp << 6) | (p[i + j] & 0x3F);
    if (cp <= 0x9F || cp == 0x2028 || cp == 0x2029 ||
        (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
      pawl__buf_printf(b, "\\u%04x", (unsigned)cp);
    else
      pawl__buf_append(b, p + i, k);
    i += k;
  }
}

/* Columns a string takes on a terminal, roughly: UTF-8 code points. */
static size_t cli_width(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xc0) != 0x80) n++;
  return n;
}

void cli_time(int64_t ms, char out[ISO8601_STRLEN]) {
  if (ms == 0) snprintf(out, ISO8601_STRLEN, "-");
  else pawl__iso8601_format(ms, out);
}


/* ---- tables ------------------------------------------------------------- */

/* Widest table printed (the attempts table has 9 columns). */
#define CLI_MAX_COLS 16


void cli_table_row(cli_table_t *t, const char *const *cells) {
  if (t->oom) return;
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    char **grown = realloc(t->cells, cap * t->ncols * sizeof *grown);
    if (!grown) {
      t->oom = 1;
      return;
    }
    t->cells = grown;
    t->cap = cap;
  }
  char **row = t->cells + t->nrows * t->ncols;
  t->nrows++;
  for (size_t c = 0; c < t->ncols; c++) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    cli_text(&b, cells[c] && *cells[c] ? cells[c] : "-");
    row[c] = pawl__buf_detach(&b);
    if (!row[c]) t->oom = 1;
  }
}

/* Prints every row, each line starting with `indent`. The last column is
 * not padded, so lines carry no trailing blanks. */
void cli_table_print(const cli_table_t *t, const char *indent) {
  size_t width[CLI_MAX_COLS] = {0};
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < t->ncols && c < CLI_MAX_COLS; c++) {
      size_t w = cli_width(t->cells[r * t->ncols + c]);
      if (w > width[c]) width[c] = w;
    }
  for (size_t r = 0; r < t->nrows; r++) {
    fputs(indent, stdout);
    for (size_t c = 0; c < t->ncols; c++) {
      const char *cell = t->cells[r * t->ncols + c];
      fputs(cell, stdout);
      if (c + 1 < t->ncols && c < CLI_MAX_COLS)
        printf("%*s", (int)(width[c] - cli_width(cell) + 2), "");
    }
    fputc('\n', stdout);
  }
}

void cli_table_free(cli_table_t *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
  free(t->cells);
  t->cells = NULL;
  t->nrows = t->cap = 0;
}

/* ---- JSON output -------------------------------------------------------- */

static void cli_json_str(pawl_buf_t *b, const char *s) {
  if (s) pawl__buf_json_string(b, s, strlen(s));
  else pawl__buf_puts(b, "null");
}

/* Embeds stored JSON text as a value, with the whitespace between tokens
 * removed so that one object stays on one line (JSON Lines). Text that is
 * not valid JSON (a database edited by hand) is embedded as a string rather
 * than breaking the document. */
void cli_json_raw(pawl_buf_t *b, const char *s) {
  if (!s) {
    pawl__buf_puts(b, "null");
    return;
  }
  if (pawl__json_check(s, strlen(s), JSON_GRAMMAR, NULL, 0) != 0) {
    cli_json_str(b, s);
    return;
  }
  int in_str = 0, esc = 0;
  for (; *s; s++) {
    char c = *s;
    if (in_str) {
      if (esc) esc = 0;
      else if (c == '\\') esc = 1;
      else if (c == '"') in_str = 0;
    } else if (c == '"') {
      in_str = 1;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      continue;
    }
    pawl__buf_putc(b, c);
  }
}

static void cli_json_time(pawl_buf_t *b, int64_t ms) {
  char t[ISO8601_STRLEN];
  if (ms == 0) {
    pawl__buf_puts(b, "null");
    return;
  }
  pawl__iso8601_format(ms, t);
  pawl__buf_printf(b, "\"%s\"", t);
}

/* A double as the shortest text that reads back as the same number
 * (JSON has no NaN or infinity: those would be null, and pawl never stores
 * them). */
static void cli_num(char *out, size_t len, double v) {
  if (!isfinite(v)) {
    snprintf(out, len, "null");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, len, "%.*g", prec, v);
    if (strtod(out, NULL) == v) return;
  }
}

static void cli_json_num(pawl_buf_t *b, double v) {
  char s[40];
  cli_num(s, sizeof s, v);
  pawl__buf_puts(b, s);
}

/* The job as one JSON object, every field of pawl_job_t. */
/* ---- the limits that apply -------------------------------------------------
 *
 * A job enqueued without max_attempts or a timeout (stored as 0) runs with
 * its script's, resolved (the script, _defaults.lua, the built-in
 * defaults). pawl show, pawl jobs and --json show that value, read from
 * the scripts directory this command sees (--scripts DIR, default
 * ./scripts), with where it came from; or say that no script here can
 * tell, in the same words as the console. The CLI is one thread: the
 * directory and the types' settings are kept for the command's run. */

static const char *cli_limits_dir = "./scripts";
static struct {
  char type[201];
  int rc;                  /* pawl_script_info()'s */
  int32_t max_attempts, timeout_s;
} cli_limits_seen[32];
static size_t cli_limits_nseen;

void cli_limits_scripts(const char *dir) {
  if (dir) cli_limits_dir = dir;
}

const char *cli_limit_of(const pawl_job_t *j, int timeout, int32_t *v) {
  *v = timeout ? j->timeout_s : j->max_attempts;
  if (*v) return "enqueue";
  size_t i = 0;
  while (i < cli_limits_nseen && strcmp(cli_limits_seen[i].type, j->type) != 0) i++;
  if (i == cli_limits_nseen) {
    pawl_script_info_t info;
    char err[512];
    int rc = pawl_script_info(cli_limits_dir, j->type, &info, err, sizeof err);
    if (i == sizeof cli_limits_seen / sizeof cli_limits_seen[0]) i = 0;
    else cli_limits_nseen++;
    snprintf(cli_limits_seen[i].type, sizeof cli_limits_seen[i].type, "%s",
             j->type);
    cli_limits_seen[i].rc = rc;
    cli_limits_seen[i].max_attempts = rc ? 0 : info.applied_max_attempts;
    cli_limits_seen[i].timeout_s = rc ? 0 : info.applied_timeout_s;
  }
  if (cli_limits_seen[i].rc == PAWL_ENOTFOUND) return CLI_NO_SCRIPT;
  if (cli_limits_seen[i].rc) return CLI_BROKEN_SCRIPT;
  *v = timeout ? cli_limits_seen[i].timeout_s : cli_limits_seen[i].max_attempts;
  return "script";
}

/* "5", "5 (the script's)", "? (no script visible)". */
static void cli_limit_text(const pawl_job_t *j, int timeout, char *out,
                           size_t len) {
  int32_t v;
  const char *from = cli_limit_of(j, timeout, &v);
  if (strcmp(from, "enqueue") == 0) snprintf(out, len, "%d", (int)v);
  else if (strcmp(from, "script") == 0) snprintf(out, len, "%d (the script's)", (int)v);
  else snprintf(out, len, "? (%s)", from);
}

static void cli_json_limit(pawl_buf_t *b, const pawl_job_t *j, int timeout) {
  int32_t v;
  const char *from = cli_limit_of(j, timeout, &v);
  pawl__buf_puts(b, timeout ? ",\"timeout_s\":" : ",\"max_attempts\":");
  if (v) pawl__buf_printf(b, "%d", (int)v);
  else pawl__buf_puts(b, "null");
  pawl__buf_puts(b, timeout ? ",\"timeout_from\":" : ",\"max_attempts_from\":");
  cli_json_str(b, from);
}

void cli_json_job_fields(pawl_buf_t *b, const pawl_job_t *j) {
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&j->id, id);
  pawl__buf_printf(b, "{\"id\":\"%s\",\"type\":", id);
  cli_json_str(b, j->type);
  pawl__buf_puts(b, ",\"queue\":");
  cli_json_str(b, j->queue);
  pawl__buf_printf(b, ",\"state\":\"%s\"", pawl_state_name(j->state));
  /* Running but claimed ahead of a free worker: its body has not started
   * (started_at is null). */
  if (j->state == PAWL_RUNNING)
    pawl__buf_printf(b, ",\"claimed\":%s", j->started_at ? "false" : "true");
  if (j->state == PAWL_PAUSED)
    pawl__buf_printf(b, ",\"paused_from\":\"%s\"", pawl_state_name(j->paused_from));
  pawl__buf_printf(b, ",\"priority\":%d,\"attempt\":%d",
             (int)j->priority, (int)j->attempt);
  /* What applies: null when no script here can tell. */
  cli_json_limit(b, j, 0);
  cli_json_limit(b, j, 1);
  pawl__buf_puts(b, ",\"run_at\":");
  cli_json_time(b, j->run_at);
  pawl__buf_puts(b, ",\"payload\":");
  cli_json_raw(b, j->payload);
  pawl__buf_puts(b, ",\"params\":");
  cli_json_raw(b, j->params);
  pawl__buf_puts(b, ",\"tags\":");
  cli_json_raw(b, j->tags ? j->tags : "[]");
  pawl__buf_puts(b, ",\"result\":");
  cli_json_raw(b, j->result);
  pawl__buf_puts(b, ",\"last_error\":");
  cli_json_str(b, j->last_error);
  pawl__buf_puts(b, ",\"idempotency_key\":");
  cli_json_str(b, j->idempotency_key);
  pawl__buf_puts(b, ",\"business_key\":");
  cli_json_str(b, j->business_key);
  pawl__buf_puts(b, ",\"ordering_key\":");
  cli_json_str(b, j->ordering_key);
  pawl__buf_puts(b, ",\"correlation_id\":");
  cli_json_str(b, j->correlation_id);
  pawl__buf_puts(b, ",\"enqueued_by\":");
  cli_json_str(b, j->enqueued_by);
  pawl__buf_puts(b, ",\"created_at\":");
  cli_json_time(b, j->created_at);
  pawl__buf_puts(b, ",\"updated_at\":");
  cli_json_time(b, j->updated_at);
  pawl__buf_puts(b, ",\"started_at\":");
  cli_json_time(b, j->started_at);
  pawl__buf_puts(b, ",\"finished_at\":");
  cli_json_time(b, j->finished_at);
  pawl__buf_puts(b, ",\"lease_owner\":");
  cli_json_str(b, j->lease_owner);
  pawl__buf_puts(b, ",\"lease_expires\":");
  cli_json_time(b, j->lease_expires);
  pawl__buf_printf(b, ",\"recoveries\":%d,\"progress_done\":", (int)j->recoveries);
  cli_json_num(b, j->progress_done);
  pawl__buf_puts(b, ",\"progress_total\":");
  cli_json_num(b, j->progress_total);
  pawl__buf_printf(b, ",\"version\":%lld", (long long)j->version);
}

void cli_json_history(pawl_buf_t *b, const pawl_history_t *h) {
  pawl__buf_puts(b, ",\"attempts\":[");
  for (size_t i = 0; i < h->nattempts; i++) {
    const pawl_attempt_t *at = &h->attempts[i];
    pawl__buf_printf(b, "%s{\"attempt\":%d,\"node\":", i ? "," : "", (int)at->attempt);
    cli_json_str(b, at->node);
    pawl__buf_puts(b, ",\"scheduled_at\":");
    cli_json_time(b, at->scheduled_at);
    pawl__buf_puts(b, ",\"started_at\":");
    cli_json_time(b, at->started_at);
    pawl__buf_puts(b, ",\"ended_at\":");
    cli_json_time(b, at->ended_at);
    pawl__buf_puts(b, ",\"duration_ms\":");
    if (at->ended_at && at->started_at)
      pawl__buf_printf(b, "%lld", (long long)(at->ended_at - at->started_at));
    else
      pawl__buf_puts(b, "null");
    pawl__buf_puts(b, ",\"queue_wait_ms\":");
    if (at->started_at && at->scheduled_at)
      pawl__buf_printf(b, "%lld", (long long)(at->started_at - at->scheduled_at));
    else
      pawl__buf_puts(b, "null");
    pawl__buf_puts(b, ",\"outcome\":");
    cli_json_str(b, at->outcome);
    pawl__buf_puts(b, ",\"error\":");
    cli_json_str(b, at->error);
    pawl__buf_puts(b, ",\"trace\":");
    cli_json_str(b, at->trace);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_puts(b, "],\"events\":[");
  for (size_t i = 0; i < h->nevents; i++) {
    const pawl_event_t *ev = &h->events[i];
    pawl__buf_printf(b, "%s{\"at\":", i ? "," : "");
    cli_json_time(b, ev->at);
    pawl__buf_puts(b, ",\"from\":");
    if (ev->from_state < 0) pawl__buf_puts(b, "null");
    else pawl__buf_printf(b, "\"%s\"", pawl_state_name(ev->from_state));
    pawl__buf_printf(b, ",\"to\":\"%s\",\"actor\":", pawl_state_name(ev->to_state));
    cli_json_str(b, ev->actor);
    pawl__buf_puts(b, ",\"reason\":");
    cli_json_str(b, ev->reason);
    pawl__buf_printf(b, ",\"attempt\":%d}", (int)ev->attempt);
  }
  pawl__buf_putc(b, ']');
}

void cli_json_logs(pawl_buf_t *b, const pawl_log_record_t *logs,
                          size_t n) {
  pawl__buf_puts(b, ",\"logs\":[");
  for (size_t i = 0; i < n; i++) {
    const pawl_log_record_t *l = &logs[i];
    pawl__buf_printf(b, "%s{\"attempt\":%d,\"at\":", i ? "," : "", (int)l->attempt);
    cli_json_time(b, l->at);
    pawl__buf_puts(b, ",\"level\":");
    cli_json_str(b, l->level);
    pawl__buf_puts(b, ",\"message\":");
    cli_json_str(b, l->message);
    pawl__buf_puts(b, ",\"fields\":");
    cli_json_raw(b, l->fields);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_putc(b, ']');
}

/* Writes a finished JSON document line to stdout. */
int cli_emit(pawl_buf_t *b, char *err) {
  if (b->oom) return cli_fail(err, CLI_FAIL, "out of memory");
  pawl__buf_putc(b, '\n');
  fputs(pawl__buf_cstr(b), stdout);
  return 0;
}

int cli_print_job_json(const pawl_job_t *j, char *err) {
  pawl_buf_t b;
  pawl__buf_init(&b);
  cli_json_job_fields(&b, j);
  pawl__buf_putc(&b, '}');
  int rc = cli_emit(&b, err);
  pawl__buf_free(&b);
  return rc;
}

/* ---- text output -------------------------------------------------------- */

static void cli_field(cli_table_t *t, const char *name, const char *value) {
  const char *row[2] = {name, value};
  cli_table_row(t, row);
}

static void cli_field_int(cli_table_t *t, const char *name, long long v) {
  char s[32];
  snprintf(s, sizeof s, "%lld", v);
  cli_field(t, name, s);
}

static void cli_field_time(cli_table_t *t, const char *name, int64_t ms) {
  char s[ISO8601_STRLEN];
  cli_time(ms, s);
  cli_field(t, name, s);
}

const char *cli_job_state(const pawl_job_t *j) {
  return j->state == PAWL_RUNNING && !j->started_at ? "claimed"
                                                    : pawl_state_name(j->state);
}

/* "field: value" lines for every job field. */
void cli_job_fields(cli_table_t *t, const pawl_job_t *j) {
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&j->id, id);
  cli_field(t, "id:", id);
  cli_field(t, "type:", j->type);
  cli_field(t, "queue:", j->queue);
  cli_field(t, "state:", cli_job_state(j));
  if (j->state == PAWL_PAUSED)
    cli_field(t, "paused_from:", pawl_state_name(j->paused_from));
  cli_field_int(t, "priority:", j->priority);
  cli_field_int(t, "attempt:", j->attempt);
  char limit[64];
  cli_limit_text(j, 0, limit, sizeof limit);
  cli_field(t, "max_attempts:", limit);
  cli_limit_text(j, 1, limit, sizeof limit);
  cli_field(t, "timeout_s:", limit);
  cli_field_time(t, "run_at:", j->run_at);
  cli_field(t, "payload:", j->payload);
  cli_field(t, "params:", j->params);
  cli_field(t, "tags:", j->tags);
  cli_field(t, "idempotency_key:", j->idempotency_key);
  cli_field(t, "business_key:", j->business_key);
  cli_field(t, "ordering_key:", j->ordering_key);
  cli_field(t, "correlation_id:", j->correlation_id);
  cli_field(t, "enqueued_by:", j->enqueued_by);
  cli_field_time(t, "created_at:", j->created_at);
  cli_field_time(t, "updated_at:", j->updated_at);
  cli_field_time(t, "started_at:", j->started_at);
  cli_field_time(t, "finished_at:", j->finished_at);
  cli_field(t, "lease_owner:", j->lease_owner);
  cli_field_time(t, "lease_expires:", j->lease_expires);
  cli_field(t, "last_error:", j->last_error);
  cli_field(t, "result:", j->result);
  cli_field_int(t, "recoveries:", j->recoveries);
  if (j->progress_done != 0 || j->progress_total != 0) {
    /* "3/10 (30%)", or just "3" while the total is unknown. */
    char done[40], total[40], text[128];
    cli_num(done, sizeof done, j->progress_done);
    cli_num(total, sizeof total, j->progress_total);
    /* Rounded down (99.6% is not done yet), without libm's floor(). */
    double pct = j->progress_total > 0
                     ? 100.0 * j->progress_done / j->progress_total
                     : 0;
    if (pct < 1e15) pct = (double)(long long)pct;
    if (j->progress_total > 0)
      snprintf(text, sizeof text, "%s/%s (%.0f%%)", done, total, pct);
    else
      snprintf(text, sizeof text, "%s", done);
    cli_field(t, "progress:", text);
  }
  cli_field_int(t, "version:", j->version);
}

void cli_attempt_rows(cli_table_t *t, const pawl_history_t *h) {
  static const char *const head[9] = {
      "attempt", "node",        "scheduled",     "started", "ended",
      "duration_ms", "queue_wait_ms", "outcome", "error"};
  cli_table_row(t, head);
  for (size_t i = 0; i < h->nattempts; i++) {
    const pawl_attempt_t *at = &h->attempts[i];
    char n[16], sch[ISO8601_STRLEN], st[ISO8601_STRLEN], en[ISO8601_STRLEN];
    char dur[32] = "-", wait[32] = "-";
    snprintf(n, sizeof n, "%d", (int)at->attempt);
    cli_time(at->scheduled_at, sch);
    cli_time(at->started_at, st);
    cli_time(at->ended_at, en);
    if (at->ended_at && at->started_at)
      snprintf(dur, sizeof dur, "%lld", (long long)(at->ended_at - at->started_at));
    if (at->started_at && at->scheduled_at)
      snprintf(wait, sizeof wait, "%lld",
               (long long)(at->started_at - at->scheduled_at));
    const char *row[9] = {n, at->node, sch, st, en, dur, wait, at->outcome,
                          at->error};
    cli_table_row(t, row);
  }
}

int cli_traces_print(const pawl_history_t *h, int full) {
  size_t n = 0;
  for (size_t i = 0; i < h->nattempts; i++) n += h->attempts[i].trace != NULL;
  if (!n) return 0;
  if (!full) {
    printf("  (%zu attempt%s with a traceback: pawl show ID --trace)\n", n,
           n == 1 ? "" : "s");
    return 0;
  }
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (size_t i = 0; i < h->nattempts; i++) {
    const char *t = h->attempts[i].trace;
    if (!t) continue;
    pawl__buf_printf(&b, "traceback of attempt %d:\n",
                     (int)h->attempts[i].attempt);
    /* Line by line: each made safe, the newlines between them kept. */
    for (const char *s = t; *s;) {
      size_t len = strcspn(s, "\n");
      char *line = pawl__strndup(s, len);
      if (!line) {
        pawl__buf_free(&b);
        return -1;
      }
      /* A traceback's frames start with a tab: an indent, not "\t". */
      for (char *c = line; *c; c++)
        if (*c == '\t') *c = ' ';
      pawl__buf_puts(&b, "  ");
      cli_text(&b, line);
      pawl__buf_putc(&b, '\n');
      pawl__free(line);
      s += len + (s[len] == '\n');
    }
  }
  int oom = b.oom;
  if (!oom) fputs(pawl__buf_cstr(&b), stdout);
  pawl__buf_free(&b);
  return oom ? -1 : 0;
}

void cli_event_rows(cli_table_t *t, const pawl_history_t *h) {
  static const char *const head[4] = {"at", "change", "actor", "reason"};
  cli_table_row(t, head);
  for (size_t i = 0; i < h->nevents; i++) {
    const pawl_event_t *ev = &h->events[i];
    char at[ISO8601_STRLEN], change[64];
    cli_time(ev->at, at);
    snprintf(change, sizeof change, "%s -> %s",
             ev->from_state < 0 ? "(new)" : pawl_state_name(ev->from_state),
             pawl_state_name(ev->to_state));
    const char *row[4] = {at, change, ev->actor, ev->reason};
    cli_table_row(t, row);
  }
}

void cli_log_rows(cli_table_t *t, const pawl_log_record_t *logs,
                         size_t n) {
  static const char *const head[5] = {"attempt", "at", "level", "message",
                                      "fields"};
  cli_table_row(t, head);
  for (size_t i = 0; i < n; i++) {
    const pawl_log_record_t *l = &logs[i];
    char att[16], at[ISO8601_STRLEN];
    snprintf(att, sizeof att, "%d", (int)l->attempt);
    cli_time(l->at, at);
    const char *row[5] = {att, at, l->level, l->message, l->fields};
    cli_table_row(t, row);
  }
}


/* ---- dependencies -------------------------------------------------------- */

void cli_deps_init(cli_deps_t *d, int json) {
  memset(d, 0, sizeof *d);
  d->json = json;
  d->parents.ncols = d->children.ncols = 4;
  pawl__buf_init(&d->jparents);
  pawl__buf_init(&d->jchildren);
}

int cli_deps_cb(const pawl_dep_t *dep, void *data) {
  cli_deps_t *d = data;
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&dep->id, id);
  if (d->json) {
    pawl_buf_t *b = dep->parent ? &d->jparents : &d->jchildren;
    size_t *n = dep->parent ? &d->nparents : &d->nchildren;
    pawl__buf_printf(b, "%s{\"id\":\"%s\",\"type\":", *n ? "," : "", id);
    cli_json_str(b, dep->type);
    pawl__buf_printf(b, ",\"state\":\"%s\",\"when\":",
                     pawl_state_name(dep->state));
    cli_json_str(b, dep->when);
    pawl__buf_putc(b, '}');
    ++*n;
    return 0;
  }
  cli_table_t *t = dep->parent ? &d->parents : &d->children;
  size_t *n = dep->parent ? &d->nparents : &d->nchildren;
  if ((*n)++ == 0) {
    static const char *const head[4] = {"id", "type", "state", "when"};
    cli_table_row(t, head);
  }
  const char *row[4] = {id, dep->type, pawl_state_name(dep->state),
                        dep->when};
  cli_table_row(t, row);
  return 0;
}

void cli_deps_json(pawl_buf_t *b, cli_deps_t *d) {
  pawl__buf_puts(b, ",\"parents\":[");
  pawl__buf_append(b, d->jparents.data, d->jparents.len);
  pawl__buf_puts(b, "],\"children\":[");
  pawl__buf_append(b, d->jchildren.data, d->jchildren.len);
  pawl__buf_putc(b, ']');
  if (d->jparents.oom || d->jchildren.oom) b->oom = 1;
}

void cli_deps_print(const cli_deps_t *d) {
  if (d->nparents) {
    printf("parents:\n");
    cli_table_print(&d->parents, "  ");
  }
  if (d->nchildren) {
    printf("children:\n");
    cli_table_print(&d->children, "  ");
  }
}

int cli_deps_oom(const cli_deps_t *d) {
  return d->parents.oom || d->children.oom || d->jparents.oom ||
         d->jchildren.oom;
}

void cli_deps_free(cli_deps_t *d) {
  cli_table_free(&d->parents);
  cli_table_free(&d->children);
  pawl__buf_free(&d->jparents);
  pawl__buf_free(&d->jchildren);
}

/* ---- restartable steps --------------------------------------------------- */

static const char *cli_step_status(int s) {
  switch (s) {
  case PAWL_STEP_RUNNING: return "running";
  case PAWL_STEP_COMPLETED: return "completed";
  case PAWL_STEP_FAILED: return "failed";
  case PAWL_STEP_STOPPED: return "stopped";
  default: return "?";
  }
}

static const char *const cli_step_counts[PAWL_STEP_NCOUNTS] = {
    "read", "written", "filtered", "skipped", "commits", "rollbacks"};

void cli_json_steps(pawl_buf_t *b, const pawl_steps_t *s) {
  pawl__buf_puts(b, ",\"exit_code\":");
  cli_json_str(b, s->exit_code);
  pawl__buf_puts(b, ",\"exit_message\":");
  cli_json_str(b, s->exit_message);
  pawl__buf_puts(b, ",\"instance\":");
  cli_json_raw(b, s->instance);
  pawl__buf_puts(b, ",\"steps\":[");
  for (size_t i = 0; i < s->n; i++) {
    const pawl_step_exec_t *e = &s->execs[i];
    pawl__buf_printf(b, "%s{\"attempt\":%d,\"index\":%d,\"name\":", i ? "," : "",
                     (int)e->attempt, (int)e->index);
    cli_json_str(b, e->name);
    pawl__buf_printf(b, ",\"status\":\"%s\",\"started_at\":",
                     cli_step_status(e->status));
    cli_json_time(b, e->started_at);
    pawl__buf_puts(b, ",\"ended_at\":");
    cli_json_time(b, e->ended_at);
    pawl__buf_puts(b, ",\"duration_ms\":");
    if (e->ended_at)
      pawl__buf_printf(b, "%lld", (long long)(e->ended_at - e->started_at));
    else
      pawl__buf_puts(b, "null");
    pawl__buf_puts(b, ",\"exit_code\":");
    cli_json_str(b, e->exit_code);
    pawl__buf_puts(b, ",\"exit_message\":");
    cli_json_str(b, e->exit_message);
    for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
      pawl__buf_printf(b, ",\"%s\":%lld", cli_step_counts[k],
                       (long long)e->counts[k]);
    pawl__buf_puts(b, ",\"checkpoint\":");
    cli_json_raw(b, e->checkpoint);
    pawl__buf_puts(b, ",\"checkpoint_at\":");
    cli_json_time(b, e->checkpoint_at);
    pawl__buf_putc(b, '}');
  }
  pawl__buf_putc(b, ']');
}

int cli_steps_print(const pawl_steps_t *s) {
  if (!s->n && !s->exit_code && !s->instance) return 0;
  if (s->instance) printf("instance: %s\n", s->instance);
  if (s->exit_code)
    printf("exit: %s%s%s\n", s->exit_code, s->exit_message ? " " : "",
           s->exit_message ? s->exit_message : "");
  if (!s->n) return 0;
  enum { NCOL = 13 };
  cli_table_t t = {.ncols = NCOL};
  static const char *const head[NCOL] = {
      "attempt", "step",  "status",  "started", "duration_ms",
      "read",    "written", "filtered", "skipped", "commits",
      "rollbacks", "checkpoint", "exit"};
  cli_table_row(&t, head);
  for (size_t i = 0; i < s->n; i++) {
    const pawl_step_exec_t *e = &s->execs[i];
    char att[16], step[240], st[ISO8601_STRLEN], dur[32] = "-", cp[48] = "-";
    char counts[PAWL_STEP_NCOUNTS][24];
    snprintf(att, sizeof att, "%d", (int)e->attempt);
    snprintf(step, sizeof step, "%d %s", (int)e->index, e->name ? e->name : "");
    cli_time(e->started_at, st);
    if (e->ended_at)
      snprintf(dur, sizeof dur, "%lld", (long long)(e->ended_at - e->started_at));
    for (int k = 0; k < PAWL_STEP_NCOUNTS; k++)
      snprintf(counts[k], sizeof counts[k], "%lld", (long long)e->counts[k]);
    if (e->checkpoint) snprintf(cp, sizeof cp, "%zu B", strlen(e->checkpoint));
    pawl_buf_t ex;
    pawl__buf_init(&ex);
    if (e->exit_code) pawl__buf_puts(&ex, e->exit_code);
    if (e->exit_message) {
      if (e->exit_code) pawl__buf_putc(&ex, ' ');
      pawl__buf_puts(&ex, e->exit_message);
    }
    const char *row[NCOL] = {att, step, cli_step_status(e->status), st, dur,
                             counts[0], counts[1], counts[2], counts[3],
                             counts[4], counts[5], cp,
                             ex.len ? pawl__buf_cstr(&ex) : "-"};
    cli_table_row(&t, row);
    pawl__buf_free(&ex);
  }
  int oom = t.oom;
  if (!oom) {
    printf("steps:\n");
    cli_table_print(&t, "  ");
  }
  cli_table_free(&t);
  return oom ? -1 : 0;
}
