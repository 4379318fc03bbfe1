/* flow.c: PostgreSQL store, signals and replace (store.h, "flow"). */
#include "pg_int.h"

/* The SQL of the PostgreSQL store's signals and
 * replacements (tables pawl_signals and pawl_replacements,
 * schema V008). */

/* A row whose job has ended gives its key up (see V008__signal.sql): run
 * before an enqueue takes the key. $1 the key. */
#define PG_SQL_SIG_RELEASE                                                   \
  "UPDATE pawl_signals AS s SET live = NULL FROM pawl_jobs AS j WHERE "      \
  "s.key = $1 AND s.live AND j.id = s.job_id AND j.state IN (2, 3, 4)"

/* The row that holds key $1, with its job's state, type and enqueuer
 * (job code may signal only its own: pawl__store_owner_check), locked: of two
 * deliveries at once, the second waits here for the first to commit and
 * then reads the row as the first left it (READ COMMITTED re-reads a
 * locked row that changed), delivered. Last, the wait's deadline (a
 * decision after it is refused). */
#define PG_SQL_SIG_HOLDER                                                    \
  "SELECT s.job_id, s.state, j.state, j.type, j.enqueued_by, "               \
  "pawl_ms(s.timeout_at) FROM "                                              \
  "pawl_signals AS s JOIN "                                                  \
  "pawl_jobs AS j ON j.id = s.job_id WHERE s.key = $1 AND s.live FOR "       \
  "UPDATE OF s"

/* $1 job, $2 key, $3 now, $4 timeout_at (NULL: none). Nothing inserted:
 * a live job holds the key (also one that committed while this waited
 * on its index entry). */
#define PG_SQL_SIG_ADD                                                       \
  "INSERT INTO pawl_signals (job_id, key, live, state, created_at, "         \
  "timeout_at) VALUES ($1::uuid, $2, true, 0, pawl_now($3::bigint), "        \
  "pawl_ts($4::bigint)) ON CONFLICT (key) WHERE live DO NOTHING"

/* $1 job, $2 decision, $3 payload, $4 now, $5 by. */
#define PG_SQL_SIG_DELIVER                                                   \
  "UPDATE pawl_signals SET state = 1, decision = $2, payload = $3::jsonb, "  \
  "delivered_at = pawl_now($4::bigint), delivered_by = $5 WHERE job_id = "   \
  "$1::uuid AND state = 0"

#define PG_SQL_SIG_GET                                                       \
  "SELECT key, state, pawl_ms(created_at), pawl_ms(timeout_at), decision, "  \
  "payload::text, pawl_ms(delivered_at), delivered_by FROM pawl_signals "    \
  "WHERE job_id = $1::uuid"

/* Waits that ran out by $1, at most $2, oldest first, locked (a delivery
 * at the same instant waits, then finds the wait expired; SKIP LOCKED:
 * rows a delivery holds are left to it). */
#define PG_SQL_SIG_DUE                                                       \
  "SELECT job_id, key, pawl_ms(timeout_at) FROM "      \
  "pawl_signals WHERE state = 0 AND timeout_at IS NOT NULL AND timeout_at "  \
  "<= pawl_now($1::bigint) ORDER BY timeout_at LIMIT $2 FOR UPDATE SKIP "    \
  "LOCKED"

/* The earliest deadline of a wait (NULL: none); one seek of the partial
 * index pawl_signals_due. */
#define PG_SQL_SIG_NEXT                                                      \
  "SELECT pawl_ms(min(timeout_at)) FROM pawl_signals WHERE state = 0 AND "   \
  "timeout_at IS NOT NULL"

/* See SQLITE_SIG_EXPIRE: the row keeps its key. */
#define PG_SQL_SIG_EXPIRE                                                    \
  "UPDATE pawl_signals SET state = 2 WHERE job_id = $1::uuid AND state = 0"

