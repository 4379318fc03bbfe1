/* admin.c: SQLite store, administration (host/api/admin.c): bulk actions,
 * counts, statistics, locks and running jobs (store.h, "admin"); the SQL is
 * in sqlite_admin_sql.h, whose plans the unit tests check. */
#include "sqlite_int.h"
#include "sqlite_admin_sql.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__ADMIN
const char *const pawl__sq_sql_admin[SQ__METRICS - SQ__ADMIN] = {
    SQ_AT(SQ_ADM_BEGIN_READ) = "BEGIN",
    SQ_AT(SQ_ADM_SAVEPOINT) = "SAVEPOINT pawl_bulk",
    SQ_AT(SQ_ADM_RELEASE) = "RELEASE pawl_bulk",
    SQ_AT(SQ_ADM_ROLLBACK_TO) = "ROLLBACK TO pawl_bulk",
    SQ_AT(SQ_ADM_COUNT) = SQLITE_ADM_COUNT,
    SQ_AT(SQ_ADM_COUNT_FAILED) = SQLITE_ADM_COUNT_FAILED,
    SQ_AT(SQ_ADM_PICK) = SQLITE_ADM_PICK,
    SQ_AT(SQ_ADM_PICK_FAILED) = SQLITE_ADM_PICK_FAILED,
    SQ_AT(SQ_ADM_LIST) = SQLITE_ADM_LIST,
    SQ_AT(SQ_ADM_STATS_PENDING) = SQLITE_ADM_STATS_PENDING,
    SQ_AT(SQ_ADM_STATS_RUNNING) = SQLITE_ADM_STATS_RUNNING,
    SQ_AT(SQ_ADM_STATS_DONE) = SQLITE_ADM_STATS_DONE,
    SQ_AT(SQ_ADM_STATS_TP) = SQLITE_ADM_STATS_TP,
    SQ_AT(SQ_ADM_RUNNING) = SQLITE_ADM_RUNNING,
    SQ_AT(SQ_ADM_LOCKS) = SQLITE_ADM_LOCKS,
};
#undef SQ_HERE

/* ---- administration (host/api/admin.c) ------------------------------------
 * Bulk actions, filtered listings, statistics, locks and running jobs per
 * node. The SQL is in sqlite_admin_sql.h. */

/* Binds ?1..?5 of SQLITE_ADM_MATCH. */
static void sq_adm_bind_match(sqlite3_stmt *st, const store_match_t *m) {
  sqlite3_bind_int64(st, 1, (int64_t)m->states);
  sq_bind_text(st, 2, m->f->queue);
  sq_bind_text(st, 3, m->f->type);
  sq_bind_text(st, 4, m->f->tag);
  sq_bind_opt_int(st, 5, m->cutoff);
}

/* Only failed jobs: their index serves the walk. */
static int sq_adm_failed_only(const store_match_t *m) {
  return m->states == (1u << PAWL_FAILED);
}

int pawl__sq_adm_count(store_t *base, const store_match_t *m, int64_t max,
                       int64_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st =
      sq_stmt(s, sq_adm_failed_only(m) ? SQ_ADM_COUNT_FAILED : SQ_ADM_COUNT);
  if (!st) return PAWL_ESTORE;
  sq_adm_bind_match(st, m);
  sqlite3_bind_int64(st, 6, max);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *n = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return rc == SQLITE_ROW ? 0 : pawl__sq_fail(s, rc, "count jobs");
}

int pawl__sq_adm_pick(store_t *base, const store_match_t *m,
                      const store_pick_t *after, size_t max,
                      store_pick_t *out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  int failed = sq_adm_failed_only(m);
  sqlite3_stmt *st = sq_stmt(s, failed ? SQ_ADM_PICK_FAILED : SQ_ADM_PICK);
  if (!st) return PAWL_ESTORE;
  sq_adm_bind_match(st, m);
  static const pawl_id_t zero; /* ids are UUIDv7s: never all zero */
  if (failed)
    sq_bind_id(st, 6, after ? &after->id : &zero);
  else
    sqlite3_bind_int64(st, 6, after ? after->key : 0);
  sqlite3_bind_int64(st, 7, (int64_t)max);
  size_t k = 0;
  int rc;
  while (k < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    out[k].key = sqlite3_column_int64(st, 0);
    sq_col_id(st, 1, &out[k].id);
    out[k].version = sqlite3_column_int64(st, 2);
    k++;
  }
  if (k == max) rc = SQLITE_DONE;
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return pawl__sq_fail(s, rc, "pick jobs");
  *n = k;
  return 0;
}

