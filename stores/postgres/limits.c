/* limits.c: PostgreSQL store, concurrency and rate limits, in the claim and for
 * the operator (store.h, "limits"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__LIMITS
const char *const pawl__pg_sql_limits[PG__TERMINAL - PG__LIMITS] = {
    /* limits */
    PG_AT(PG_CLAIM_LIM_PICK) = PG_SQL_CLAIM_LIM_PICK,
    PG_AT(PG_CLAIM_LIM_PICK_QUEUE) = PG_SQL_CLAIM_LIM_PICK_QUEUE,
    PG_AT(PG_CLAIM_LIM_PICK_QUEUES) = PG_SQL_CLAIM_LIM_PICK_QUEUES,
    PG_AT(PG_CLAIM_LIM_LANES) = PG_SQL_CLAIM_LIM_LANES,
    PG_AT(PG_CLAIM_LIM_LANES_QUEUE) = PG_SQL_CLAIM_LIM_LANES_QUEUE,
    PG_AT(PG_CLAIM_LIM_LANES_QUEUES) = PG_SQL_CLAIM_LIM_LANES_QUEUES,
    PG_AT(PG_CLAIM_LIM_TAKE) = PG_SQL_CLAIM_LIM_TAKE,
    PG_AT(PG_LIMITS_ANY) = "SELECT 1 FROM pawl_limits LIMIT 1",
    /* Every limit, locked in name order (so claimers never deadlock on
     * them), with the claim's "now": see pawl__pg_claim_limited(). */
    PG_AT(PG_LIMITS_LOCK) =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(pawl_now($1::bigint)) FROM pawl_limits ORDER BY name "
        "FOR UPDATE",
    /* Permits in use of the limits $1: running rows (through
     * pawl_jobs_resource_running, or pawl_jobs_running for a queue's). */
    PG_AT(PG_LIMITS_RUNNING) =
        "SELECT n, CASE WHEN left(n, 6) = 'queue:' THEN (SELECT count(*) "
        "FROM pawl_jobs WHERE state = 1 AND queue = substr(n, 7)) ELSE "
        "(SELECT count(*) FROM pawl_jobs WHERE state = 1 AND resource = n) "
        "END FROM unnest($1::text[]) AS n",
    /* The same in one statement, unlocked, for next_due(). */
    PG_AT(PG_LIMITS_READ) =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(pawl_now($1::bigint)), CASE WHEN max_running IS NULL THEN "
        "0 WHEN left(name, 6) = 'queue:' THEN (SELECT count(*) FROM "
        "pawl_jobs WHERE state = 1 AND queue = substr(name, 7)) ELSE "
        "(SELECT count(*) FROM pawl_jobs j WHERE j.state = 1 AND "
        "j.resource = pawl_limits.name) END FROM pawl_limits",
    PG_AT(PG_LIMITS_WINDOWS) =
        "UPDATE pawl_limits AS l SET window_start = w.s, window_count = w.c "
        "FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS w(n, s, c) "
        "WHERE l.name = w.n",
    /* The window's count survives a change that keeps its length. */
    PG_AT(PG_LIMIT_SET) =
        "INSERT INTO pawl_limits AS l (name, max_running, rate, "
        "rate_window_ms, updated_at) VALUES ($1::text, $2::bigint, "
        "$3::bigint, $4::bigint, pawl_now($5::bigint)) ON CONFLICT (name) "
        "DO UPDATE SET max_running = excluded.max_running, "
        "rate = excluded.rate, window_start = CASE WHEN l.rate_window_ms IS "
        "NOT DISTINCT FROM excluded.rate_window_ms THEN l.window_start ELSE "
        "0 END, window_count = CASE WHEN l.rate_window_ms IS NOT DISTINCT "
        "FROM excluded.rate_window_ms THEN l.window_count ELSE 0 END, "
        "rate_window_ms = excluded.rate_window_ms, "
        "updated_at = excluded.updated_at",
    PG_AT(PG_LIMIT_REMOVE) = "DELETE FROM pawl_limits WHERE name = $1::text",
    PG_AT(PG_LIMIT_LIST) =
        "SELECT name, coalesce(max_running, 0), coalesce(rate, 0), "
        "coalesce(rate_window_ms, 0), window_start, window_count, "
        "pawl_ms(updated_at), CASE WHEN left(name, 6) = 'queue:' THEN "
        "(SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = "
        "substr(name, 7)) ELSE (SELECT count(*) FROM pawl_jobs j WHERE "
        "j.state = 1 AND j.resource = pawl_limits.name) END FROM "
        "pawl_limits ORDER BY name COLLATE \"C\"",
    PG_AT(PG_NEXT_DUE_LIM) = PG_SQL_NEXT_DUE_LIM,
    PG_AT(PG_NEXT_DUE_LIM_RES) = PG_SQL_NEXT_DUE_LIM_RES,
    PG_AT(PG_NEXT_DUE_LIM_QUEUE) = PG_SQL_NEXT_DUE_LIM_QUEUE,
};
#undef PG_HERE

