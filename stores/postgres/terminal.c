/* terminal.c: PostgreSQL store, the finish of a batch of outcomes (store.h,
 * "terminal"). */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__TERMINAL
const char *const pawl__pg_sql_terminal[PG__CONTROL - PG__TERMINAL] = {
    PG_AT(PG_SUCCEED_MANY) = PG_SQL_SUCCEED_MANY,
    /* Ends a running attempt other than by success, in one statement: the
     * attempt row and the event come from the row as it was, then the row
     * moves on. With a token ($5) only the holder's attempt $6 matches, which
     * is how a stale outcome is detected (no row returned).
     * $1 now, $2 id, $3 attempt outcome, $4 attempt error, $5 token,
     * $6 attempt, $7 new state, $8 event reason, $9 run_at (NULL: now;
     * with $10 = 1, a release: where it was in line, since it never ran,
     * its run_at and rank kept), $10 attempts given back (0 or 1), $11
     * age boost, $12 last error (NULL: keep), $13 recoveries added (0 or
     * 1), $14 ordering_skip of a requeue
     * (a retry under ordering = "skip_failed"; a recovery keeps it), $15
     * and $16 the body's start and end as its worker measured them (NULL:
     * not measured: the claim's time and now), $17 the attempt's traceback
     * (NULL: none). A job
     * that fails for good ($7 = 3) is added to its throughput bucket, and
     * to its batch's counters if it has one. */
    PG_AT(PG_END_ATTEMPT) =
        "WITH cur AS (SELECT id, queue, attempt, lease_owner, run_at, "
        "started_at, batch_id FROM pawl_jobs AS j WHERE j.id = $2::uuid AND "
        PG_RUNNING_BY_ID
        " AND ($5::uuid IS NULL OR (j.lease_token = $5::uuid AND j.attempt = "
        "$6::int)) FOR UPDATE), "
        "att AS (INSERT INTO pawl_attempts (job_id, attempt, node, "
        "scheduled_at, started_at, ended_at, outcome, error, trace) SELECT "
        "id, attempt, lease_owner, run_at, "
        PG_SQL_RUN_START("$15::bigint", "pawl_now($1::bigint)") ", "
        PG_SQL_RUN_END("$15::bigint", "$16::bigint", "pawl_now($1::bigint)")
        ", $3::text, $4::text, $17::text FROM cur AS j), "
        "ev AS (INSERT INTO pawl_events (job_id, at, from_state, to_state, "
        "actor, reason, attempt) SELECT id, pawl_now($1::bigint), 1, "
        "$7::smallint, lease_owner, $8::text, attempt FROM cur), "
        /* A job failing for good counts in its throughput bucket. */
        "tp AS (INSERT INTO pawl_throughput (minute, state, queue, count) "
        "SELECT " PG_SQL_TP_MINUTE ", 3, queue, 1 FROM cur WHERE "
        "$7::smallint = 3" PG_SQL_TP_UPSERT "), "
        /* A child failing for good counts in its batch. */
        "bt AS (UPDATE pawl_batches AS bb SET failed = bb.failed + 1, "
        "updated_at = pawl_now($1::bigint) FROM cur WHERE $7::smallint = 3 "
        "AND bb.id = cur.batch_id) "
        "UPDATE pawl_jobs AS j SET state = $7::smallint, run_at = CASE WHEN "
        "$7::smallint <> 0 OR ($9::bigint IS NULL AND $10::int = 1) THEN "
        "j.run_at ELSE coalesce(pawl_ts($9::bigint), pawl_now($1::bigint)) "
        "END, rank = CASE WHEN $7::smallint <> 0 OR ($9::bigint IS NULL AND "
        "$10::int = 1) THEN j.rank ELSE pawl_rank(j.priority, coalesce("
        "pawl_ts($9::bigint), pawl_now($1::bigint)), "
        PG_SQL_QUEUE_BOOST("$11::bigint") ") END, "
        "attempt = j.attempt - $10::int, last_error = coalesce($12::text, "
        "j.last_error), finished_at = CASE WHEN $7::smallint = 3 THEN "
        "pawl_now($1::bigint) ELSE j.finished_at END, recoveries = "
        "j.recoveries + $13::int, updated_at = pawl_now($1::bigint), "
        "ordering_skip = CASE WHEN $7::smallint = 0 AND $13::int = 0 THEN "
        "$14::boolean ELSE j.ordering_skip END, "
        "lease_expires = NULL, version = j.version + 1 FROM cur WHERE "
        "j.id = cur.id RETURNING j.id",
    /* Log lines of a batch of outcomes: $1 now, then one array per column
     * ($4 at: NULL for "the time of the finish"). Lines of a job that is
     * gone (deleted by retention) are dropped instead of failing the batch. */
    PG_AT(PG_LOG_MANY) =
        "INSERT INTO pawl_logs (job_id, attempt, at, level, message, fields) "
        "SELECT l.job_id, l.attempt, coalesce(pawl_ts(l.at), "
        "pawl_now($1::bigint)), l.level, l.message, l.fields FROM "
        "unnest($2::uuid[], $3::int[], $4::bigint[], $5::text[], $6::text[], "
        "$7::jsonb[]) WITH ORDINALITY AS l(job_id, attempt, at, level, "
        "message, fields, n) WHERE EXISTS (SELECT 1 FROM pawl_jobs WHERE "
        "id = l.job_id) ORDER BY l.n",
    PG_AT(PG_TP_TRIM) = "DELETE FROM pawl_throughput WHERE minute < "
                   PG_SQL_TP_MINUTE " - $2::bigint",
    /* The branches that fired, for the batch's successes that
     * carry them: $1 ids, $2 JSON arrays, $3 the lease token. */
    PG_AT(PG_DEPS_BRANCHES) =
        "UPDATE pawl_jobs AS j SET branches = b.br FROM unnest($1::uuid[], "
        "$2::jsonb[]) AS b(id, br) WHERE j.id = b.id AND j.state = 2 AND "
        "j.lease_token = $3::uuid",
};
#undef PG_HERE