/* $1 old, $2 new, $3 now, $4 actor. */
#define PG_SQL_REP_ADD                                                       \
  "INSERT INTO pawl_replacements (old_id, new_id, at, actor) VALUES "        \
  "($1::uuid, $2::uuid, pawl_now($3::bigint), $4)"
/* What the replacement ($2) takes over from the old job ($1) that the
 * public job struct does not carry: its resource (limits), so
 * that a replace cannot take a job out from under its limit; and its place
 * in a batch ($3, the batch the old job left: REP_LEAVE). */
#define PG_SQL_REP_CARRY                                                     \
  "UPDATE pawl_jobs AS n SET resource = coalesce(n.resource, o.resource), "  \
  "batch_id = $3::uuid FROM pawl_jobs AS o WHERE o.id = $1::uuid AND "       \
  "n.id = $2::uuid"
/* Job instances: see SQLITE_REP_INSTANCE. */
#define PG_SQL_REP_INSTANCE                                                  \
  "UPDATE pawl_instances SET job_id = $2::uuid WHERE job_id = $1::uuid"
/* Batches: the batch of child $1 (no row: none); the child
 * leaves it (its replacement takes its place). */
#define PG_SQL_REP_BATCH                                                     \
  "SELECT batch_id FROM pawl_jobs WHERE id = $1::uuid AND batch_id IS NOT "  \
  "NULL"
#define PG_SQL_REP_LEAVE                                                     \
  "UPDATE pawl_jobs SET batch_id = NULL WHERE id = $1::uuid"
#define PG_SQL_REP_NEXT                                                      \
  "SELECT new_id FROM pawl_replacements WHERE old_id = $1::uuid"
#define PG_SQL_REP_PREV                                                      \
  "SELECT old_id FROM pawl_replacements WHERE new_id = $1::uuid"
/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__FLOW
const char *const pawl__pg_sql_flow[PG__BATCH - PG__FLOW] = {
    PG_AT(PG_SIG_RELEASE) = PG_SQL_SIG_RELEASE,
    PG_AT(PG_SIG_HOLDER) = PG_SQL_SIG_HOLDER,
    PG_AT(PG_SIG_NEXT) = PG_SQL_SIG_NEXT,
    PG_AT(PG_SIG_ADD) = PG_SQL_SIG_ADD,
    PG_AT(PG_SIG_DELIVER) = PG_SQL_SIG_DELIVER,
    PG_AT(PG_SIG_GET) = PG_SQL_SIG_GET,
    PG_AT(PG_SIG_DUE) = PG_SQL_SIG_DUE,
    PG_AT(PG_SIG_EXPIRE) = PG_SQL_SIG_EXPIRE,
    PG_AT(PG_REP_ADD) = PG_SQL_REP_ADD,
    PG_AT(PG_REP_CARRY) = PG_SQL_REP_CARRY,
    PG_AT(PG_REP_INSTANCE) = PG_SQL_REP_INSTANCE,
    PG_AT(PG_REP_BATCH) = PG_SQL_REP_BATCH,
    PG_AT(PG_REP_LEAVE) = PG_SQL_REP_LEAVE,
    PG_AT(PG_REP_NEXT) = PG_SQL_REP_NEXT,
    PG_AT(PG_REP_PREV) = PG_SQL_REP_PREV,
    /* Replace: the replacement $2 of the live job $1 takes its
     * place in the graph (see SQLITE_DEPS_HAND_PARENT). The old job's
     * row is locked already (pawl__pg_replace); its parents are locked next, in
     * id order, so that none of them ends meanwhile: a parent's finish
     * holds its row from its state change to its commit, so its release
     * of children runs either before these (the counts copied include
     * it) or after this commits (and finds the edges moved). */
    PG_AT(PG_DEPS_HAND_LOCK) =
        "SELECT 1 FROM pawl_jobs WHERE id IN (SELECT parent FROM pawl_deps "
        "WHERE child = $1::uuid) ORDER BY id FOR NO KEY UPDATE",
    PG_AT(PG_DEPS_HAND_OVER) =
        "WITH a AS (UPDATE pawl_deps SET parent = $2::uuid WHERE parent = "
        "$1::uuid), b AS (UPDATE pawl_deps SET child = $2::uuid WHERE child "
        "= $1::uuid) UPDATE pawl_jobs SET deps_open = false WHERE id = "
        "$1::uuid AND deps_open",
    PG_AT(PG_DEPS_TAKE_OVER) =
        "UPDATE pawl_jobs AS n SET deps_open = EXISTS (SELECT 1 FROM "
        "pawl_deps WHERE parent = $2::uuid), deps_left = o.deps_left, "
        "deps_unmet = o.deps_unmet FROM pawl_jobs AS o WHERE o.id = $1::uuid "
        "AND n.id = $2::uuid",
};
#undef PG_HERE

