/* cli_top.c: `pawl top`, a live terminal view of the jobs.
 *
 * Every refresh reads one snapshot, the JSON text of pawl_top_snapshot()
 * (include/pawl.h): from the database directly, or over a running host's
 * admin socket (--connect), where a console chunk prints the same text
 * (the Lua module's db:top_snapshot()). The view is drawn from that text
 * alone, so both sources show the same thing; --json prints it as is.
 * Per-second figures come from two successive snapshots: the throughput
 * buckets only grow within their minute.
 *
 * The terminal: plain ANSI escapes, the alternate screen, raw input (no
 * echo, no signals from keys: Ctrl-C is read as a key), the size from
 * TIOCGWINSZ (again after SIGWINCH). Every way out puts the terminal back:
 * q and Ctrl-C, SIGTERM, SIGHUP and SIGINT from elsewhere (a flag the loop
 * sees), an error while reading (restored before the message prints), and
 * exit() (atexit). When stdout is not a terminal there is no screen: a
 * plain snapshot is printed every interval (--once: one). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "console_client.h"
#include "pawl.h"
#include "redact.h"
#include "top_json.h"

/* --interval: 0.1 s .. 1 hour. */
#define TOP_INTERVAL_MIN_MS 100
#define TOP_INTERVAL_MAX_MS 3600000
/* Jobs listed in the running and dead panes (the snapshot's defaults). */
#define TOP_LIST 10
/* Samples in the sparklines: a minute at the default interval. */
#define TOP_SPARK 60

/* ---- the snapshot's tree (top_json.h) ----------------------------------- */

static int64_t tj_int(const tj_t *o, const char *key) {
  const tj_t *v = top_json_get(o, key);
  return v && (v->t == TJ_NUM || v->t == TJ_BOOL) ? (int64_t)v->num : 0;
}

static double tj_num(const tj_t *o, const char *key) {
  const tj_t *v = top_json_get(o, key);
  return v && v->t == TJ_NUM ? v->num : 0;
}

static const char *tj_str(const tj_t *o, const char *key) {
  const tj_t *v = top_json_get(o, key);
  return v && v->t == TJ_STR ? v->str : NULL;
}

static size_t tj_len(const tj_t *o, const char *key) {
  const tj_t *v = top_json_get(o, key);
  return v && v->t == TJ_ARR ? v->n : 0;
}

static const tj_t *tj_at(const tj_t *o, const char *key, size_t i) {
  const tj_t *v = top_json_get(o, key);
  return v && v->t == TJ_ARR && i < v->n ? &v->items[i] : NULL;
}

/* ---- the source: the database, or a host's admin socket ------------------ */

typedef struct top_src {
  pawl_t *p;            /* direct */
  console_client_t *cc; /* --connect */
  pawl_top_opts_t opts;
} top_src_t;

/* top_fetch()'s answer when the read failed in a way that passes: the
 * database busy (locked longer than the busy timeout) or away (a lost
 * connection, which the next call reopens). The view says so and reads
 * again at the next interval; anything else ends it. */
#define TOP_RETRY 3

static int top_transient(int rc) {
  return rc == PAWL_EBUSY || rc == PAWL_EUNAVAIL;
}

/* The snapshot's text (malloc'd) in *json; 0, TOP_RETRY or CLI_FAIL with
 * err. */
static int top_fetch(top_src_t *src, char **json, char *err, size_t errlen) {
  if (src->p) {
    char *t = NULL;
    int rc = pawl_top_snapshot(src->p, &src->opts, &t);
    if (rc) {
      snprintf(err, errlen, "%s", pawl_errmsg(src->p));
      return top_transient(rc) ? TOP_RETRY : CLI_FAIL;
    }
    *json = strdup(t);
    pawl_top_snapshot_free(t);
    if (!*json) {
      snprintf(err, errlen, "out of memory");
      return CLI_FAIL;
    }
    return 0;
  }
  /* The error names the code first, so that a host whose database is
   * away is told from one that cannot make a snapshot at all. */
  char chunk[256];
  int n = snprintf(chunk, sizeof chunk,
                   "local s, e, c = db:top_snapshot{running = %d, dead = %d, "
                   "minutes = %d}\n"
                   "if not s then error(tostring(c) .. \": \" .. "
                   "tostring(e), 0) end\nprint(s)",
                   src->opts.running, src->opts.dead, src->opts.minutes);
  pawl_buf_t out, eo;
  pawl__buf_init(&out);
  pawl__buf_init(&eo);
  int r = console_client_capture(src->cc, chunk, (size_t)n, &out, &eo);
  int rc = 0;
  if (r < 0) {
    snprintf(err, errlen, "the connection to the host was lost");
    rc = CLI_FAIL;
  } else if (r == 0 || out.oom || !out.len) {
    const char *e = eo.len ? pawl__buf_cstr(&eo) : "no snapshot";
    if (strncmp(e, "error: ", 7) == 0) e += 7;
    snprintf(err, errlen, "the host did not give a snapshot: %.*s",
             (int)strcspn(e, "\n"), e);
    /* "busy: another console's chunk is running": the host answers at
     * once instead of making top wait; the next interval asks again. */
    rc = strncmp(e, "PAWL_EBUSY:", 11) == 0 ||
                 strncmp(e, "PAWL_EUNAVAIL:", 14) == 0 ||
                 strncmp(e, "busy: ", 6) == 0
             ? TOP_RETRY
             : CLI_FAIL;
  } else {
    *json = strdup(pawl__buf_cstr(&out));
    if (!*json) {
      snprintf(err, errlen, "out of memory");
      rc = CLI_FAIL;
    }
  }
  pawl__buf_free(&out);
  pawl__buf_free(&eo);
  return rc;
}

/* A Lua string literal of s (for the chunks sent with --connect): every
 * byte that is not plain printable ASCII as a decimal escape. */
static void top_lua_quote(pawl_buf_t *b, const char *s) {
  pawl__buf_putc(b, '"');
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c < 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
      pawl__buf_printf(b, "\\%03u", *c);
    else
      pawl__buf_putc(b, (char)*c);
  }
  pawl__buf_putc(b, '"');
}

