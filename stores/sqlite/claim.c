/* claim.c: SQLite store, the claim and its leases: the claim (one
 * transaction: promote the rows come due, pick by lanes or in rank order,
 * take), lease extension, recovery of expired leases, the start of an
 * attempt, next_due, and the holds of ordering keys (store.h, "claim"). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__CLAIM
const char *const pawl__sq_sql_claim[SQ__LIMITS - SQ__CLAIM] = {
    SQ_AT(SQ_CLAIM) = SQLITE_SQL_CLAIM,
    SQ_AT(SQ_CLAIM_UNPAUSED) = SQLITE_SQL_CLAIM_UNPAUSED,
    SQ_AT(SQ_ANY_PAUSED) = SQLITE_SQL_ANY_PAUSED,
    SQ_AT(SQ_CLAIM_TAKE) = SQLITE_SQL_CLAIM_TAKE,
    SQ_AT(SQ_PROMOTE) = SQLITE_SQL_PROMOTE,
    SQ_AT(SQ_PROMOTE_ANY) = SQLITE_SQL_PROMOTE_ANY,
    SQ_AT(SQ_LANE_QUEUE) = SQLITE_SQL_LANE_QUEUE,
    SQ_AT(SQ_LANE_NONE) = SQLITE_SQL_LANE_NONE,
    SQ_AT(SQ_LANE_RES) = SQLITE_SQL_LANE_RES,
    SQ_AT(SQ_CLAIM_LANE) = SQLITE_SQL_CLAIM_LANE,
    SQ_AT(SQ_PAUSED_QUEUES) = SQLITE_SQL_PAUSED_QUEUES,
    SQ_AT(SQ_EXTEND) =
        "UPDATE pawl_jobs SET lease_expires = ?1 WHERE state = 1 "
        "AND lease_token = ?2 AND lease_expires >= ?3",
    /* Expired leases, with whether their attempt is known to have started
     * and how often the job was lost while running
     * (pawl__store_plan_recovery()). */
    SQ_AT(SQ_EXPIRED) =
        "SELECT j.id, j.attempt, j.max_attempts, j.recoveries, "
        "j.lease_owner, coalesce(s.crashes, 0), s.version IS "
        "j.version FROM pawl_jobs AS j LEFT JOIN pawl_started AS s "
        "ON s.job_id = j.id WHERE j.state = 1 AND "
        "j.lease_expires < ?1 LIMIT 500",
    SQ_AT(SQ_RECOVER) =
        "UPDATE pawl_jobs SET state = 0, run_at = ?1, rank = pawl_rank("
        "priority, ?1, " SQLITE_SQL_QUEUE_BOOST("?2") "), last_error = ?3, "
        "recoveries = recoveries + 1, updated_at = pawl_key_note(?1, "
        "ordering_key), early = 0, lease_expires = NULL, "
        "version = version + 1 WHERE id = ?4",
    SQ_AT(SQ_CRASHED) = "UPDATE pawl_started SET crashes = crashes + 1 WHERE "
                        "job_id = ?1",
    /* The attempt `token` holds starts now: its version is recorded (the
     * job's next change bumps the version, which ends the record). */
    SQ_AT(SQ_START) =
        "INSERT INTO pawl_started (job_id, version) SELECT id, "
        "version FROM pawl_jobs WHERE id = ?1 AND state = 1 AND "
        "lease_token = ?2 AND attempt = ?3 ON CONFLICT (job_id) DO "
        "UPDATE SET version = excluded.version",
    /* The body of a job claimed ahead started at ?4 (its started_at was
     * NULL); matches the held attempt whatever its started_at, so that
     * PAWL_ELEASE means "not held". */
    SQ_AT(SQ_RUN_START) =
        "UPDATE pawl_jobs SET started_at = coalesce(started_at, "
        "?4) WHERE id = ?1 AND state = 1 AND lease_token = ?2 "
        "AND attempt = ?3",
    /* A key's holds computed again (V018's pawl_key_refresh). */
    SQ_AT(SQ_KEY_REFRESH) = "INSERT INTO pawl_key_refresh VALUES (?1)",
    SQ_AT(SQ_EXTEND_ONE) =
        "UPDATE pawl_jobs SET lease_expires = ?1 WHERE id = ?2 "
        "AND state = 1 AND lease_token = ?3 AND attempt = ?4",
    SQ_AT(SQ_NEXT_DUE) = SQLITE_SQL_NEXT_DUE,
    SQ_AT(SQ_NEXT_DUE_QUEUE) = SQLITE_SQL_NEXT_DUE_QUEUE,
    SQ_AT(SQ_NEXT_DUE_QUEUES) = SQLITE_SQL_NEXT_DUE_QUEUES,
    SQ_AT(SQ_CLAIM_LIM) = SQLITE_SQL_CLAIM_LIM,
    SQ_AT(SQ_CLAIM_LIM_UNPAUSED) = SQLITE_SQL_CLAIM_LIM_UNPAUSED,
};
#undef SQ_HERE