/* ---- signals and replace ---------------------------------------------------
 * pawl_signals and pawl_replacements (schema/postgres/V008__signal.sql), in
 * READ COMMITTED. Exactly once: a delivery and an expiry each lock the
 * signal's row first (FOR UPDATE) and write it only from state 0 (waiting);
 * the job's own move is a compare-and-set on its locked row
 * (pawl__store_transition_in), so of two that race, one moves the job and
 * the other finds it done. */

/* The row of pawl_signals for a new job j (inserted just before, in the
 * caller's transaction). */
int pawl__pg_sig_add(pg_store_t *s, const store_new_job_t *j) {
  pg_params_t pp;
  pp_str(&pp, 0, j->signal_key);
  int rc = pawl__pg_run(s, PG_SIG_RELEASE, 1, pp.v, NULL, "release signal key");
  if (rc) return rc;
  pp_id(&pp, 0, &j->id);
  pp_str(&pp, 1, j->signal_key);
  pp_now(s, &pp, 2);
  pp_opt_int(&pp, 3, j->signal_timeout_at != 0, j->signal_timeout_at);
  PGresult *res;
  if ((rc = pawl__pg_run(s, PG_SIG_ADD, 4, pp.v, &res, "record signal wait")))
    return rc;
  long added = pg_changed(res);
  PQclear(res);
  if (added) return 0;
  pp_str(&pp, 0, j->signal_key);
  if ((rc =
           pawl__pg_run(s, PG_SIG_HOLDER, 1, pp.v, &res, "look up signal key")))
    return rc;
  char text[PAWL_ID_STRLEN] = "?";
  if (PQntuples(res) > 0) {
    pawl_id_t holder;
    pg_id(res, 0, 0, &holder);
    pawl_id_format(&holder, text);
  }
  PQclear(res);
  return pawl__store_fail(&s->base, PAWL_EKEY,
                          "signal key \"%s\" is held by live job %s",
                          j->signal_key, text);
}

/* Expires the wait of job `id` for `key` whose deadline was `deadline`
 * (in the caller's transaction, its row locked by the caller): the row
 * leaves state waiting and the job goes blocked -> failed. *done: 1 if
 * this call ended the wait (0: it had ended already). A job that stopped
 * waiting otherwise (canceled) keeps its state; its wait is over all the
 * same. */
static int pg_sig_expire_one(pg_store_t *s, int64_t now, const pawl_id_t *id,
                             const char *key, int64_t deadline, int *done) {
  *done = 0;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_SIG_EXPIRE, 1, pp.v, &res, "expire signal wait");
  if (rc) return rc;
  long changed = pg_changed(res);
  PQclear(res);
  if (!changed) return 0;
  *done = 1;
  char why[300];
  pawl__store_signal_why(why, sizeof why, key, deadline);
  rc = pawl__store_transition_in(&s->base, &pawl__pg_transition_steps, now, id,
                                 STORE_OP_EXPIRE, "timeout", why, -1);
  if (rc == PAWL_ESTATE) {
    rc = 0;
    s->base.errmsg[0] = 0;
  }
  return rc;
}