/* Runs an action chunk on the host; its printed line (or error) in msg. */
static int top_remote(top_src_t *src, pawl_buf_t *chunk, char *msg,
                      size_t msglen) {
  pawl_buf_t out, eo;
  pawl__buf_init(&out);
  pawl__buf_init(&eo);
  int r = chunk->oom ? 0
                     : console_client_capture(src->cc, chunk->data, chunk->len,
                                              &out, &eo);
  const char *t = r == 1   ? pawl__buf_cstr(&out)
                  : eo.len ? pawl__buf_cstr(&eo)
                           : "failed";
  if (strncmp(t, "error: ", 7) == 0) t += 7;
  snprintf(msg, msglen, "%.*s", (int)strcspn(t, "\n"), t);
  pawl__buf_free(&out);
  pawl__buf_free(&eo);
  return r < 0 ? -1 : r == 1 ? 0 : 1;
}

/* Pauses queue q, or resumes it when `paused`. 0 done, 1 refused (msg
 * says why), -1 the connection is gone. */
static int top_queue_toggle(top_src_t *src, const char *q, int paused,
                            char *msg, size_t msglen) {
  if (src->p) {
    int changed = 0;
    int rc = paused ? pawl_queue_resume(src->p, q, &changed)
                    : pawl_queue_pause(src->p, q, "pawl top", &changed);
    if (rc) {
      snprintf(msg, msglen, "%s", pawl_errmsg(src->p));
      return 1;
    }
    snprintf(msg, msglen, "queue %s %s", q, paused ? "resumed" : "paused");
    return 0;
  }
  pawl_buf_t c;
  pawl__buf_init(&c);
  pawl__buf_puts(&c, "local q = ");
  top_lua_quote(&c, q);
  pawl__buf_printf(&c,
                   "\nlocal ok, e = db:queue_%s(q%s)\n"
                   "if ok == nil then error(e, 0) end\n"
                   "print(\"queue \" .. q .. \" %s\")",
                   paused ? "resume" : "pause", paused ? "" : ", \"pawl top\"",
                   paused ? "resumed" : "paused");
  int rc = top_remote(src, &c, msg, msglen);
  pawl__buf_free(&c);
  return rc;
}

/* Pauses job `id`, or resumes it when it is paused. */
static int top_job_toggle(top_src_t *src, const char *id, char *msg,
                          size_t msglen) {
  pawl_id_t jid;
  if (pawl_id_parse(&jid, id)) {
    snprintf(msg, msglen, "not a job id: \"%.60s\"", id);
    return 1;
  }
  char canon[PAWL_ID_STRLEN];
  pawl_id_format(&jid, canon);
  if (src->p) {
    pawl_job_t *j = NULL;
    int rc = pawl_get(src->p, &jid, &j);
    if (!rc) {
      int resume = j->state == PAWL_PAUSED;
      pawl_job_free(j);
      j = NULL;
      rc = resume ? pawl_resume(src->p, &jid, "pawl top", &j)
                  : pawl_pause(src->p, &jid, "pawl top", &j);
    }
    if (rc) {
      snprintf(msg, msglen, "%s", pawl_errmsg(src->p));
      return 1;
    }
    snprintf(msg, msglen, "job %s is %s", canon, pawl_state_name(j->state));
    pawl_job_free(j);
    return 0;
  }
  pawl_buf_t c;
  pawl__buf_init(&c);
  pawl__buf_printf(&c,
                   "local id = \"%s\"\n"
                   "local j, e = db:get(id)\n"
                   "if not j then error(e, 0) end\n"
                   "if j.state == \"paused\" then j, e = db:resume(id, "
                   "\"pawl top\") else j, e = db:pause(id, \"pawl top\") end\n"
                   "if not j then error(e, 0) end\n"
                   "print(\"job \" .. id .. \" is \" .. j.state)",
                   canon);
  int rc = top_remote(src, &c, msg, msglen);
  pawl__buf_free(&c);
  return rc;
}

/* ---- figures from two snapshots -------------------------------------------
 */

typedef struct top_rates {
  int valid;                         /* 0 until there are two snapshots */
  double started, succeeded, failed; /* per second */
} top_rates_t;

static int64_t top_bucket_count(const tj_t *snap, int64_t minute_at,
                                const char *state, const char *queue) {
  size_t n = tj_len(snap, "throughput");
  for (size_t i = 0; i < n; i++) {
    const tj_t *b = tj_at(snap, "throughput", i);
    const char *s = tj_str(b, "state"), *q = tj_str(b, "queue");
    if (tj_int(b, "minute_at") == minute_at && s && q &&
        strcmp(s, state) == 0 && strcmp(q, queue) == 0)
      return tj_int(b, "count");
  }
  return 0;
}

/* Jobs that finished as `state` between the two snapshots: each bucket's
 * growth (a bucket absent before had 0). */
static int64_t top_finished(const tj_t *prev, const tj_t *cur,
                            const char *state) {
  int64_t sum = 0;
  size_t n = tj_len(cur, "throughput");
  for (size_t i = 0; i < n; i++) {
    const tj_t *b = tj_at(cur, "throughput", i);
    const char *s = tj_str(b, "state"), *q = tj_str(b, "queue");
    if (!s || !q || strcmp(s, state) != 0) continue;
    int64_t d = tj_int(b, "count") -
                top_bucket_count(prev, tj_int(b, "minute_at"), s, q);
    if (d > 0) sum += d;
  }
  return sum;
}

static int64_t top_total(const tj_t *snap, const char *state) {
  int64_t sum = 0;
  size_t n = tj_len(snap, "queues");
  for (size_t i = 0; i < n; i++) sum += tj_int(tj_at(snap, "queues", i), state);
  return sum;
}

/* Started is an estimate: the jobs that finished plus the growth of the
 * running set (the database counts finishes, not starts: attempts that
 * ended in a retry are not in it). */
static top_rates_t top_rates(const tj_t *prev, const tj_t *cur) {
  top_rates_t r = {0};
  if (!prev) return r;
  double dt = (double)(tj_int(cur, "at") - tj_int(prev, "at")) / 1000.0;
  if (dt <= 0) return r;
  int64_t ok = top_finished(prev, cur, "succeeded");
  int64_t bad = top_finished(prev, cur, "failed");
  int64_t started =
      ok + bad + top_total(cur, "running") - top_total(prev, "running");
  r.valid = 1;
  r.succeeded = (double)ok / dt;
  r.failed = (double)bad / dt;
  r.started = started > 0 ? (double)started / dt : 0;
  return r;
}

