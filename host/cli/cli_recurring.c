/* cli_recurring.c: `pawl recurring list|add|set|pause|resume|trigger|rm`,
 * on include/pawl.h's recurring functions. Its own small
 * argument parser (the verbs and their options are only these), with
 * --db and $PAWL_DB as everywhere. Text for people, --json for tools.
 * Exit status: 0 done, 1 the operation failed (no such definition, the
 * database), 2 bad usage or input (nothing changed). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "cli.h"
#include "pawl.h"
#include "tz.h"

/* The help, beside the parser below: one line per option it takes
 * (docs/cli.md and docs/man/pawl-recurring.1.scd list the same;
 * cli_help_spec checks). */
static const char rec_usage[] =
    "usage: pawl recurring list [OPTIONS]\n"
    "       pawl recurring add NAME EXPR [OPTIONS]\n"
    "       pawl recurring set NAME [OPTIONS]\n"
    "       pawl recurring pause|resume|trigger|rm NAME [OPTIONS]\n"
    "\n"
    "  list                    every definition: next and last fire (in its\n"
    "                          zone), last job, source, paused\n"
    "  add NAME EXPR           a definition firing on the cron expression EXPR\n"
    "  set NAME                change the options given (--cron EXPR too)\n"
    "  pause NAME | resume NAME\n"
    "  trigger NAME            enqueue one job now (the schedule is unchanged)\n"
    "  rm NAME                 remove it (its jobs stay)\n"
    "\n"
    "Options (add and set; --json everywhere):\n"
    "  --cron EXPR             set: the new expression\n"
    "  --tz ZONE               IANA zone (default UTC)\n"
    "  --misfire POLICY        run_once (default), catch_up or skip\n"
    "  --catch-up-limit N      catch_up: at most N missed ones (1-1000, 10)\n"
    "  --type TYPE             the job type (default: NAME)\n"
    "  --payload JSON          the jobs' payload (default {})\n"
    "  --queue Q               the jobs' queue\n"
    "  --priority N            the jobs' priority\n"
    "  --max-attempts N        the jobs' attempts before they fail for good\n"
    "  --timeout SECONDS       the jobs' limit for one attempt\n"
    "  --json                  JSON output\n"
    "\n"
    "Global options (pawl --help): --db URL --create (before or after "
    "recurring)\n";

typedef struct rec_args {
  const char *db, *verb, *name, *expr;
  pawl_recurring_opts_t o;
  unsigned fields;
  int json, create;
} rec_args_t;

static int rec_fail(char *err, size_t errlen, int code, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
static int rec_fail(char *err, size_t errlen, int code, const char *fmt,
                    ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

/* A whole number for option `opt` (the API checks its range). */
static int rec_int(const char *opt, const char *v, int32_t *out, char *err,
                   size_t errlen) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < INT32_MIN || x > INT32_MAX)
    return rec_fail(err, errlen, 2, "%s: %s is not a whole number", opt, v);
  *out = (int32_t)x;
  return 0;
}

