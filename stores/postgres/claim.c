/* claim.c: PostgreSQL store, claim, leases, recovery, start, next_due (store.h,
 * "claim"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__CLAIM
const char *const pawl__pg_sql_claim[PG__LIMITS - PG__CLAIM] = {
    PG_AT(PG_CLAIM) = PG_SQL_CLAIM,
    PG_AT(PG_CLAIM_QUEUE) = PG_SQL_CLAIM_QUEUE,
    PG_AT(PG_CLAIM_QUEUES) = PG_SQL_CLAIM_QUEUES,
    /* The rows another transaction is writing are passed over (SKIP
     * LOCKED): the node's completer storing outcomes locks its batch's
     * rows in its own order, and a heartbeat that waited for them while
     * holding others could deadlock with it. A job passed over is being
     * finished, or gets its lease extended by the next beat (a third of a
     * lease later). Only leases that have not run out (store.h,
     * claim.extend): the walk of the running rows' index starts at now,
     * not at the oldest entry, which under a pinned horizon is every job
     * run since it began. */
    PG_AT(PG_EXTEND) =
        "UPDATE pawl_jobs AS j SET lease_expires = pawl_now($1::bigint) "
        "+ $2::float8 * interval '1 millisecond' FROM (SELECT id FROM "
        "pawl_jobs WHERE state = 1 AND lease_expires >= pawl_now($1::bigint) "
        "AND lease_token = $3::uuid FOR UPDATE SKIP LOCKED) AS c WHERE "
        "j.id = c.id",
    /* Expired leases, locked so that two sweeping nodes never take back the
     * same job (the engine also sweeps under a lock), those that ran out
     * at or after $2 (pawl__pg_recover() says why). */
    PG_AT(PG_EXPIRED) =
        "SELECT j.id, j.attempt, j.max_attempts, j.recoveries, "
        "j.lease_owner, coalesce(s.crashes, 0), s.version IS NOT "
        "DISTINCT FROM j.version FROM pawl_jobs AS j LEFT JOIN "
        "pawl_started AS s ON s.job_id = j.id WHERE j.state = 1 "
        "AND j.lease_expires < pawl_now($1::bigint) AND j.lease_expires >= "
        "pawl_ts($2::bigint) LIMIT " PG_SWEEP_MAX " FOR UPDATE OF j SKIP LOCKED",
    PG_AT(PG_CRASHED) =
        "UPDATE pawl_started SET crashes = crashes + 1 WHERE "
        "job_id = $1::uuid",
    /* The attempt `token` holds starts now: its version is recorded (the
     * job's next change bumps the version, which ends the record). */
    PG_AT(PG_START) =
        "INSERT INTO pawl_started (job_id, version) SELECT j.id, "
        "j.version FROM pawl_jobs AS j WHERE j.id = $1::uuid AND "
        PG_RUNNING_BY_ID
        " AND j.lease_token = $2::uuid AND "
        "j.attempt = $3::int ON CONFLICT (job_id) DO UPDATE SET "
        "version = excluded.version",
    /* The body of a job claimed ahead started at $4 (capped at $1 now):
     * its started_at was NULL. Matches the held attempt whatever its
     * started_at, so that no row means "not held". */
    PG_AT(PG_RUN_START) =
        "UPDATE pawl_jobs AS j SET started_at = coalesce(j.started_at, "
        "least(pawl_ts($4::bigint), pawl_now($1::bigint))) WHERE j.id = "
        "$2::uuid AND " PG_RUNNING_BY_ID
        " AND j.lease_token = $3::uuid AND "
        "j.attempt = $5::int RETURNING j.id",
    /* The jobs a claim took ahead of a free worker (store_claim_t.
     * ahead_from): not started, so not running, until their start is
     * recorded. */
    PG_AT(PG_AHEAD) =
        "UPDATE pawl_jobs AS j SET started_at = NULL WHERE j.id = "
        "ANY($1::uuid[]) AND " PG_RUNNING_BY_ID
        " AND j.lease_token "
        "= $2::uuid",
    PG_AT(PG_EXTEND_ONE) =
        "UPDATE pawl_jobs AS j SET lease_expires = "
        "pawl_now($1::bigint) + $2::float8 * interval "
        "'1 millisecond' WHERE j.id = $3::uuid AND " PG_RUNNING_BY_ID
        " AND j.lease_token = $4::uuid AND "
        "j.attempt = $5::int",
    PG_AT(PG_NEXT_DUE) = PG_SQL_NEXT_DUE,
    PG_AT(PG_CLAIM_PREPARE) = PG_SQL_CLAIM_PREPARE,
    PG_AT(PG_NEXT_DUE_QUEUE) = PG_SQL_NEXT_DUE_QUEUE,
    PG_AT(PG_NEXT_DUE_QUEUES) = PG_SQL_NEXT_DUE_QUEUES,
    PG_AT(PG_CLAIM_LANES) = PG_SQL_CLAIM_LANES,
    PG_AT(PG_CLAIM_LANES_QUEUE) = PG_SQL_CLAIM_LANES_QUEUE,
    PG_AT(PG_CLAIM_LANES_QUEUES) = PG_SQL_CLAIM_LANES_QUEUES,
    PG_AT(PG_CLAIM_PLAN) = PG_SQL_CLAIM_PLAN,
    PG_AT(PG_BY_ID_PLAN) = PG_SQL_BY_ID_PLAN,
    PG_AT(PG_CLAIM_FLOOR) = PG_SQL_CLAIM_FLOOR,
    PG_AT(PG_CLAIM_FLOOR_QUEUE) = PG_SQL_CLAIM_FLOOR_QUEUE,
    PG_AT(PG_NEXT_DUE_FLOOR) = PG_SQL_NEXT_DUE_FLOOR,
    PG_AT(PG_NEXT_DUE_FLOOR_QUEUE) = PG_SQL_NEXT_DUE_FLOOR_QUEUE,
    PG_AT(PG_FLOORS_RESET) = "SELECT pg_notify(" PG_CHANNEL ", '*')",
};
#undef PG_HERE