/* Runs one of the savepoint statements. */
int pawl__sq_adm_exec(sq_store_t *s, int id, const char *what) {
  sqlite3_stmt *st = sq_stmt(s, id);
  return st ? sq_exec(s, st, what) : PAWL_ESTORE;
}

/* One write transaction for the batch; each job under a savepoint, so
 * that a job refused halfway (its event written, its update refused by the
 * business key) is undone alone and the batch goes on. */
int pawl__sq_adm_apply(store_t *base, store_op_t op, const char *actor,
                       const char *reason, const store_pick_t *picks,
                       size_t n, pawl_bulk_result_t *r) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_bulk_result_t got = {0, 0, 0};
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = pawl__sq_adm_exec(s, SQ_ADM_SAVEPOINT, "savepoint"))) break;
    int one = pawl__store_transition_in(
        base, &pawl__sq_transition_steps, now, &picks[i].id, op, actor, reason,
        picks[i].version);
    if (one == 0) {
      got.changed++;
      rc = pawl__sq_adm_exec(s, SQ_ADM_RELEASE, "release savepoint");
      continue;
    }
    if (one == PAWL_ECONFLICT || one == PAWL_ENOTFOUND)
      got.skipped++;
    else if (one == PAWL_EKEY || one == PAWL_ESTATE)
      got.refused++;
    else
      rc = one; /* the database failed: the whole batch goes */
    if (!rc) {
      base->errmsg[0] = 0;
      rc = pawl__sq_adm_exec(s, SQ_ADM_ROLLBACK_TO, "roll back to savepoint");
      if (!rc) rc = pawl__sq_adm_exec(s, SQ_ADM_RELEASE, "release savepoint");
    }
  }
  rc = pawl__sq_end(s, rc);
  if (!rc) {
    r->changed += got.changed;
    r->skipped += got.skipped;
    r->refused += got.refused;
  }
  return rc;
}

int pawl__sq_adm_list(store_t *base, const pawl_filter_t *f, pawl_job_cb cb,
                      void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_LIST);
  if (!st) return PAWL_ESTORE;
  if (f->state >= 0) sqlite3_bind_int(st, 1, f->state);
  sq_bind_text(st, 2, f->queue);
  sq_bind_text(st, 3, f->type);
  sq_bind_text(st, 4, f->tag);
  sq_bind_opt_int(st, 5,
                  f->older_than_ms ? pawl__store_now(base) - f->older_than_ms : 0);
  sqlite3_bind_int(st, 6, f->limit > 0 ? f->limit : 100);
  return pawl__sq_list_rows(s, st, cb, data);
}

/* The finished counts: one pass over the table, each row's (state, queue)
 * tallied here. Queues are few, so a short list searched from the last hit
 * (rows of one queue tend to come together) beats a sort. */
typedef struct sq_tally {
  char *queue;
  int64_t n[PAWL_STATE_COUNT];
} sq_tally_t;

int pawl__sq_adm_tally(sq_store_t *s, store_stat_cb cb, void *data) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_STATS_DONE);
  if (!st) return PAWL_ESTORE;
  sq_tally_t *t = NULL;
  size_t nt = 0, cap = 0, hint = 0;
  int rc = 0, step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    int state = sqlite3_column_int(st, 0);
    const char *q = (const char *)sqlite3_column_text(st, 1);
    if (!q) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    if (state < 0 || state >= PAWL_STATE_COUNT) continue;
    if (hint >= nt || strcmp(t[hint].queue, q) != 0) {
      for (hint = 0; hint < nt && strcmp(t[hint].queue, q) != 0; hint++) {}
      if (hint == nt) {
        if (nt == cap) {
          size_t nc = cap ? cap * 2 : 8;
          sq_tally_t *g = pawl__realloc(t, nc * sizeof *g);
          if (!g) {
            rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
            break;
          }
          t = g;
          cap = nc;
        }
        memset(&t[nt], 0, sizeof t[nt]);
        if (!(t[nt].queue = pawl__strdup(q))) {
          rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
          break;
        }
        nt++;
      }
    }
    t[hint].n[state]++;
  }
  if (!rc && step != SQLITE_DONE)
    rc = pawl__sq_fail(s, step, "read statistics");
  sqlite3_reset(st);
  for (size_t i = 0; i < nt; i++) {
    for (int k = PAWL_SUCCEEDED; k < PAWL_STATE_COUNT && !rc; k++) {
      if (!t[i].n[k]) continue;
      store_stat_row_t row = {.queue = t[i].queue, .state = k,
                              .count = t[i].n[k]};
      if (cb(&row, data))
        rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    }
    pawl__free(t[i].queue);
  }
  pawl__free(t);
  return rc;
}

