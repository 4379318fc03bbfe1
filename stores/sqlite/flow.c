/* flow.c: SQLite store, signals and replacements (tables pawl_signals and
 * pawl_replacements, schema V009; store.h, "flow"). */
#include "sqlite_int.h"

/* Replace (docs/flows.md "Dependencies and chains"): the replacement
 * ?2 of the live job ?1 takes its place in the graph. Its children follow
 * the replacement (they wait for its end, not the canceled old job's: the
 * old one stops being open so its cancel releases nobody), and it waits
 * for the old job's parents, with the old job's counts. SQLite's one
 * writer keeps the counts from moving meanwhile. */
#define SQLITE_DEPS_HAND_PARENT                                              \
  "UPDATE pawl_deps SET parent = ?2 WHERE parent = ?1"
#define SQLITE_DEPS_HAND_CHILD                                               \
  "UPDATE pawl_deps SET child = ?2 WHERE child = ?1"
#define SQLITE_DEPS_HAND_CLOSE                                               \
  "UPDATE pawl_jobs SET deps_open = 0 WHERE id = ?1 AND deps_open = 1"
#define SQLITE_DEPS_TAKE_OVER                                                \
  "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps WHERE "  \
  "parent = ?2), deps_left = o.deps_left, deps_unmet = o.deps_unmet FROM "   \
  "(SELECT deps_left, deps_unmet FROM pawl_jobs WHERE id = ?1) AS o WHERE "  \
  "pawl_jobs.id = ?2"

/* A row whose job has ended gives its key up (see V009__signal.sql): run
 * before an enqueue takes the key. ?1 the key. */
#define SQLITE_SIG_RELEASE                                                   \
  "UPDATE pawl_signals SET live = NULL WHERE key = ?1 AND live = 1 AND "     \
  "(SELECT j.state FROM pawl_jobs AS j WHERE j.id = pawl_signals.job_id) "   \
  "IN (2, 3, 4)"

/* The row that holds key ?1, with its job's state, type and enqueuer
 * (job code may signal only its own: pawl__store_owner_check) and the
 * wait's deadline (a decision after it is refused). */
#define SQLITE_SIG_HOLDER                                                    \
  "SELECT s.job_id, s.state, j.state, j.type, j.enqueued_by, s.timeout_at " \
  "FROM "                                                                    \
  "pawl_signals AS s JOIN "                                                  \
  "pawl_jobs AS j ON j.id = s.job_id WHERE s.key = ?1 AND s.live = 1"

/* ?1 job, ?2 key, ?3 now, ?4 timeout_at (NULL: none). */
#define SQLITE_SIG_ADD                                                       \
  "INSERT INTO pawl_signals (job_id, key, live, state, created_at, "         \
  "timeout_at) VALUES (?1, ?2, 1, 0, ?3, ?4)"

/* ?1 job, ?2 decision, ?3 payload, ?4 now, ?5 by. */
#define SQLITE_SIG_DELIVER                                                   \
  "UPDATE pawl_signals SET state = 1, decision = ?2, payload = ?3, "         \
  "delivered_at = ?4, delivered_by = ?5 WHERE job_id = ?1 AND state = 0"

#define SQLITE_SIG_GET                                                       \
  "SELECT key, state, created_at, timeout_at, decision, payload, "           \
  "delivered_at, delivered_by FROM pawl_signals WHERE job_id = ?1"

/* Waits that ran out by ?1, at most ?2, oldest first (the partial index
 * pawl_signals_due). */
#define SQLITE_SIG_DUE                                                       \
  "SELECT job_id, key, timeout_at FROM pawl_signals WHERE "     \
  "state = 0 AND timeout_at IS NOT NULL AND timeout_at <= ?1 ORDER BY "      \
  "timeout_at LIMIT ?2"

/* The earliest deadline of a wait (NULL: none); one seek of the partial
 * index pawl_signals_due. */
#define SQLITE_SIG_NEXT                                                      \
  "SELECT min(timeout_at) FROM pawl_signals WHERE state = 0 AND timeout_at " \
  "IS NOT NULL"

/* The row keeps its key until its job has ended and the key is taken
 * again (SIG_RELEASE): a decision that comes late then finds the wait that
 * timed out and is refused naming it and its deadline. */
#define SQLITE_SIG_EXPIRE                                                    \
  "UPDATE pawl_signals SET state = 2 WHERE job_id = ?1 AND state = 0"