/* Finished in the minute before the current one, by state. */
static int64_t top_last_minute(const tj_t *snap, const char *state) {
  int64_t at = tj_int(snap, "at");
  int64_t minute = (at / 60000 - 1) * 60000;
  int64_t sum = 0;
  size_t n = tj_len(snap, "throughput");
  for (size_t i = 0; i < n; i++) {
    const tj_t *b = tj_at(snap, "throughput", i);
    const char *s = tj_str(b, "state");
    if (tj_int(b, "minute_at") == minute && s && strcmp(s, state) == 0)
      sum += tj_int(b, "count");
  }
  return sum;
}

/* "850ms", "12s", "3m04s", "2h05m", "3d04h". */
static void top_span(int64_t ms, char *out, size_t len) {
  if (ms <= 0)
    snprintf(out, len, "-");
  else if (ms < 1000)
    snprintf(out, len, "%" PRId64 "ms", ms);
  else if (ms < 60000)
    snprintf(out, len, "%" PRId64 "s", ms / 1000);
  else if (ms < 3600000)
    snprintf(out, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000,
             ms / 1000 % 60);
  else if (ms < 86400000)
    snprintf(out, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000,
             ms / 60000 % 60);
  else
    snprintf(out, len, "%" PRId64 "d%02" PRId64 "h", ms / 86400000,
             ms / 3600000 % 24);
}

/* How long a job of the running list has run ("12s"), or, claimed ahead
 * of a free worker and not started, that it waits ("claimed 3s"). */
static void top_for(const tj_t *j, char *out, size_t len) {
  if (!tj_int(j, "claimed")) {
    top_span(tj_int(j, "running_ms"), out, len);
    return;
  }
  char w[24];
  top_span(tj_int(j, "claimed_ms"), w, sizeof w);
  snprintf(out, len, "claimed %s", w);
}

/* A node's state as the nodes table says it: "running", "dead" (its beat
 * lapsed) or "stopped" with how long ago. */
static void top_node_state(const tj_t *nd, int64_t at, char *out, size_t len) {
  const char *st = tj_str(nd, "state");
  int64_t stopped = tj_int(nd, "stopped_at");
  if (st && strcmp(st, "stopped") == 0 && stopped) {
    char ago[24];
    top_span(at - stopped, ago, sizeof ago);
    snprintf(out, len, "stopped %s ago", strcmp(ago, "-") ? ago : "0s");
  } else {
    snprintf(out, len, "%s", st ? st : "-");
  }
}

static void top_rate_text(double r, char *out, size_t len) {
  if (r >= 100)
    snprintf(out, len, "%.0f", r);
  else
    snprintf(out, len, "%.1f", r);
}

/* The first line of a dead job's error (a traceback follows it), in
 * out; cli_text makes the rest safe. */
static void top_first_line(const char *e, char *out, size_t len) {
  if (!e) e = "";
  snprintf(out, len, "%.*s", (int)strcspn(e, "\n"), e);
}

/* ---- plain output (stdout is not a terminal, or --once) ------------------ */

static void top_cell_int(char *out, size_t len, int64_t v) {
  snprintf(out, len, "%" PRId64, v);
}

static void top_plain(const tj_t *snap, const top_rates_t *r, const char *db) {
  char t[ISO8601_STRLEN], a[32], b[32], c[32];
  cli_time(tj_int(snap, "at"), t);
  pawl_buf_t hb;
  pawl__buf_init(&hb);
  cli_text(&hb, db);
  printf("pawl top  %s  %s\n", t, pawl__buf_cstr(&hb));
  pawl__buf_free(&hb);
  if (r->valid) {
    top_rate_text(r->started, a, sizeof a);
    top_rate_text(r->succeeded, b, sizeof b);
    top_rate_text(r->failed, c, sizeof c);
    printf("throughput/s: started %s  succeeded %s  failed %s\n", a, b, c);
  } else {
    printf("throughput/s: - (after the next sample)\n");
  }
  printf("last minute: succeeded %" PRId64 "  failed %" PRId64
         "  canceled %" PRId64 "\n",
         top_last_minute(snap, "succeeded"), top_last_minute(snap, "failed"),
         top_last_minute(snap, "canceled"));

  cli_table_t tb = {.ncols = 8};
  static const char *const qh[] = {"QUEUE", "PENDING", "RUNNING", "BLOCKED",
                                   "HELD",  "FAILED",  "OLDEST",  "PAUSED"};
  cli_table_row(&tb, qh);
  for (size_t i = 0; i < tj_len(snap, "queues"); i++) {
    const tj_t *q = tj_at(snap, "queues", i);
    char c1[24], c2[24], c3[24], c4[24], c5[24], c6[24];
    top_cell_int(c1, sizeof c1, tj_int(q, "pending"));
    top_cell_int(c2, sizeof c2, tj_int(q, "running"));
    top_cell_int(c3, sizeof c3, tj_int(q, "blocked"));
    top_cell_int(c4, sizeof c4, tj_int(q, "held"));
    top_cell_int(c5, sizeof c5, tj_int(q, "failed"));
    top_span(tj_int(q, "oldest_due_ms"), c6, sizeof c6);
    const char *name = tj_str(q, "name");
    const char *row[] = {name ? name : "?",
                         c1,
                         c2,
                         c3,
                         c4,
                         c5,
                         c6,
                         tj_int(q, "paused") ? "paused" : "-"};
    cli_table_row(&tb, row);
  }
  printf("queues:\n");
  cli_table_print(&tb, "  ");
  cli_table_free(&tb);

  cli_table_t tn = {.ncols = 5};
  static const char *const nh[] = {"NODE", "STATE", "VERSION", "RUNNING",
                                   "LAST BEAT"};
  cli_table_row(&tn, nh);
  for (size_t i = 0; i < tj_len(snap, "nodes"); i++) {
    const tj_t *nd = tj_at(snap, "nodes", i);
    char c1[24], c2[24], st[48];
    top_cell_int(c1, sizeof c1, tj_int(nd, "running"));
    top_span(tj_int(snap, "at") - tj_int(nd, "last_beat"), c2, sizeof c2);
    top_node_state(nd, tj_int(snap, "at"), st, sizeof st);
    const char *id = tj_str(nd, "id"), *v = tj_str(nd, "version");
    const char *row[] = {id ? id : "?", st, v ? v : "?", c1, c2};
    cli_table_row(&tn, row);
  }
  printf("nodes:\n");
  cli_table_print(&tn, "  ");
  cli_table_free(&tn);

  cli_table_t tr = {.ncols = 6};
  static const char *const rh[] = {"ID",      "TYPE", "QUEUE",
                                   "ATTEMPT", "NODE", "FOR"};
  cli_table_row(&tr, rh);
  for (size_t i = 0; i < tj_len(snap, "running"); i++) {
    const tj_t *j = tj_at(snap, "running", i);
    char c1[24], c2[40];
    top_cell_int(c1, sizeof c1, tj_int(j, "attempt"));
    top_for(j, c2, sizeof c2);
    const char *id = tj_str(j, "id"), *ty = tj_str(j, "type"),
               *q = tj_str(j, "queue"), *nd = tj_str(j, "node");
    const char *row[] = {
        id ? id : "?", ty ? ty : "?", q ? q : "?", c1, nd ? nd : "-", c2};
    cli_table_row(&tr, row);
  }
  printf("running (longest first):\n");
  cli_table_print(&tr, "  ");
  cli_table_free(&tr);

  cli_table_t td = {.ncols = 5};
  static const char *const dh[] = {"ID", "TYPE", "QUEUE", "ATTEMPT", "ERROR"};
  cli_table_row(&td, dh);
  for (size_t i = 0; i < tj_len(snap, "dead"); i++) {
    const tj_t *j = tj_at(snap, "dead", i);
    char c1[24];
    top_cell_int(c1, sizeof c1, tj_int(j, "attempt"));
    const char *id = tj_str(j, "id"), *ty = tj_str(j, "type"),
               *q = tj_str(j, "queue");
    char e[1024];
    top_first_line(tj_str(j, "error"), e, sizeof e);
    const char *row[] = {id ? id : "?", ty ? ty : "?", q ? q : "?", c1, e};
    cli_table_row(&td, row);
  }
  printf("dead (newest first):\n");
  cli_table_print(&td, "  ");
  cli_table_free(&td);
  fflush(stdout);
}