/* ---- finishing attempts -------------------------------------------------- */

/* Fills an END_ATTEMPT call (see its SQL for the parameters). */
/* The parameters of PG_RUN_START. */
void pawl__pg_run_start_params(pg_store_t *s, pg_params_t *pp,
                               const pawl_id_t *id, const pawl_id_t *token,
                               int32_t attempt, int64_t at) {
  pp_now(s, pp, 0);
  pp_id(pp, 1, id);
  pp_id(pp, 2, token);
  pp_int(pp, 3, at);
  pp_int(pp, 4, attempt);
}

void pawl__pg_end_attempt_call(pg_store_t *s, pg_call_t *c, const pawl_id_t *id,
                               const char *outcome, const char *error,
                               const pawl_id_t *token, int32_t attempt, int to,
                               const char *reason, int64_t run_at,
                               int give_back, const char *last_error,
                               int recovered, int ordering_skip,
                               int64_t started_at, int64_t ended_at,
                               const char *trace) {
  pg_params_t *p = &c->p;
  c->stmt = PG_END_ATTEMPT;
  c->n = 17;
  pp_now(s, p, 0);
  pp_id(p, 1, id);
  pp_str(p, 2, outcome);
  pp_str(p, 3, error);
  pp_id(p, 4, token);
  pp_int(p, 5, attempt);
  pp_int(p, 6, to);
  pp_str(p, 7, reason);
  if (run_at)
    pp_int(p, 8, run_at);
  else
    pp_str(p, 8, NULL);
  pp_int(p, 9, give_back);
  pp_int(p, 10, s->boost_ms);
  pp_str(p, 11, last_error);
  pp_int(p, 12, recovered);
  pp_str(p, 13, ordering_skip ? "true" : "false");
  if (started_at)
    pp_int(p, 14, started_at);
  else
    pp_str(p, 14, NULL);
  if (ended_at)
    pp_int(p, 15, ended_at);
  else
    pp_str(p, 15, NULL);
  pp_str(p, 16, trace);
}