static int rec_parse(int argc, char **argv, rec_args_t *a, char *err,
                     size_t errlen) {
  pawl_recurring_opts_init(&a->o);
  const char *pos[3];
  int npos = 0, rc;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "--json") == 0) {
      a->json = 1;
      continue;
    }
    if (strcmp(s, "--create") == 0) {
      a->create = 1;
      continue;
    }
    if (strncmp(s, "--", 2) != 0) {
      if (npos == 3)
        return rec_fail(err, errlen, 2, "recurring: unexpected argument %s", s);
      pos[npos++] = s;
      continue;
    }
    /* The options that take a value (all but --json and --create): an
     * unknown name is said as such, not as one missing its value. */
    static const char *const valued[] = {
        "--db",   "--cron",    "--tz",    "--misfire",  "--catch-up-limit",
        "--type", "--payload", "--queue", "--priority", "--max-attempts",
        "--timeout"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
      known |= strcmp(s, valued[k]) == 0;
    if (!known)
      return rec_fail(err, errlen, 2,
                      "recurring: unknown option %s (see pawl recurring "
                      "--help)",
                      s);
    if (i + 1 >= argc)
      return rec_fail(err, errlen, 2, "recurring: %s needs a value", s);
    const char *v = argv[++i];
    if (strcmp(s, "--db") == 0) {
      a->db = v;
    } else if (strcmp(s, "--cron") == 0) {
      a->o.expr = v;
      a->fields |= PAWL_REC_EXPR;
    } else if (strcmp(s, "--tz") == 0) {
      a->o.tz = v;
      a->fields |= PAWL_REC_TZ;
    } else if (strcmp(s, "--misfire") == 0) {
      if ((a->o.misfire = pawl_misfire_parse(v)) < 0)
        return rec_fail(err, errlen, 2,
                        "--misfire: %s is not run_once, catch_up or skip", v);
      a->fields |= PAWL_REC_MISFIRE;
    } else if (strcmp(s, "--catch-up-limit") == 0) {
      if ((rc = rec_int(s, v, &a->o.catch_up_limit, err, errlen))) return rc;
      if (a->o.catch_up_limit == 0)
        return rec_fail(err, errlen, 2,
                        "catch_up_limit must be between 1 and %d (got 0)",
                        PAWL_CATCH_UP_LIMIT_MAX);
      a->fields |= PAWL_REC_CATCH_UP_LIMIT;
    } else if (strcmp(s, "--type") == 0) {
      a->o.type = v;
      a->fields |= PAWL_REC_TYPE;
    } else if (strcmp(s, "--payload") == 0) {
      a->o.payload = v;
      a->fields |= PAWL_REC_PAYLOAD;
    } else if (strcmp(s, "--queue") == 0) {
      a->o.queue = v;
      a->fields |= PAWL_REC_QUEUE;
    } else if (strcmp(s, "--priority") == 0) {
      if ((rc = rec_int(s, v, &a->o.priority, err, errlen))) return rc;
      a->fields |= PAWL_REC_PRIORITY;
    } else if (strcmp(s, "--max-attempts") == 0) {
      if ((rc = rec_int(s, v, &a->o.max_attempts, err, errlen))) return rc;
      a->fields |= PAWL_REC_MAX_ATTEMPTS;
    } else if (strcmp(s, "--timeout") == 0) {
      if ((rc = rec_int(s, v, &a->o.timeout_s, err, errlen))) return rc;
      a->fields |= PAWL_REC_TIMEOUT;
    } else { /* not in valued[] above */
      return rec_fail(err, errlen, 2, "recurring: internal: option %s", s);
    }
  }
  if (npos == 0)
    return rec_fail(err, errlen, 2, "recurring: which verb? (list, add, set, "
                                    "pause, resume, trigger, rm)");
  a->verb = pos[0];
  static const struct {
    const char *verb;
    int args, options;
  } verbs[] = {{"list", 0, 0},  {"add", 2, 1},    {"set", 1, 1},
               {"pause", 1, 0}, {"resume", 1, 0}, {"trigger", 1, 0},
               {"rm", 1, 0}};
  for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++) {
    if (strcmp(a->verb, verbs[k].verb) != 0) continue;
    if (npos - 1 != verbs[k].args)
      return rec_fail(err, errlen, 2, "recurring %s takes %s", a->verb,
                      verbs[k].args == 0   ? "no arguments"
                      : verbs[k].args == 1 ? "NAME"
                                           : "NAME EXPR");
    if (a->fields && !verbs[k].options)
      return rec_fail(err, errlen, 2,
                      "recurring %s takes no options but --json and --db",
                      a->verb);
    if (npos > 1) a->name = pos[1];
    if (npos > 2) a->o.expr = pos[2];
    if (strcmp(a->verb, "add") == 0 && (a->fields & PAWL_REC_EXPR))
      return rec_fail(err, errlen, 2, "recurring add takes EXPR, not --cron");
    if (strcmp(a->verb, "set") == 0 && !a->fields)
      return rec_fail(err, errlen, 2, "recurring set: nothing to change");
    return 0;
  }
  return rec_fail(err, errlen, 2, "recurring: unknown verb %s", a->verb);
}

/* Text from the database, safe for a terminal. */
static void rec_text(pawl_buf_t *b, const char *s) {
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c < 0x20 || *c == 0x7f) pawl__buf_printf(b, "\\x%02x", *c);
    else pawl__buf_putc(b, (char)*c);
  }
}