/* ---- the terminal ----------------------------------------------------------
 */

static struct termios top_saved_tio;
static volatile sig_atomic_t top_tty_raw;  /* the terminal is ours */
static volatile sig_atomic_t top_quit_sig; /* SIGTERM, SIGHUP, SIGINT */
static volatile sig_atomic_t top_resized;  /* SIGWINCH */

/* Puts the terminal back: the main screen, the cursor, the modes. Safe to
 * call twice (atexit and the normal path). */
static void top_restore(void) {
  if (!top_tty_raw) return;
  static const char leave[] = "\033[0m\033[?25h\033[?1049l";
  ssize_t w = write(STDOUT_FILENO, leave, sizeof leave - 1);
  (void)w;
  tcsetattr(STDIN_FILENO, TCSAFLUSH, &top_saved_tio);
  top_tty_raw = 0;
}

static void top_on_signal(int sig) {
  if (sig == SIGWINCH)
    top_resized = 1;
  else
    top_quit_sig = sig;
}

static int top_enter(void) {
  if (tcgetattr(STDIN_FILENO, &top_saved_tio) != 0) return -1;
  struct termios raw = top_saved_tio;
  raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
  raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) return -1;
  top_tty_raw = 1;
  static int registered;
  if (!registered) {
    atexit(top_restore);
    registered = 1;
  }
  static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
  ssize_t w = write(STDOUT_FILENO, enter, sizeof enter - 1);
  (void)w;
  return 0;
}

static void top_size(int *rows, int *cols) {
  struct winsize ws;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
    *rows = ws.ws_row;
    *cols = ws.ws_col;
  } else {
    *rows = 24;
    *cols = 80;
  }
}

/* ---- the screen ------------------------------------------------------------
 */

enum { PANE_QUEUES, PANE_RUNNING, PANE_DEAD, PANE_COUNT };

typedef struct top_ui {
  int rows, cols;
  int pane;            /* where j/k move and p acts */
  char queue[201];     /* the selected queue, kept across refreshes */
  int sel[PANE_COUNT]; /* the selected row of each pane */
  int prompting;       /* 1: reading a job id */
  char input[64];
  size_t ninput;
  char msg[512]; /* the status line */
  double spark_ok[TOP_SPARK], spark_bad[TOP_SPARK];
  int nspark;
} top_ui_t;

typedef struct top_screen {
  pawl_buf_t b;
  int line, rows, cols;
} top_screen_t;

/* Appends one screen line: s made safe (cli_text), cut to the width,
 * then cleared to the end; `hl`: reverse video. Lines past the screen's
 * height are dropped. */
static void top_line(top_screen_t *sc, int hl, const char *s) {
  if (sc->line >= sc->rows) return;
  pawl_buf_t t;
  pawl__buf_init(&t);
  cli_text(&t, s);
  const char *p = pawl__buf_cstr(&t);
  size_t bytes = 0;
  int w = 0;
  while (p[bytes] && w < sc->cols) {
    bytes++;
    while (((unsigned char)p[bytes] & 0xc0) == 0x80) bytes++;
    w++;
  }
  pawl__buf_printf(&sc->b, "\033[%d;1H", sc->line + 1);
  if (hl) pawl__buf_puts(&sc->b, "\033[7m");
  pawl__buf_append(&sc->b, p, bytes);
  if (hl) pawl__buf_puts(&sc->b, "\033[0m");
  pawl__buf_puts(&sc->b, "\033[K");
  pawl__buf_free(&t);
  sc->line++;
}

