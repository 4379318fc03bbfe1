/* job.c: the job model every layer shares: the error table, the state
 * names, and the frees of what the API hands out (jobs, history, logs).
 *
 * Public functions of include/pawl.h, here in core/ because the stores
 * build and free the same structures (a store packs a job in one
 * allocation, see pawl__store_job_from_row()) and must not reach up into
 * the API layer for it. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "pawl.h"

/* ---- errors and names --------------------------------------------------- */

static const struct {
  int code;
  const char *name, *text;
} pawl_errors[] = {
    {PAWL_OK, "PAWL_OK", "success"},
    {PAWL_EINVAL, "PAWL_EINVAL", "invalid argument"},
    {PAWL_ENOTFOUND, "PAWL_ENOTFOUND", "no such job"},
    {PAWL_ESTATE, "PAWL_ESTATE", "transition not allowed from this state"},
    {PAWL_ECONFLICT, "PAWL_ECONFLICT", "job changed concurrently"},
    {PAWL_EKEY, "PAWL_EKEY", "business key held by a live job"},
    {PAWL_ESTORE, "PAWL_ESTORE", "database error"},
    {PAWL_ESCHEMA, "PAWL_ESCHEMA", "not a usable pawl database schema"},
    {PAWL_ENOMEM, "PAWL_ENOMEM", "out of memory"},
    {PAWL_EBUSY, "PAWL_EBUSY", "database is locked"},
    {PAWL_EIO, "PAWL_EIO", "file or directory not usable"},
    {PAWL_ELEASE, "PAWL_ELEASE", "job is no longer leased by this node"},
    {PAWL_EUNAVAIL, "PAWL_EUNAVAIL", "database unreachable"},
    {PAWL_EDONE, "PAWL_EDONE", "job instance already completed"},
    {PAWL_EPERM, "PAWL_EPERM", "not permitted: the job did not enqueue it"},
    {PAWL_EMISUSE, "PAWL_EMISUSE",
     "API misuse: closed handle, wrong thread, or a call not allowed here"},
};

const char *pawl_strerror(int err) {
  for (size_t i = 0; i < sizeof pawl_errors / sizeof pawl_errors[0]; i++)
    if (pawl_errors[i].code == err) return pawl_errors[i].text;
  return "unknown error";
}

const char *pawl_err_name(int err) {
  for (size_t i = 0; i < sizeof pawl_errors / sizeof pawl_errors[0]; i++)
    if (pawl_errors[i].code == err) return pawl_errors[i].name;
  return "PAWL_E?";
}

static const char *const pawl_state_names[PAWL_STATE_COUNT] = {
    "pending", "running", "succeeded", "failed",
    "canceled", "paused", "blocked"};

const char *pawl_state_name(int state) {
  if (state < 0 || state >= PAWL_STATE_COUNT) return "?";
  return pawl_state_names[state];
}

int pawl_state_parse(const char *name) {
  if (name)
    for (int i = 0; i < PAWL_STATE_COUNT; i++)
      if (strcmp(name, pawl_state_names[i]) == 0) return i;
  return PAWL_EINVAL;
}

/* ---- jobs and history memory -------------------------------------------- */

/* A job and its strings are one allocation (see the store). */
void pawl_job_free(pawl_job_t *j) { pawl__free(j); }

/* A signal and its strings are one allocation too. */
void pawl_signal_free(pawl_signal_info_t *s) { pawl__free(s); }

void pawl_jobs_free(pawl_job_t **jobs, size_t n) {
  if (!jobs) return;
  for (size_t i = 0; i < n; i++) pawl_job_free(jobs[i]);
  pawl__free(jobs);
}

void pawl_history_free(pawl_history_t *h) {
  if (!h) return;
  for (size_t i = 0; i < h->nattempts; i++) {
    pawl__free(h->attempts[i].node);
    pawl__free(h->attempts[i].outcome);
    pawl__free(h->attempts[i].error);
    pawl__free(h->attempts[i].trace);
  }
  for (size_t i = 0; i < h->nevents; i++) {
    pawl__free(h->events[i].actor);
    pawl__free(h->events[i].reason);
  }
  pawl__free(h->attempts);
  pawl__free(h->events);
  pawl__free(h);
}

void pawl_steps_free(pawl_steps_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    pawl__free(s->execs[i].name);
    pawl__free(s->execs[i].exit_code);
    pawl__free(s->execs[i].exit_message);
    pawl__free(s->execs[i].checkpoint);
  }
  pawl__free(s->execs);
  pawl__free(s->exit_code);
  pawl__free(s->exit_message);
  pawl__free(s->instance);
  pawl__free(s);
}

void pawl_logs_free(pawl_log_record_t *logs, size_t n) {
  if (!logs) return;
  for (size_t i = 0; i < n; i++) {
    pawl__free(logs[i].level);
    pawl__free(logs[i].message);
    pawl__free(logs[i].fields);
  }
  pawl__free(logs);
}


/* ---- recurring definitions (pawl.h, "recurring jobs") ------------------- */

static const char *const pawl_misfire_names[] = {"run_once", "catch_up",
                                                 "skip"};

const char *pawl_misfire_name(int misfire) {
  if (misfire < 0 || misfire > PAWL_MISFIRE_SKIP) return "?";
  return pawl_misfire_names[misfire];
}

int pawl_misfire_parse(const char *name) {
  for (int i = 0; name && i <= PAWL_MISFIRE_SKIP; i++)
    if (strcmp(name, pawl_misfire_names[i]) == 0) return i;
  return PAWL_EINVAL;
}

void pawl_recurring_free(pawl_recurring_t *defs, size_t n) {
  if (!defs) return;
  for (size_t i = 0; i < n; i++) {
    pawl_recurring_t *d = &defs[i];
    pawl__free(d->name);
    pawl__free(d->expr);
    pawl__free(d->tz);
    pawl__free(d->type);
    pawl__free(d->payload);
    pawl__free(d->queue);
    pawl__free(d->script);
    pawl__free(d->load_error);
  }
  pawl__free(defs);
}

void pawl_limits_free(pawl_limit_t *limits, size_t n) {
  if (!limits) return;
  for (size_t i = 0; i < n; i++) pawl__free(limits[i].name);
  pawl__free(limits);
}