/* ---- claim and leases --------------------------------------------------- */

/* A JSON array of queue names, bound as one value for json_each(). NULL
 * when out of memory; pawl__free() it. Names never hold control characters
 * (pawl.c checks them), so escaping quotes and backslashes is enough. */
char *pawl__sq_queues_json(const char *const *queues, size_t n) {
  size_t len = 3;
  for (size_t i = 0; i < n; i++) len += 2 * strlen(queues[i]) + 3;
  char *json = pawl__malloc(len);
  if (!json) return NULL;
  char *p = json;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    *p++ = '"';
    for (const char *q = queues[i]; *q; q++) {
      if (*q == '"' || *q == '\\') *p++ = '\\';
      *p++ = *q;
    }
    *p++ = '"';
  }
  *p++ = ']';
  *p = 0;
  return json;
}

/* Leases the picked rows of one JSON array `seqs` (not empty) with
 * started_at `started` (0: NULL, claimed ahead), adding the rows changed
 * to *changed. */
static int sq_claim_take_list(sq_store_t *s, const store_claim_t *c,
                              int64_t now, const pawl_buf_t *seqs,
                              int64_t started, size_t *changed) {
  sqlite3_stmt *st = sq_stmt(s, SQ_CLAIM_TAKE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  sqlite3_bind_text(st, 2, c->owner, -1, SQLITE_STATIC);
  sq_bind_id(st, 3, c->token);
  sqlite3_bind_int64(st, 4, now + c->lease_ms);
  sqlite3_bind_text(st, 5, seqs->data, (int)seqs->len, SQLITE_STATIC);
  if (started)
    sqlite3_bind_int64(st, 6, started);
  else
    sqlite3_bind_null(st, 6);
  int rc = sq_exec(s, st, "claim jobs");
  if (!rc) *changed += (size_t)sqlite3_changes(s->db);
  return rc;
}

/* Leases the `n` picked rows whose seqs `seqs` (started now) and `ahead`
 * (claimed ahead of a free worker) hold as JSON arrays, each closed here
 * when not empty. All must still be pending: the transaction has held the
 * write lock since they were picked. */
static int sq_claim_take(sq_store_t *s, const store_claim_t *c, int64_t now,
                         pawl_buf_t *seqs, pawl_buf_t *ahead, size_t n) {
  if (seqs->len) pawl__buf_putc(seqs, ']');
  if (ahead->len) pawl__buf_putc(ahead, ']');
  if (seqs->oom || ahead->oom)
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  size_t changed = 0;
  int rc = 0;
  if (seqs->len) rc = sq_claim_take_list(s, c, now, seqs, now, &changed);
  if (!rc && ahead->len)
    rc = sq_claim_take_list(s, c, now, ahead, 0, &changed);
  if (!rc && changed != n)
    rc = pawl__store_fail(&s->base, PAWL_ESTORE,
                    "claim: %zu of %zu picked jobs were still pending",
                    changed, n);
  return rc;
}

/* Whether any queue is paused, into *paused. */
static int sq_any_paused(sq_store_t *s, int *paused) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ANY_PAUSED);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  *paused = step == SQLITE_ROW;
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "read paused queues");
  return 0;
}

/* Queues: with a queue paused, the claim `*which` becomes its
 * variant that leaves paused queues alone. Read in the claim's transaction;
 * with none paused (one step over an empty table) the claim costs what it
 * did before queues could be paused. */
static int sq_claim_paused(sq_store_t *s, int *which) {
  sqlite3_stmt *st = sq_stmt(s, SQ_ANY_PAUSED);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) *which += SQ_CLAIM_UNPAUSED - SQ_CLAIM;
  else if (step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "read paused queues");
  return 0;
}