/* ?1 old, ?2 new, ?3 now, ?4 actor. */
#define SQLITE_REP_ADD                                                       \
  "INSERT INTO pawl_replacements (old_id, new_id, at, actor) VALUES (?1, "   \
  "?2, ?3, ?4)"
/* What the replacement (?2) takes over from the old job (?1) that the
 * public job struct does not carry: its resource (limits), so
 * that a replace cannot take a job out from under its limit; and its place
 * in a batch (?3, the batch the old job left: REP_LEAVE). */
#define SQLITE_REP_CARRY                                                     \
  "UPDATE pawl_jobs SET resource = coalesce(resource, (SELECT o.resource "   \
  "FROM pawl_jobs AS o WHERE o.id = ?1)), batch_id = ?3 WHERE id = ?2"
/* Job instances: the replacement ?2 becomes the job of
 * the old job's (?1) instance, if the old job still holds one: an enqueue
 * of the instance then finds the replacement (a failed old job would
 * otherwise be restarted beside it). */
#define SQLITE_REP_INSTANCE                                                  \
  "UPDATE pawl_instances SET job_id = ?2 WHERE job_id = ?1"
/* Batches: the batch of child ?1 (no row: none); the child
 * leaves it (its replacement takes its place). */
#define SQLITE_REP_BATCH                                                     \
  "SELECT batch_id FROM pawl_jobs WHERE id = ?1 AND batch_id IS NOT NULL"
#define SQLITE_REP_LEAVE "UPDATE pawl_jobs SET batch_id = NULL WHERE id = ?1"
#define SQLITE_REP_NEXT                                                      \
  "SELECT new_id FROM pawl_replacements WHERE old_id = ?1"
#define SQLITE_REP_PREV                                                      \
  "SELECT old_id FROM pawl_replacements WHERE new_id = ?1"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__FLOW
const char *const pawl__sq_sql_flow[SQ__BATCH - SQ__FLOW] = {
    SQ_AT(SQ_SIG_RELEASE) = SQLITE_SIG_RELEASE,
    SQ_AT(SQ_SIG_HOLDER) = SQLITE_SIG_HOLDER,
    SQ_AT(SQ_SIG_ADD) = SQLITE_SIG_ADD,
    SQ_AT(SQ_SIG_DELIVER) = SQLITE_SIG_DELIVER,
    SQ_AT(SQ_SIG_GET) = SQLITE_SIG_GET,
    SQ_AT(SQ_SIG_DUE) = SQLITE_SIG_DUE,
    SQ_AT(SQ_SIG_EXPIRE) = SQLITE_SIG_EXPIRE,
    SQ_AT(SQ_SIG_NEXT) = SQLITE_SIG_NEXT,
    SQ_AT(SQ_REP_ADD) = SQLITE_REP_ADD,
    SQ_AT(SQ_REP_CARRY) = SQLITE_REP_CARRY,
    SQ_AT(SQ_REP_INSTANCE) = SQLITE_REP_INSTANCE,
    SQ_AT(SQ_REP_BATCH) = SQLITE_REP_BATCH,
    SQ_AT(SQ_REP_LEAVE) = SQLITE_REP_LEAVE,
    SQ_AT(SQ_REP_NEXT) = SQLITE_REP_NEXT,
    SQ_AT(SQ_REP_PREV) = SQLITE_REP_PREV,
    SQ_AT(SQ_DEPS_HAND_PARENT) = SQLITE_DEPS_HAND_PARENT,
    SQ_AT(SQ_DEPS_HAND_CHILD) = SQLITE_DEPS_HAND_CHILD,
    SQ_AT(SQ_DEPS_HAND_CLOSE) = SQLITE_DEPS_HAND_CLOSE,
    SQ_AT(SQ_DEPS_TAKE_OVER) = SQLITE_DEPS_TAKE_OVER,
};
#undef SQ_HERE

/* ---- signals and replace ---------------------------------------------------
 * pawl_signals and pawl_replacements (schema/sqlite/V009__signal.sql). Every
 * write runs under SQLite's one write lock (BEGIN IMMEDIATE): a key's holder
 * read here is the holder when the transaction commits. */

/* The row of pawl_signals for a new job j (inserted just before, in the
 * caller's transaction): its key is released by a row whose job ended,
 * then refused if a live job still holds it. */