static int pg_id_cmp(const void *a, const void *b) {
  return memcmp(((const pawl_id_t *)a)->bytes, ((const pawl_id_t *)b)->bytes,
                16);
}

/* One finish call's batch: the pipeline's calls, and the arrays the
 * successes and the log lines travel in (one statement each). */
typedef struct pg_batch {
  size_t n;                  /* outcomes */
  int *local;                /* rcs when the caller gave none */
  /* At most: one call for the logs, one for the successes, one per other
   * outcome, one for the trim of old throughput buckets. Reasons with numbers
   * in them need storage that outlives the loop: one per outcome. */
  pg_call_t *calls;
  size_t ncalls;
  char (*why)[96];
  size_t *call_of;           /* each outcome's call; SIZE_MAX: none */
  size_t succ_call;          /* the successes' call; SIZE_MAX: none */
  size_t nsucc, nlogs;
  pawl_buf_t ids, attempts, results, starts, ends;
  pawl_buf_t lids, latt, lat, llevel, lmsg, lfields;
  /* Dependencies: the jobs the batch ends (succeeded, failed),
   * whose children it releases; the successes with fired branches. */
  size_t nended, nbranches;
  pawl_buf_t ended, bids, branches;
} pg_batch_t;

#define PG_BATCH_BUFS(b)                                                     \
  {&(b)->ids, &(b)->attempts, &(b)->results, &(b)->lids, &(b)->latt,         \
   &(b)->lat, &(b)->llevel, &(b)->lmsg, &(b)->lfields, &(b)->ended,          \
   &(b)->bids, &(b)->branches, &(b)->starts, &(b)->ends}

static void pg_batch_free(pg_batch_t *b) {
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  pawl__pg_calls_free(b->calls, b->ncalls);
  pawl__free(b->why);
  pawl__free(b->call_of);
  pawl__free(b->local);
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    pawl__buf_free(bufs[i]);
}

/* Allocates the batch for n outcomes; -1 when out of memory (freed). */
static int pg_batch_init(pg_batch_t *b, size_t n, int need_rcs) {
  memset(b, 0, sizeof *b);
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) arr_begin(bufs[i]);
  b->n = n;
  b->succ_call = SIZE_MAX;
  b->local = need_rcs ? pawl__calloc(n ? n : 1, sizeof *b->local) : NULL;
  b->calls = pawl__calloc(n + 6, sizeof *b->calls);
  b->why = pawl__calloc(n ? n : 1, sizeof *b->why);
  b->call_of = pawl__calloc(n ? n : 1, sizeof *b->call_of);
  if ((need_rcs && !b->local) || !b->calls || !b->why || !b->call_of) {
    pg_batch_free(b);
    return -1;
  }
  return 0;
}

/* The trim of the throughput buckets too old to be read (store.h,
 * "Throughput"), as the batch's first call when this connection sees the
 * minute change. The minute is decided by this node's corrected clock, the
 * cutoff by the database's (the statement's pawl_now()). Rolled back with
 * a failed batch, and then simply done at the next minute. */
static void pg_tp_trim_call(pg_store_t *s, pg_batch_t *b) {
  int64_t minute = store_tp_minute(pawl__store_now(&s->base));
  if (minute == s->tp_minute) return;
  s->tp_minute = minute;
  pg_call_t *c = &b->calls[b->ncalls++];
  c->stmt = PG_TP_TRIM;
  c->n = 2;
  pp_now(s, &c->p, 0);
  pp_int(&c->p, 1, STORE_TP_KEEP);
}

/* Puts each outcome into the batch: its log lines and, for a success, its
 * id, attempt and result into the arrays; any other outcome gets a call of
 * its own (END_ATTEMPT, as pawl__store_plan_ending() decides). rcs[i] is 0,
 * or the refusal of an outcome of unknown kind. `now`: the batch's clock
 * reading (0: the database's). */
