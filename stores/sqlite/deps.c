/* deps.c: SQLite store, dependencies between jobs
 * (schema/sqlite/V011__deps.sql; store.h, "deps"). */
#include "sqlite_int.h"

/* Does parent row p (ended in state `st`) meet the edge's condition `c`?
 * 'failure' asks for failed; a canceled parent meets only 'done'. */
#define SQLITE_DEPS_MET(c, st)                                               \
  "(CASE " c " WHEN 'success' THEN " st " = 2 WHEN 'failure' THEN " st       \
  " = 3 WHEN 'done' THEN 1 ELSE " st " = 2 AND EXISTS (SELECT 1 FROM "       \
  "json_each(coalesce(p.branches, '[]')) WHERE value = substr(" c ", 8)) "   \
  "END)"

/* The release of a finish's parents, one statement per batch: ?1 is the
 * JSON array of the seqs of the jobs that ended in this transaction with
 * deps_open (the success UPDATE notes them through pawl_tp_note(), the
 * failure and the operator's transitions through the store); every
 * blocked child of theirs counts their ends at once (deps_left down by
 * how many of its parents are in the batch, deps_unmet up by those whose
 * condition failed). Returns the children whose last parent it was. */
#define SQLITE_DEPS_RELEASE                                                  \
  "UPDATE pawl_jobs AS c SET deps_left = c.deps_left - x.n, deps_unmet = "   \
  "c.deps_unmet + x.unmet FROM (SELECT d.child AS child, count(*) AS n, "    \
  "sum(NOT " SQLITE_DEPS_MET("d.cond", "p.state") ") AS unmet FROM "         \
  "pawl_jobs AS p JOIN pawl_deps AS d ON d.parent = p.id WHERE p.seq IN "    \
  "(SELECT value FROM json_each(?1)) AND p.deps_open = 1 AND p.state IN "    \
  "(2, 3, 4) GROUP BY d.child) AS x WHERE c.id = x.child AND c.state = 6 "   \
  "RETURNING id, deps_left, deps_unmet"

/* Their ends are counted: closed (a manual retry opens them again). */
#define SQLITE_DEPS_CLOSE                                                    \
  "UPDATE pawl_jobs SET deps_open = 0 WHERE seq IN (SELECT value FROM "      \
  "json_each(?1)) AND deps_open = 1 AND state IN (2, 3, 4)"

/* The seq of job ?1 if its end is still to be counted. */
#define SQLITE_DEPS_OPEN_SEQ                                                 \
  "SELECT seq FROM pawl_jobs WHERE id = ?1 AND deps_open = 1"

/* A new child's parent ?1 on condition ?2: its state as the child counts
 * it (paused from failed counts as failed) and whether it meets ?2. */
#define SQLITE_DEPS_PARENT                                                   \
  "SELECT CASE WHEN p.state = 5 THEN p.paused_from ELSE p.state END AS st, " \
  SQLITE_DEPS_MET("?2", "(CASE WHEN p.state = 5 THEN p.paused_from ELSE "    \
                  "p.state END)")                                            \
  " FROM pawl_jobs AS p WHERE p.id = ?1"

#define SQLITE_DEPS_EDGE                                                     \
  "INSERT INTO pawl_deps (parent, child, cond) VALUES (?1, ?2, ?3)"
#define SQLITE_DEPS_MARK_OPEN                                                \
  "UPDATE pawl_jobs SET deps_open = 1 WHERE id = ?1 AND deps_open = 0"
#define SQLITE_DEPS_COUNTS                                                   \
  "UPDATE pawl_jobs SET deps_left = ?2, deps_unmet = ?3 WHERE id = ?1"

/* Why child ?1 is canceled: its first parent whose condition failed. */
#define SQLITE_DEPS_WHY                                                      \
  "SELECT p.id, p.state, d.cond FROM pawl_deps AS d JOIN pawl_jobs AS p ON " \
  "p.id = d.parent WHERE d.child = ?1 AND p.state IN (2, 3, 4) AND NOT "     \
  SQLITE_DEPS_MET("d.cond", "p.state") " ORDER BY p.id LIMIT 1"

/* Did a parent that ended in state `st` (failed 3 or canceled 4, the
 * states a retry reopens) leave condition `c` unmet? 1 or 0. */