/* A time as local time in the definition's zone, with its offset. */
static void rec_time(const pawl_recurring_t *d, int64_t ms,
                     char out[PAWL__TZ_STRLEN]) {
  const pawl__tz_t *z = NULL;
  if (!ms) {
    snprintf(out, PAWL__TZ_STRLEN, "-");
    return;
  }
  if (pawl__tz_get(d->tz, &z, NULL, 0) != 0) z = pawl__tz_utc();
  pawl__tz_format(z, ms, out);
}

static void rec_json_str(pawl_buf_t *b, const char *s) {
  if (s) pawl__buf_json_string(b, s, strlen(s));
  else pawl__buf_puts(b, "null");
}

static void rec_json_time(pawl_buf_t *b, const pawl_recurring_t *d,
                          int64_t ms) {
  char t[PAWL__TZ_STRLEN];
  if (!ms) {
    pawl__buf_puts(b, "null");
    return;
  }
  rec_time(d, ms, t);
  pawl__buf_printf(b, "\"%s\"", t);
}

/* d as JSON; its payload as the job views show a payload (redacted by
 * the built-in words and the type's `redact` list: cli_redact.c), since
 * every job it makes carries it. CLI_FAIL (err, CLI_ERRLEN bytes) when
 * the type's list cannot be read or memory runs out. */
static int rec_json(pawl_buf_t *b, cli_redact_t *red,
                    const pawl_recurring_t *d, char *err) {
  char id[PAWL_ID_STRLEN];
  char *payload = NULL;
  int rc = cli_redact_type(red, d->type, err);
  if (!rc) rc = cli_redact_text(red, d->payload, &payload, err);
  if (rc) return rc;
  pawl__buf_puts(b, "{\"name\":");
  rec_json_str(b, d->name);
  pawl__buf_puts(b, ",\"cron\":");
  rec_json_str(b, d->expr);
  pawl__buf_puts(b, ",\"tz\":");
  rec_json_str(b, d->tz);
  pawl__buf_printf(b, ",\"misfire\":\"%s\",\"catch_up_limit\":%d",
                   pawl_misfire_name(d->misfire), (int)d->catch_up_limit);
  pawl__buf_puts(b, ",\"type\":");
  rec_json_str(b, d->type);
  pawl__buf_printf(b, ",\"payload\":%s,\"queue\":",
                   payload ? payload : "null");
  pawl__free(payload);
  rec_json_str(b, d->queue);
  pawl__buf_printf(b, ",\"priority\":%d,\"max_attempts\":%d,\"timeout\":%d",
                   (int)d->priority, (int)d->max_attempts, (int)d->timeout_s);
  pawl__buf_printf(b, ",\"paused\":%s,\"enabled\":%s,\"source\":\"%s\"",
                   d->paused ? "true" : "false",
                   d->enabled ? "true" : "false",
                   d->from_script ? "script" : "operator");
  pawl__buf_puts(b, ",\"script\":");
  rec_json_str(b, d->script);
  pawl__buf_puts(b, ",\"load_error\":");
  rec_json_str(b, d->load_error);
  pawl__buf_printf(b, ",\"version\":%lld", (long long)d->version);
  pawl__buf_puts(b, ",\"next_fire_at\":");
  rec_json_time(b, d, d->next_fire_at);
  pawl__buf_puts(b, ",\"last_fire_at\":");
  rec_json_time(b, d, d->last_fire_at);
  pawl__buf_puts(b, ",\"last_job\":");
  if (d->has_last_job) {
    pawl_id_format(&d->last_job_id, id);
    pawl__buf_printf(b, "\"%s\"", id);
  } else {
    pawl__buf_puts(b, "null");
  }
  pawl__buf_puts(b, "}");
  return 0;
}