/* ---- claim and leases ---------------------------------------------------- */

typedef struct pg_ranked {
  pawl_job_t *job;
  int64_t rank;
} pg_ranked_t;

/* Claim order: rank descending, then run_at, then id. RETURNING does not
 * keep the subquery's order, so the batch is sorted here. */
static int pg_ranked_cmp(const void *a, const void *b) {
  const pg_ranked_t *x = a, *y = b;
  if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
  if (x->job->run_at != y->job->run_at)
    return x->job->run_at < y->job->run_at ? -1 : 1;
  return memcmp(x->job->id.bytes, y->job->id.bytes, 16);
}

/* A text[] literal of queue names; NULL when out of memory (pawl__free() it).
 */
char *pawl__pg_queues_array(const char *const *queues, size_t n) {
  pawl_buf_t b;
  arr_begin(&b);
  for (size_t i = 0; i < n; i++) arr_str(&b, queues[i]);
  arr_end(&b);
  if (b.oom) {
    pawl__buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* ---- floors ----------------------------------------------------------------
 *
 * A claim walks the index of claimable rows in claim order, rank
 * descending. The rows it took stay in that index, dead, until vacuum
 * removes them, which it cannot while a transaction anywhere might still
 * see them (a pinned horizon): a claim that starts at the top then walks
 * every row taken since. So a claim starts at its floor instead: the
 * lowest rank the last claim of this connection took (of every queue, or
 * of one queue), reading the rows ranked at or below it
 * (PG_SQL_CLAIM_FLOOR). The rows above it were taken, or passed over
 * while another node took them.
 *
 * A row that becomes claimable above a floor later is announced: every
 * statement that makes rows claimable sends the highest rank among them
 * as its wakeup's payload (V020's triggers), the host hands the payloads
 * to claim.hear, and each floor rises to it. NOTIFY is delivered after the
 * commit, so the row is there for every claim that starts after. A
 * payload of "*" (wakeups missed) sends every floor to the top; anything
 * else not a number (an older schema's empty wakeup) says nothing.
 *
 * Floors are kept only while the host says it hears every wakeup, and
 * never with an injected clock: a row's hold by time is decided by the
 * database clock, so under a test's clock a row not yet due may sit in
 * the claim's index, be passed over, and come due without any write. */

static int64_t *pg_floor_of(pg_store_t *s, const char *queue) {
  if (!queue) return &s->floor_all;
  for (size_t i = 0; i < s->nfloors; i++)
    if (!strcmp(s->floors[i].queue, queue)) return &s->floors[i].rank;
  return NULL;
}

void pawl__pg_floors_reset(pg_store_t *s) {
  for (size_t i = 0; i < s->nfloors; i++) pawl__free(s->floors[i].queue);
  pawl__free(s->floors);
  s->floors = NULL;
  s->nfloors = s->floors_cap = 0;
  s->floor_all = INT64_MAX;
}

/* A claim of `queue` (NULL: every queue) took rows down to `rank`. A
 * queue without room for its floor keeps reading from the top. */
static void pg_floor_set(pg_store_t *s, const char *queue, int64_t rank) {
  int64_t *f = pg_floor_of(s, queue);
  if (f) {
    *f = rank;
    return;
  }
  if (s->nfloors == s->floors_cap) {
    size_t cap = s->floors_cap ? s->floors_cap * 2 : 4;
    pg_floor_t *grown = pawl__realloc(s->floors, cap * sizeof *grown);
    if (!grown) return;
    s->floors = grown;
    s->floors_cap = cap;
  }
  char *q = pawl__strdup(queue);
  if (!q) return;
  s->floors[s->nfloors].queue = q;
  s->floors[s->nfloors++].rank = rank;
}

/* Raises every floor to at least `rank`. */
static void pg_floors_raise(pg_store_t *s, int64_t rank) {
  if (s->floor_all < rank) s->floor_all = rank;
  for (size_t i = 0; i < s->nfloors; i++)
    if (s->floors[i].rank < rank) s->floors[i].rank = rank;
}

void pawl__pg_hear(store_t *base, int listening, const char *rewinds) {
  pg_store_t *s = (pg_store_t *)base;
  s->hearing = listening && !base->clock;
  if (!s->hearing) {
    pawl__pg_floors_reset(s);
    return;
  }
  for (const char *line = rewinds; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char num[24];
    if (len == 1 && line[0] == '*') {
      pawl__pg_floors_reset(s);
    } else if (len > 0 && len < sizeof num) {
      memcpy(num, line, len);
      num[len] = 0;
      char *stop;
      errno = 0;
      long long r = strtoll(num, &stop, 10);
      if (!*stop && !errno) pg_floors_raise(s, (int64_t)r);
    }
    line += len + (end ? 1 : 0);
  }
}

/* How many rows held by time, and how many logged key changes, one claim's
 * first step settles at most (pawl_claim_prepare(), V017): bounds the
 * step's cost when a million future jobs come due at once; the next
 * claims do the rest. */
#define PG_PREPARE_MAX "1000"

/* The claim's first step (PG_SQL_CLAIM_PREPARE) as a call. */
static void pg_prepare_call(pg_store_t *s, pg_call_t *c) {
  memset(c, 0, sizeof *c);
  c->stmt = PG_CLAIM_PREPARE;
  c->n = 2;
  pp_now(s, &c->p, 0);
  pp_str(&c->p, 1, PG_PREPARE_MAX);
  c->sync = 1; /* committed before the claim, which must see what it did */
}

/* Reads the first step's answer: is a queue paused? */
static void pg_prepare_read(pg_store_t *s, const PGresult *res) {
  if (res && PQresultStatus(res) == PGRES_TUPLES_OK)
    s->paused = PQntuples(res) == 1 && !strcmp(pg_val(res, 0, 0), "t");
  /* The claim beside this first step may have read from a floor while a
   * queue was paused, passing that queue's rows by ("floors" above). */
  if (s->paused) s->floors_stale = 1;
}

static int pg_claim_pick(store_t *base, const store_claim_t *c,
                         pawl_job_t ***out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  if (c->max == 0) return 0;
  if (s->limits_seen) {
    /* The last claim found limits: likely still there. The claim under
     * limits is a transaction of several statements, after the first
     * step's. */
    pg_call_t prep;
    pg_prepare_call(s, &prep);
    int rc = pawl__pg_pipeline(s, &prep, 1, "prepare the claim");
    pg_prepare_read(s, prep.res);
    PQclear(prep.res);
    if (rc) return rc;
    int none = 0;
    s->floors_stale = 1; /* the rows limits held were passed by */
    rc = pawl__pg_claim_limited(s, c, out, n, &none);
    if (rc || !none) return rc;
    s->limits_seen = 0;
  }
  char *queues = NULL;
  /* A paused queue, or several queues: claim by lanes (PG_SQL_LANE_IDS),
   * so that the jobs of the paused queue or of other queues, which the
   * claim's index has among the others, are not walked. Whether a queue
   * is paused is what the first step said at the last claim: the first
   * step and the claim go in one round trip (a claim that goes the plain
   * way while a queue is paused still leaves that queue's jobs, walking
   * them once). */
  int lanes = s->paused || c->nqueues > 1;
  /* Otherwise from the floor (above, "floors"), when there is one. */
  int floor = !lanes && s->hearing;
  int which = lanes ? PG_CLAIM_LANES : floor ? PG_CLAIM_FLOOR : PG_CLAIM;
  int np = 5;
  pg_call_t calls[3];
  size_t ncalls = 0;
  pg_prepare_call(s, &calls[ncalls++]);
  if (!lanes) {
    /* The plain claim's planner settings, in the claim's transaction. */
    memset(&calls[ncalls], 0, sizeof calls[ncalls]);
    calls[ncalls++].stmt = PG_CLAIM_PLAN;
  }
  pg_call_t *cl = &calls[ncalls++];
  memset(cl, 0, sizeof *cl);
  pg_params_t *pp = &cl->p;
  if (c->nqueues == 1) {
    which += 1;
    pp_str(pp, 5, c->queues[0]);
    np = 6;
  } else if (c->nqueues > 1) {
    if (!(queues = pawl__pg_queues_array(c->queues, c->nqueues)))
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which += 2;
    pp_str(pp, 5, queues);
    np = 6;
  }
  const char *fq = c->nqueues == 1 ? c->queues[0] : NULL;
  if (floor && s->floors_stale) {
    pawl__pg_floors_reset(s);
    s->floors_stale = 0;
  }
  if (floor) {
    const int64_t *f = pg_floor_of(s, fq);
    pp_int(pp, np++, f ? *f : INT64_MAX);
  }
  /* Last, how many start now (PG_SQL_CLAIM_STARTED). */
  pp_int(pp, np++, (int64_t)c->ahead_from);
  pp_now(s, pp, 0);
  pp_str(pp, 1, c->owner);
  pp_id(pp, 2, c->token);
  pp_int(pp, 3, c->lease_ms);
  pp_int(pp, 4, (int64_t)c->max);
  cl->stmt = which;
  cl->n = np;
  int rc = pawl__pg_pipeline(s, calls, ncalls, "claim jobs");
  pawl__free(queues);
  pg_prepare_read(s, calls[0].res);
  PGresult *res = cl->res;
  cl->res = NULL;
  for (size_t i = 0; i < ncalls; i++) PQclear(calls[i].res);
  /* Jobs the claim took are handed out even when the first step failed
   * (it is done again by the next claim). */
  if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
    PQclear(res);
    return rc ? rc : pawl__pg_fail(s, NULL, "claim jobs");
  }
  if (floor && PQntuples(res) > 0) {
    int64_t low = INT64_MAX;
    for (int i = 0; i < PQntuples(res); i++) {
      int64_t r = pg_int(res, i, PG_JOB_RANK_COL);
      if (r < low) low = r;
    }
    pg_floor_set(s, fq, low);
  }
  /* Limits: nothing claimed may mean that the database has
   * limits (PG_SQL_CLAIM_NO_LIMITS); then the claim that applies them. */
  if (PQntuples(res) == 0) {
    PQclear(res);
    int none = 0;
    if ((rc = pawl__pg_limits_any(s, &none)) || none) return rc;
    s->limits_seen = 1;
    s->floors_stale = 1;
    return pawl__pg_claim_limited(s, c, out, n, &none);
  }
  return pawl__pg_claimed_jobs(s, res, out, n);
}

/* Claims (pg_claim_pick). The claim itself leaves the jobs claimed ahead
 * of a free worker (from c->ahead_from on, in claim order) not started
 * (PG_SQL_CLAIM_STARTED), but the claim under limits does not, and jobs
 * whose run times differ by less than a millisecond may be ordered here
 * otherwise than there: those left started are marked in a statement of
 * their own. Until it commits they show as running since their claim; if
 * it fails they stay so (the claim holds), and their outcomes carry their
 * true start anyway. A job before c->ahead_from that the claim left not
 * started has its start recorded when its body starts, as any such job. */
int pawl__pg_claim(store_t *base, const store_claim_t *c, pawl_job_t ***out,
                   size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pg_claim_pick(base, c, out, n);
  if (rc || *n <= c->ahead_from) return rc;
  pawl_buf_t ids;
  arr_begin(&ids);
  size_t marked = 0;
  for (size_t i = c->ahead_from; i < *n; i++)
    if ((*out)[i]->started_at != 0) {
      arr_id(&ids, &(*out)[i]->id);
      marked++;
    }
  arr_end(&ids);
  if (marked && !ids.oom) {
    pg_params_t pp;
    pp_str(&pp, 0, ids.data);
    pp_id(&pp, 1, c->token);
    if (pawl__pg_run(s, PG_AHEAD, 2, pp.v, NULL, "mark jobs claimed ahead") ==
        0)
      for (size_t i = c->ahead_from; i < *n; i++) (*out)[i]->started_at = 0;
  }
  pawl__buf_free(&ids);
  return 0;
}

/* The jobs of a claim's result (RETURNING PG_JOB_COLS), in claim order;
 * frees the result. */
int pawl__pg_claimed_jobs(pg_store_t *s, PGresult *res, pawl_job_t ***out,
                          size_t *n) {
  store_t *base = &s->base;
  int rc = 0;
  size_t got = (size_t)PQntuples(res);
  pg_ranked_t *ranked = pawl__calloc(got ? got : 1, sizeof *ranked);
  pawl_job_t **jobs = pawl__malloc((got ? got : 1) * sizeof *jobs);
  if (!ranked || !jobs)
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  size_t built = 0;
  for (; !rc && built < got; built++) {
    ranked[built].job = pawl__pg_row_to_job(res, (int)built);
    ranked[built].rank = pg_int(res, (int)built, PG_JOB_RANK_COL);
    if (!ranked[built].job)
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  }
  PQclear(res);
  if (rc) {
    /* The jobs are claimed but cannot be handed out: their leases expire
     * and recovery takes them back. */
    for (size_t i = 0; ranked && i < built; i++) pawl_job_free(ranked[i].job);
    pawl__free(ranked);
    pawl__free(jobs);
    return rc;
  }
  qsort(ranked, got, sizeof *ranked, pg_ranked_cmp);
  for (size_t i = 0; i < got; i++) jobs[i] = ranked[i].job;
  pawl__free(ranked);
  if (got == 0) {
    pawl__free(jobs);
    jobs = NULL;
  }
  *out = jobs;
  *n = got;
  return 0;
}

int pawl__pg_extend(store_t *base, const pawl_id_t *token, int64_t lease_ms,
                    size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, lease_ms);
  pp_id(&pp, 2, token);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_EXTEND, 3, pp.v, &res, "extend leases");
  if (rc) return rc;
  if (n) *n = (size_t)pg_changed(res);
  PQclear(res);
  return 0;
}

