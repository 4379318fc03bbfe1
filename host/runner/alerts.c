/* alerts.c: the alert chore: runs the global on_dead hook of
 * _defaults.lua once for each job that landed in the dead-letter set.
 *
 * The database writes an outbox row in the transaction that moves a job
 * to failed, whatever moved it (schema/sqlite/V014__alerts.sql,
 * schema/postgres/V013__alerts.sql), so a node that
 * dies after storing the outcome loses no alert. The chore runs on the
 * loader thread, in a Lua state of its own (the alerter: the scripts the
 * workers run, a handle of its own, under the watchdog), between two
 * looks at the scripts directory: it leases outbox rows to this node
 * (SKIP LOCKED on PostgreSQL: one node per row), decides for each whether
 * the dedup window lets the hook run (the window lives in the database:
 * every node shares it), runs the hook, and deletes the row. A node that
 * dies holding rows leaves them to another once their lease runs out: the
 * hook runs at least once, and more than once only then. See host.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "host.h"
#include "pawl_internal.h"
#include "worker.h"

/* One row is taken at a time, leased for a node's lease plus the hook's
 * timeout: the lease covers the one hook this node runs under it (a
 * batch would need a lease covering all of its hooks, keeping a dead
 * node's rows from the others for that long). Alerts are rare; a burst of
 * dead jobs costs three short transactions per alert. ALERTS_ROUNDS: rows
 * per chore (the loader then looks at the scripts again). */
#define ALERTS_BATCH 1
#define ALERTS_ROUNDS 256

static void alerts_log_error(host_t *h, pawl_t *p, const char *what) {
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_WARN, what);
  pawl__log_str(&line, "error", pawl_errmsg(p));
  pawl__log_end(&line);
}

/* The hook for one row (a copy of what it needs: the Lua side may keep
 * nothing of it). */
static int alerts_run(worker_t *w, pawl__alert_t *a, double timeout_s) {
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&a->job_id, id);
  pawl__lua_alert_t la = {
      .id = id, .type = a->type, .queue = a->queue, .error = a->error,
      .node = pawl_node_id(w->p), .attempt = a->attempt,
      .count = a->kind == 1 ? a->count : 1,
      .suppressed = a->kind == 1 ? a->suppressed : 0,
      .first_at = a->first_at ? a->first_at : a->created_at,
      .last_at = a->last_at ? a->last_at : a->created_at,
  };
  return pawl__lua_alert(w->lua, &la, timeout_s);
}

int pawl__alerts_chore(host_t *h, worker_t *w, int *failing) {
  pawl_t *p = w->p;
  if (!p) return 0;
  pawl__worker_reload(w, 0);
  int64_t window_ms = 0;
  double timeout_s = 0;
  int hook = pawl__lua_alert_settings(w->lua, &window_ms, &timeout_s);
  int64_t lease_ms = pawl__lease_ms(p);
  if (hook && timeout_s > 0 && timeout_s < 86400)
    lease_ms += (int64_t)(timeout_s * 1000);
  else if (hook)
    lease_ms += 86400000; /* no bound on the hook: a day */
  int ran = 0;
  for (int round = 0; round < ALERTS_ROUNDS; round++) {
    /* A stop that came before the alerter was there to interrupt (or
     * between two rows): no new hook starts. */
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (stopping) break;
    pawl__alert_t *v = NULL;
    size_t n = 0;
    if (pawl__alerts_take(p, ALERTS_BATCH, lease_ms, &v, &n) != 0) {
      /* Once per outage, not once a second. */
      if (!*failing)
        alerts_log_error(h, p, "alerts: cannot take the outbox's rows");
      *failing = 1;
      break;
    }
    *failing = 0;
    for (size_t i = 0; i < n; i++) {
      pawl__alert_t *a = &v[i];
      int run = hook;
      if (run && a->kind == 0 && window_ms > 0) {
        int rc = pawl__alert_note(p, window_ms, a);
        if (rc == PAWL_ELEASE) continue; /* another node has it now */
        if (rc) {
          alerts_log_error(h, p, "alerts: cannot count an alert");
          continue; /* its lease runs out; taken again later */
        }
        run = a->verdict == 1;
      }
      if (run && alerts_run(w, a, timeout_s)) {
        /* Cut short by the stop: the row stays for the next host. */
        pawl__alerts_free(v, n);
        return ran;
      }
      ran += run;
      if (pawl__alert_done(p, a->seq) != 0)
        alerts_log_error(h, p, "alerts: cannot remove a delivered alert");
    }
    pawl__alerts_free(v, n);
    if (n < ALERTS_BATCH) break;
  }
  return ran;
}