/* An aligned table of the definitions. */
static void rec_table(pawl_buf_t *out, const pawl_recurring_t *d, size_t n) {
  enum { COLS = 9 };
  static const char *head[COLS] = {"NAME", "CRON",     "TZ",   "NEXT",  "LAST",
                                   "LAST JOB", "SOURCE", "PAUSED", "TYPE"};
  size_t rows = n + 1;
  char **cell = calloc(rows * COLS, sizeof *cell);
  if (!cell) {
    out->oom = 1;
    return;
  }
  size_t width[COLS] = {0};
  for (size_t r = 0; r < rows; r++) {
    for (int c = 0; c < COLS; c++) {
      pawl_buf_t b;
      pawl__buf_init(&b);
      if (r == 0) {
        pawl__buf_puts(&b, head[c]);
      } else {
        const pawl_recurring_t *x = &d[r - 1];
        char t[PAWL__TZ_STRLEN], id[PAWL_ID_STRLEN];
        switch (c) {
        case 0: rec_text(&b, x->name); break;
        case 1: rec_text(&b, x->expr); break;
        case 2: rec_text(&b, x->tz); break;
        case 3:
          rec_time(x, x->enabled && !x->paused ? x->next_fire_at : 0, t);
          pawl__buf_puts(&b, t);
          break;
        case 4: rec_time(x, x->last_fire_at, t); pawl__buf_puts(&b, t); break;
        case 5:
          if (x->has_last_job) {
            pawl_id_format(&x->last_job_id, id);
            pawl__buf_puts(&b, id);
          } else {
            pawl__buf_puts(&b, "-");
          }
          break;
        case 6:
          if (x->from_script) {
            pawl__buf_puts(&b, "script:");
            rec_text(&b, x->script);
            if (!x->enabled) pawl__buf_puts(&b, " (gone)");
            /* A script that fails to load is not gone: the definition
             * stays as it was; why is printed below the table. */
            if (x->load_error) pawl__buf_puts(&b, " (does not load)");
          } else {
            pawl__buf_puts(&b, "operator");
          }
          break;
        case 7: pawl__buf_puts(&b, x->paused ? "yes" : "no"); break;
        case 8: rec_text(&b, x->type); break;
        }
      }
      if (b.oom) out->oom = 1;
      cell[r * COLS + c] = pawl__buf_detach(&b);
      pawl__buf_free(&b);
      size_t w = cell[r * COLS + c] ? strlen(cell[r * COLS + c]) : 0;
      if (w > width[c]) width[c] = w;
    }
  }
  for (size_t r = 0; r < rows; r++) {
    for (int c = 0; c < COLS; c++) {
      const char *s = cell[r * COLS + c] ? cell[r * COLS + c] : "";
      if (c + 1 < COLS)
        pawl__buf_printf(out, "%-*s  ", (int)width[c], s);
      else
        pawl__buf_printf(out, "%s\n", s);
      free(cell[r * COLS + c]);
    }
  }
  free(cell);
  for (size_t i = 0; i < n; i++) {
    if (!d[i].load_error) continue;
    pawl__buf_puts(out, "\n");
    rec_text(out, d[i].name);
    pawl__buf_puts(out, ": script ");
    rec_text(out, d[i].script);
    pawl__buf_puts(out, " does not load (the definition is kept as it "
                        "was): ");
    rec_text(out, d[i].load_error);
    pawl__buf_putc(out, '\n');
  }
}

static int rec_lib_fail(pawl_t *p, int rc, char *err, size_t errlen) {
  return rec_fail(err, errlen, rc == PAWL_EINVAL ? 2 : 1, "%s",
                  pawl_errmsg(p));
}

/* Prints the definition `name` as it is now (after a change). */
static int rec_show_one(pawl_t *p, const char *name, int json,
                        const char *done, char *err, size_t errlen) {
  pawl_recurring_t *d = NULL;
  int rc = pawl_recurring_get(p, name, &d);
  if (rc) return rec_lib_fail(p, rc, err, errlen);
  pawl_buf_t b;
  pawl__buf_init(&b);
  if (json) {
    cli_redact_t red;
    char rerr[CLI_ERRLEN];
    cli_redact_init(&red, p, 0);
    rc = rec_json(&b, &red, d, rerr);
    cli_redact_free(&red);
    if (rc) {
      pawl__buf_free(&b);
      pawl_recurring_free(d, 1);
      return rec_fail(err, errlen, 1, "%s", rerr);
    }
    pawl__buf_putc(&b, '\n');
  } else {
    char t[PAWL__TZ_STRLEN];
    rec_time(d, d->enabled && !d->paused ? d->next_fire_at : 0, t);
    pawl__buf_printf(&b, "%s ", done);
    rec_text(&b, d->name);
    pawl__buf_printf(&b, "%s; next fire %s\n", d->paused ? " (paused)" : "",
                     t);
  }
  fputs(b.oom ? "" : pawl__buf_cstr(&b), stdout);
  int oom = b.oom;
  pawl__buf_free(&b);
  pawl_recurring_free(d, 1);
  return oom ? rec_fail(err, errlen, 1, "out of memory") : 0;
}