int pawl__pg_sig_deliver(store_t *base, const char *key, const char *decision,
                         const char *payload, const char *actor,
                         const char *owner, pawl_id_t *job, int *already) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  pg_params_t pp;
  pp_str(&pp, 0, key);
  PGresult *res = NULL;
  if (!(rc = pawl__pg_tx_now(base, &now)))
    rc = pawl__pg_run(s, PG_SIG_HOLDER, 1, pp.v, &res, "look up signal key");
  if (rc) return pawl__pg_end(s, rc);
  pawl_id_t id;
  int found = PQntuples(res) > 0, sstate = 0, jstate = 0, was = 0, late = 0;
  int64_t deadline = 0;
  char text[PAWL_ID_STRLEN] = "";
  if (found) {
    pg_id(res, 0, 0, &id);
    sstate = (int)pg_int(res, 0, 1);
    jstate = (int)pg_int(res, 0, 2);
    deadline = pg_int(res, 0, 5); /* NULL reads 0: none */
    pawl_id_format(&id, text);
    /* Job code signals only the jobs it enqueued, unless granted: decided
     * on the row locked above, before anything is written. */
    rc = pawl__store_owner_check(base, &id, pg_val(res, 0, 3),
                                 pg_val(res, 0, 4), owner);
  }
  PQclear(res);
  if (rc)
    ;
  else if (!found)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no live job waits for signal \"%s\"", key);
  else if (sstate == PAWL_SIGNAL_DELIVERED)
    was = 1;
  else if (sstate == PAWL_SIGNAL_EXPIRED)
    rc = pawl__store_signal_late(base, &id, key, deadline, jstate);
  else if (jstate != PAWL_BLOCKED)
    rc = pawl__store_fail(base, PAWL_ESTATE,
                          "job %s no longer waits for signal \"%s\": it is %s",
                          text, key, pawl_state_name(jstate));
  else if (deadline && deadline <= now)
    late = 1;
  if (late) {
    /* Too late: the deadline decided, whether or not a sweep has got to
     * it yet (the row is locked: a sweep at this instant skips it). The
     * wait expires here, as the sweep would have expired it, and that is
     * committed; the decision is refused. */
    int done = 0;
    rc = pawl__pg_end(s, pg_sig_expire_one(s, now, &id, key, deadline, &done));
    return rc ? rc
              : pawl__store_signal_late(base, &id, key, deadline,
                                        done ? PAWL_FAILED : jstate);
  }
  if (!rc && !was) {
    pp_id(&pp, 0, &id);
    pp_str(&pp, 1, decision);
    pp_str(&pp, 2, payload);
    pp_now(s, &pp, 3);
    pp_str(&pp, 4, actor);
    rc = pawl__pg_run(s, PG_SIG_DELIVER, 5, pp.v, NULL, "record signal");
    char why[300];
    snprintf(why, sizeof why, "signal %s: %s", key, decision);
    if (!rc)
      rc = pawl__store_transition_in(base, &pawl__pg_transition_steps, now, &id,
                                     STORE_OP_UNBLOCK, actor, why, -1);
  }
  rc = pawl__pg_end(s, rc);
  if (rc) return rc;
  *job = id;
  *already = was;
  return 0;
}

int pawl__pg_sig_get(store_t *base, const pawl_id_t *id,
                     pawl_signal_info_t **out) {
  pg_store_t *s = (pg_store_t *)base;
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pawl__pg_run(s, PG_SIG_GET, 1, pp.v, &res, "read signal");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return pawl__store_fail(base, PAWL_ENOTFOUND, "the job has no signal");
  }
  pawl_signal_info_t *sig = pawl__store_signal_new(
      id, pg_val(res, 0, 0), (int)pg_int(res, 0, 1), pg_int(res, 0, 2),
      pg_int(res, 0, 3), pg_val(res, 0, 4), pg_val(res, 0, 5),
      pg_int(res, 0, 6), pg_val(res, 0, 7));
  PQclear(res);
  if (!sig) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  *out = sig;
  return 0;
}

