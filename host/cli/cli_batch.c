/* cli_batch.c: `pawl batch show ID [--json]` (docs/flows.md "Batches")
 * on the public API's batches section, and the line of `pawl show` that
 * names a job's batch. Text for people, --json for tools. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "cli_admin.h"
#include "iso8601.h"
#include "pawl.h"

static int b_lib_fail(pawl_t *p, int rc, char *err, size_t errlen) {
  snprintf(err, errlen, "%s", pawl_errmsg(p));
  return rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL;
}

static void b_json_time(pawl_buf_t *b, int64_t ms) {
  char t[ISO8601_STRLEN];
  if (!ms) {
    pawl__buf_puts(b, "null");
    return;
  }
  pawl__iso8601_format(ms, t);
  pawl__buf_printf(b, "\"%s\"", t);
}

/* "1.250s", "3m05.000s": a metric for people. */
static void b_dur(int64_t ms, char *out, size_t len) {
  if (ms < 60000)
    snprintf(out, len, "%lld.%03llds", (long long)(ms / 1000),
             (long long)(ms % 1000));
  else
    snprintf(out, len, "%lldm%02lld.%03llds", (long long)(ms / 60000),
             (long long)(ms / 1000 % 60), (long long)(ms % 1000));
}

static int b_show(pawl_t *p, const char *text, int json, char *err,
                  size_t errlen) {
  pawl_id_t id;
  if (pawl_id_parse(&id, text))
    return cli_fail(err, CLI_USAGE, "invalid batch id \"%s\": expected a UUID",
                    text);
  pawl_batch_t b;
  int rc = pawl_batch_get(p, &id, &b);
  if (rc) return b_lib_fail(p, rc, err, errlen);
  int64_t ended = b.succeeded + b.failed + b.canceled;
  char bid[PAWL_ID_STRLEN], cid[PAWL_ID_STRLEN];
  pawl_id_format(&b.id, bid);
  if (json) {
    pawl_buf_t o;
    pawl__buf_init(&o);
    pawl__buf_printf(&o, "{\"id\":\"%s\",\"total\":%lld,\"ended\":%lld,"
                         "\"succeeded\":%lld,\"failed\":%lld,"
                         "\"canceled\":%lld,\"states\":{",
                     bid, (long long)b.total, (long long)ended,
                     (long long)b.succeeded, (long long)b.failed,
                     (long long)b.canceled);
    for (int s = 0; s < PAWL_STATE_COUNT; s++)
      pawl__buf_printf(&o, "%s\"%s\":%lld", s ? "," : "", pawl_state_name(s),
                       (long long)b.states[s]);
    pawl__buf_puts(&o, "},\"created_at\":");
    b_json_time(&o, b.created_at);
    pawl__buf_puts(&o, ",\"finished_at\":");
    b_json_time(&o, b.finished_at);
    pawl__buf_printf(&o, ",\"wall_ms\":%lld,\"exec_ms\":%lld,"
                         "\"overhead_ms\":%lld,\"callbacks\":{",
                     (long long)b.wall_ms, (long long)b.exec_ms,
                     (long long)b.overhead_ms);
    int first = 1;
    for (int r = 0; r < 3; r++) {
      if (!b.callbacks[r].set) continue;
      pawl_id_format(&b.callbacks[r].id, cid);
      pawl__buf_printf(&o, "%s\"%s\":{\"id\":\"%s\",\"fired_at\":",
                       first ? "" : ",", pawl_batch_role_name(r + 1), cid);
      b_json_time(&o, b.callbacks[r].fired_at);
      pawl__buf_putc(&o, '}');
      first = 0;
    }
    pawl__buf_puts(&o, "}}");
    rc = cli_emit(&o, err);
    pawl__buf_free(&o);
    return rc;
  }
  char t1[ISO8601_STRLEN], t2[ISO8601_STRLEN], d1[32], d2[32], d3[32];
  cli_time(b.created_at, t1);
  cli_time(b.finished_at, t2);
  b_dur(b.wall_ms, d1, sizeof d1);
  b_dur(b.exec_ms, d2, sizeof d2);
  b_dur(b.overhead_ms, d3, sizeof d3);
  printf("batch:      %s\n", bid);
  printf("progress:   %lld/%lld ended (%.1f%%): %lld succeeded, %lld failed, "
         "%lld canceled\n",
         (long long)ended, (long long)b.total,
         b.total ? 100.0 * (double)ended / (double)b.total : 100.0,
         (long long)b.succeeded, (long long)b.failed, (long long)b.canceled);
  printf("left:       %lld pending, %lld running, %lld paused\n",
         (long long)(b.states[PAWL_PENDING] + b.states[PAWL_BLOCKED]),
         (long long)b.states[PAWL_RUNNING], (long long)b.states[PAWL_PAUSED]);
  printf("enqueued:   %s\n", t1);
  printf("finished:   %s\n", b.finished_at ? t2 : "- (children left)");
  printf("wall:       %s%s\n", d1, b.finished_at ? "" : " so far");
  printf("exec:       %s (parallelism %.2f)\n", d2,
         b.wall_ms ? (double)b.exec_ms / (double)b.wall_ms : 0.0);
  printf("overhead:   %s (ended children's waiting)\n", d3);
  for (int r = 0; r < 3; r++) {
    if (!b.callbacks[r].set) continue;
    pawl_id_format(&b.callbacks[r].id, cid);
    char ft[ISO8601_STRLEN];
    cli_time(b.callbacks[r].fired_at, ft);
    printf("%-12s%s %s\n", pawl_batch_role_name(r + 1), cid,
           b.callbacks[r].fired_at ? ft
           : b.finished_at          ? "(not fired)"
                                    : "(waiting)");
  }
  return 0;
}

int cli_batch_main(pawl_t *p, const char *verb, const char *id, int json,
                   char *err, size_t errlen) {
  if (strcmp(verb, "show") == 0) return b_show(p, id, json, err, errlen);
  return cli_fail(err, CLI_USAGE, "batch needs show ID (got \"%s\")", verb);
}

void cli_batch_of_job(pawl_t *p, const pawl_id_t *id, pawl_buf_t *json) {
  pawl_id_t bid;
  int role;
  if (pawl_job_batch(p, id, &bid, &role) != 0) return; /* none */
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&bid, text);
  pawl_batch_t b;
  int have = pawl_batch_get(p, &bid, &b) == 0;
  if (json) {
    pawl__buf_printf(json, ",\"batch\":{\"id\":\"%s\",\"role\":\"%s\"", text,
                     pawl_batch_role_name(role));
    if (have)
      pawl__buf_printf(json, ",\"total\":%lld,\"ended\":%lld",
                       (long long)b.total,
                       (long long)(b.succeeded + b.failed + b.canceled));
    pawl__buf_putc(json, '}');
    return;
  }
  printf("batch: %s (%s", text, pawl_batch_role_name(role));
  if (have)
    printf("; %lld/%lld ended", (long long)(b.succeeded + b.failed + b.canceled),
           (long long)b.total);
  printf(")\n");
}