/* The jobs written with a later run_at that are due by `now` become ready
 * (SQLITE_SQL_PROMOTE): a seek of pawl_jobs_early, in the claim's
 * transaction. */
static int sq_promote(sq_store_t *s, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_PROMOTE_ANY);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  int step = sqlite3_step(st);
  sqlite3_reset(st);
  if (step == SQLITE_DONE) return 0;
  if (step != SQLITE_ROW)
    return pawl__sq_fail(s, step, "find due jobs to promote");
  st = sq_stmt(s, SQ_PROMOTE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, now);
  return sq_exec(s, st, "promote due jobs");
}

/* ---- lanes (V018__claim_holds.sql) --------------------------------------
 *
 * A paused queue or a limit with nothing left holds its jobs without
 * touching their rows. Walking the claim's index past them would cost a
 * claim as much as they are many, so a claim with any such lane blocked
 * picks from each open lane (queue, resource) of pawl_jobs_lane instead,
 * at most c->max jobs each, and merges the picks in claim order: its cost
 * grows with the lanes, not with the jobs in the blocked ones. */

/* One job picked from a lane, for the merge. */
typedef struct sq_pick {
  pawl_job_t *job;
  char *resource; /* NULL: none */
  int64_t rank;
} sq_pick_t;

/* Claim order: rank descending, then run_at, then id. */
static int sq_pick_cmp(const void *a, const void *b) {
  const sq_pick_t *x = a, *y = b;
  if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
  if (x->job->run_at != y->job->run_at)
    return x->job->run_at < y->job->run_at ? -1 : 1;
  return memcmp(x->job->id.bytes, y->job->id.bytes, sizeof x->job->id.bytes);
}

typedef struct sq_lanes {
  sq_store_t *s;
  const store_claim_t *c;
  const store_limits_t *lim;
  char **paused;
  size_t npaused;
  sq_pick_t *picks;
  size_t npicks;
  int64_t now;
} sq_lanes_t;

/* Whether limit `name` (a resource, or a queue when `queue`) is blocked. */
static int sq_lane_blocked(const sq_lanes_t *ln, const char *name, int queue) {
  for (size_t i = 0; i < ln->lim->n; i++) {
    const store_limit_t *l = &ln->lim->v[i];
    const char *q = pawl__store_limit_queue(l);
    if (!q != !queue || !pawl__store_limit_blocked(l)) continue;
    if (!strcmp(queue ? q : l->name, name)) return 1;
  }
  return 0;
}

static int sq_lane_queue_open(const sq_lanes_t *ln, const char *q) {
  for (size_t i = 0; i < ln->npaused; i++)
    if (!strcmp(ln->paused[i], q)) return 0;
  return !sq_lane_blocked(ln, q, 1);
}

/* Picks the first c->max due jobs of lane (q, res). */
static int sq_lane_pick(sq_lanes_t *ln, const char *q, const char *res) {
  sq_store_t *s = ln->s;
  sqlite3_stmt *st = sq_stmt(s, SQ_CLAIM_LANE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, ln->now);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)ln->c->max);
  sqlite3_bind_text(st, 3, q, -1, SQLITE_TRANSIENT);
  sq_bind_text(st, 4, res);
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    sq_pick_t *pk = pawl__store_push((void **)&ln->picks, &ln->npicks, sizeof *pk);
    if (!pk || !(pk->job = pawl__sq_row_to_job(st, ln->c->owner)) ||
        pawl__store_dup(&pk->resource, (const char *)sqlite3_column_text(
                                           st, SQLITE_JOB_RESOURCE_COL))) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    pk->rank = sqlite3_column_int64(st, SQLITE_JOB_RESOURCE_COL + 1);
  }
  if (!rc && step != SQLITE_DONE)
    rc = pawl__sq_fail(s, step, "pick jobs of a lane");
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

/* The text of a one-column, one-row statement `id` bound with a and b
 * (b may be NULL), copied into *out (NULL: none). */
static int sq_lane_text(sq_store_t *s, int id, const char *a, const char *b,
                        char **out) {
  *out = NULL;
  sqlite3_stmt *st = sq_stmt(s, id);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, a, -1, SQLITE_TRANSIENT);
  if (b) sqlite3_bind_text(st, 2, b, -1, SQLITE_TRANSIENT);
  int step = sqlite3_step(st), rc = 0;
  if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
      pawl__store_dup(out, (const char *)sqlite3_column_text(st, 0)))
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (step != SQLITE_ROW && step != SQLITE_DONE)
    rc = pawl__sq_fail(s, step, "find lanes");
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