int pawl__pg_sig_expire(store_t *base, size_t max, size_t *n) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  PGresult *due = NULL;
  pg_params_t pp;
  if (!(rc = pawl__pg_tx_now(base, &now))) {
    pp_now(s, &pp, 0);
    pp_int(&pp, 1, (int64_t)max);
    rc =
        pawl__pg_run(s, PG_SIG_DUE, 2, pp.v, &due, "find expired signal waits");
  }
  size_t done = 0;
  for (int i = 0; !rc && i < PQntuples(due); i++) {
    pawl_id_t id;
    pg_id(due, i, 0, &id);
    int one = 0;
    rc = pg_sig_expire_one(s, now, &id, pg_val(due, i, 1), pg_int(due, i, 2),
                           &one);
    done += (size_t)one;
  }
  PQclear(due);
  rc = pawl__pg_end(s, rc);
  if (!rc) *n = done;
  return rc;
}

int pawl__pg_sig_next(store_t *base, int64_t *at) {
  pg_store_t *s = (pg_store_t *)base;
  PGresult *res;
  int rc = pawl__pg_run(s, PG_SIG_NEXT, 0, NULL, &res, "read signal deadlines");
  if (rc) return rc;
  *at = PQntuples(res) > 0 ? pg_int(res, 0, 0) : 0;
  PQclear(res);
  return 0;
}

/* The job linked to `id` by statement `which` (PG_REP_NEXT, PG_REP_PREV):
 * 1 with *out, 0 when none, or a negative code. */
static int pg_rep_link(pg_store_t *s, int which, const pawl_id_t *id,
                       pawl_id_t *out) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc = pawl__pg_run(s, which, 1, pp.v, &res, "read replacement");
  if (rc) return rc;
  int found = PQntuples(res) > 0;
  if (found) pg_id(res, 0, 0, out);
  PQclear(res);
  return found;
}

/* The old job's row is locked first (FOR UPDATE): two replacements of one
 * job at once run one after the other, and the second finds the first's
 * link (each statement reads what committed before it started) or the
 * changed version. */