static void pg_batch_plan(pg_store_t *s, pg_batch_t *b, const pawl_id_t *token,
                          const pawl_outcome_t *outs, int64_t now, int *rcs) {
  for (size_t i = 0; i < b->n; i++) {
    const pawl_outcome_t *o = &outs[i];
    for (size_t k = 0; k < o->nlogs; k++, b->nlogs++) {
      const pawl_log_entry_t *l = &o->logs[k];
      arr_id(&b->lids, &o->id);
      arr_int(&b->latt, o->attempt);
      arr_opt_int(&b->lat, l->at);
      arr_str(&b->llevel, l->level);
      arr_str(&b->lmsg, l->message);
      arr_str(&b->lfields, l->fields);
    }
    rcs[i] = 0;
    if (o->kind == PAWL_OUT_SUCCEEDED) {
      arr_id(&b->ids, &o->id);
      arr_int(&b->attempts, o->attempt);
      arr_str(&b->results, o->result);
      arr_opt_int(&b->starts, o->started_at);
      arr_opt_int(&b->ends, o->ended_at);
      b->nsucc++;
      arr_id(&b->ended, &o->id);
      b->nended++;
      if (o->branches) {
        arr_id(&b->bids, &o->id);
        arr_str(&b->branches, o->branches);
        b->nbranches++;
      }
      continue;
    }
    if (o->kind == PAWL_OUT_STARTED) {
      /* Not an end: the body of a job claimed ahead started. */
      b->call_of[i] = b->ncalls;
      pg_call_t *c = &b->calls[b->ncalls++];
      c->stmt = PG_RUN_START;
      c->n = 5;
      pawl__pg_run_start_params(s, &c->p, &o->id, token, o->attempt,
                                o->started_at);
      continue;
    }
    /* Delays in reasons are measured from the batch's clock reading; with
     * the database clock, from this node's corrected clock. */
    store_ending_t e;
    rcs[i] = pawl__store_plan_ending(&s->base, o,
                                     now ? now : pawl__store_now(&s->base), &e);
    if (rcs[i]) {
      b->call_of[i] = SIZE_MAX;
      continue;
    }
    memcpy(b->why[i], e.why, sizeof b->why[i]);
    if (e.to == PAWL_FAILED) {
      arr_id(&b->ended, &o->id);
      b->nended++;
    }
    b->call_of[i] = b->ncalls;
    pawl__pg_end_attempt_call(
        s, &b->calls[b->ncalls++], &o->id, e.outcome, e.error, token,
        o->attempt, e.to, b->why[i], e.run_at < 0 ? 0 : e.run_at, e.give_back,
        e.error, 0, o->kind == PAWL_OUT_RETRY && o->ordering_skip,
        o->started_at, o->ended_at,
        o->kind == PAWL_OUT_FAILED || o->kind == PAWL_OUT_RETRY ? o->trace
                                                                : NULL);
  }
}

/* Closes the arrays and adds the calls that carry them: the successes
 * (SUCCEED_MANY) and the log lines (LOG_MANY). -1 when out of memory. */
static int pg_batch_arrays(pg_store_t *s, pg_batch_t *b,
                           const pawl_id_t *token) {
  pawl_buf_t *bufs[] = PG_BATCH_BUFS(b);
  int oom = 0;
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
    arr_end(bufs[i]);
    oom |= bufs[i]->oom;
  }
  if (b->nsucc) {
    b->succ_call = b->ncalls;
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_SUCCEED_MANY;
    c->n = 7;
    pp_now(s, &c->p, 0);
    pp_str(&c->p, 1, b->ids.data);
    pp_str(&c->p, 2, b->attempts.data);
    pp_str(&c->p, 3, b->results.data);
    pp_id(&c->p, 4, token);
    pp_str(&c->p, 5, b->starts.data);
    pp_str(&c->p, 6, b->ends.data);
  }
  if (b->nlogs) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_LOG_MANY;
    c->n = 7;
    pp_now(s, &c->p, 0);
    pp_str(&c->p, 1, b->lids.data);
    pp_str(&c->p, 2, b->latt.data);
    pp_str(&c->p, 3, b->lat.data);
    pp_str(&c->p, 4, b->llevel.data);
    pp_str(&c->p, 5, b->lmsg.data);
    pp_str(&c->p, 6, b->lfields.data);
  }
  /* Dependencies: after the rows are written, the branches
   * that fired, then the release of the ended jobs' children (one
   * statement per batch; a job without children costs a probe of the
   * small index of open parents). */
  if (b->nbranches) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_DEPS_BRANCHES;
    c->n = 3;
    pp_str(&c->p, 0, b->bids.data);
    pp_str(&c->p, 1, b->branches.data);
    pp_id(&c->p, 2, token);
  }
  if (b->nended) {
    pg_call_t *c = &b->calls[b->ncalls++];
    c->stmt = PG_DEPS_RELEASE;
    c->n = 2;
    pp_str(&c->p, 0, b->ended.data);
    pp_now(s, &c->p, 1);
  }
  return oom ? -1 : 0;
}