#define SQLITE_DEPS_UNMET_ENDED(c, st)                                       \
  "(CASE " c " WHEN 'failure' THEN " st " <> 3 WHEN 'done' THEN 0 ELSE 1 "   \
  "END)"

/* A manual retry (pawl__store_deps_reopen): the blocked children of
 * parent ?1, whose end they counted in state ?2, stop counting it. */
#define SQLITE_DEPS_UNCOUNT                                                  \
  "UPDATE pawl_jobs AS c SET deps_left = c.deps_left + 1, deps_unmet = "     \
  "c.deps_unmet - " SQLITE_DEPS_UNMET_ENDED("d.cond", "?2") " FROM "         \
  "pawl_deps AS d WHERE d.parent = ?1 AND c.id = d.child AND c.state = 6"
/* The children of parent ?1 (its end counted in state ?2) that its end
 * canceled: see store_reopen_steps_t.canceled. */
#define SQLITE_DEPS_CANCELED                                                 \
  "SELECT c.id FROM pawl_deps AS d JOIN pawl_jobs AS c ON c.id = d.child "   \
  "WHERE d.parent = ?1 AND c.state = 4 AND c.deps_left = 0 AND "             \
  "c.deps_unmet > 0 AND " SQLITE_DEPS_UNMET_ENDED("d.cond", "?2") " = 1 "    \
  "AND c.batch_id IS NULL AND NOT EXISTS (SELECT 1 FROM pawl_signals AS s "  \
  "WHERE s.job_id = c.id) AND (c.business_key IS NULL OR NOT EXISTS "        \
  "(SELECT 1 FROM pawl_jobs AS o WHERE o.business_key = c.business_key "     \
  "AND o.state IN (0, 1, 5, 6))) ORDER BY c.id"
#define SQLITE_DEPS_RECOUNT                                                  \
  "UPDATE pawl_jobs SET deps_left = deps_left + 1, deps_unmet = deps_unmet " \
  "- 1 WHERE id = ?1"
#define SQLITE_DEPS_REOPEN_SELF                                              \
  "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps WHERE "  \
  "parent = ?1) WHERE id = ?1"

/* A job's edges for `pawl show`: its parents, then its children, oldest
 * first. */
#define SQLITE_DEPS_LIST                                                     \
  "SELECT 1, p.id, p.type, p.state, d.cond FROM pawl_deps AS d JOIN "        \
  "pawl_jobs AS p ON p.id = d.parent WHERE d.child = ?1 UNION ALL SELECT 0, "\
  "c.id, c.type, c.state, d.cond FROM pawl_deps AS d JOIN pawl_jobs AS c ON "\
  "c.id = d.child WHERE d.parent = ?1 ORDER BY 1 DESC, 2"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__DEPS
const char *const pawl__sq_sql_deps[SQ__STEPS - SQ__DEPS] = {
    SQ_AT(SQ_DEPS_RELEASE) = SQLITE_DEPS_RELEASE,
    SQ_AT(SQ_DEPS_CLOSE) = SQLITE_DEPS_CLOSE,
    SQ_AT(SQ_DEPS_OPEN_SEQ) = SQLITE_DEPS_OPEN_SEQ,
    SQ_AT(SQ_DEPS_PARENT) = SQLITE_DEPS_PARENT,
    SQ_AT(SQ_DEPS_EDGE) = SQLITE_DEPS_EDGE,
    SQ_AT(SQ_DEPS_MARK_OPEN) = SQLITE_DEPS_MARK_OPEN,
    SQ_AT(SQ_DEPS_COUNTS) = SQLITE_DEPS_COUNTS,
    SQ_AT(SQ_DEPS_WHY) = SQLITE_DEPS_WHY,
    SQ_AT(SQ_DEPS_UNCOUNT) = SQLITE_DEPS_UNCOUNT,
    SQ_AT(SQ_DEPS_CANCELED) = SQLITE_DEPS_CANCELED,
    SQ_AT(SQ_DEPS_RECOUNT) = SQLITE_DEPS_RECOUNT,
    SQ_AT(SQ_DEPS_REOPEN_SELF) = SQLITE_DEPS_REOPEN_SELF,
    SQ_AT(SQ_DEPS_LIST) = SQLITE_DEPS_LIST,
};
#undef SQ_HERE