static void top_linef(top_screen_t *sc, int hl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void top_linef(top_screen_t *sc, int hl, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  top_line(sc, hl, line);
}

/* A sparkline of the samples, scaled to their largest. */
static void top_spark(const double *v, int n, int width, char *out,
                      size_t len) {
  static const char *const bars[] = {
      "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
      "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
  double max = 0;
  int from = n > width ? n - width : 0;
  for (int i = from; i < n; i++)
    if (v[i] > max) max = v[i];
  size_t o = 0;
  out[0] = 0;
  for (int i = from; i < n && o + 4 < len; i++) {
    int k = max > 0 ? (int)lround(v[i] / max * 7) : 0;
    if (k < 0) k = 0;
    if (k > 7) k = 7;
    memcpy(out + o, bars[k], 3);
    o += 3;
    out[o] = 0;
  }
}

static void top_spark_push(top_ui_t *ui, const top_rates_t *r) {
  if (!r->valid) return;
  if (ui->nspark == TOP_SPARK) {
    memmove(ui->spark_ok, ui->spark_ok + 1, (TOP_SPARK - 1) * sizeof(double));
    memmove(ui->spark_bad, ui->spark_bad + 1, (TOP_SPARK - 1) * sizeof(double));
    ui->nspark--;
  }
  ui->spark_ok[ui->nspark] = r->succeeded;
  ui->spark_bad[ui->nspark] = r->failed;
  ui->nspark++;
}

static int top_pane_len(const tj_t *snap, int pane) {
  const char *key = pane == PANE_QUEUES    ? "queues"
                    : pane == PANE_RUNNING ? "running"
                                           : "dead";
  return (int)tj_len(snap, key);
}

/* Keeps the selections inside their lists, and the selected queue on its
 * name when queues come and go. */
static void top_clamp(top_ui_t *ui, const tj_t *snap) {
  int nq = top_pane_len(snap, PANE_QUEUES);
  if (ui->queue[0]) {
    for (int i = 0; i < nq; i++) {
      const char *n = tj_str(tj_at(snap, "queues", (size_t)i), "name");
      if (n && strcmp(n, ui->queue) == 0) ui->sel[PANE_QUEUES] = i;
    }
  }
  for (int p = 0; p < PANE_COUNT; p++) {
    int n = top_pane_len(snap, p);
    if (ui->sel[p] >= n) ui->sel[p] = n - 1;
    if (ui->sel[p] < 0) ui->sel[p] = 0;
  }
  const char *n =
      tj_str(tj_at(snap, "queues", (size_t)ui->sel[PANE_QUEUES]), "name");
  snprintf(ui->queue, sizeof ui->queue, "%s", n ? n : "");
}

/* The rows [*from, *to) of a list of n shown in h lines: all of them, or
 * a window that keeps the selected row in view. */
static void top_window(int n, int sel, int h, int *from, int *to) {
  if (h < 1) h = 1;
  if (n <= h) {
    *from = 0;
    *to = n;
    return;
  }
  int f = sel - h / 2;
  if (f > n - h) f = n - h;
  if (f < 0) f = 0;
  *from = f;
  *to = f + h;
}

/* A section's head: its name, [name] when it has the keys, and how many
 * rows of how many are shown when they do not all fit. */
static void top_head(top_screen_t *sc, int focus, const char *name,
                     const char *note, int from, int to, int n) {
  char cut[64] = "";
  if (to - from < n)
    snprintf(cut, sizeof cut, "  (%d-%d of %d)", from + 1, to, n);
  top_linef(sc, 0, "%s%s%s%s%s", focus ? "[" : " ", name, focus ? "]" : " ",
            note, cut);
}

static void top_draw(top_ui_t *ui, const tj_t *snap, const top_rates_t *r,
                     const char *db, int64_t interval_ms) {
  top_screen_t sc = {.rows = ui->rows, .cols = ui->cols};
  pawl__buf_init(&sc.b);
  char t[ISO8601_STRLEN], a[32], b[32], c[32], iv[32];
  cli_time(tj_int(snap, "at"), t);
  top_span(interval_ms, iv, sizeof iv);
  top_linef(&sc, 1, "pawl top  %s  %s  every %s", db, t, iv);
  if (r->valid) {
    top_rate_text(r->started, a, sizeof a);
    top_rate_text(r->succeeded, b, sizeof b);
    top_rate_text(r->failed, c, sizeof c);
    top_linef(&sc, 0, "throughput/s  started %s  succeeded %s  failed %s", a, b,
              c);
  } else {
    top_line(&sc, 0, "throughput/s  - (after the next sample)");
  }
  int sw = ui->cols > 30 ? ui->cols - 22 : 8;
  char sp[TOP_SPARK * 3 + 1];
  top_spark(ui->spark_ok, ui->nspark, sw, sp, sizeof sp);
  /* The sparkline's bytes are UTF-8 blocks: cli_text keeps them. */
  top_linef(&sc, 0, "succeeded/s  %s", sp);
  top_spark(ui->spark_bad, ui->nspark, sw, sp, sizeof sp);
  top_linef(&sc, 0, "failed/s     %s", sp);
  top_linef(&sc, 0,
            "last minute  succeeded %" PRId64 "  failed %" PRId64
            "  canceled %" PRId64,
            top_last_minute(snap, "succeeded"), top_last_minute(snap, "failed"),
            top_last_minute(snap, "canceled"));
  top_line(&sc, 0, "");

  /* What the lists share: the screen less its fixed lines (the six
   * above, the section heads and blanks, the bottom two), so that many
   * queues cannot push the jobs off the screen. */
  int nq = top_pane_len(snap, PANE_QUEUES);
  int nn = (int)tj_len(snap, "nodes");
  int nr = top_pane_len(snap, PANE_RUNNING);
  int nd = top_pane_len(snap, PANE_DEAD);
  int room = ui->rows - 16;
  if (room < 4) room = 4;
  /* A line each, then one more at a time to the lists that have more
   * rows, the queues twice as often as the others. */
  const int want[4] = {nq, nn, nr, nd};
  int h[4] = {1, 1, 1, 1}, left = room - 4;
  static const int order[5] = {0, 0, 2, 3, 1};
  for (int gave = 1; left > 0 && gave;) {
    gave = 0;
    for (int k = 0; k < 5 && left > 0; k++) {
      if (h[order[k]] < want[order[k]]) {
        h[order[k]]++;
        left--;
        gave = 1;
      }
    }
  }
  int hq = h[0], hn = h[1], hr = h[2], hd = h[3];
  /* The body stops two lines short: the status and keys always show. */
  sc.rows = ui->rows - 2;
  int from, to;

  top_window(nq, ui->sel[PANE_QUEUES], hq, &from, &to);
  top_head(&sc, ui->pane == PANE_QUEUES, "QUEUES", "", from, to, nq);
  top_linef(&sc, 0, "  %-20s %8s %8s %8s %6s %8s %9s  %s", "QUEUE", "PENDING",
            "RUNNING", "BLOCKED", "HELD", "FAILED", "OLDEST", "STATE");
  for (int i = from; i < to; i++) {
    const tj_t *q = tj_at(snap, "queues", (size_t)i);
    char old[24];
    top_span(tj_int(q, "oldest_due_ms"), old, sizeof old);
    const char *name = tj_str(q, "name");
    const char *by = tj_str(q, "paused_by");
    char state[256] = "";
    if (tj_int(q, "paused"))
      snprintf(state, sizeof state, "PAUSED%s%s", by ? " by " : "",
               by ? by : "");
    int on = ui->pane == PANE_QUEUES && ui->sel[PANE_QUEUES] == i;
    top_linef(&sc, on,
              "%s%-20s %8" PRId64 " %8" PRId64 " %8" PRId64 " %6" PRId64
              " %8" PRId64 " %9s  %s",
              on ? "> " : "  ", name ? name : "?", tj_int(q, "pending"),
              tj_int(q, "running"), tj_int(q, "blocked"), tj_int(q, "held"),
              tj_int(q, "failed"), old, state);
  }
  top_line(&sc, 0, "");

  top_window(nn, 0, hn, &from, &to);
  top_head(&sc, 0, "NODES", "", from, to, nn);
  for (int i = from; i < to; i++) {
    const tj_t *nd = tj_at(snap, "nodes", (size_t)i);
    char beat[24], st[48];
    top_span(tj_int(snap, "at") - tj_int(nd, "last_beat"), beat, sizeof beat);
    top_node_state(nd, tj_int(snap, "at"), st, sizeof st);
    const char *id = tj_str(nd, "id"), *qs = tj_str(nd, "queues");
    top_linef(&sc, 0, "  %-32s %-14s busy %-6" PRId64 " beat %s ago  queues %s",
              id ? id : "?", st, tj_int(nd, "running"), beat,
              qs && *qs ? qs : "all");
  }
  if (!nn) top_line(&sc, 0, "  (none)");
  top_line(&sc, 0, "");

  top_window(nr, ui->sel[PANE_RUNNING], hr, &from, &to);
  top_head(&sc, ui->pane == PANE_RUNNING, "RUNNING", " longest first", from, to,
           nr);
  for (int i = from; i < to; i++) {
    const tj_t *j = tj_at(snap, "running", (size_t)i);
    char f[40];
    top_for(j, f, sizeof f);
    const char *id = tj_str(j, "id"), *ty = tj_str(j, "type"),
               *q = tj_str(j, "queue"), *nd = tj_str(j, "node");
    char prog[32] = "";
    double total = tj_num(j, "progress_total");
    if (total > 0)
      snprintf(prog, sizeof prog, "  %.0f%%",
               100.0 * tj_num(j, "progress_done") / total);
    int on = ui->pane == PANE_RUNNING && ui->sel[PANE_RUNNING] == i;
    top_linef(&sc, on, "%s%s %-9s %-16s %-12s #%" PRId64 "  %s%s",
              on ? "> " : "  ", id ? id : "?", f, ty ? ty : "?", q ? q : "?",
              tj_int(j, "attempt"), nd ? nd : "-", prog);
  }
  if (!nr) top_line(&sc, 0, "  (none)");
  top_line(&sc, 0, "");

  top_window(nd, ui->sel[PANE_DEAD], hd, &from, &to);
  top_head(&sc, ui->pane == PANE_DEAD, "DEAD", " newest first", from, to, nd);
  for (int i = from; i < to; i++) {
    const tj_t *j = tj_at(snap, "dead", (size_t)i);
    const char *id = tj_str(j, "id"), *ty = tj_str(j, "type");
    char e[1024];
    top_first_line(tj_str(j, "error"), e, sizeof e);
    int on = ui->pane == PANE_DEAD && ui->sel[PANE_DEAD] == i;
    top_linef(&sc, on, "%s%s %-16s #%" PRId64 "  %s", on ? "> " : "  ",
              id ? id : "?", ty ? ty : "?", tj_int(j, "attempt"), e);
  }
  if (!nd) top_line(&sc, 0, "  (none)");

  /* The bottom two lines: the status and the keys. */
  while (sc.line < sc.rows) top_line(&sc, 0, "");
  sc.rows = ui->rows;
  if (ui->prompting)
    top_linef(&sc, 0, "pause/resume job id: %.*s", (int)ui->ninput, ui->input);
  else
    top_line(&sc, 0, ui->msg);
  top_line(&sc, 1,
           "tab/left/right: pane  j/k/up/down: select  p: pause/resume  "
           "i: job by id  q: quit");
  if (ui->prompting)
    pawl__buf_puts(&sc.b, "\033[?25h");
  else
    pawl__buf_puts(&sc.b, "\033[?25l");
  if (!sc.b.oom) {
    const char *p = sc.b.data;
    size_t left = sc.b.len;
    while (left > 0) {
      ssize_t w = write(STDOUT_FILENO, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      p += w;
      left -= (size_t)w;
    }
  }
  pawl__buf_free(&sc.b);
}

/* ---- keys -------------------------------------------------------------------
 */

enum {
  KEY_NONE,
  KEY_UP,
  KEY_DOWN,
  KEY_LEFT,
  KEY_RIGHT,
  KEY_TAB,
  KEY_QUIT,
  KEY_P,
  KEY_I,
  KEY_ENTER,
  KEY_ESC,
  KEY_BACKSPACE,
  KEY_CHAR
};

/* The next key from buf[*i..n): arrows are ESC [ A..D (or ESC O A..D). */
static int top_key(const char *buf, size_t n, size_t *i, char *ch) {
  char c = buf[(*i)++];
  *ch = c;
  if (c == '\033') {
    if (*i + 1 < n && (buf[*i] == '[' || buf[*i] == 'O')) {
      char k = buf[*i + 1];
      *i += 2;
      switch (k) {
      case 'A': return KEY_UP;
      case 'B': return KEY_DOWN;
      case 'C': return KEY_RIGHT;
      case 'D': return KEY_LEFT;
      default:
        /* ESC [ 1 ; 5 A and the like: skip to the final byte. */
        while (*i < n &&
               !((buf[*i] >= 'A' && buf[*i] <= 'Z') ||
                 (buf[*i] >= 'a' && buf[*i] <= 'z') || buf[*i] == '~'))
          (*i)++;
        if (*i < n) (*i)++;
        return KEY_NONE;
      }
    }
    return KEY_ESC;
  }
  if (c == 3) return KEY_QUIT; /* Ctrl-C */
  if (c == '\t') return KEY_TAB;
  if (c == '\r' || c == '\n') return KEY_ENTER;
  if (c == 127 || c == 8) return KEY_BACKSPACE;
  return KEY_CHAR;
}

/* Acts on a key; 1 to quit, -1 when the host is gone. */
static int top_handle_key(top_ui_t *ui, top_src_t *src, const tj_t *snap,
                          int key, char ch) {
  if (ui->prompting) {
    if (key == KEY_ESC || key == KEY_QUIT) {
      ui->prompting = 0;
      snprintf(ui->msg, sizeof ui->msg, "canceled");
    } else if (key == KEY_BACKSPACE) {
      if (ui->ninput) ui->ninput--;
    } else if (key == KEY_ENTER) {
      ui->prompting = 0;
      ui->input[ui->ninput] = 0;
      if (top_job_toggle(src, ui->input, ui->msg, sizeof ui->msg) < 0)
        return -1;
    } else if (key == KEY_CHAR && ch > 0x20 && ch < 0x7f &&
               ui->ninput + 1 < sizeof ui->input) {
      ui->input[ui->ninput++] = ch;
    }
    return 0;
  }
  switch (key) {
  case KEY_QUIT: return 1;
  case KEY_TAB:
  case KEY_RIGHT: ui->pane = (ui->pane + 1) % PANE_COUNT; break;
  case KEY_LEFT: ui->pane = (ui->pane + PANE_COUNT - 1) % PANE_COUNT; break;
  case KEY_UP: ui->sel[ui->pane]--; break;
  case KEY_DOWN: ui->sel[ui->pane]++; break;
  case KEY_CHAR:
    if (ch == 'q') return 1;
    if (ch == 'k') ui->sel[ui->pane]--;
    if (ch == 'j') ui->sel[ui->pane]++;
    if (ch == 'i') {
      ui->prompting = 1;
      ui->ninput = 0;
    }
    if (ch == 'p') {
      int n = top_pane_len(snap, ui->pane);
      if (n == 0) {
        snprintf(ui->msg, sizeof ui->msg, "nothing selected");
        break;
      }
      if (ui->pane == PANE_QUEUES) {
        const tj_t *q = tj_at(snap, "queues", (size_t)ui->sel[PANE_QUEUES]);
        const char *name = tj_str(q, "name");
        if (name && top_queue_toggle(src, name, (int)tj_int(q, "paused"),
                                     ui->msg, sizeof ui->msg) < 0)
          return -1;
      } else {
        const char *key_ = ui->pane == PANE_RUNNING ? "running" : "dead";
        const char *id =
            tj_str(tj_at(snap, key_, (size_t)ui->sel[ui->pane]), "id");
        if (id && top_job_toggle(src, id, ui->msg, sizeof ui->msg) < 0)
          return -1;
      }
    }
    break;
  default: break;
  }
  if (key == KEY_UP || key == KEY_DOWN ||
      (key == KEY_CHAR && (ch == 'j' || ch == 'k'))) {
    int n = top_pane_len(snap, ui->pane);
    if (ui->sel[ui->pane] >= n) ui->sel[ui->pane] = n - 1;
    if (ui->sel[ui->pane] < 0) ui->sel[ui->pane] = 0;
    if (ui->pane == PANE_QUEUES) {
      const char *nm =
          tj_str(tj_at(snap, "queues", (size_t)ui->sel[PANE_QUEUES]), "name");
      snprintf(ui->queue, sizeof ui->queue, "%s", nm ? nm : "");
    }
  }
  return 0;
}

/* ---- the command -----------------------------------------------------------
 */

static int64_t top_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct top_args {
  const char *db;
  int create;
  int64_t interval_ms;
  int once, json;
  const char *connect, *token_file;
} top_args_t;

/* The help, beside the parser below: one line per option it takes
 * (docs/cli.md and docs/man/pawl-top.1.scd list the same; cli_help_spec
 * checks). */
static const char top_usage[] =
    "usage: pawl top [OPTIONS]\n"
    "\n"
    "A live view: throughput, queues, nodes, the longest running and the\n"
    "newest dead jobs. Keys: tab/arrows/j/k select, p pause/resume the\n"
    "queue or job, i a job by id, q quit. Not a terminal: a plain print\n"
    "every interval.\n"
    "\n"
    "Options:\n"
    "  --interval SECONDS        refresh every SECONDS (0.1 to 3600; default 1)\n"
    "  --once                    print once and exit\n"
    "  --json                    JSON lines instead of text\n"
    "  --connect PATH|ADDRESS:PORT\n"
    "                            read through a running `pawl run`'s admin\n"
    "                            socket or --admin-listen\n"
    "  --admin-token-file F      with --connect ADDRESS:PORT: the file holding\n"
    "                            the host's token\n"
    "\n"
    "Global options (pawl --help): --db URL --create (before or after top)\n";

static int top_parse(int argc, char **argv, top_args_t *a, char *err,
                     size_t errlen) {
  a->interval_ms = 1000;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int has = i + 1 < argc;
    if (strcmp(o, "--once") == 0) {
      a->once = 1;
    } else if (strcmp(o, "--json") == 0) {
      a->json = 1;
    } else if (strcmp(o, "--interval") == 0 && has) {
      const char *v = argv[++i];
      char *end = NULL;
      errno = 0;
      double s = strtod(v, &end);
      if (!*v || *end || errno || !isfinite(s) ||
          s * 1000 < TOP_INTERVAL_MIN_MS || s * 1000 > TOP_INTERVAL_MAX_MS) {
        snprintf(err, errlen,
                 "--interval must be a number of seconds from 0.1 to 3600 "
                 "(got \"%s\")",
                 v);
        return CLI_USAGE;
      }
      a->interval_ms = (int64_t)llround(s * 1000);
    } else if (strcmp(o, "--connect") == 0 && has) {
      a->connect = argv[++i];
    } else if (strcmp(o, "--admin-token-file") == 0 && has) {
      a->token_file = argv[++i];
    } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
      fputs(top_usage, stdout);
      return -1;
    } else if (o[0] == '-' && !has &&
               (strcmp(o, "--interval") == 0 || strcmp(o, "--connect") == 0 ||
                strcmp(o, "--admin-token-file") == 0)) {
      snprintf(err, errlen, "%s needs a value", o);
      return CLI_USAGE;
    } else {
      snprintf(err, errlen, "unknown %s \"%s\" for top (see pawl top --help)",
               o[0] == '-' ? "option" : "argument", o);
      return CLI_USAGE;
    }
  }
  if (a->token_file && !a->connect) {
    snprintf(err, errlen, "--admin-token-file goes with --connect");
    return CLI_USAGE;
  }
  return 0;
}

/* Waits up to ms for input on stdin (the terminal) or a signal: 1 input,
 * 0 none, -1 the terminal is gone (hung up, closed: nothing more will
 * come, and polling it again would return at once for ever). */
static int top_wait_input(int64_t ms) {
  struct pollfd pf = {.fd = STDIN_FILENO, .events = POLLIN};
  if (ms < 0) ms = 0;
  int r = poll(&pf, 1, (int)ms);
  if (r <= 0) return 0;
  if (pf.revents & POLLIN) return 1;
  return pf.revents & (POLLHUP | POLLERR | POLLNVAL) ? -1 : 0;
}

/* Sleeps up to ms unless a signal says stop (plain output). */
static void top_nap(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (!top_quit_sig && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int top_loop(top_src_t *src, const top_args_t *a, const char *label,
                    char *err, size_t errlen) {
  int interactive =
      !a->once && !a->json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  tj_t prev = {0}, cur = {0};
  int have_prev = 0, rc = 0;
  top_ui_t ui;
  memset(&ui, 0, sizeof ui);
  snprintf(ui.msg, sizeof ui.msg, "%s",
           src->cc ? "attached to the host" : "reading the database");
  if (interactive) {
    if (top_enter()) {
      snprintf(err, errlen, "cannot set up the terminal: %s", strerror(errno));
      return CLI_FAIL;
    }
    top_size(&ui.rows, &ui.cols);
  }
  int64_t next = top_mono_ms();
  int redraw = 0;
  for (;;) {
    if (top_quit_sig) break;
    int64_t now = top_mono_ms();
    if (now >= next) {
      char *json = NULL;
      rc = top_fetch(src, &json, err, errlen);
      if (rc == TOP_RETRY && !a->once) {
        /* Shown, and read again at the next interval. */
        if (interactive) {
          snprintf(ui.msg, sizeof ui.msg, "%s (reading again)", err);
          redraw = 1;
        } else {
          fprintf(stderr, "pawl: %s (reading again)\n", err);
        }
        err[0] = 0;
        rc = 0;
        next = now + a->interval_ms;
        continue;
      }
      if (rc) {
        if (rc == TOP_RETRY) rc = CLI_FAIL;
        break;
      }
      if (interactive && strstr(ui.msg, "(reading again)"))
        snprintf(ui.msg, sizeof ui.msg, "reading again: done");
      if (a->json) {
        printf("%s\n", json);
        fflush(stdout);
      }
      tj_t snap;
      int bad = top_json_parse(json, strlen(json), &snap);
      free(json);
      if (bad) {
        snprintf(err, errlen, "the snapshot is not the JSON object expected");
        rc = CLI_FAIL;
        break;
      }
      if (have_prev) top_json_free(&prev);
      prev = cur;
      have_prev = cur.t == TJ_OBJ;
      cur = snap;
      top_rates_t r = top_rates(have_prev ? &prev : NULL, &cur);
      if (!a->json) {
        if (interactive) {
          top_spark_push(&ui, &r);
          top_clamp(&ui, &cur);
          top_draw(&ui, &cur, &r, label, a->interval_ms);
        } else {
          top_plain(&cur, &r, label);
          if (!a->once) printf("\n");
          fflush(stdout);
        }
      }
      if (a->once) break;
      next = now + a->interval_ms;
      continue;
    }
    if (!interactive) {
      top_nap(next - now);
      continue;
    }
    if (top_resized) {
      top_resized = 0;
      top_size(&ui.rows, &ui.cols);
      ssize_t w = write(STDOUT_FILENO, "\033[2J", 4);
      (void)w;
      redraw = 1;
    }
    if (redraw && cur.t == TJ_OBJ) {
      redraw = 0;
      top_rates_t none = {0};
      top_rates_t r = have_prev ? top_rates(&prev, &cur) : none;
      top_draw(&ui, &cur, &r, label, a->interval_ms);
    }
    int in = top_wait_input(next - now);
    if (in < 0) break;
    if (in == 0) continue;
    char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    if (n < 0) continue;
    int quit = 0;
    for (size_t i = 0; i < (size_t)n && !quit;) {
      char ch;
      int key = top_key(buf, (size_t)n, &i, &ch);
      int k = top_handle_key(&ui, src, &cur, key, ch);
      if (k < 0) {
        snprintf(err, errlen, "the connection to the host was lost");
        rc = CLI_FAIL;
        quit = 1;
      } else if (k > 0) {
        quit = 1;
      } else if (ch == 'p' || key == KEY_ENTER) {
        next = 0; /* show what the action changed at once */
      }
    }
    if (quit) break;
    redraw = 1;
  }
  if (interactive) top_restore();
  if (have_prev) top_json_free(&prev);
  top_json_free(&cur);
  return rc;
}

int cli_top_main(int argc, char **argv, const char *db, int create, char *err,
                 size_t errlen);
int cli_top_main(int argc, char **argv, const char *db, int create, char *err,
                 size_t errlen) {
  top_args_t a;
  memset(&a, 0, sizeof a);
  a.db = db;
  a.create = create;
  int rc = top_parse(argc, argv, &a, err, errlen);
  if (rc) return rc < 0 ? CLI_OK : rc;
  top_src_t src;
  memset(&src, 0, sizeof src);
  pawl_top_opts_init(&src.opts);
  src.opts.running = TOP_LIST;
  src.opts.dead = TOP_LIST;
  /* Enough minutes of buckets that two samples an interval apart share
   * theirs: the growth of each is what finished in between. */
  src.opts.minutes = (int)(a.interval_ms / 60000) + 2;
  if (src.opts.minutes > 30) src.opts.minutes = 30;
  char label[512];
  if (a.connect) {
    if (db) {
      snprintf(err, errlen,
               "--db and --connect: the host reads its own database");
      return CLI_USAGE;
    }
    if (console_client_open(a.connect, a.token_file, 0, 0, &src.cc, err,
                            errlen))
      return CLI_FAIL;
    snprintf(label, sizeof label, "host %s", console_client_node(src.cc));
  } else {
    pawl_options_t opts;
    pawl_options_init(&opts);
    opts.db = db;
    opts.create = create;
    int orc = pawl_open(&src.p, &opts, err, errlen);
    if (orc) {
      if (!err[0]) snprintf(err, errlen, "%s", pawl_strerror(orc));
      if (!create && (strncmp(err, "no database at ", 15) == 0 ||
                      strncmp(err, "no pawl database in ", 20) == 0)) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, " (or pass --create)");
      }
      return orc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL;
    }
    const char *u = db ? db : getenv("PAWL_DB");
    if (!u || !*u) u = "sqlite:./pawl.db";
    /* A URL's password never reaches the screen. */
    pawl__redact_url(u, label, sizeof label);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = top_on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[4];
  const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &sa, &old[i]);
  top_quit_sig = 0;
  rc = top_loop(&src, &a, label, err, errlen);
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
  if (src.cc) console_client_close(src.cc);
  if (src.p) pawl_close(src.p);
  return rc;
}
