/* cli_redact.c: payloads as the `pawl` program's views show them
 * (docs/operations.md "Redaction"): pawl show, pawl jobs --json and the actions'
 * --json hide the value of every member whose key looks secret, or is one
 * of the job type's `redact` names (read from the database, pawl_types,
 * where the hosts that load the scripts record them: the CLI may run on
 * another machine, without the scripts). --raw shows what is stored. */
#include <string.h>

#include "alloc.h"
#include "cli.h"
#include "redact.h"

void cli_redact_init(cli_redact_t *r, pawl_t *p, int raw) {
  memset(r, 0, sizeof *r);
  r->p = p;
  r->raw = raw;
}

void cli_redact_free(cli_redact_t *r) {
  pawl_names_free(r->names);
  pawl__free(r->type);
  memset(r, 0, sizeof *r);
}

int cli_redact_type(cli_redact_t *r, const char *type, char *err) {
  if (r->raw || (r->type && strcmp(r->type, type) == 0)) return 0;
  pawl_names_free(r->names);
  pawl__free(r->type);
  r->names = NULL;
  r->n = 0;
  r->type = pawl__strdup(type);
  if (!r->type) return cli_fail(err, CLI_FAIL, "out of memory");
  int rc = pawl_type_redact(r->p, type, &r->names, &r->n);
  if (rc) {
    /* Never show what might hold a secret because the list was not
     * read: the command fails instead. */
    pawl__free(r->type);
    r->type = NULL;
    return cli_fail(err, CLI_FAIL, "reading the redact list of job type "
                    "%s: %s (--raw shows payloads unredacted)",
                    type, pawl_errmsg(r->p));
  }
  return 0;
}

int cli_redact_text(const cli_redact_t *r, const char *json, char **out,
                    char *err) {
  *out = NULL;
  if (!json) return 0;
  if (r->raw) {
    *out = pawl__strdup(json);
    return *out ? 0 : cli_fail(err, CLI_FAIL, "out of memory");
  }
  pawl_buf_t b;
  pawl__buf_init(&b);
  int rc = pawl__redact_json(json, strlen(json), (const char *const *)r->names,
                             r->n, &b, NULL, 0);
  if (rc == -1) {
    /* Not JSON (not from the store): shown as one redacted value, never
     * as the text. */
    pawl__buf_reset(&b);
    pawl__buf_puts(&b, REDACT_JSON_MARK);
  }
  if (b.oom || rc == -2) {
    pawl__buf_free(&b);
    return cli_fail(err, CLI_FAIL, "out of memory");
  }
  *out = pawl__strdup(pawl__buf_cstr(&b));
  pawl__buf_free(&b);
  return *out ? 0 : cli_fail(err, CLI_FAIL, "out of memory");
}

int cli_redact_swap(const cli_redact_t *r, char **field, char *err) {
  if (r->raw || !*field) return 0;
  char *shown;
  int rc = cli_redact_text(r, *field, &shown, err);
  if (rc) return rc;
  pawl__free(*field);
  *field = shown;
  return 0;
}

int cli_redact_job(cli_redact_t *r, const pawl_job_t *job, cli_job_view_t *v,
                   char *err) {
  memset(v, 0, sizeof *v);
  v->job = *job;
  int rc = cli_redact_type(r, job->type, err);
  if (!rc) rc = cli_redact_text(r, job->payload, &v->payload, err);
  if (!rc) rc = cli_redact_text(r, job->params, &v->params, err);
  if (!rc) rc = cli_redact_text(r, job->result, &v->result, err);
  v->job.payload = v->payload;
  v->job.params = v->params;
  v->job.result = v->result;
  return rc;
}

void cli_job_view_free(cli_job_view_t *v) {
  pawl__free(v->payload);
  pawl__free(v->params);
  pawl__free(v->result);
  memset(v, 0, sizeof *v);
}