/* Notes job `seq` (it ended with children to release) for
 * pawl__sq_deps_flush(). */
void pawl__sq_deps_note(sq_store_t *s, int64_t seq) {
  if (s->ndep == s->depcap) {
    size_t cap = s->depcap ? s->depcap * 2 : 16;
    int64_t *g = pawl__realloc(s->dep_seq, cap * sizeof *g);
    if (!g) {
      s->dep_oom = 1;
      return;
    }
    s->dep_seq = g;
    s->depcap = cap;
  }
  s->dep_seq[s->ndep++] = seq;
}

/* pawl_dep_note(v, seq, key) [SQL]: notes `seq` when not NULL (a failed
 * job with children to release) and `key` when not NULL, returns v. */
void pawl__sq_dep_note_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  sq_store_t *s = sqlite3_user_data(ctx);
  if (sqlite3_value_type(v[1]) != SQLITE_NULL)
    pawl__sq_deps_note(s, sqlite3_value_int64(v[1]));
  if (sqlite3_value_type(v[2]) != SQLITE_NULL)
    pawl__sq_key_note(s, (const char *)sqlite3_value_text(v[2]));
  sqlite3_result_value(ctx, v[0]);
}

/* ---- dependencies ------------------------------------------------------ */

/* Job `id`, just ended by an operator transition (cancel, expire): noted
 * if it has children to release. */
int pawl__sq_deps_note_id(sq_store_t *s, const pawl_id_t *id) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_OPEN_SEQ);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) pawl__sq_deps_note(s, sqlite3_column_int64(st, 0));
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "find a job's children");
  return 0;
}

/* Moves the blocked job `id`, whose parents have all ended, out of
 * `blocked` through an operator transition (its event, and for a cancel
 * the throughput count and the note that releases its own children):
 * pending when `unmet` is 0, else canceled with the first parent whose
 * condition failed as the reason. */
static int sq_deps_settle(sq_store_t *s, const pawl_id_t *id, int64_t unmet,
                          int64_t now) {
  if (!unmet)
    return pawl__store_transition_in(&s->base, &pawl__sq_transition_steps, now,
                                     id, STORE_OP_UNBLOCK, "pawl",
                                     "its parents ended as it asks", -1);
  char why[200] = "dependency not met";
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_WHY);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int step = sqlite3_step(st);
  if (step == SQLITE_ROW) {
    pawl_id_t pid;
    char text[PAWL_ID_STRLEN];
    sq_col_id(st, 0, &pid);
    pawl_id_format(&pid, text);
    int state = sqlite3_column_int(st, 1);
    snprintf(why, sizeof why, "dependency not met: parent %s %s (when = %s)",
             text,
             state == PAWL_SUCCEEDED ? "succeeded"
             : state == PAWL_FAILED  ? "failed"
                                     : "was canceled",
             (const char *)sqlite3_column_text(st, 2));
  }
  sqlite3_reset(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    return pawl__sq_fail(s, step, "find why a job is canceled");
  return pawl__store_transition_in(&s->base, &pawl__sq_transition_steps, now,
                                   id, STORE_OP_CANCEL, "pawl", why, -1);
}

/* Releases the children of the jobs noted in this transaction, before it
 * commits: one UPDATE for the whole batch counts their ends in every
 * blocked child (SQLITE_DEPS_RELEASE), one closes them, then each child
 * whose last parent it was is settled (sq_deps_settle()); a child canceled
 * for it is noted in turn, and the loop releases its children next.
 * SQLite's one writer makes each end counted once. */