/* Every open lane of queue q. */
static int sq_lanes_of_queue(sq_lanes_t *ln, const char *q) {
  if (!sq_lane_queue_open(ln, q)) return 0;
  char *one = NULL;
  int rc = sq_lane_text(ln->s, SQ_LANE_NONE, q, NULL, &one);
  if (!rc && one) rc = sq_lane_pick(ln, q, NULL);
  pawl__free(one);
  char *res = pawl__strdup("");
  if (!res) return pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
  while (!rc) {
    char *next = NULL;
    rc = sq_lane_text(ln->s, SQ_LANE_RES, q, res, &next);
    pawl__free(res);
    res = next;
    if (rc || !res) break;
    if (!sq_lane_blocked(ln, res, 0)) rc = sq_lane_pick(ln, q, res);
  }
  pawl__free(res);
  return rc;
}

/* The queues paused now, into ln->paused. */
static int sq_lanes_paused(sq_lanes_t *ln) {
  sqlite3_stmt *st = sq_stmt(ln->s, SQ_PAUSED_QUEUES);
  if (!st) return PAWL_ESTORE;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    char **slot = pawl__store_push((void **)&ln->paused, &ln->npaused, sizeof *slot);
    if (!slot || pawl__store_dup(slot, (const char *)sqlite3_column_text(st, 0))) {
      rc = pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
  }
  if (!rc && step != SQLITE_DONE)
    rc = pawl__sq_fail(ln->s, step, "read paused queues");
  sqlite3_reset(st);
  return rc;
}

/* Applies to `j`, the got-th job of a claim, what CLAIM_TAKE writes to
 * its row, and lists its seq in `seqs`, or in `ahead` when it is claimed
 * ahead of a free worker (CLAIM_TAKE leaves its start NULL). A job of a
 * key that starts holds the key's other jobs: its key is noted. */
static void sq_claim_mark(sq_store_t *s, const store_claim_t *c,
                          pawl_job_t *j, int64_t now, size_t got,
                          pawl_buf_t *seqs, pawl_buf_t *ahead) {
  if (j->ordering_key) pawl__sq_key_note(s, j->ordering_key);
  j->state = PAWL_RUNNING;
  j->attempt++;
  j->started_at = j->updated_at = now;
  if (got >= c->ahead_from) j->started_at = 0;
  j->lease_expires = now + c->lease_ms;
  j->progress_done = j->progress_total = 0;
  j->version++;
  sq_seq_put(got >= c->ahead_from ? ahead : seqs, j->store_key);
}

/* Picks from every open lane of `queues` (every queue with ready jobs
 * when none) into ln->picks: at most ln->c->max jobs each. */
static int sq_lanes_collect(sq_lanes_t *ln, const char *const *queues,
                            size_t nqueues) {
  int rc = sq_lanes_paused(ln);
  if (nqueues) {
    for (size_t i = 0; !rc && i < nqueues; i++) {
      int dup = 0; /* a queue named twice is one lane */
      for (size_t k = 0; k < i; k++) dup |= !strcmp(queues[k], queues[i]);
      if (!dup) rc = sq_lanes_of_queue(ln, queues[i]);
    }
    return rc;
  }
  char *q = rc ? NULL : pawl__strdup("");
  if (!rc && !q) rc = pawl__store_fail(&ln->s->base, PAWL_ENOMEM, "out of memory");
  while (!rc && q) {
    char *next = NULL;
    rc = sq_lane_text(ln->s, SQ_LANE_QUEUE, q, NULL, &next);
    pawl__free(q);
    q = next;
    if (!rc && q) rc = sq_lanes_of_queue(ln, q);
  }
  pawl__free(q);
  return rc;
}

static void sq_lanes_free(sq_lanes_t *ln) {
  for (size_t i = 0; i < ln->npicks; i++) {
    pawl_job_free(ln->picks[i].job);
    pawl__free(ln->picks[i].resource);
  }
  pawl__free(ln->picks);
  for (size_t i = 0; i < ln->npaused; i++) pawl__free(ln->paused[i]);
  pawl__free(ln->paused);
}

/* Picks from every open lane of the claimer's queues (every queue with
 * ready jobs when it names none) and keeps, in claim order, the first
 * c->max jobs its limits admit: into jobs[], their seqs into `seqs`
 * (and `ahead`, sq_claim_mark()). */
