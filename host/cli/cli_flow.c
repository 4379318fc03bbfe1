/* cli_flow.c: `pawl signal`, `pawl replace`, and what `pawl show` says of
 * a job's signal and replacement links (docs/flows.md "Signals and
 * replace"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cli.h"

static int flow_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int flow_fail(char *err, size_t errlen, int code, const char *fmt,
                     ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

static int flow_lib_fail(pawl_t *p, int rc, char *err, size_t errlen) {
  return flow_fail(err, errlen, rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL, "%s",
                   pawl_errmsg(p));
}

static const char *flow_state(int state) {
  return state == PAWL_SIGNAL_DELIVERED ? "delivered"
         : state == PAWL_SIGNAL_EXPIRED ? "expired"
                                        : "waiting";
}

int cli_flow_signal(pawl_t *p, const char *key, const char *decision,
                    const char *payload, int json, char *err, size_t errlen) {
  pawl_id_t id;
  int status = 0;
  int rc = pawl_signal(p, key, decision, payload, &id, &status);
  if (rc) return flow_lib_fail(p, rc, err, errlen);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  int already = status == PAWL_SIG_ALREADY;
  if (json)
    printf("{\"job\":\"%s\",\"status\":\"%s\"}\n", text,
           already ? "already" : "delivered");
  else
    printf("%s\n", text);
  if (!already) return CLI_OK;
  /* Say what the earlier delivery was, so the operator sees which one
   * counts. */
  pawl_signal_info_t *sig = NULL;
  pawl_buf_t note;
  pawl__buf_init(&note);
  pawl__buf_puts(&note, "signal ");
  cli_text(&note, key);
  pawl__buf_puts(&note, " was already delivered");
  if (pawl_signal_get(p, &id, &sig) == 0 && sig->decision) {
    char at[ISO8601_STRLEN];
    cli_time(sig->delivered_at, at);
    pawl__buf_puts(&note, ": ");
    cli_text(&note, sig->decision);
    pawl__buf_puts(&note, " by ");
    cli_text(&note, sig->delivered_by ? sig->delivered_by : "?");
    pawl__buf_printf(&note, " at %s", at);
  }
  pawl_signal_free(sig);
  pawl__buf_puts(&note, "; nothing changed");
  fprintf(stderr, "pawl: %s\n",
          note.oom ? "signal already delivered" : pawl__buf_cstr(&note));
  pawl__buf_free(&note);
  return CLI_NOOP;
}

int cli_flow_replace(pawl_t *p, const pawl_id_t *id,
                     const pawl_replace_opts_t *o, int json, char *err,
                     size_t errlen) {
  pawl_id_t nid;
  int rc = pawl_replace(p, id, o, &nid);
  if (rc) return flow_lib_fail(p, rc, err, errlen);
  char text[PAWL_ID_STRLEN], old[PAWL_ID_STRLEN];
  pawl_id_format(&nid, text);
  pawl_id_format(id, old);
  if (json)
    printf("{\"job\":\"%s\",\"replaces\":\"%s\"}\n", text, old);
  else
    printf("%s\n", text);
  return CLI_OK;
}

/* An ISO 8601 time as a JSON string, as the job's own times. */
static void flow_json_time(pawl_buf_t *b, const char *name, int64_t ms) {
  char t[ISO8601_STRLEN];
  pawl__iso8601_format(ms, t);
  pawl__buf_printf(b, ",\"%s\":\"%s\"", name, t);
}

static void flow_field(cli_table_t *t, const char *name, const char *value) {
  const char *row[2] = {name, value};
  cli_table_row(t, row);
}

void cli_flow_fields(pawl_t *p, const pawl_id_t *id, const cli_redact_t *r,
                     cli_table_t *t) {
  pawl_signal_info_t *sig = NULL;
  char err[CLI_ERRLEN];
  if (pawl_signal_get(p, id, &sig) == 0) {
    /* "approve-42: waiting until 2026-...", "approve-42: delivered:
     * approve by alice at ...". */
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_printf(&b, "%s: %s", sig->key, flow_state(sig->state));
    char at[ISO8601_STRLEN];
    if (sig->decision) {
      cli_time(sig->delivered_at, at);
      pawl__buf_printf(&b, ": %s by %s at %s", sig->decision,
                       sig->delivered_by ? sig->delivered_by : "?", at);
    } else if (sig->timeout_at) {
      cli_time(sig->timeout_at, at);
      pawl__buf_printf(&b, " (timeout %s)", at);
    }
    flow_field(t, "signal:", b.oom ? "?" : pawl__buf_cstr(&b));
    if (sig->payload) {
      /* The signal's payload, redacted as the job's. */
      char *shown = NULL;
      if (cli_redact_text(r, sig->payload, &shown, err) != 0) t->oom = 1;
      else flow_field(t, "signal_payload:", shown);
      pawl__free(shown);
    }
    pawl__buf_free(&b);
    pawl_signal_free(sig);
  }
  pawl_replace_links_t l;
  if (pawl_replace_links(p, id, &l) == 0) {
    char text[PAWL_ID_STRLEN];
    if (l.has_superseded_by) {
      pawl_id_format(&l.superseded_by, text);
      flow_field(t, "superseded_by:", text);
    }
    if (l.has_supersedes) {
      pawl_id_format(&l.supersedes, text);
      flow_field(t, "supersedes:", text);
    }
  }
}

void cli_flow_json(pawl_t *p, const pawl_id_t *id, const cli_redact_t *r,
                   pawl_buf_t *b) {
  pawl_signal_info_t *sig = NULL;
  char err[CLI_ERRLEN];
  if (pawl_signal_get(p, id, &sig) == 0) {
    pawl__buf_puts(b, ",\"signal\":{\"key\":");
    pawl__buf_json_string(b, sig->key, strlen(sig->key));
    pawl__buf_printf(b, ",\"state\":\"%s\"", flow_state(sig->state));
    flow_json_time(b, "created_at", sig->created_at);
    if (sig->timeout_at) flow_json_time(b, "timeout_at", sig->timeout_at);
    if (sig->decision) {
      pawl__buf_puts(b, ",\"decision\":");
      pawl__buf_json_string(b, sig->decision, strlen(sig->decision));
      pawl__buf_puts(b, ",\"payload\":");
      char *shown = NULL;
      if (cli_redact_text(r, sig->payload, &shown, err) != 0) b->oom = 1;
      cli_json_raw(b, shown);
      pawl__free(shown);
      flow_json_time(b, "at", sig->delivered_at);
      pawl__buf_puts(b, ",\"by\":");
      if (sig->delivered_by)
        pawl__buf_json_string(b, sig->delivered_by, strlen(sig->delivered_by));
      else
        pawl__buf_puts(b, "null");
    }
    pawl__buf_putc(b, '}');
    pawl_signal_free(sig);
  }
  pawl_replace_links_t l;
  if (pawl_replace_links(p, id, &l) == 0) {
    char text[PAWL_ID_STRLEN];
    if (l.has_superseded_by) {
      pawl_id_format(&l.superseded_by, text);
      pawl__buf_printf(b, ",\"superseded_by\":\"%s\"", text);
    }
    if (l.has_supersedes) {
      pawl_id_format(&l.supersedes, text);
      pawl__buf_printf(b, ",\"supersedes\":\"%s\"", text);
    }
  }
}