/* Throughput: the buckets of the last 15 minutes (and one more, see
 * store.h), summed per state and queue into rows of count 0. */
static int sq_adm_throughput(sq_store_t *s, int64_t now, store_stat_cb cb,
                             void *data) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_STATS_TP);
  if (!st) return PAWL_ESTORE;
  int64_t minute = store_tp_minute(now);
  sqlite3_bind_int64(st, 1, minute - 15);
  sqlite3_bind_int64(st, 2, minute - 5);
  sqlite3_bind_int64(st, 3, minute - 1);
  int rc = 0, step;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    const char *q = (const char *)sqlite3_column_text(st, 1);
    if (!q) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    store_stat_row_t row = {.state = sqlite3_column_int(st, 0),
                            .queue = q,
                            .in_15m = sqlite3_column_int64(st, 2),
                            .in_5m = sqlite3_column_int64(st, 3),
                            .in_1m = sqlite3_column_int64(st, 4)};
    if (cb(&row, data)) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE)
    rc = pawl__sq_fail(s, step, "read throughput");
  sqlite3_reset(st);
  return rc;
}

int pawl__sq_adm_stats(store_t *base, int64_t now, store_stat_cb cb,
                       void *data) {
  sq_store_t *s = (sq_store_t *)base;
  static const int ids[2] = {SQ_ADM_STATS_PENDING, SQ_ADM_STATS_RUNNING};
  /* One read transaction: the statements see one snapshot. */
  int rc = pawl__sq_adm_exec(s, SQ_ADM_BEGIN_READ, "begin read"),
      step = SQLITE_DONE;
  for (int q = 0; q < 2 && !rc; q++) {
    sqlite3_stmt *st = sq_stmt(s, ids[q]);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    if (q == 0) sqlite3_bind_int64(st, 1, now);
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
      store_stat_row_t row = {0};
      row.state = q == 0 ? PAWL_PENDING : PAWL_RUNNING;
      /* Valid until the next step: the callback copies what it keeps. */
      const char *queue = (const char *)sqlite3_column_text(st, 0);
      if (!queue) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      row.queue = queue;
      row.count = sqlite3_column_int64(st, 1);
      if (q == 0) row.oldest_due = sqlite3_column_int64(st, 2);
      if (cb(&row, data))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
    if (!rc && step != SQLITE_DONE)
      rc = pawl__sq_fail(s, step, "read statistics");
    sqlite3_reset(st);
  }
  if (!rc) rc = pawl__sq_adm_tally(s, cb, data);
  if (!rc) rc = sq_adm_throughput(s, now, cb, data);
  if (!sqlite3_get_autocommit(s->db)) {
    int end = pawl__sq_adm_exec(s, SQ_COMMIT, "end read");
    if (!rc) rc = end;
  }
  return rc;
}

int pawl__sq_adm_locks(store_t *base, store_lock_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_LOCKS);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pawl_lock_info_t l = {
        .name = (char *)sqlite3_column_text(st, 0),
        .owner = (char *)sqlite3_column_text(st, 1),
        .acquired_at = sqlite3_column_int64(st, 2),
        .expires_at = sqlite3_column_int64(st, 3),
    };
    if (cb(&l, data)) {
      sqlite3_reset(st);
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  int err = rc == SQLITE_DONE ? 0 : pawl__sq_fail(s, rc, "list locks");
  sqlite3_reset(st);
  return err;
}

int pawl__sq_adm_running(store_t *base, store_owner_cb cb, void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_ADM_RUNNING);
  if (!st) return PAWL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *owner = (const char *)sqlite3_column_text(st, 0);
    if (cb(owner ? owner : "", sqlite3_column_int64(st, 1), data)) {
      sqlite3_reset(st);
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    }
  }
  int err = rc == SQLITE_DONE ? 0 : pawl__sq_fail(s, rc, "count running jobs");
  sqlite3_reset(st);
  return err;
}