/* ---- limits --------------------------------------------------------------
 *
 * The claim's steps are in stores/store.h ("limits"). A database without
 * limits keeps the one-statement claim (PG_SQL_CLAIM), which takes nothing
 * when limits exist (PG_SQL_CLAIM_NO_LIMITS); the claim then runs
 * pawl__pg_claim_limited(), and goes on doing so while limits are there
 * (limits_seen).
 *
 * Why locking every limit row (PG_LIMITS_LOCK) is enough to keep each
 * limit's bounds with any number of nodes claiming at once:
 * - every claim that may start a job under a limit holds the locks of all
 *   limit rows from before it counts the running jobs until it commits
 *   the jobs it took and the windows it counted. Two such claims are
 *   therefore serialized, and the second one's counting statements, each
 *   with a snapshot of its own (READ COMMITTED) taken after its lock
 *   wait, see the first one's running jobs and window counts;
 * - a claim that saw no limits at all (the one-statement claim, whose
 *   snapshot had no limit row) may start jobs while a limit is being set:
 *   a limit binds the claims that begin after it was committed, as it
 *   binds nothing that was already running;
 * - nothing else makes a job running (lease recovery, finishes, operator
 *   actions only end running states), so nothing else can raise a count;
 *   what lowers one without the lock (a finish) only makes a claim that
 *   misses it take fewer;
 * - the picked jobs are locked (FOR UPDATE SKIP LOCKED) and taken in the
 *   same transaction; they cannot be taken twice.
 * Claims on a database with limits wait for each other for the length of
 * a claim transaction (a few round trips), which bounds how many claims a
 * second the cluster makes then, not how many jobs each takes. Claimers
 * lock in name order and lock nothing else they wait for (job rows are
 * skipped when locked), so they never deadlock. */

/* *none = 1 when the database has no limits. */
int pawl__pg_limits_any(pg_store_t *s, int *none) {
  PGresult *res;
  int rc = pawl__pg_run(s, PG_LIMITS_ANY, 0, NULL, &res, "read limits");
  if (rc) return rc;
  *none = PQntuples(res) == 0;
  PQclear(res);
  return 0;
}

/* The limits of a PG_LIMITS_LOCK or PG_LIMITS_READ result into l, with
 * the "now" they were read at. */
int pawl__pg_limits_rows(pg_store_t *s, PGresult *res, int with_running,
                         store_limits_t *l, int64_t *now) {
  int rows = PQntuples(res);
  for (int i = 0; i < rows; i++) {
    if (pawl__store_limits_add(l, pg_val(res, i, 0), pg_int(res, i, 1),
                               pg_int(res, i, 2), pg_int(res, i, 3),
                               pg_int(res, i, 4), pg_int(res, i, 5)))
      return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
    if (with_running) l->v[l->n - 1].running = pg_int(res, i, 7);
    *now = pg_int(res, i, 6);
  }
  return 0;
}

/* The running jobs of the limits with a max_running (after the lock). */
static int pg_limits_running(pg_store_t *s, store_limits_t *l) {
  pawl_buf_t names;
  arr_begin(&names);
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].max_running) arr_str(&names, l->v[i].name);
  arr_end(&names);
  if (names.len <= 2) {
    pawl__buf_free(&names);
    return 0;
  }
  if (names.oom) {
    pawl__buf_free(&names);
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  }
  const char *v[1] = {names.data};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_LIMITS_RUNNING, 1, v, &res, "count running jobs");
  pawl__buf_free(&names);
  if (rc) return rc;
  for (int r = 0; r < PQntuples(res); r++)
    for (size_t i = 0; i < l->n; i++)
      if (!strcmp(l->v[i].name, pg_val(res, r, 0)))
        l->v[i].running = pg_int(res, r, 1);
  PQclear(res);
  return 0;
}

/* A text[] literal of the limits with nothing left: their queues
 * (`queues` set) or their resources. */
static void pg_limits_blocked(const store_limits_t *l, int queues,
                              pawl_buf_t *b) {
  arr_begin(b);
  for (size_t i = 0; i < l->n; i++) {
    const char *q = pawl__store_limit_queue(&l->v[i]);
    if (pawl__store_limit_blocked(&l->v[i]) && !q == !queues)
      arr_str(b, queues ? q : l->v[i].name);
  }
  arr_end(b);
}