static int sq_claim_lanes(sq_store_t *s, const store_claim_t *c, int64_t now,
                          store_limits_t *lim, pawl_job_t **jobs, size_t *got,
                          pawl_buf_t *seqs, pawl_buf_t *ahead) {
  sq_lanes_t ln = {.s = s, .c = c, .lim = lim, .now = now};
  int rc = sq_lanes_collect(&ln, c->queues, c->nqueues);
  if (!rc && ln.npicks)
    qsort(ln.picks, ln.npicks, sizeof *ln.picks, sq_pick_cmp);
  for (size_t i = 0; i < ln.npicks; i++) {
    sq_pick_t *pk = &ln.picks[i];
    if (!rc && *got < c->max &&
        (!lim->n || pawl__store_limits_admit(lim, pk->job->queue, pk->resource))) {
      pawl_job_t *j = pk->job;
      sq_claim_mark(s, c, j, now, *got, seqs, ahead);
      jobs[(*got)++] = j;
      pk->job = NULL;
    }
  }
  sq_lanes_free(&ln);
  return rc;
}

/* next_due() with a lane blocked: the run_at of a job an open lane would
 * give a claim now, into *at (0: none), one row per open lane. */
static int sq_next_due_lanes(sq_store_t *s, const char *const *queues,
                             size_t nqueues, store_limits_t *lim,
                             int64_t now, int64_t *at) {
  store_claim_t one = {.queues = queues, .nqueues = nqueues, .max = 1};
  sq_lanes_t ln = {.s = s, .c = &one, .lim = lim, .now = now};
  int rc = sq_lanes_collect(&ln, queues, nqueues);
  *at = 0;
  for (size_t i = 0; !rc && i < ln.npicks; i++)
    if (!*at || ln.picks[i].job->run_at < *at) *at = ln.picks[i].job->run_at;
  sq_lanes_free(&ln);
  return rc;
}

/* Whether a claim must go by lanes: it names its queues, a queue is
 * paused or a limit has nothing left. */
static int sq_lanes_needed(size_t nqueues, int paused,
                           const store_limits_t *lim) {
  if (nqueues || paused) return 1;
  for (size_t i = 0; i < lim->n; i++)
    if (pawl__store_limit_blocked(&lim->v[i])) return 1;
  return 0;
}

/* Picks the due jobs in claim order and leases them, in one transaction
 * (see SQLITE_SQL_CLAIM). The jobs come out as CLAIM_TAKE leaves their
 * rows. */