static int rec_run(pawl_t *p, const rec_args_t *a, char *err, size_t errlen) {
  int rc;
  const char *v = a->verb;
  if (strcmp(v, "list") == 0) {
    pawl_recurring_t *d = NULL;
    size_t n = 0;
    if ((rc = pawl_recurring_list(p, &d, &n)))
      return rec_lib_fail(p, rc, err, errlen);
    pawl_buf_t b;
    pawl__buf_init(&b);
    if (a->json) {
      cli_redact_t red;
      char rerr[CLI_ERRLEN];
      cli_redact_init(&red, p, 0);
      pawl__buf_putc(&b, '[');
      for (size_t i = 0; !rc && i < n; i++) {
        if (i) pawl__buf_putc(&b, ',');
        rc = rec_json(&b, &red, &d[i], rerr);
      }
      pawl__buf_puts(&b, "]\n");
      cli_redact_free(&red);
      if (rc) {
        pawl__buf_free(&b);
        pawl_recurring_free(d, n);
        return rec_fail(err, errlen, 1, "%s", rerr);
      }
    } else if (n) {
      rec_table(&b, d, n);
    }
    fputs(b.oom ? "" : pawl__buf_cstr(&b), stdout);
    int oom = b.oom;
    pawl__buf_free(&b);
    pawl_recurring_free(d, n);
    return oom ? rec_fail(err, errlen, 1, "out of memory") : 0;
  }
  if (strcmp(v, "add") == 0) {
    if ((rc = pawl_recurring_add(p, a->name, &a->o)))
      return rec_lib_fail(p, rc, err, errlen);
    return rec_show_one(p, a->name, a->json, "added", err, errlen);
  }
  if (strcmp(v, "set") == 0) {
    if ((rc = pawl_recurring_set(p, a->name, &a->o, a->fields)))
      return rec_lib_fail(p, rc, err, errlen);
    return rec_show_one(p, a->name, a->json, "changed", err, errlen);
  }
  if (strcmp(v, "pause") == 0 || strcmp(v, "resume") == 0) {
    rc = v[0] == 'p' ? pawl_recurring_pause(p, a->name)
                     : pawl_recurring_resume(p, a->name);
    if (rc) return rec_lib_fail(p, rc, err, errlen);
    return rec_show_one(p, a->name, a->json,
                        v[0] == 'p' ? "paused" : "resumed", err, errlen);
  }
  if (strcmp(v, "trigger") == 0) {
    pawl_id_t id;
    if ((rc = pawl_recurring_trigger(p, a->name, &id)))
      return rec_lib_fail(p, rc, err, errlen);
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&id, text);
    if (a->json)
      printf("{\"id\":\"%s\"}\n", text);
    else
      printf("%s\n", text);
    return 0;
  }
  /* rm */
  if ((rc = pawl_recurring_remove(p, a->name)))
    return rec_lib_fail(p, rc, err, errlen);
  if (a->json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_puts(&b, "{\"removed\":");
    rec_json_str(&b, a->name);
    pawl__buf_puts(&b, "}\n");
    fputs(b.oom ? "" : pawl__buf_cstr(&b), stdout);
    pawl__buf_free(&b);
  }
  return 0;
}

int cli_recurring_main(int argc, char **argv, const char *db, int create,
                       char *err, size_t errlen);

/* argv[0] is "recurring"; `db` the --db given before it (or NULL),
 * `create` whether --create was. */
int cli_recurring_main(int argc, char **argv, const char *db, int create,
                       char *err, size_t errlen) {
  rec_args_t a;
  memset(&a, 0, sizeof a);
  a.db = db;
  /* --help anywhere (as every command takes it), or `recurring help`. */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
        (i == 1 && argc == 2 && strcmp(argv[i], "help") == 0)) {
      fputs(rec_usage, stdout);
      return 0;
    }
  int rc = rec_parse(argc, argv, &a, err, errlen);
  if (rc) return rc;
  pawl_options_t opts;
  pawl_options_init(&opts);
  opts.db = a.db;
  opts.create = create || a.create;
  pawl_t *p = NULL;
  if ((rc = pawl_open(&p, &opts, err, errlen)))
    return rc == PAWL_EINVAL ? 2 : 1;
  rc = rec_run(p, &a, err, errlen);
  pawl_close(p);
  return rc;
}