/* Each outcome's verdict from the pipeline's results: written, or stale
 * (PAWL_ELEASE: the job is no longer held under that attempt). */
static int pg_batch_verdicts(pg_store_t *s, pg_batch_t *b,
                             const pawl_outcome_t *outs, int *rcs) {
  int rc = 0;
  if (b->succ_call != SIZE_MAX) {
    /* The rows written, sorted, so that each outcome is looked up in
     * log time: batches are large. */
    PGresult *res = b->calls[b->succ_call].res;
    size_t nrows = (size_t)PQntuples(res);
    pawl_id_t *got = pawl__malloc((nrows ? nrows : 1) * sizeof *got);
    if (!got) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      nrows = 0;
    }
    for (size_t r = 0; r < nrows; r++) pg_id(res, (int)r, 0, &got[r]);
    if (nrows) qsort(got, nrows, sizeof *got, pg_id_cmp);
    for (size_t i = 0; i < b->n && got; i++) {
      if (outs[i].kind != PAWL_OUT_SUCCEEDED) continue;
      int hit = nrows && bsearch(&outs[i].id, got, nrows, sizeof *got,
                                 pg_id_cmp) != NULL;
      rcs[i] = hit ? 0 : PAWL_ELEASE;
    }
    pawl__free(got);
  }
  for (size_t i = 0; i < b->n; i++) {
    if (outs[i].kind == PAWL_OUT_SUCCEEDED || b->call_of[i] == SIZE_MAX)
      continue;
    rcs[i] = PQntuples(b->calls[b->call_of[i]].res) == 1 ? 0 : PAWL_ELEASE;
  }
  return rc;
}

/* A batch of outcomes in one pipeline (one round trip, one transaction):
 * the successes in one UPDATE joined with arrays of ids, the log lines in
 * one INSERT, each other outcome in a call of its own. */
int pawl__pg_finish(store_t *base, const pawl_id_t *token,
                    const pawl_outcome_t *outs, size_t n, int *rcs) {
  pg_store_t *s = (pg_store_t *)base;
  pg_batch_t b;
  if (pg_batch_init(&b, n, rcs == NULL) != 0)
    return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  if (!rcs) rcs = b.local;
  /* The clock is read once: one batch, one "now" (as in one SQLite
   * transaction). With the database clock, now() is the transaction's. */
  int64_t now = s->base.clock ? s->base.clock(s->base.clock_data) : 0;
  /* Its rows are found by id (PG_SQL_BY_ID_PLAN). */
  b.calls[b.ncalls++].stmt = PG_BY_ID_PLAN;
  pg_tp_trim_call(s, &b);
  pg_batch_plan(s, &b, token, outs, now, rcs);
  int rc = pg_batch_arrays(s, &b, token) != 0
               ? pawl__store_fail(base, PAWL_ENOMEM, "out of memory")
               : 0;
  if (!rc && b.ncalls > 1)
    rc = pawl__pg_pipeline(s, b.calls, b.ncalls, "finish jobs");
  if (!rc) rc = pg_batch_verdicts(s, &b, outs, rcs);
  pg_batch_free(&b);
  return rc;
}