int pawl__sq_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                   size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  if (c->max == 0) return 0;
  int which = SQ_CLAIM;
  pawl_job_t **jobs = pawl__calloc(c->max, sizeof *jobs);
  pawl_buf_t seqs, ahead; /* JSON arrays (sq_claim_take()), or empty */
  pawl__buf_init(&seqs);
  pawl__buf_init(&ahead);
  if (!jobs) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = pawl__sq_begin(s);
  /* The time is read once the write lock is held: a claim that waited for
   * a finish to commit (the finish that released the job it takes) must
   * not record its start before that finish. */
  int64_t now = pawl__store_now(base);
  size_t got = 0;
  int unpaused_which = which;
  if (!rc) rc = sq_claim_paused(s, &which);
  if (!rc) rc = sq_promote(s, now);
  /* Limits: with any, the pick leaves out the jobs of limits
   * with nothing left, and each picked job is admitted or skipped. */
  store_limits_t lim = {0};
  char *lim_res = NULL, *lim_qs = NULL;
  if (!rc) rc = pawl__sq_limits_read(s, now, c->limited_max, &lim);
  if (!rc && lim.n) {
    which += SQ_CLAIM_LIM - SQ_CLAIM;
    lim_res = pawl__sq_limits_blocked(&lim, 0);
    lim_qs = pawl__sq_limits_blocked(&lim, 1);
    if (!lim_res || !lim_qs)
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  if (rc) {
    rc = pawl__sq_end(s, rc);
  } else if (sq_lanes_needed(c->nqueues,
                             which != unpaused_which &&
                                 which != unpaused_which + SQ_CLAIM_LIM - SQ_CLAIM,
                             &lim)) {
    rc = sq_claim_lanes(s, c, now, &lim, jobs, &got, &seqs, &ahead);
    if (!rc && got > 0) rc = sq_claim_take(s, c, now, &seqs, &ahead, got);
    if (!rc && got > 0 && lim.n) rc = pawl__sq_limits_save(s, &lim);
    rc = pawl__sq_end(s, rc);
  } else {
    sqlite3_stmt *st = sq_stmt(s, which);
    if (!st) {
      rc = PAWL_ESTORE;
    } else {
      sqlite3_bind_int64(st, 1, now);
      sqlite3_bind_int64(st, 2, (sqlite3_int64)c->max);
      if (lim.n) {
        sqlite3_bind_text(st, 4, lim_res, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, lim_qs, -1, SQLITE_STATIC);
      }
      int step;
      while ((step = sqlite3_step(st)) == SQLITE_ROW && got < c->max) {
        if (lim.n && !pawl__sq_limits_admit(&lim, st)) continue;
        pawl_job_t *j = pawl__sq_row_to_job(st, c->owner);
        if (!j) {
          rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
          break;
        }
        sq_claim_mark(s, c, j, now, got, &seqs, &ahead);
        jobs[got++] = j;
      }
      if (!rc && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = pawl__sq_fail(s, step, "pick jobs to claim");
      sqlite3_reset(st);
    }
    if (!rc && got > 0) rc = sq_claim_take(s, c, now, &seqs, &ahead, got);
    if (!rc && got > 0 && lim.n) rc = pawl__sq_limits_save(s, &lim);
    rc = pawl__sq_end(s, rc);
  }
  pawl__store_limits_free(&lim);
  pawl__free(lim_res);
  pawl__free(lim_qs);
  pawl__buf_free(&seqs);
  pawl__buf_free(&ahead);
  if (rc || got == 0) {
    /* Nothing was committed (or the commit failed): drop what we read. */
    for (size_t i = 0; i < got; i++) pawl_job_free(jobs[i]);
    pawl__free(jobs);
    return rc;
  }
  *out = jobs;
  *n = got;
  return 0;
}

int pawl__sq_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                    size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_EXTEND);
  if (!st) return PAWL_ESTORE;
  int64_t now = pawl__store_now(base);
  sqlite3_bind_int64(st, 1, now + lease_ms);
  sq_bind_id(st, 2, token);
  sqlite3_bind_int64(st, 3, now);
  int rc = sq_exec_write(s, st, "extend leases");
  if (!rc && n) *n = (size_t)sqlite3_changes(s->db);
  return rc;
}

int pawl__sq_extend_one(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int64_t lease_ms, int *held) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_EXTEND_ONE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_int64(st, 1, pawl__store_now(base) + lease_ms);
  sq_bind_id(st, 2, id);
  sq_bind_id(st, 3, token);
  sqlite3_bind_int(st, 4, attempt);
  int rc = sq_exec_write(s, st, "extend lease");
  if (!rc) *held = sqlite3_changes(s->db) == 1;
  return rc;
}

int pawl__sq_next_due(store_t *base, const char *const *queues,
                      size_t nqueues, int64_t *run_at) {
  sq_store_t *s = (sq_store_t *)base;
  char *json = NULL;
  int which = SQ_NEXT_DUE;
  /* Limits: a job held back by one is not due. */
  store_limits_t lim = {0};
  int64_t now = pawl__store_now(base);
  int rc = pawl__sq_limits_read(s, now, SIZE_MAX, &lim);
  /* For some queues, or with a lane blocked (a paused queue, a limit with
   * nothing left), a ready job is looked for lane by lane, as a claim
   * picks; when there is none, the statements below look at the jobs due
   * later only (?9). */
  int paused = 0, later_only = 0;
  if (!rc) rc = sq_any_paused(s, &paused);
  if (!rc && sq_lanes_needed(nqueues, paused, &lim)) {
    int64_t at = 0;
    rc = sq_next_due_lanes(s, queues, nqueues, &lim, now, &at);
    if (!rc && at) {
      pawl__store_limits_free(&lim);
      *run_at = at;
      return 0;
    }
    later_only = 1;
  }
  if (!rc && lim.n) {
    json = nqueues ? pawl__sq_queues_json(queues, nqueues) : NULL;
    if (nqueues && !json)
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    else
      rc = pawl__sq_next_due_limited(s, &lim, queues, nqueues, json, later_only,
                                     run_at);
  }
  if (rc || lim.n) {
    pawl__store_limits_free(&lim);
    pawl__free(json);
    return rc;
  }
  if (nqueues == 1) {
    which = SQ_NEXT_DUE_QUEUE;
  } else if (nqueues > 1) {
    json = pawl__sq_queues_json(queues, nqueues);
    if (!json) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which = SQ_NEXT_DUE_QUEUES;
  }
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) {
    pawl__free(json);
    return PAWL_ESTORE;
  }
  if (which == SQ_NEXT_DUE_QUEUE)
    sqlite3_bind_text(st, 1, queues[0], -1, SQLITE_STATIC);
  else if (which == SQ_NEXT_DUE_QUEUES)
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  if (later_only) sqlite3_bind_int(st, 9, 1);
  int step = sqlite3_step(st);
  /* min() over no rows is one NULL row: 0, "none pending". */
  int64_t v = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  pawl__free(json);
  if (step != SQLITE_ROW) return pawl__sq_fail(s, step, "find next due job");
  *run_at = v;
  return 0;
}