int pawl__sq_deps_flush(sq_store_t *s) {
  if (s->dep_oom) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  int64_t now = pawl__store_now(&s->base);
  int rc = 0;
  pawl_buf_t js;
  pawl__buf_init(&js);
  struct settle {
    pawl_id_t id;
    int64_t unmet;
  } *ready = NULL;
  size_t nready = 0, cap = 0;
  while (!rc && s->ndep) {
    pawl__buf_reset(&js);
    pawl__buf_putc(&js, '[');
    for (size_t i = 0; i < s->ndep; i++)
      pawl__buf_printf(&js, i ? ",%lld" : "%lld", (long long)s->dep_seq[i]);
    pawl__buf_putc(&js, ']');
    s->ndep = 0;
    if (js.oom) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_RELEASE);
    if (!st) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&js), -1, SQLITE_STATIC);
    nready = 0;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
      if (sqlite3_column_int64(st, 1) > 0) continue;
      if (nready == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        struct settle *g = pawl__realloc(ready, ncap * sizeof *g);
        if (!g) {
          step = SQLITE_NOMEM;
          break;
        }
        ready = g;
        cap = ncap;
      }
      sq_col_id(st, 0, &ready[nready].id);
      ready[nready++].unmet = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (step == SQLITE_NOMEM) {
      rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
      break;
    }
    if (step != SQLITE_DONE) {
      rc = pawl__sq_fail(s, step, "release the children of ended jobs");
      break;
    }
    if (!(st = sq_stmt(s, SQ_DEPS_CLOSE))) {
      rc = PAWL_ESTORE;
      break;
    }
    sqlite3_bind_text(st, 1, pawl__buf_cstr(&js), -1, SQLITE_STATIC);
    rc = sq_exec(s, st, "close ended parents");
    sqlite3_clear_bindings(st);
    for (size_t i = 0; i < nready && !rc; i++)
      rc = sq_deps_settle(s, &ready[i].id, ready[i].unmet, now);
  }
  pawl__free(ready);
  pawl__buf_free(&js);
  if (!rc && s->dep_oom)
    rc = pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  return rc;
}

/* One edge of the new blocked job j: parent `pid` on condition `cond`.
 * A parent that ended already is counted now (*unmet when its condition
 * failed); one that has not is marked open (*left). */
static int sq_deps_edge(sq_store_t *s, const store_new_job_t *j,
                        const pawl_id_t *pid, const char *cond, int64_t *left,
                        int64_t *unmet) {
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_PARENT);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, pid);
  sqlite3_bind_text(st, 2, cond, -1, SQLITE_STATIC);
  int step = sqlite3_step(st);
  int state = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  int met = step == SQLITE_ROW && sqlite3_column_int(st, 1);
  sqlite3_reset(st);
  if (step == SQLITE_DONE) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(pid, text);
    return pawl__store_fail(&s->base, PAWL_ENOTFOUND,
                            "unknown parent job %s", text);
  }
  if (step != SQLITE_ROW) return pawl__sq_fail(s, step, "read a parent job");
  int ended = state == PAWL_SUCCEEDED || state == PAWL_FAILED ||
              state == PAWL_CANCELED;
  int rc;
  if (ended) {
    *unmet += !met;
  } else {
    (*left)++;
    if (!(st = sq_stmt(s, SQ_DEPS_MARK_OPEN))) return PAWL_ESTORE;
    sq_bind_id(st, 1, pid);
    if ((rc = sq_exec(s, st, "mark a parent job"))) return rc;
  }
  if (!(st = sq_stmt(s, SQ_DEPS_EDGE))) return PAWL_ESTORE;
  sq_bind_id(st, 1, pid);
  sq_bind_id(st, 2, &j->id);
  sqlite3_bind_text(st, 3, cond, -1, SQLITE_STATIC);
  return sq_exec(s, st, "record a dependency");
}

/* Links the new blocked job j to its parents (and `prev`, for a chain);
 * settled at once if they have all ended. */
int pawl__sq_deps_link(sq_store_t *s, const store_new_job_t *j,
                       const pawl_id_t *prev, int64_t now) {
  int64_t left = 0, unmet = 0;
  int rc = 0;
  const char *when = j->when ? j->when : "success";
  for (size_t i = 0; i < j->nafter && !rc; i++)
    rc = sq_deps_edge(s, j, &j->after[i], when, &left, &unmet);
  if (!rc && j->after_prev && prev) {
    int dup = 0;
    for (size_t i = 0; i < j->nafter && !dup; i++)
      dup = memcmp(&j->after[i], prev, sizeof *prev) == 0;
    if (!dup) rc = sq_deps_edge(s, j, prev, "success", &left, &unmet);
  }
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_COUNTS);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, &j->id);
  sqlite3_bind_int64(st, 2, left);
  sqlite3_bind_int64(st, 3, unmet);
  if ((rc = sq_exec(s, st, "count a job's parents"))) return rc;
  return left ? 0 : sq_deps_settle(s, &j->id, unmet, now);
}