int pawl__sq_sig_add(sq_store_t *s, const store_new_job_t *j, int64_t now) {
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_RELEASE);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->signal_key, -1, SQLITE_STATIC);
  int rc = sq_exec(s, st, "release signal key");
  if (rc) return rc;
  if (!(st = sq_stmt(s, SQ_SIG_HOLDER))) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, j->signal_key, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  pawl_id_t holder;
  if (step == SQLITE_ROW) sq_col_id(st, 0, &holder);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&holder, text);
    return pawl__store_fail(&s->base, PAWL_EKEY,
                            "signal key \"%s\" is held by live job %s",
                            j->signal_key, text);
  }
  if (step != SQLITE_DONE) return pawl__sq_fail(s, step, "look up signal key");
  if (!(st = sq_stmt(s, SQ_SIG_ADD))) return PAWL_ESTORE;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_text(st, 2, j->signal_key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, now);
  sq_bind_opt_int(st, 4, j->signal_timeout_at);
  return sq_exec(s, st, "record signal wait");
}

/* Expires the wait of job `id` for `key` whose deadline was `deadline`
 * (in the caller's transaction): the row leaves state waiting and the job
 * goes blocked -> failed. *done: 1 if this call ended the wait (0: it had
 * ended already). A job that stopped waiting otherwise (canceled) keeps
 * its state; its wait is over all the same. */
static int sq_sig_expire_one(sq_store_t *s, int64_t now, const pawl_id_t *id,
                             const char *key, int64_t deadline, int *done) {
  *done = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_EXPIRE);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sq_exec(s, st, "expire signal wait");
  if (rc || sqlite3_changes(s->db) != 1) return rc;
  *done = 1;
  char why[300];
  pawl__store_signal_why(why, sizeof why, key, deadline);
  rc = pawl__store_transition_in(&s->base, &pawl__sq_transition_steps, now, id,
                                 STORE_OP_EXPIRE, "timeout", why, -1);
  if (rc == PAWL_ESTATE) {
    rc = 0;
    s->base.errmsg[0] = 0;
  }
  return rc;
}

int pawl__sq_sig_deliver(store_t *base, const char *key,
                         const char *decision, const char *payload,
                         const char *actor, const char *owner,
                         pawl_id_t *job, int *already) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base);
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_HOLDER);
  if (!st) return pawl__sq_end(s, PAWL_ESTORE);
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  pawl_id_t id;
  int sstate = 0, jstate = 0, was = 0, late = 0;
  int64_t deadline = 0;
  if (step == SQLITE_ROW) {
    sq_col_id(st, 0, &id);
    sstate = sqlite3_column_int(st, 1);
    jstate = sqlite3_column_int(st, 2);
    deadline = sqlite3_column_int64(st, 5); /* NULL reads 0: none */
    /* Job code signals only the jobs it enqueued, unless granted: decided
     * on the row read in this write transaction, before anything is
     * written. */
    rc = pawl__store_owner_check(base, &id,
                                 (const char *)sqlite3_column_text(st, 3),
                                 (const char *)sqlite3_column_text(st, 4),
                                 owner);
  }
  sqlite3_reset(st);
  char text[PAWL_ID_STRLEN] = "";
  if (step == SQLITE_ROW) pawl_id_format(&id, text);
  if (rc)
    ;
  else if (step == SQLITE_DONE)
    rc = pawl__store_fail(base, PAWL_ENOTFOUND,
                          "no live job waits for signal \"%s\"", key);
  else if (step != SQLITE_ROW)
    rc = pawl__sq_fail(s, step, "look up signal key");
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
     * it yet. The wait expires here, as the sweep would have expired it,
     * and that is committed; the decision is refused. */
    int done = 0;
    rc = pawl__sq_end(s, sq_sig_expire_one(s, now, &id, key, deadline, &done));
    return rc ? rc
              : pawl__store_signal_late(base, &id, key, deadline,
                                        done ? PAWL_FAILED : jstate);
  }
  if (!rc && !was) {
    if (!(st = sq_stmt(s, SQ_SIG_DELIVER))) return pawl__sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, &id);
    sqlite3_bind_text(st, 2, decision, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, now);
    sq_bind_text(st, 5, actor);
    rc = sq_exec(s, st, "record signal");
    char why[300];
    snprintf(why, sizeof why, "signal %s: %s", key, decision);
    if (!rc)
      rc = pawl__store_transition_in(base, &pawl__sq_transition_steps, now, &id,
                                     STORE_OP_UNBLOCK, actor, why, -1);
  }
  rc = pawl__sq_end(s, rc);
  if (rc) return rc;
  *job = id;
  *already = was;
  return 0;
}