/* ---- holds (V020__holds_by_store.sql) ----------------------------------
 *
 * A pending job with an ordering key is held (held = 1, in none of the
 * claim's indexes) unless it is one of its key's candidates; which ones
 * are depends on every live row of the key. So each statement that
 * changes a keyed row's state, ordering_skip or paused_from notes the
 * row's key (from C when C has the row, else through pawl_key_note() or
 * pawl_tp_note() in the statement), and pawl__sq_end() has the holds of every
 * noted key computed again (pawl_key_refresh, a few seeks of
 * pawl_jobs_key each) before the transaction commits. Rows without a key,
 * nearly all, cost the test of one NULL. */

/* Notes `key` (not NULL) for pawl__sq_keys_flush(). */
void pawl__sq_key_note(sq_store_t *s, const char *key) {
  /* A batch of one key notes it once per row: skip the repeat. */
  if (s->nkeys && !strcmp(s->keys[s->nkeys - 1], key)) return;
  if (s->nkeys == s->keycap) {
    size_t cap = s->keycap ? s->keycap * 2 : 16;
    char **g = pawl__realloc(s->keys, cap * sizeof *g);
    if (!g) {
      s->key_oom = 1;
      return;
    }
    s->keys = g;
    s->keycap = cap;
  }
  if (!(s->keys[s->nkeys] = pawl__strdup(key))) {
    s->key_oom = 1;
    return;
  }
  s->nkeys++;
}

void pawl__sq_keys_clear(sq_store_t *s) {
  for (size_t i = 0; i < s->nkeys; i++) pawl__free(s->keys[i]);
  s->nkeys = 0;
  s->key_oom = 0;
}

static int sq_key_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Computes the holds of every key noted in this transaction again, each
 * once. */
int pawl__sq_keys_flush(sq_store_t *s) {
  if (s->key_oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  qsort(s->keys, s->nkeys, sizeof *s->keys, sq_key_cmp);
  int rc = 0;
  for (size_t i = 0; i < s->nkeys && !rc; i++) {
    if (i && !strcmp(s->keys[i], s->keys[i - 1])) continue;
    sqlite3_stmt *st = sq_stmt(s, SQ_KEY_REFRESH);
    if (!st) return PAWL_ESTORE;
    sqlite3_bind_text(st, 1, s->keys[i], -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "hold the jobs of an ordering key");
    sqlite3_clear_bindings(st);
  }
  return rc;
}

/* pawl_key_note(v, key) [SQL]: notes `key` when not NULL, returns v. */
void pawl__sq_key_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sqlite3_value_type(v[1]) != SQLITE_NULL)
    pawl__sq_key_note(s, (const char *)sqlite3_value_text(v[1]));
  sqlite3_result_value(ctx, v[0]);
}

/* Takes back expired leases, each as pawl__store_plan_recovery() decides: back
 * to pending with the attempt counted, or failed when that was its last
 * attempt or it has been lost while running too often (a poison job that
 * keeps killing its node; only losses of attempts known to have started
 * count). */