/* Step 5: the rate windows of the limits that counted starts. */
static int pg_limits_save(pg_store_t *s, const store_limits_t *l) {
  pawl_buf_t names, starts, counts;
  arr_begin(&names);
  arr_begin(&starts);
  arr_begin(&counts);
  int any = 0;
  for (size_t i = 0; i < l->n; i++) {
    int64_t start, count;
    if (!pawl__store_limit_window(&l->v[i], &start, &count)) continue;
    arr_str(&names, l->v[i].name);
    arr_int(&starts, start);
    arr_int(&counts, count);
    any = 1;
  }
  arr_end(&names);
  arr_end(&starts);
  arr_end(&counts);
  int rc = 0;
  if (names.oom || starts.oom || counts.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  else if (any) {
    const char *v[3] = {names.data, starts.data, counts.data};
    rc = pawl__pg_run(s, PG_LIMITS_WINDOWS, 3, v, NULL,
                      "count starts under a rate limit");
  }
  pawl__buf_free(&names);
  pawl__buf_free(&starts);
  pawl__buf_free(&counts);
  return rc;
}

/* Steps 3 to 5 with the limits locked and planned: picks, admits, takes
 * and counts. */
static int pg_claim_admit(pg_store_t *s, const store_claim_t *c,
                          store_limits_t *l, const char *queues,
                          pawl_job_t ***out, size_t *n) {
  pawl_buf_t res_b, qs_b, ids;
  pg_limits_blocked(l, 0, &res_b);
  pg_limits_blocked(l, 1, &qs_b);
  arr_begin(&ids);
  int rc = 0;
  if (res_b.oom || qs_b.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  pg_params_t pp;
  /* A closed lane (a limit with nothing left, a paused queue), or a claim
   * for several queues: pick by lanes, so that the jobs of closed lanes and
   * of other queues are not walked (PG_SQL_LANE_IDS). */
  int closed = s->paused || res_b.len > 2 || qs_b.len > 2 || c->nqueues > 1;
  int which = closed ? PG_CLAIM_LIM_LANES : PG_CLAIM_LIM_PICK, np = 4;
  if (c->nqueues) {
    which += c->nqueues == 1 ? 1 : 2;
    pp_str(&pp, 4, c->nqueues == 1 ? c->queues[0] : queues);
    np = 5;
  }
  pp_now(s, &pp, 0);
  pp_str(&pp, 1, res_b.data);
  pp_str(&pp, 2, qs_b.data);
  pp_int(&pp, 3, (int64_t)c->max);
  PGresult *res = NULL;
  if (!rc) rc = pawl__pg_run(s, which, np, pp.v, &res, "pick jobs to claim");
  size_t taken = 0;
  for (int i = 0; !rc && i < PQntuples(res); i++) {
    if (!pawl__store_limits_admit(l, pg_val(res, i, 1), pg_val(res, i, 2)))
      continue;
    arr_sep(&ids);
    pawl__buf_puts(&ids, pg_val(res, i, 0));
    taken++;
  }
  arr_end(&ids);
  PQclear(res);
  pawl__buf_free(&res_b);
  pawl__buf_free(&qs_b);
  if (!rc && ids.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  if (rc || taken == 0) {
    pawl__buf_free(&ids);
    return rc;
  }
  pp_now(s, &pp, 0);
  pp_str(&pp, 1, c->owner);
  pp_id(&pp, 2, c->token);
  pp_int(&pp, 3, c->lease_ms);
  pp_int(&pp, 4, (int64_t)taken);
  pp_str(&pp, 5, ids.data);
  rc = pawl__pg_run(s, PG_CLAIM_LIM_TAKE, 6, pp.v, &res, "claim jobs");
  pawl__buf_free(&ids);
  if (rc) return rc;
  if ((size_t)PQntuples(res) != taken) {
    PQclear(res);
    return pawl__store_fail(&s->base, PAWL_ESTORE,
                            "claim: %zu jobs picked and locked, but not all "
                            "were taken", taken);
  }
  if ((rc = pg_limits_save(s, l))) {
    PQclear(res);
    return rc;
  }
  return pawl__pg_claimed_jobs(s, res, out, n);
}

/* The claim on a database with limits, in one transaction (see above).
 * *none = 1 (and nothing claimed) when there are no limits after all. */
int pawl__pg_claim_limited(pg_store_t *s, const store_claim_t *c,
                           pawl_job_t ***out, size_t *n, int *none) {
  *none = 0;
  char *queues = NULL;
  if (c->nqueues > 1 &&
      !(queues = pawl__pg_queues_array(c->queues, c->nqueues)))
    return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  store_limits_t l = {0};
  int64_t now = 0;
  pg_params_t pp;
  pp_now(s, &pp, 0);
  PGresult *res = NULL;
  int rc = pawl__pg_begin(s);
  if (!rc) rc = pawl__pg_run(s, PG_LIMITS_LOCK, 1, pp.v, &res, "lock limits");
  if (!rc) {
    *none = PQntuples(res) == 0;
    rc = pawl__pg_limits_rows(s, res, 0, &l, &now);
    PQclear(res);
  }
  if (!rc && !*none) rc = pg_limits_running(s, &l);
  if (!rc && !*none) {
    pawl__store_limits_plan(&l, now, c->limited_max);
    rc = pg_claim_admit(s, c, &l, queues, out, n);
  }
  pawl__store_limits_free(&l);
  pawl__free(queues);
  rc = pawl__pg_end(s, rc);
  if (rc && *out) {
    /* Not committed: the jobs are not ours. */
    pawl_jobs_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

/* next_due() on a database with limits: as pawl__sq_next_due_limited()
 * (stores/sqlite/limits.c). */
int pawl__pg_next_due_limited(pg_store_t *s, store_limits_t *l,
                              const char *const *queues, size_t nqueues,
                              const char *arr, int64_t *run_at) {
  pawl_buf_t res_b, qs_b;
  pg_limits_blocked(l, 0, &res_b);
  pg_limits_blocked(l, 1, &qs_b);
  int rc = 0;
  int64_t at = 0;
  if (res_b.oom || qs_b.oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i <= l->n; i++) {
    const store_limit_t *lim = i ? &l->v[i - 1] : NULL;
    const char *v[3] = {arr, res_b.data, qs_b.data};
    int which = PG_NEXT_DUE_LIM, np = 3;
    int64_t floor = 0;
    if (lim) {
      if (!lim->rate_blocked) continue;
      const char *q = pawl__store_limit_queue(lim);
      int mine = !q || nqueues == 0;
      for (size_t k = 0; !mine && k < nqueues; k++)
        mine = !strcmp(q, queues[k]);
      if (!mine) continue;
      which = q ? PG_NEXT_DUE_LIM_QUEUE : PG_NEXT_DUE_LIM_RES;
      v[0] = q ? q : lim->name;
      v[1] = arr;
      np = q ? 1 : 2;
      floor = pawl__store_limit_window_end(lim);
    }
    PGresult *res;
    if ((rc = pawl__pg_run(s, which, np, v, &res, "find next due job"))) break;
    if (PQntuples(res) && !PQgetisnull(res, 0, 0)) {
      int64_t due = pg_int(res, 0, 0);
      if (due < floor) due = floor;
      if (!at || due < at) at = due;
    }
    PQclear(res);
  }
  pawl__buf_free(&res_b);
  pawl__buf_free(&qs_b);
  if (!rc) *run_at = at;
  return rc;
}

int pawl__pg_limit_set(store_t *base, const char *name, int64_t max_running,
                       int64_t rate, int64_t window_ms) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_str(&pp, 0, name);
  pp_opt_int(&pp, 1, max_running > 0, max_running);
  pp_opt_int(&pp, 2, rate > 0, rate);
  pp_opt_int(&pp, 3, rate > 0, window_ms);
  pp_now(s, &pp, 4);
  return pawl__pg_run(s, PG_LIMIT_SET, 5, pp.v, NULL, "set limit");
}

int pawl__pg_limit_remove(store_t *base, const char *name) {
  pg_store_t *s = (pg_store_t *)base;
  const char *v[1] = {name};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_LIMIT_REMOVE, 1, v, &res, "remove limit");
  if (rc) return rc;
  long n = pg_changed(res);
  PQclear(res);
  if (n == 0)
    return pawl__store_fail(base, PAWL_ENOTFOUND, "no limit named \"%s\"",
                            name);
  return 0;
}

int pawl__pg_limit_list(store_t *base, pawl_limit_t **out, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  *out = NULL;
  *n = 0;
  PGresult *res;
  int rc = pawl__pg_run(s, PG_LIMIT_LIST, 0, NULL, &res, "list limits");
  if (rc) return rc;
  pawl_limit_t *v = NULL;
  size_t count = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    pawl_limit_t *lim = pawl__store_push((void **)&v, &count, sizeof *lim);
    if (!lim || pawl__store_dup(&lim->name, pg_val(res, i, 0))) {
      rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
      break;
    }
    lim->max_running = pg_int(res, i, 1);
    lim->rate = pg_int(res, i, 2);
    lim->rate_window_ms = pg_int(res, i, 3);
    lim->window_start = pg_int(res, i, 4);
    lim->window_count = pg_int(res, i, 5);
    lim->updated_at = pg_int(res, i, 6);
    lim->running = pg_int(res, i, 7);
  }
  PQclear(res);
  if (rc) {
    pawl_limits_free(v, count);
    return rc;
  }
  *out = v;
  *n = count;
  return 0;
}
