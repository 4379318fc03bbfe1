/* cli.h: what the files of the `pawl` program share (host/cli/; the
 * program is written on include/pawl.h and the helpers of host/core/).
 *
 * cli.c parses the command line and runs the commands; cli_output.c
 * prints jobs, history and log lines (text tables for people, JSON for
 * programs); cli_cron.c is `pawl cron next`; `pawl bench` lives with the
 * benchmarks (bench/cli_bench.c). */
#ifndef PAWL_CLI_H
#define PAWL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "iso8601.h"
#include "pawl.h"

/* Exit statuses. */
#define CLI_OK 0
#define CLI_FAIL 1  /* the operation failed */
#define CLI_USAGE 2 /* bad usage or bad input */

/* Size of the error buffer every command fills (main prints it). */
#define CLI_ERRLEN 1024

/* Writes the message for main to print into err (CLI_ERRLEN bytes) and
 * returns `code`. */
int cli_fail(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- cli_output.c ---------------------------------------------------------- */

/* Rows of text cells printed with aligned columns. Cells are copied (made
 * safe for a terminal by cli_text), so callers can pass borrowed strings. */
typedef struct cli_table {
  size_t ncols, nrows, cap;
  char **cells; /* nrows * ncols */
  int oom;
} cli_table_t;

/* Adds a row (ncols cells, copied, made safe by cli_text); prints every row
 * with aligned columns, each line starting with `indent`; frees the rows. */
void cli_table_row(cli_table_t *t, const char *const *cells);
void cli_table_print(const cli_table_t *t, const char *indent);
void cli_table_free(cli_table_t *t);

/* Appends s for a terminal: control characters, C1 controls, line
 * separators, bidirectional overrides and bytes that are not UTF-8 are
 * written as escapes, so one field stays one line. */
void cli_text(pawl_buf_t *b, const char *s);

/* An ISO 8601 time, or "-" for 0 (not set). */
void cli_time(int64_t ms, char out[ISO8601_STRLEN]);

/* JSON: the job as one object without its closing brace (callers add
 * fields), a "history" member, a "logs" member. */
void cli_json_job_fields(pawl_buf_t *b, const pawl_job_t *j);
void cli_json_history(pawl_buf_t *b, const pawl_history_t *h);
void cli_json_logs(pawl_buf_t *b, const pawl_log_record_t *logs, size_t n);

/* Embeds stored JSON text as a value on one line (text that is not JSON
 * as a string); NULL as null. */
void cli_json_raw(pawl_buf_t *b, const char *s);

/* Writes a finished JSON document as one line to stdout; CLI_FAIL when the
 * buffer ran out of memory. cli_print_job_json: one job, as a document. */
int cli_emit(pawl_buf_t *b, char *err);
int cli_print_job_json(const pawl_job_t *j, char *err);

/* Text: "field: value" rows of every job field, and the rows of the
 * attempts, transitions and log lines tables of `pawl show`. */
void cli_job_fields(cli_table_t *t, const pawl_job_t *j);
/* The state to show for a job: its state's name, or "claimed" for a
 * running job whose body has not started (claimed ahead of a free
 * worker: started_at 0). Static. */
const char *cli_job_state(const pawl_job_t *j);
void cli_attempt_rows(cli_table_t *t, const pawl_history_t *h);

/* What the views say of a limit no script here can tell (the console says
 * the same). */
#define CLI_NO_SCRIPT "no script visible"
#define CLI_BROKEN_SCRIPT "its script does not load"
/* The scripts directory the views resolve limits from (NULL: ./scripts). */
void cli_limits_scripts(const char *dir);
/* The max_attempts (timeout 0) or the timeout in seconds (timeout 1) that
 * applies to job j, in *v (0 when no script here can tell); returns where
 * it comes from: "enqueue", "script", CLI_NO_SCRIPT or CLI_BROKEN_SCRIPT. */
const char *cli_limit_of(const pawl_job_t *j, int timeout, int32_t *v);
/* pawl show: with `full` (--trace), each attempt's Lua traceback, a line
 * of the trace a line on the screen, made safe by cli_text; without, one
 * line saying how to see them, if any attempt has one. 0, or -1 out of
 * memory. */
int cli_traces_print(const pawl_history_t *h, int full);
void cli_event_rows(cli_table_t *t, const pawl_history_t *h);
void cli_log_rows(cli_table_t *t, const pawl_log_record_t *logs, size_t n);
/* Restartable steps: a job's step executions, exit code and
 * instance, as JSON members (",\"exit_code\":...,\"steps\":[...]") and as
 * `pawl show` prints them (nothing when the job has none; -1: out of
 * memory). */
void cli_json_steps(pawl_buf_t *b, const pawl_steps_t *s);
int cli_steps_print(const pawl_steps_t *s);

/* ---- cli_flow.c: signals and replace ---------------------------------------- */

/* Exit status of `pawl signal` when a decision was delivered before:
 * nothing changed. */
#define CLI_NOOP 3

/* pawl signal KEY approve|reject [JSON]: prints the job's id (or, with
 * json, {"job", "status"}); CLI_NOOP with a note on stderr when the
 * signal was delivered before. */
int cli_flow_signal(pawl_t *p, const char *key, const char *decision,
                    const char *payload, int json, char *err, size_t errlen);
/* pawl replace ID [...]: prints the replacement's id (json: {"job",
 * "replaces"}). */
int cli_flow_replace(pawl_t *p, const pawl_id_t *id,
                     const pawl_replace_opts_t *o, int json, char *err,
                     size_t errlen);
/* pawl show: the job's signal and replacement links, as "field: value"
 * rows, or as members of its JSON object ("signal", "superseded_by",
 * "supersedes"; each only when there is one). */
typedef struct cli_redact cli_redact_t;
void cli_flow_fields(pawl_t *p, const pawl_id_t *id, const cli_redact_t *r,
                     cli_table_t *t);
void cli_flow_json(pawl_t *p, const pawl_id_t *id, const cli_redact_t *r,
                   pawl_buf_t *b);
/* `pawl show`'s parents and children, gathered by cli_deps_cb
 * (a pawl_dep_cb) as tables or, with json, as the members "parents" and
 * "children" (cli_deps_json; written even when empty). */
typedef struct cli_deps {
  int json;
  cli_table_t parents, children;
  pawl_buf_t jparents, jchildren;
  size_t nparents, nchildren;
} cli_deps_t;
void cli_deps_init(cli_deps_t *d, int json);
int cli_deps_cb(const pawl_dep_t *dep, void *data);
void cli_deps_json(pawl_buf_t *b, cli_deps_t *d);
void cli_deps_print(const cli_deps_t *d);
int cli_deps_oom(const cli_deps_t *d);
void cli_deps_free(cli_deps_t *d);

/* ---- cli_redact.c -----------------------------------------------------------
 *
 * Payloads, params, results, signal payloads, step checkpoints and log
 * fields as the views show them: secret members "<redacted>" (redact.h),
 * by the built-in words and the job type's `redact` list as the hosts
 * recorded it in the database (pawl_type_redact()); raw: as stored. */
struct cli_redact {
  pawl_t *p;
  int raw;      /* --raw */
  char *type;   /* the type whose names are held (owned) */
  char **names; /* its redact list: pawl_names_free() */
  size_t n;
};
void cli_redact_init(cli_redact_t *r, pawl_t *p, int raw);
void cli_redact_free(cli_redact_t *r);
/* Makes `type`'s list the one applied (read once per type in a row); a
 * list that cannot be read fails the command (CLI_FAIL, err filled). */
int cli_redact_type(cli_redact_t *r, const char *type, char *err);
/* *out: `json` as shown (NULL for NULL), pawl__free(); not JSON: a
 * redacted value. CLI_FAIL out of memory. */
int cli_redact_text(const cli_redact_t *r, const char *json, char **out,
                    char *err);
/* Replaces *field (pawl__malloc'd, may be NULL) by its shown text. */
int cli_redact_swap(const cli_redact_t *r, char **field, char *err);
/* A job as shown: v->job is *job with payload, params and result
 * replaced by the shown texts v owns (cli_job_view_free()); also makes
 * job->type's list the one applied. */
typedef struct cli_job_view {
  pawl_job_t job;
  char *payload, *params, *result;
} cli_job_view_t;
int cli_redact_job(cli_redact_t *r, const pawl_job_t *job, cli_job_view_t *v,
                   char *err);
void cli_job_view_free(cli_job_view_t *v);
/* ---- cli_cleanup.c: retention ----------------------------------------------- */

/* The policy of --retain SPEC: NULL spec, the defaults; "off", *out NULL
 * (no sweep); else parsed. *out is the caller's (pawl_retention_free).
 * CLI_USAGE with the message in err for a bad policy. */
int cli_retention_policy(const char *spec, pawl_retention_t **out, char *err);

typedef struct cli_cleanup_args {
  const char *retain;      /* --retain (NULL: the defaults) */
  int state;               /* --state, -1 for none */
  int64_t older_than_ms;   /* --older-than, -1 for none */
  int dry_run, json;
} cli_cleanup_args_t;

/* pawl cleanup: removes (or, dry, counts) old finished jobs and prints
 * the counts by state, queue and type (json: one document). */
int cli_cleanup_main(pawl_t *p, const cli_cleanup_args_t *a, char *err);

#endif
