/* test_txtime.c: every SQLite transition reads its time under the write
 * lock.
 *
 * SQLite has one writer. A transaction that reads "now" and then waits
 * for the write lock can commit after a transaction that read a later
 * time, so a job's history lists a later event before an earlier one (a
 * child started before its own unblock). The clock here is a probe: each
 * time the store reads it, the probe tries BEGIN IMMEDIATE on a
 * connection of its own with no busy timeout. If that works, the handle
 * did not hold the write lock when it read the time, and the read is
 * counted. Nothing is timed: the probe asks the lock, it does not race. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sqlite3.h>
#include <stdatomic.h>

#include "pawl.h"
#include "unit.h"

#define T0 INT64_C(1800000000000)

typedef struct tx_probe {
  sqlite3 *db;
  int armed;
  int reads;          /* clock reads while armed */
  int unlocked;       /* of them, without the write lock held */
  _Atomic int64_t now;
} tx_probe_t;

static tx_probe_t tx_probe;

static int64_t tx_clock(void *data) {
  tx_probe_t *pr = data;
  if (pr->armed && pr->db) {
    pr->reads++;
    if (sqlite3_exec(pr->db, "BEGIN IMMEDIATE", 0, 0, 0) == SQLITE_OK) {
      pr->unlocked++;
      sqlite3_exec(pr->db, "ROLLBACK", 0, 0, 0);
    }
  }
  return atomic_load(&pr->now);
}

static pawl_t *tx_open(void) {
  atomic_store(&tx_probe.now, T0);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:tx.db";
  o.node_id = "node-tx";
  o.lease_ms = 60000;
  o.clock = tx_clock;
  o.clock_data = &tx_probe;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  CHECK_INT(sqlite3_open("tx.db", &tx_probe.db), ==, SQLITE_OK);
  return p;
}

static void tx_arm(void) {
  tx_probe.armed = 1;
  tx_probe.reads = tx_probe.unlocked = 0;
}

/* Disarms, and checks that the store read the clock, always locked. */
#define TX_CHECK(what)                                                       \
  do {                                                                       \
    tx_probe.armed = 0;                                                      \
    if (tx_probe.reads == 0 || tx_probe.unlocked != 0)                       \
      unit_fail(__FILE__, __LINE__,                                          \
                "%s: %d clock reads, %d of them without the write lock",     \
                what, tx_probe.reads, tx_probe.unlocked);                    \
  } while (0)

static void tx_close(pawl_t *p) {
  pawl_close(p);
  sqlite3_close(tx_probe.db);
  tx_probe.db = NULL;
}

/* Enqueues, the bulk operator actions, recovery and a batch's creation:
 * each transaction's one clock read happens once it holds the lock. */
void test_txtime_sqlite_writes_read_time_locked(void) {
  pawl_t *p = tx_open();
  pawl_id_t a, b, c;
  tx_arm();
  CHECK_INT(pawl_enqueue(p, "t", NULL, NULL, &a, NULL), ==, 0);
  TX_CHECK("enqueue");

  pawl_enqueue_item_t items[2] = {{"t", NULL, NULL}, {"t", NULL, NULL}};
  pawl_id_t ids[2];
  tx_arm();
  CHECK_INT(pawl_enqueue_many(p, items, 2, ids, NULL), ==, 0);
  TX_CHECK("enqueue many");

  tx_arm();
  CHECK_INT(pawl_batch_enqueue(p, items, 2, NULL, &b, NULL), ==, 0);
  TX_CHECK("batch enqueue");

  /* Claimed, and its lease left to run out: recovery takes it back. */
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  pawl_claim_opts_t co = {.lease_ms = 1000};
  CHECK_INT(pawl_claim(p, &co, 1, &jobs, &n), ==, 0);
  CHECK_INT(n, ==, 1);
  c = jobs[0]->id;
  pawl_jobs_free(jobs, n);
  atomic_fetch_add(&tx_probe.now, 5000);
  size_t got = 0;
  tx_arm();
  CHECK_INT(pawl_recover(p, &got), ==, 0);
  TX_CHECK("recover");
  CHECK_INT(got, ==, 1);

  /* The bulk actions: cancel every pending job, then retry nothing
   * (none failed) and cancel again (a no-op still reads nothing
   * unlocked). */
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_PENDING;
  pawl_bulk_result_t r;
  tx_arm();
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_PAUSE, &f, "why", &r), ==, 0);
  TX_CHECK("bulk pause");
  CHECK_INT(r.changed, >=, 1);
  pawl_filter_init(&f);
  f.state = PAWL_PAUSED;
  tx_arm();
  CHECK_INT(pawl_bulk(p, PAWL_ACTION_RESUME, &f, "why", &r), ==, 0);
  TX_CHECK("bulk resume");
  CHECK_INT(r.changed, >=, 1);
  (void)a;
  (void)c;
  tx_close(p);
}

/* The single-job transitions, a signal and its expiry, a claim and a
 * finish (fixed before; kept here so that the list is whole). */
void test_txtime_sqlite_transitions_read_time_locked(void) {
  pawl_t *p = tx_open();
  pawl_enqueue_opts_t eo;
  pawl_enqueue_opts_init(&eo);
  eo.signal = "k1";
  pawl_id_t s1, s2, j;
  CHECK_INT(pawl_enqueue(p, "t", NULL, &eo, &s1, NULL), ==, 0);
  tx_arm();
  CHECK_INT(pawl_signal(p, "k1", "approve", NULL, NULL, NULL), ==, 0);
  TX_CHECK("signal");

  eo.signal = "k2";
  eo.signal_timeout_ms = 1000;
  CHECK_INT(pawl_enqueue(p, "t", NULL, &eo, &s2, NULL), ==, 0);
  atomic_fetch_add(&tx_probe.now, 5000);
  size_t expired = 0;
  tx_arm();
  CHECK_INT(pawl_signal_expire(p, &expired), ==, 0);
  TX_CHECK("signal expiry");
  CHECK_INT(expired, ==, 1);

  tx_arm();
  CHECK_INT(pawl_retry(p, &s2, "again", NULL), ==, 0);
  TX_CHECK("retry");

  CHECK_INT(pawl_enqueue(p, "t", NULL, NULL, &j, NULL), ==, 0);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  tx_arm();
  CHECK_INT(pawl_claim(p, NULL, 10, &jobs, &n), ==, 0);
  TX_CHECK("claim");
  CHECK_INT(n, >=, 1);
  pawl_outcome_t *outs = calloc(n, sizeof *outs);
  CHECK(outs != NULL);
  for (size_t i = 0; i < n; i++) {
    outs[i].id = jobs[i]->id;
    outs[i].attempt = jobs[i]->attempt;
    outs[i].kind = PAWL_OUT_SUCCEEDED;
  }
  tx_arm();
  CHECK_INT(pawl_finish(p, outs, n, NULL), ==, 0);
  TX_CHECK("finish");
  free(outs);
  pawl_jobs_free(jobs, n);

  tx_arm();
  CHECK_INT(pawl_cancel(p, &s1, "done", NULL), !=, PAWL_ESTORE);
  TX_CHECK("cancel");
  tx_close(p);
}