/* Runs statement `which` with ?1 the job `id` and ?2 `state` (-1: none). */
static int sq_deps_run(store_t *base, int which, const pawl_id_t *id,
                       int state, const char *what) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, which);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  if (state >= 0) sqlite3_bind_int(st, 2, state);
  return sq_exec(s, st, what);
}

static int sq_deps_uncount(store_t *base, const pawl_id_t *parent,
                           int state) {
  return sq_deps_run(base, SQ_DEPS_UNCOUNT, parent, state,
                     "reopen a retried parent");
}

static int sq_deps_canceled(store_t *base, const pawl_id_t *parent,
                            int state, pawl_id_t **out, size_t *n) {
  sq_store_t *s = (sq_store_t *)base;
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_CANCELED);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, parent);
  sqlite3_bind_int(st, 2, state);
  size_t cap = 0;
  int step, rc = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      pawl_id_t *g = pawl__realloc(*out, ncap * sizeof *g);
      if (!g) {
        rc = pawl__store_fail(base, PAWL_ENOMEM, "out of memory");
        break;
      }
      *out = g;
      cap = ncap;
    }
    sq_col_id(st, 0, &(*out)[(*n)++]);
  }
  sqlite3_reset(st);
  if (!rc && step != SQLITE_DONE)
    rc = pawl__sq_fail(s, step, "find the children a failure canceled");
  if (rc) {
    pawl__free(*out);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

static int sq_deps_recount(store_t *base, const pawl_id_t *child) {
  return sq_deps_run(base, SQ_DEPS_RECOUNT, child, -1, "reopen a child");
}

static int sq_deps_open(store_t *base, const pawl_id_t *parent) {
  return sq_deps_run(base, SQ_DEPS_REOPEN_SELF, parent, -1,
                     "reopen a retried parent");
}

static const store_reopen_steps_t sq_reopen_steps = {
    .uncount = sq_deps_uncount,
    .canceled = sq_deps_canceled,
    .recount = sq_deps_recount,
    .open = sq_deps_open,
};

int pawl__sq_deps_reopen(store_t *base, const pawl_id_t *id, int64_t now,
                         const char *actor) {
  return pawl__store_deps_reopen(base, &pawl__sq_transition_steps,
                                 &sq_reopen_steps, id, now, actor);
}

int pawl__sq_deps_list(store_t *base, const pawl_id_t *id, pawl_dep_cb cb,
                       void *data) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_DEPS_LIST);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  /* Read whole before the first call: the callback may use the store. */
  struct row {
    pawl_dep_t d;
    char *type, *when;
  } *rows = NULL;
  size_t n = 0, cap = 0;
  int step, oom = 0;
  while ((step = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      struct row *g = pawl__realloc(rows, ncap * sizeof *g);
      if (!g) {
        oom = 1;
        break;
      }
      rows = g;
      cap = ncap;
    }
    struct row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    r->d.parent = sqlite3_column_int(st, 0);
    sq_col_id(st, 1, &r->d.id);
    r->d.state = sqlite3_column_int(st, 3);
    r->type = pawl__strdup((const char *)sqlite3_column_text(st, 2));
    r->when = pawl__strdup((const char *)sqlite3_column_text(st, 4));
    if (!r->type || !r->when) {
      oom = 1;
      break;
    }
  }
  sqlite3_reset(st);
  int rc = oom ? pawl__store_fail(base, PAWL_ENOMEM, "out of memory")
           : step != SQLITE_DONE ? pawl__sq_fail(s, step, "list dependencies")
                                 : 0;
  for (size_t i = 0; i < n; i++) {
    rows[i].d.type = rows[i].type;
    rows[i].d.when = rows[i].when;
    if (!rc && cb(&rows[i].d, data)) rc = 1;
  }
  for (size_t i = 0; i < n; i++) {
    pawl__free(rows[i].type);
    pawl__free(rows[i].when);
  }
  pawl__free(rows);
  return rc == 1 ? 0 : rc;
}