int pawl__pg_extend_one(store_t *base, const pawl_id_t *id,
                        const pawl_id_t *token, int32_t attempt,
                        int64_t lease_ms, int *held) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, lease_ms);
  pp_id(&pp, 2, id);
  pp_id(&pp, 3, token);
  pp_int(&pp, 4, attempt);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_EXTEND_ONE, 5, pp.v, &res, "extend lease");
  if (rc) return rc;
  *held = pg_changed(res) == 1;
  PQclear(res);
  return 0;
}

int pawl__pg_next_due(store_t *base, const char *const *queues, size_t nqueues,
                      int64_t *run_at) {
  pg_store_t *s = (pg_store_t *)base;
  char *arr = NULL;
  int which = PG_NEXT_DUE, np = 0;
  const char *v[1] = {NULL};
  /* Limits: a job held back by one is not due. */
  {
    pg_params_t pp;
    pp_now(s, &pp, 0);
    PGresult *lr;
    int rc = pawl__pg_run(s, PG_LIMITS_READ, 1, pp.v, &lr, "read limits");
    if (rc) return rc;
    store_limits_t l = {0};
    int64_t now = 0;
    rc = pawl__pg_limits_rows(s, lr, 1, &l, &now);
    PQclear(lr);
    if (!rc && l.n) {
      pawl__store_limits_plan(&l, now, SIZE_MAX);
      if (nqueues && !(arr = pawl__pg_queues_array(queues, nqueues)))
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      else
        rc = pawl__pg_next_due_limited(s, &l, queues, nqueues, arr, run_at);
    }
    int had = l.n > 0;
    pawl__store_limits_free(&l);
    pawl__free(arr);
    arr = NULL;
    if (rc || had) return rc;
  }
  if (s->hearing && !s->paused && nqueues <= 1) {
    /* From the floor, as the claims read (from the top when the next
     * claim will start there). */
    const int64_t *f =
        s->floors_stale ? NULL : pg_floor_of(s, nqueues ? queues[0] : NULL);
    pg_params_t fp;
    pp_int(&fp, 0, f ? *f : INT64_MAX);
    if (nqueues) pp_str(&fp, 1, queues[0]);
    PGresult *res;
    int rc = pawl__pg_run(s, nqueues ? PG_NEXT_DUE_FLOOR_QUEUE : PG_NEXT_DUE_FLOOR,
                          nqueues ? 2 : 1, fp.v, &res, "find next due job");
    if (rc) return rc;
    *run_at = PQntuples(res) && !PQgetisnull(res, 0, 0) ? pg_int(res, 0, 0) : 0;
    PQclear(res);
    return 0;
  }
  if (nqueues == 1) {
    which = PG_NEXT_DUE_QUEUE;
    v[0] = queues[0];
    np = 1;
  } else if (nqueues > 1) {
    if (!(arr = pawl__pg_queues_array(queues, nqueues)))
      return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
    which = PG_NEXT_DUE_QUEUES;
    v[0] = arr;
    np = 1;
  }
  PGresult *res;
  int rc = pawl__pg_run(s, which, np, v, &res, "find next due job");
  pawl__free(arr);
  if (rc) return rc;
  /* min() over no rows is one NULL row: 0, "none pending". */
  *run_at = PQntuples(res) ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

/* Takes back expired leases, each as pawl__store_plan_recovery() decides: back
 * to pending with the attempt counted, or failed when that was its last
 * attempt or it has been lost while running too often (a poison job that
 * keeps killing its node; only losses of attempts known to have started
 * count). */
int pawl__pg_recover(store_t *base, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  /* The walk of the running rows' index starts at the last sweep's time
   * less a margin, not at the oldest entry (under a pinned horizon, every
   * job run since it began). A lease that ran out before that was taken
   * back by that sweep, or passed over because its row was locked (the
   * margin gives it the next sweeps), or left by a sweep that reached its
   * limit (then the mark does not move). Every few minutes a sweep walks
   * it all anyway, for what the margin missed. */
  int64_t now = pawl__store_now(base), from = s->swept_from;
  if (now >= s->full_sweep_at) {
    from = 0;
    s->full_sweep_at = now + PG_FULL_SWEEP_MS;
  }
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  pp_int(&pp, 1, from);
  PGresult *lost;
  if ((rc = pawl__pg_run(s, PG_EXPIRED, 2, pp.v, &lost, "find expired leases")))
    return pawl__pg_end(s, rc);
  int full = PQntuples(lost) >= atoi(PG_SWEEP_MAX);
  size_t count = 0;
  /* Dependencies: the jobs recovered into failed. */
  pawl_buf_t ended;
  arr_begin(&ended);
  size_t nended = 0;
  for (int i = 0; i < PQntuples(lost) && !rc; i++) {
    pawl_id_t id;
    pg_id(lost, i, 0, &id);
    const char *started = pg_val(lost, i, 6);
    store_lost_t row = {
        .attempt = (int32_t)pg_int(lost, i, 1),
        .max_attempts = (int32_t)pg_int(lost, i, 2),
        .recoveries = (int32_t)pg_int(lost, i, 3),
        .owner = pg_val(lost, i, 4),
        .crashes = (int32_t)pg_int(lost, i, 5),
        .started = started && started[0] == 't',
    };
    store_recovery_t plan;
    pawl__store_plan_recovery(&row, s->poison, &plan);
    pg_call_t c;
    memset(&c, 0, sizeof c);
    pawl__pg_end_attempt_call(s, &c, &id, "lost", plan.why, NULL, 0, plan.to,
                              plan.why, 0, 0, plan.why, 1, 0, 0, 0, NULL);
    PGresult *res;
    rc = pawl__pg_run(s, PG_END_ATTEMPT, c.n, c.p.v, &res, "recover job");
    if (!rc) {
      count += PQntuples(res) == 1;
      if (PQntuples(res) == 1 && plan.to == PAWL_FAILED) {
        arr_id(&ended, &id);
        nended++;
      }
      PQclear(res);
    }
    if (!rc && plan.crashed) {
      pg_params_t cp;
      pp_id(&cp, 0, &id);
      if (!(rc = pawl__pg_run(s, PG_CRASHED, 1, cp.v, &res, "count a crash")))
        PQclear(res);
    }
  }
  PQclear(lost);
  arr_end(&ended);
  if (!rc && ended.oom)
    rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rc && nended) {
    pg_params_t dp;
    pp_str(&dp, 0, ended.data);
    pp_now(s, &dp, 1);
    rc = pawl__pg_run(s, PG_DEPS_RELEASE, 2, dp.v, NULL,
                      "release the children of ended jobs");
  }
  pawl__buf_free(&ended);
  /* A node whose leases expired died, maybe in the middle of a claim: the
   * rows that claim had locked were passed over by the others' claims,
   * whose floors went past them, and nothing since has said they are
   * claimable. Every floor goes back to the top ("floors" above). */
  if (!rc && count)
    rc = pawl__pg_run(s, PG_FLOORS_RESET, 0, NULL, NULL, "wake the claims");
  rc = pawl__pg_end(s, rc);
  if (!rc && !full) s->swept_from = now - PG_SWEEP_MARGIN_MS;
  if (!rc && n) *n = count;
  return rc;
}