int pawl__sq_sig_get(store_t *base, const pawl_id_t *id,
                     pawl_signal_info_t **out) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_GET);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step != SQLITE_ROW) {
    sqlite3_reset(st);
    if (step == SQLITE_DONE)
      return pawl__store_fail(base, PAWL_ENOTFOUND, "the job has no signal");
    return pawl__sq_fail(s, step, "read signal");
  }
  pawl_signal_info_t *sig = pawl__store_signal_new(
      id, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 1),
      sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
      (const char *)sqlite3_column_text(st, 4),
      (const char *)sqlite3_column_text(st, 5), sqlite3_column_int64(st, 6),
      (const char *)sqlite3_column_text(st, 7));
  sqlite3_reset(st);
  if (!sig) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  *out = sig;
  return 0;
}

/* A wait that ran out, read before its row is written. */
typedef struct sq_sig_due {
  pawl_id_t id;
  char key[201];
  int64_t timeout_at;
} sq_sig_due_t;

int pawl__sq_sig_expire(store_t *base, size_t max, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  sq_sig_due_t *due = pawl__calloc(max ? max : 1, sizeof *due);
  if (!due) return pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
  int rc = pawl__sq_begin(s);
  if (rc) {
    pawl__free(due);
    return rc;
  }
  int64_t now = pawl__store_now(base);
  size_t ndue = 0, done = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_DUE);
  if (!st) rc = PAWL_ESTORE;
  int step = SQLITE_DONE;
  if (!rc) {
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int64(st, 2, (int64_t)max);
    while (ndue < max && (step = sqlite3_step(st)) == SQLITE_ROW) {
      sq_col_id(st, 0, &due[ndue].id);
      snprintf(due[ndue].key, sizeof due[ndue].key, "%s",
               (const char *)sqlite3_column_text(st, 1));
      due[ndue].timeout_at = sqlite3_column_int64(st, 2);
      ndue++;
    }
    sqlite3_reset(st);
    if (step != SQLITE_DONE && step != SQLITE_ROW)
      rc = pawl__sq_fail(s, step, "find expired signal waits");
  }
  for (size_t i = 0; i < ndue && !rc; i++) {
    int one = 0;
    rc = sq_sig_expire_one(s, now, &due[i].id, due[i].key, due[i].timeout_at,
                           &one);
    done += (size_t)one;
  }
  pawl__free(due);
  rc = pawl__sq_end(s, rc);
  if (!rc) *n = done;
  return rc;
}

int pawl__sq_sig_next(store_t *base, int64_t *at) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_SIG_NEXT);
  if (!st) return PAWL_ESTORE;
  int step = sqlite3_step(st);
  *at = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_reset(st);
  return step == SQLITE_ROW ? 0
                            : pawl__sq_fail(s, step, "read signal deadlines");
}

/* The job linked to `id` by statement `which` (SQ_REP_NEXT, SQ_REP_PREV):
 * 1 with *out, 0 when none, or a negative code. */
static int sq_rep_link(sq_store_t *s, int which, const pawl_id_t *id,
                       pawl_id_t *out) {
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) sq_col_id(st, 0, out);
  sqlite3_reset(st);
  if (step == SQLITE_ROW) return 1;
  if (step == SQLITE_DONE) return 0;
  return pawl__sq_fail(s, step, "read replacement");
}

/* Runs each statement of ids[0..n) with ?1 old, ?2 new (dependencies:
 * a replacement takes the old job's place in the graph). */
static int sq_deps_replace(sq_store_t *s, const int *ids, size_t n,
                           const pawl_id_t *old_id, const pawl_id_t *new_id) {
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    sqlite3_stmt *st = sq_stmt(s, ids[i]);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, old_id);
    sq_bind_id(st, 2, new_id);
    rc = sq_exec(s, st, "hand dependencies to the replacement");
  }
  return rc;
}