int pawl__sq_recover(store_t *base, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  size_t count = 0;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  sqlite3_stmt *sel = sq_stmt(s, SQ_EXPIRED);
  if (!sel) return pawl__sq_end(s, PAWL_ESTORE);
  sqlite3_bind_int64(sel, 1, now);
  /* Collect first: the statements below write to the table we read. */
  struct lost {
    pawl_id_t id;
    store_lost_t row;
    char owner[128];
  } *lost = NULL;
  size_t nlost = 0, cap = 0;
  int step;
  while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
    if (nlost == cap) {
      cap = cap ? cap * 2 : 16;
      void *p = pawl__realloc(lost, cap * sizeof *lost);
      if (!p) {
        sqlite3_reset(sel);
        pawl__free(lost);
        return pawl__sq_end(
            s, pawl__store_fail(base, PAWL_ENOMEM, "out of memory"));
      }
      lost = p;
    }
    struct lost *l = &lost[nlost++];
    sq_col_id(sel, 0, &l->id);
    l->row.attempt = sqlite3_column_int(sel, 1);
    l->row.max_attempts = sqlite3_column_int(sel, 2);
    l->row.recoveries = sqlite3_column_int(sel, 3);
    const unsigned char *o = sqlite3_column_text(sel, 4);
    snprintf(l->owner, sizeof l->owner, "%s", o ? (const char *)o : "?");
    l->row.crashes = sqlite3_column_int(sel, 5);
    l->row.started = sqlite3_column_int(sel, 6);
  }
  sqlite3_reset(sel);
  if (step != SQLITE_DONE) {
    pawl__free(lost);
    return pawl__sq_end(s, pawl__sq_fail(s, step, "find expired leases"));
  }
  for (size_t i = 0; i < nlost && !rc; i++) {
    struct lost *l = &lost[i];
    l->row.owner = l->owner;
    store_recovery_t plan;
    pawl__store_plan_recovery(&l->row, s->poison, &plan);
    rc = pawl__sq_add_attempt(s, &l->id, now, "lost", plan.why, NULL, 0);
    if (rc == PAWL_ELEASE) {
      rc = 0; /* already gone: finished within this transaction's view */
      continue;
    }
    if (!rc) rc = pawl__sq_event_from_row(s, &l->id, now, plan.to, plan.why);
    if (!rc && plan.to == PAWL_FAILED) {
      rc = pawl__sq_fail_job(s, &l->id, plan.why, now);
    } else if (!rc) {
      sqlite3_stmt *st = sq_stmt(s, SQ_RECOVER);
      if (!st) {
        rc = PAWL_ESTORE;
        break;
      }
      sqlite3_bind_int64(st, 1, now);
      sqlite3_bind_int64(st, 2, s->boost_ms);
      sqlite3_bind_text(st, 3, plan.why, -1, SQLITE_TRANSIENT);
      sq_bind_id(st, 4, &l->id);
      rc = sq_exec(s, st, "recover job");
    }
    if (!rc && plan.crashed) {
      sqlite3_stmt *st = sq_stmt(s, SQ_CRASHED);
      if (!st) {
        rc = PAWL_ESTORE;
        break;
      }
      sq_bind_id(st, 1, &l->id);
      rc = sq_exec(s, st, "count a crash");
    }
    if (!rc) count++;
  }
  pawl__free(lost);
  rc = pawl__sq_end(s, rc);
  if (!rc && n) *n = count;
  return rc;
}

/* The body of a job claimed ahead started at `at` (capped at `now`):
 * inside a write transaction. PAWL_ELEASE if the attempt is not held. */
int pawl__sq_run_start(sq_store_t *s, const pawl_id_t *id,
                       const pawl_id_t *token, int32_t attempt, int64_t at,
                       int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_RUN_START);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  sq_bind_id(st, 2, token);
  sqlite3_bind_int(st, 3, attempt);
  sqlite3_bind_int64(st, 4, at < now ? at : now);
  int rc = sq_exec(s, st, "record the start of an attempt");
  if (!rc && sqlite3_changes(s->db) != 1) rc = PAWL_ELEASE;
  return rc;
}

int pawl__sq_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                   int32_t attempt, int64_t at, int poison) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base); /* under the write lock */
  if (at) rc = pawl__sq_run_start(s, id, token, attempt, at, now);
  if (!rc && poison) {
    sqlite3_stmt *st = sq_stmt(s, SQ_START);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, id);
    sq_bind_id(st, 2, token);
    sqlite3_bind_int(st, 3, attempt);
    rc = sq_exec(s, st, "record the start of an attempt");
    if (!rc && sqlite3_changes(s->db) != 1) rc = PAWL_ELEASE;
  }
  if (rc == PAWL_ELEASE) {
    pawl__sq_end(s, 0);
    return pawl__store_not_held(base, id, attempt);
  }
  return pawl__sq_end(s, rc);
}