int pawl__pg_start(store_t *base, const pawl_id_t *id, const pawl_id_t *token,
                   int32_t attempt, int64_t at, int poison) {
  pg_store_t *s = (pg_store_t *)base;
  /* One transaction: the row is found by id (PG_SQL_BY_ID_PLAN), its
   * start recorded, then its start noted for the poison count. */
  pg_call_t calls[3];
  memset(calls, 0, sizeof calls);
  size_t n = 0, run = SIZE_MAX, mark = SIZE_MAX;
  calls[n++].stmt = PG_BY_ID_PLAN;
  if (at) {
    run = n;
    calls[n].stmt = PG_RUN_START;
    calls[n].n = 5;
    pawl__pg_run_start_params(s, &calls[n++].p, id, token, attempt, at);
  }
  if (poison) {
    mark = n;
    calls[n].stmt = PG_START;
    calls[n].n = 3;
    pp_id(&calls[n].p, 0, id);
    pp_id(&calls[n].p, 1, token);
    pp_int(&calls[n++].p, 2, attempt);
  }
  int rc = pawl__pg_pipeline(s, calls, n, "record the start of an attempt");
  /* Not held: the update found no row (and then neither did the note). */
  int held = !rc && (run == SIZE_MAX || PQntuples(calls[run].res) == 1) &&
             (mark == SIZE_MAX || pg_changed(calls[mark].res) == 1);
  for (size_t i = 0; i < n; i++) PQclear(calls[i].res);
  if (rc) return rc;
  return held ? 0 : pawl__store_not_held(base, id, attempt);
}