int pawl__pg_replace(store_t *base, const store_replace_t *r) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  int64_t now = 0;
  pawl_job_t *old = NULL;
  char text[PAWL_ID_STRLEN], ntext[PAWL_ID_STRLEN];
  pawl_id_format(r->old_id, text);
  if ((rc = pawl__pg_tx_now(base, &now)) ||
      (rc = pawl__pg_read_job(s, r->old_id, 1, &old)))
    return pawl__pg_end(s, rc);
  pawl_id_t next;
  int linked = 0;
  /* Job code replaces only the jobs it enqueued, unless granted: decided
   * on the row locked above. */
  if ((rc = pawl__store_owner_check(base, r->old_id, old->type,
                                    old->enqueued_by, r->owner)))
    ;
  else if (old->version != r->expect_version)
    rc = pawl__store_fail(base, PAWL_ECONFLICT,
                          "job %s changed meanwhile; try again", text);
  else if ((linked = pg_rep_link(s, PG_REP_NEXT, r->old_id, &next)) < 0)
    rc = linked;
  else if (linked) {
    pawl_id_format(&next, ntext);
    rc = pawl__store_fail(base, PAWL_ESTATE,
                          "job %s was already replaced by job %s", text,
                          ntext);
  }
  int live = old->state == PAWL_PENDING || old->state == PAWL_RUNNING ||
             old->state == PAWL_PAUSED || old->state == PAWL_BLOCKED;
  int64_t version = old->version;
  /* A batch's child hands its place to the replacement (batches): see
   * pawl__sq_replace() in stores/sqlite/flow.c. The old row is locked
   * (above) before its batch row (pawl__pg_batch_count_job), the order
   * every path that counts follows. */
  int64_t d[3];
  int take_back = store_batch_delta(old->state, old->paused_from,
                                    PAWL_PENDING, 0, d);
  pawl_job_free(old);
  pawl_id_t batch;
  int in_batch = 0;
  if (!rc && (in_batch = pg_rep_link(s, PG_REP_BATCH, r->old_id, &batch)) < 0)
    rc = in_batch;
  if (!rc && in_batch && take_back)
    rc = pawl__pg_batch_count_job(s, r->old_id, d);
  if (!rc && in_batch) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    rc = pawl__pg_run(s, PG_REP_LEAVE, 1, pp.v, NULL, "leave the batch");
  }
  /* Dependencies: a live job's edges go to the replacement
   * before its cancel (see pawl__sq_replace(), stores/sqlite/flow.c). */
  pg_params_t dp;
  pp_id(&dp, 0, r->old_id);
  pp_id(&dp, 1, &r->job->id);
  if (!rc && live)
    rc = pawl__pg_run(s, PG_DEPS_HAND_LOCK, 1, dp.v, NULL, "lock the parents");
  if (!rc && live)
    rc = pawl__pg_run(s, PG_DEPS_HAND_OVER, 2, dp.v, NULL,
                      "hand dependencies to the replacement");
  /* The old job ends first: its business key and signal key are free for
   * the replacement. */
  if (!rc && live)
    rc = pawl__store_transition_in(base, &pawl__pg_transition_steps, now,
                                   r->old_id, STORE_OP_CANCEL, r->actor,
                                   r->reason, version);
  pawl_id_t id;
  int status = 0;
  if (!rc) rc = pawl__pg_insert_one(s, r->job, NULL, &id, &status);
  if (!rc && live)
    rc = pawl__pg_run(s, PG_DEPS_TAKE_OVER, 2, dp.v, NULL,
                      "hand dependencies to the replacement");
  if (!rc) /* steps: the replacement is the job of the old one's instance */
    rc = pawl__pg_run(s, PG_REP_INSTANCE, 2, dp.v, NULL,
                      "hand the job instance to the replacement");
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    pp_id(&pp, 1, &r->job->id);
    pp_now(s, &pp, 2);
    pp_str(&pp, 3, r->actor);
    rc = pawl__pg_run(s, PG_REP_ADD, 4, pp.v, NULL, "link replacement");
  }
  if (!rc) {
    pg_params_t pp;
    pp_id(&pp, 0, r->old_id);
    pp_id(&pp, 1, &r->job->id);
    pp_id(&pp, 2, in_batch ? &batch : NULL);
    rc = pawl__pg_run(s, PG_REP_CARRY, 3, pp.v, NULL,
                      "carry over to the replacement");
  }
  /* (The insert's statement trigger wakes the other nodes.) */
  return pawl__pg_end(s, rc);
}

int pawl__pg_replace_links(store_t *base, const pawl_id_t *id,
                           pawl_replace_links_t *out) {
  pg_store_t *s = (pg_store_t *)base;
  pawl_replace_links_t l;
  memset(&l, 0, sizeof l);
  int rc = pg_rep_link(s, PG_REP_NEXT, id, &l.superseded_by);
  if (rc < 0) return rc;
  l.has_superseded_by = rc;
  if ((rc = pg_rep_link(s, PG_REP_PREV, id, &l.supersedes)) < 0) return rc;
  l.has_supersedes = rc;
  if (!l.has_superseded_by && !l.has_supersedes) {
    pg_params_t pp;
    pp_id(&pp, 0, id);
    PGresult *res;
    if ((rc = pawl__pg_run(s, PG_EXISTS, 1, pp.v, &res, "read job"))) return rc;
    int found = PQntuples(res) > 0;
    PQclear(res);
    if (!found) return pawl__store_no_job(base, id);
  }
  *out = l;
  return 0;
}