int pawl__sq_replace(store_t *base, const store_replace_t *r) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  int64_t now = pawl__store_now(base);
  pawl_job_t *old = NULL;
  pawl_id_t next;
  char text[PAWL_ID_STRLEN], ntext[PAWL_ID_STRLEN];
  pawl_id_format(r->old_id, text);
  if ((rc = pawl__sq_read_job(s, r->old_id, &old))) return pawl__sq_end(s, rc);
  int linked = 0;
  /* Job code replaces only the jobs it enqueued, unless granted: decided
   * on the row read in this write transaction. */
  if ((rc = pawl__store_owner_check(base, r->old_id, old->type,
                                    old->enqueued_by, r->owner)))
    ;
  else if (old->version != r->expect_version)
    rc = pawl__store_fail(base, PAWL_ECONFLICT,
                          "job %s changed meanwhile; try again", text);
  else if ((linked = sq_rep_link(s, SQ_REP_NEXT, r->old_id, &next)) < 0)
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
  /* A batch's child hands its place to the replacement (batches):
   * it leaves the batch before it is canceled, so its cancel is not
   * counted, and an end it was counted for (failed, canceled) is taken
   * back as a manual retry takes it back; the replacement counts when it
   * ends. */
  int64_t d[3];
  int take_back = store_batch_delta(old->state, old->paused_from,
                                    PAWL_PENDING, 0, d);
  pawl_job_free(old);
  pawl_id_t batch;
  int in_batch = 0;
  if (!rc && (in_batch = sq_rep_link(s, SQ_REP_BATCH, r->old_id, &batch)) < 0)
    rc = in_batch;
  if (!rc && in_batch && take_back)
    rc = pawl__sq_batch_count_job(s, r->old_id, d[0], d[1], d[2], now);
  if (!rc && in_batch) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_LEAVE);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    rc = sq_exec(s, st, "leave the batch");
  }
  /* Dependencies: a live job's edges go to the replacement
   * before its cancel, which therefore releases none of its children
   * (docs/flows.md "Dependencies and chains"). A terminal one's children have
   * counted its end already: its edges stay. */
  static const int hand[] = {SQ_DEPS_HAND_PARENT, SQ_DEPS_HAND_CHILD,
                             SQ_DEPS_HAND_CLOSE};
  if (!rc && live)
    rc = sq_deps_replace(s, hand, 3, r->old_id, &r->job->id);
  /* The old job ends first: its business key and signal key are free for
   * the replacement. */
  if (!rc && live)
    rc = pawl__store_transition_in(base, &pawl__sq_transition_steps, now,
                                   r->old_id, STORE_OP_CANCEL, r->actor,
                                   r->reason, version);
  pawl_id_t id;
  int status = 0;
  if (!rc) rc = pawl__sq_insert_one(s, r->job, now, NULL, &id, &status);
  static const int take[] = {SQ_DEPS_TAKE_OVER};
  if (!rc && live) rc = sq_deps_replace(s, take, 1, r->old_id, &r->job->id);
  static const int instance[] = {SQ_REP_INSTANCE}; /* steps, identity */
  if (!rc) rc = sq_deps_replace(s, instance, 1, r->old_id, &r->job->id);
  if (!rc) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_ADD);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    sq_bind_id(st, 2, &r->job->id);
    sqlite3_bind_int64(st, 3, now);
    sq_bind_text(st, 4, r->actor);
    rc = sq_exec(s, st, "link replacement");
  }
  if (!rc) {
    sqlite3_stmt *st = sq_stmt(s, SQ_REP_CARRY);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sq_bind_id(st, 1, r->old_id);
    sq_bind_id(st, 2, &r->job->id);
    if (in_batch) sq_bind_id(st, 3, &batch);
    rc = sq_exec(s, st, "carry over to the replacement");
  }
  return pawl__sq_end(s, rc);
}

int pawl__sq_replace_links(store_t *base, const pawl_id_t *id,
                           pawl_replace_links_t *out) {
  sq_store_t *s = (sq_store_t *)base;
  pawl_replace_links_t l;
  memset(&l, 0, sizeof l);
  int rc = sq_rep_link(s, SQ_REP_NEXT, id, &l.superseded_by);
  if (rc < 0) return rc;
  l.has_superseded_by = rc;
  if ((rc = sq_rep_link(s, SQ_REP_PREV, id, &l.supersedes)) < 0) return rc;
  l.has_supersedes = rc;
  if (!l.has_superseded_by && !l.has_supersedes) {
    sqlite3_stmt *st = sq_stmt(s, SQ_EXISTS);
    if (!st) return PAWL_ESTORE;
    sq_bind_id(st, 1, id);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step == SQLITE_DONE) return pawl__store_no_job(base, id);
    if (step != SQLITE_ROW) return pawl__sq_fail(s, step, "read job");
  }
  *out = l;
  return 0;
}
