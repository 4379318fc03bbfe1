/* store.c: PostgreSQL store, the store itself: the connection and its
 * reconnect, statements and pipelines, errors, transactions, reading rows, the
 * age boost setting, the wakeup (LISTEN, and the wait for a NOTIFY), opening
 * and closing, the vtable. */
#include "pg_int.h"

/* The SQL of this file's statements, by their ids (pg_int.h,
 * "Statements"). */
#define PG_HERE PG__STORE
const char *const pawl__pg_sql_store[PG__JOBS - PG__STORE] = {
    PG_AT(PG_GET) =
        "SELECT " PG_JOB_COLS " FROM pawl_jobs AS j WHERE j.id = $1::uuid",
    PG_AT(PG_GET_LOCKED) = "SELECT " PG_JOB_COLS
                           " FROM pawl_jobs AS j WHERE "
                           "j.id = $1::uuid FOR UPDATE",
    PG_AT(PG_SETTING_GET) =
        "SELECT value FROM pawl_settings WHERE name = $1::text",
    PG_AT(PG_SETTING_SET) =
        "INSERT INTO pawl_settings (name, value) VALUES "
        "($1::text, $2::text) ON CONFLICT (name) DO UPDATE SET "
        "value = excluded.value",
    /* The database's boost changed ($2 NULL): every pending job ranks
     * anew, those of a queue with a boost of its own (pawl_queues) as
     * before; or queue $2's boost did. */
    PG_AT(PG_RERANK) =
        "UPDATE pawl_jobs SET rank = pawl_rank(priority, run_at, "
        "pawl_queue_boost(queue, $1::bigint)) WHERE state = 0 AND "
        "($2::text IS NULL OR queue = $2::text)",
};
#undef PG_HERE

/* Every file's SQL table, in the order of the enum's groups; a group
 * ends where the next begins. */
static const struct {
  int first;
  const char *const *sql;
} pg_files[] = {
    {PG__STORE, pawl__pg_sql_store},
    {PG__JOBS, pawl__pg_sql_jobs},
    {PG__CLAIM, pawl__pg_sql_claim},
    {PG__LIMITS, pawl__pg_sql_limits},
    {PG__TERMINAL, pawl__pg_sql_terminal},
    {PG__CONTROL, pawl__pg_sql_control},
    {PG__HISTORY, pawl__pg_sql_history},
    {PG__LOCKS, pawl__pg_sql_locks},
    {PG__NODES, pawl__pg_sql_nodes},
    {PG__QUEUES, pawl__pg_sql_queues},
    {PG__TYPES, pawl__pg_sql_types},
    {PG__RECURRING, pawl__pg_sql_recurring},
    {PG__FLOW, pawl__pg_sql_flow},
    {PG__BATCH, pawl__pg_sql_batch},
    {PG__DEPS, pawl__pg_sql_deps},
    {PG__STEPS, pawl__pg_sql_steps},
    {PG__ALERTS, pawl__pg_sql_alerts},
    {PG__RETENTION, pawl__pg_sql_retention},
    {PG__ADMIN, pawl__pg_sql_admin},
    {PG__METRICS, pawl__pg_sql_metrics},
    {PG_COUNT, NULL},
};

const char *pawl__pg_sql(int id) {
  if (id < 0 || id >= PG_COUNT) return NULL;
  size_t i = 0;
  while (id >= pg_files[i + 1].first) i++;
  return pg_files[i].sql[id - pg_files[i].first];
}

static int pg_listen_now(pg_store_t *s);

/* ---- errors -------------------------------------------------------------- */

/* A PAWL_E* code for a failed result, by SQLSTATE. */
int pawl__pg_code(pg_store_t *s, const PGresult *res) {
  if (PQstatus(s->conn) != CONNECTION_OK) return PAWL_EUNAVAIL;
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!st) return PAWL_EUNAVAIL; /* no answer from the server at all */
  if (strcmp(st, "23505") == 0) return PAWL_EKEY;       /* unique_violation */
  if (strcmp(st, "23503") == 0)
    return PAWL_ENOTFOUND; /* foreign_key_violation */
  if (strncmp(st, "22", 2) == 0) return PAWL_EINVAL;    /* data exception */
  if (strncmp(st, "23", 2) == 0) return PAWL_EINVAL;    /* other integrity
                                                          constraints */
  if (strcmp(st, "40001") == 0 || strcmp(st, "40P01") == 0 ||
      strcmp(st, "55P03") == 0)
    return PAWL_EBUSY; /* serialization failure, deadlock, lock not available */
  if (strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0 ||
      strncmp(st, "53", 2) == 0)
    return PAWL_EUNAVAIL; /* connection, shutdown, insufficient resources */
  if (strcmp(st, "42P01") == 0 || strcmp(st, "42883") == 0)
    return PAWL_ESCHEMA; /* undefined table or function: not migrated */
  return PAWL_ESTORE;
}

/* The server's message without its trailing newline, and without the
 * password of our connection string wherever it might be quoted (libpq's
 * connection messages quote what they stumbled on). */
void pawl__pg_message(pg_store_t *s, const PGresult *res, char *out,
                      size_t len) {
  const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  if (!m || !*m) m = PQerrorMessage(s->conn);
  pawl__redact_message(s->conninfo, m && *m ? m : "no answer from the server",
                       0, out, len);
  size_t n = strlen(out);
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
}

int pawl__pg_fail(pg_store_t *s, const PGresult *res, const char *what) {
  char msg[300];
  pawl__pg_message(s, res, msg, sizeof msg);
  int rc = pawl__pg_code(s, res);
  if (rc == PAWL_EUNAVAIL)
    return pawl__store_fail(&s->base, rc, "%s: database unreachable: %s", what,
                            msg);
  return pawl__store_fail(&s->base, rc, "%s: %s", what, msg);
}

/* ---- connection ---------------------------------------------------------- */

/* The store's session settings, on every connection it opens. JIT off:
 * the store's statements touch a few rows each, and compiling one to
 * machine code takes 0.2-1.5 s. The planner decides to compile from its
 * cost estimate, which on a table it misjudges (a new schema, a table
 * never analyzed, a burst since the last analyze) or with a way of
 * reading priced out by a claim's settings can pass jit_above_cost for a
 * statement that runs in a millisecond: a node under pressure then spent
 * 300 ms compiling each "when is the next job due". */
static int pg_session_setup(pg_store_t *s) {
  PGresult *res = PQexec(s->conn, "SET jit = off");
  int rc = PQresultStatus(res) == PGRES_COMMAND_OK
               ? 0
               : pawl__pg_fail(s, res, "set up the session");
  PQclear(res);
  return rc;
}

/* Makes sure the connection is up: after a failure, one reconnect attempt
 * (bounded by connect_timeout). The session is set up again, statements
 * are prepared again on the new connection, and a listener listens
 * again. */
int pawl__pg_ready(pg_store_t *s) {
  if (PQstatus(s->conn) == CONNECTION_OK) return 0;
  PQreset(s->conn);
  memset(s->prepared, 0, sizeof s->prepared);
  if (PQstatus(s->conn) != CONNECTION_OK) {
    char msg[300];
    pawl__pg_message(s, NULL, msg, sizeof msg);
    return pawl__store_fail(&s->base, PAWL_EUNAVAIL, "database unreachable: %s",
                            msg);
  }
  pawl__dbstats_reconnected(); /* the metrics endpoint counts them */
  int rc = pg_session_setup(s);
  if (!rc && s->listening && !(rc = pg_listen_now(s))) s->relistened = 1;
  return rc;
}

static int pg_prepare(pg_store_t *s, int id) {
  if (s->prepared[id]) return 0;
  const char *sql = pawl__pg_sql(id);
  if (!sql)
    return pawl__store_fail(&s->base, PAWL_ESTORE,
                            "statement %d has no SQL (pg_int.h)", id);
  char name[16];
  snprintf(name, sizeof name, "pawl_%d", id);
  PGresult *res = PQprepare(s->conn, name, sql, 0, NULL);
  int rc = 0;
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    rc = pawl__pg_fail(s, res, "prepare statement");
  else
    s->prepared[id] = 1;
  PQclear(res);
  return rc;
}

/* Runs prepared statement `id` with n text parameters. On success *out (if
 * not NULL) holds the result, which the caller PQclear()s. */
int pawl__pg_run(pg_store_t *s, int id, int n, const char *const *vals,
                 PGresult **out, const char *what) {
  if (out) *out = NULL;
  int rc = pawl__pg_ready(s);
  if (!rc) rc = pg_prepare(s, id);
  if (rc) return rc;
  char name[16];
  snprintf(name, sizeof name, "pawl_%d", id);
  PGresult *res = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    rc = pawl__pg_fail(s, res, what);
    PQclear(res);
    return rc;
  }
  if (out)
    *out = res;
  else
    PQclear(res);
  return 0;
}

/* A plain command (BEGIN, COMMIT, ...), or a query whose rows we ignore. */
int pawl__pg_cmd(pg_store_t *s, const char *sql, const char *what) {
  PGresult *res = PQexec(s->conn, sql);
  int rc = 0;
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
    rc = pawl__pg_fail(s, res, what);
  PQclear(res);
  return rc;
}

int pawl__pg_begin(pg_store_t *s) {
  int rc = pawl__pg_ready(s);
  return rc ? rc : pawl__pg_cmd(s, "BEGIN", "begin transaction");
}

/* Ends a transaction: commit when rc == 0, else roll back. */
int pawl__pg_end(pg_store_t *s, int rc) {
  if (rc == 0) return pawl__pg_cmd(s, "COMMIT", "commit");
  if (PQstatus(s->conn) == CONNECTION_OK &&
      PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
    PGresult *res = PQexec(s->conn, "ROLLBACK");
    PQclear(res);
  }
  return rc;
}

int pawl__pg_pipeline(pg_store_t *s, pg_call_t *calls, size_t n,
                      const char *what) {
  int rc = pawl__pg_ready(s);
  for (size_t i = 0; i < n && !rc; i++) rc = pg_prepare(s, calls[i].stmt);
  if (rc) return rc;
  if (!PQenterPipelineMode(s->conn))
    return pawl__pg_fail(s, NULL, "enter pipeline mode");
  /* Sent, and the syncs among them. */
  size_t sent = 0, syncs = 0;
  int ok = 1;
  for (; ok && sent < n; sent++) {
    char name[16];
    snprintf(name, sizeof name, "pawl_%d", calls[sent].stmt);
    if (!PQsendQueryPrepared(s->conn, name, calls[sent].n, calls[sent].p.v,
                             NULL, NULL, 0)) {
      ok = 0;
      break;
    }
    if (calls[sent].sync || sent + 1 == n) {
      if (!PQpipelineSync(s->conn)) {
        ok = 0;
        sent++;
        break;
      }
      syncs++;
    }
  }
  if (!ok) rc = pawl__pg_fail(s, NULL, what);
  /* Read back whatever the server answers, up to the last sync. */
  for (size_t i = 0; i < sent; i++) {
    PGresult *res = PQgetResult(s->conn);
    if (!res) break; /* connection lost */
    ExecStatusType st = PQresultStatus(res);
    if (!rc && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      rc = pawl__pg_fail(s, res, what);
    calls[i].res = res;
    PGresult *end = PQgetResult(s->conn); /* NULL after each query */
    if (end) PQclear(end);
    if ((calls[i].sync || i + 1 == n) && syncs) {
      while ((res = PQgetResult(s->conn)) != NULL) {
        int done = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
        if (done) break;
      }
      syncs--;
    }
  }
  if (!PQexitPipelineMode(s->conn) && !rc)
    rc = pawl__pg_fail(s, NULL, "leave pipeline mode");
  if (PQstatus(s->conn) != CONNECTION_OK && !rc)
    rc = pawl__pg_fail(s, NULL, what);
  return rc;
}

void pawl__pg_calls_free(pg_call_t *calls, size_t n) {
  for (size_t i = 0; i < n; i++) PQclear(calls[i].res);
  pawl__free(calls);
}

/* ---- rows ---------------------------------------------------------------- */

/* The column accessors of row r->row of a result (store_row_t). */
static const char *pg_row_text(const store_row_t *r, int col, size_t *len) {
  const PGresult *res = r->res;
  const char *v = pg_val(res, r->row, col);
  *len = v ? (size_t)PQgetlength(res, r->row, col) : 0;
  return v;
}

static int64_t pg_row_int64(const store_row_t *r, int col) {
  return pg_int(r->res, r->row, col);
}

static double pg_row_dbl(const store_row_t *r, int col) {
  return pg_dbl(r->res, r->row, col);
}

static void pg_row_id(const store_row_t *r, int col, pawl_id_t *out) {
  pg_id(r->res, r->row, col, out);
}

store_row_t pawl__pg_row(const PGresult *res, int row) {
  return (store_row_t){pg_row_text, pg_row_int64, pg_row_dbl, pg_row_id, res,
                       row};
}

/* A pawl_job_t from a row of PG_JOB_COLS. Rows are found by id, through
 * the primary key: store_key stays 0. NULL when out of memory. */
pawl_job_t *pawl__pg_row_to_job(const PGresult *res, int row) {
  store_job_row_t r;
  for (int k = 0; k < STORE_JOB_NTEXT; k++) {
    int c = pawl__store_job_texts[k];
    r.text[c] = pg_val(res, row, c);
    r.len[c] = r.text[c] ? (size_t)PQgetlength(res, row, c) : 0;
  }
  for (int k = 0; k < STORE_JOB_NINT; k++) {
    int c = pawl__store_job_ints[k];
    r.num[c] = pg_int(res, row, c);
  }
  pg_id(res, row, STORE_JOB_ID, &r.id);
  r.progress_done = pg_dbl(res, row, STORE_JOB_PROGRESS_DONE);
  r.progress_total = pg_dbl(res, row, STORE_JOB_PROGRESS_TOTAL);
  return pawl__store_job_from_row(&r, NULL);
}

/* Reads job `id` (locked for update inside a transaction when `lock`). */
int pawl__pg_read_job(pg_store_t *s, const pawl_id_t *id, int lock,
                      pawl_job_t **out) {
  pg_params_t pp;
  pp_id(&pp, 0, id);
  PGresult *res;
  int rc =
      pawl__pg_run(s, lock ? PG_GET_LOCKED : PG_GET, 1, pp.v, &res, "read job");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return pawl__store_no_job(&s->base, id);
  }
  pawl_job_t *j = pawl__pg_row_to_job(res, 0);
  PQclear(res);
  if (!j) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  *out = j;
  return 0;
}

/* ---- settings ------------------------------------------------------------ */

int pawl__pg_setting_get(pg_store_t *s, const char *name, int64_t *out) {
  const char *v[1] = {name};
  PGresult *res;
  int rc = pawl__pg_run(s, PG_SETTING_GET, 1, v, &res, name);
  if (rc) return rc;
  if (PQntuples(res) == 1) *out = pg_int(res, 0, 0);
  PQclear(res);
  return 0;
}

/* Stores a new age boost and re-ranks the pending rows, in one
 * transaction, so every node orders the queue the same way. */
static int pg_set_age_boost(pg_store_t *s, int64_t ms) {
  int rc = pawl__pg_begin(s);
  if (rc) return rc;
  pg_params_t pp;
  pp_str(&pp, 0, "age_boost_ms");
  pp_int(&pp, 1, ms);
  rc = pawl__pg_run(s, PG_SETTING_SET, 2, pp.v, NULL, "store age boost");
  pp_str(&pp, 2, NULL);
  if (!rc)
    rc = pawl__pg_run(s, PG_RERANK, 2, &pp.v[1], NULL, "re-rank pending jobs");
  rc = pawl__pg_end(s, rc);
  if (!rc) s->boost_ms = ms;
  return rc;
}

static int pg_age_boost(store_t *base, int64_t *ms) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) *ms = s->boost_ms;
  return rc;
}

/* ---- wakeup -------------------------------------------------------------- */

/* LISTEN takes a channel name, not a value: it cannot be bound, so the
 * name (read from the server) is quoted as an identifier. */
static int pg_listen_now(pg_store_t *s) {
  PGresult *res = PQexec(s->conn, "SELECT " PG_CHANNEL);
  if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
    int rc = pawl__pg_fail(s, res, "listen for new jobs");
    PQclear(res);
    return rc;
  }
  const char *name = PQgetvalue(res, 0, 0);
  char *quoted = PQescapeIdentifier(s->conn, name, strlen(name));
  PQclear(res);
  if (!quoted) return pawl__pg_fail(s, NULL, "listen for new jobs");
  pawl_buf_t sql;
  pawl__buf_init(&sql);
  pawl__buf_printf(&sql, "LISTEN %s", quoted);
  PQfreemem(quoted);
  int rc = sql.oom ? pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory")
                   : pawl__pg_cmd(s, sql.data, "listen for new jobs");
  pawl__buf_free(&sql);
  return rc;
}

static int pg_listen(store_t *base) {
  pg_store_t *s = (pg_store_t *)base;
  int rc = pawl__pg_ready(s);
  if (!rc) rc = pg_listen_now(s);
  if (!rc) s->listening = 1;
  return rc;
}

/* Waits up to timeout_ms for a notification; *woke says whether one came
 * (all pending ones are consumed), and `heard` gets their payloads. */
static int pg_wait(store_t *base, int timeout_ms, int *woke,
                   pawl_buf_t *heard) {
  pg_store_t *s = (pg_store_t *)base;
  *woke = 0;
  int rc = pawl__pg_ready(s);
  if (rc) return rc;
  if (s->relistened) {
    /* Listening again on a new connection: what was sent meanwhile is
     * lost. */
    s->relistened = 0;
    if (heard) pawl__buf_puts(heard, "*\n");
    *woke = 1;
  }
  for (int round = 0; round < 2; round++) {
    if (!PQconsumeInput(s->conn))
      return pawl__pg_fail(s, NULL, "wait for new jobs");
    PGnotify *nt;
    while ((nt = PQnotifies(s->conn)) != NULL) {
      *woke = 1;
      if (heard) {
        pawl__buf_puts(heard, nt->extra ? nt->extra : "");
        pawl__buf_putc(heard, '\n');
      }
      PQfreemem(nt);
    }
    if (*woke || round == 1) return 0;
    struct pollfd pfd = {.fd = PQsocket(s->conn), .events = POLLIN};
    if (pfd.fd < 0) return pawl__pg_fail(s, NULL, "wait for new jobs");
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr < 0 && errno != EINTR)
      return pawl__store_fail(base, PAWL_EUNAVAIL, "wait for new jobs: %s",
                        strerror(errno));
    if (pr <= 0) return 0;
  }
  return 0;
}

/* ---- open and close ------------------------------------------------------ */

static void pg_close(store_t *base) {
  pg_store_t *s = (pg_store_t *)base;
  if (!s) return;
  PQfinish(s->conn);
  pawl__pg_floors_reset(s);
  pawl__free(s->conninfo);
  pawl__free(s);
}

static const struct store_ops pg_ops = {
    .name = "postgres",
    .schema = {pawl__pg_migrate, pawl__pg_version},
    .jobs = {pawl__pg_insert, pawl__pg_get, pawl__pg_list, pawl__pg_progress,
             pawl__pg_logs},
    .keys = {pawl__pg_find_idempotent, pawl__pg_find_business},
    .claim = {pawl__pg_claim, pawl__pg_extend, pawl__pg_recover, pawl__pg_start,
              pawl__pg_extend_one, pawl__pg_next_due, pawl__pg_hear},
    .terminal = {pawl__pg_finish},
    .control = {pawl__pg_transition},
    .history = {pawl__pg_history},
    .locks = {pawl__pg_lock_acquire, pawl__pg_lock_extend,
              pawl__pg_lock_release},
    .nodes = {pawl__pg_node_beat, pawl__pg_node_list, pawl__pg_node_reap,
              pawl__pg_node_stop},
    .settings = {pg_age_boost},
    .maintenance = {NULL, NULL},
    .wakeup = {pg_listen, pg_wait},
    .close = pg_close,
    .admin = {pawl__pg_adm_count, pawl__pg_adm_pick, pawl__pg_adm_apply,
              pawl__pg_adm_stats, pawl__pg_adm_locks, pawl__pg_adm_running},
    .recurring = {pawl__pg_rec_put, pawl__pg_rec_get, pawl__pg_rec_list,
                  pawl__pg_rec_update, pawl__pg_rec_remove, pawl__pg_rec_due,
                  pawl__pg_rec_advance, pawl__pg_rec_disable_gone,
                  pawl__pg_rec_load_error},
    .queues = {pawl__pg_queue_pause, pawl__pg_queue_set_boost,
               pawl__pg_queue_list},
    .limits = {pawl__pg_limit_set, pawl__pg_limit_remove, pawl__pg_limit_list},
    .types = {pawl__pg_types_sync, pawl__pg_type_get},
    .flow = {pawl__pg_sig_deliver, pawl__pg_sig_get, pawl__pg_sig_expire,
             pawl__pg_replace, pawl__pg_replace_links, pawl__pg_sig_next},
    .batch = {pawl__pg_batch_create, pawl__pg_batch_get, pawl__pg_batch_of},
    .deps = {pawl__pg_deps_list},
    .steps = {pawl__pg_steps_get, pawl__pg_step_begin, pawl__pg_step_save,
              pawl__pg_step_end, pawl__pg_step_exit, pawl__pg_instance_find},
    .top = {pawl__pg_top_throughput, pawl__pg_top_running},
    .alerts = {pawl__pg_alert_take, pawl__pg_alert_note, pawl__pg_alert_done},
    .retention = {pawl__pg_ret_scan, pawl__pg_ret_remove},
    .metrics = {pawl__pg_met_gauges},
};

/* The connection of a PostgreSQL store, for tests and the benchmark's
 * plain-SQL loop; NULL if `st` is not one. */
PGconn *pawl__store_postgres_conn(store_t *st);
PGconn *pawl__store_postgres_conn(store_t *st) {
  return st && st->ops == &pg_ops ? ((pg_store_t *)st)->conn : NULL;
}

/* Server notices (and the FATAL a killed session gets) would go to
 * stderr: the store reports errors through its results instead. */
static void pg_quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* Where a connection goes, for messages: host, port, database and user,
 * never the password the connection string may carry (not even the pieces
 * of one that libpq read as something else). */
static void pg_describe(const char *conninfo, char *out, size_t len) {
  PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
  const char *host = NULL, *port = NULL, *db = NULL, *user = NULL;
  for (PQconninfoOption *o = opts; o && o->keyword; o++) {
    if (!o->val) continue;
    if (strcmp(o->keyword, "host") == 0) host = o->val;
    if (strcmp(o->keyword, "port") == 0) port = o->val;
    if (strcmp(o->keyword, "dbname") == 0) db = o->val;
    if (strcmp(o->keyword, "user") == 0) user = o->val;
  }
  char text[600];
  snprintf(text, sizeof text, "host=%s port=%s dbname=%s user=%s",
           host ? host : "(default)", port ? port : "(default)",
           db ? db : "(default)", user ? user : "(default)");
  PQconninfoFree(opts);
  /* A password with a '/' or an '@' makes libpq read part of it as the
   * host, port or database. */
  pawl__redact_message(conninfo, text, 0, out, len);
}

static int64_t pg_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How far the database clock is ahead of ours (negative: behind), from one
 * round trip, taking its midpoint as the moment the server read its clock. */
static int pg_measure_skew(pg_store_t *s, int64_t *skew) {
  int64_t before = pg_wall_ms(), db = 0;
  int rc =
      pawl__pg_query_int(s,
                         "SELECT floor(extract(epoch FROM clock_timestamp()) "
                         "* 1000)::bigint",
                         &db, "read database clock");
  int64_t after = pg_wall_ms();
  if (!rc) *skew = db - (before + after) / 2;
  return rc;
}

int pawl__store_postgres_open(store_t **out, const store_config_t *cfg,
                        const char *conninfo, char *errbuf, size_t errlen) {
  pg_store_t *s = pawl__calloc(1, sizeof *s);
  if (!s || !(s->conninfo = pawl__strdup(conninfo))) {
    pawl__free(s);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->base.ops = &pg_ops;
  s->floor_all = INT64_MAX;
  s->base.clock = cfg->clock;
  s->base.clock_data = cfg->clock_data;
  s->poison = cfg->poison_recoveries > 0 ? cfg->poison_recoveries : 3;
  /* Defaults that the connection string may override (later wins): a
   * bounded connect, and keepalives so that a dropped network is noticed
   * in seconds rather than after the kernel's two hours. */
  const char *const keys[] = {"connect_timeout", "keepalives_idle",
                              "keepalives_interval", "keepalives_count",
                              "application_name", "dbname", NULL};
  /* A connection string libpq cannot read is refused before connecting,
   * as bad input, with libpq's reason cleaned: it quotes the string or the
   * piece it stumbled on, which may be the password. */
  char *perr = NULL;
  PQconninfoOption *parsed = PQconninfoParse(conninfo, &perr);
  if (!parsed) {
    char msg[300];
    pawl__redact_message(conninfo, perr ? perr : "out of memory", 1, msg,
                         sizeof msg);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
    int prc = perr ? PAWL_EINVAL : PAWL_ENOMEM;
    PQfreemem(perr);
    snprintf(errbuf, errlen, "database URL is malformed: %s", msg);
    pg_close(&s->base);
    return prc;
  }
  PQconninfoFree(parsed);
  const char *const vals[] = {"5", "5", "2", "3", "pawl", conninfo, NULL};
  s->conn = PQconnectdbParams(keys, vals, 1);
  int rc = 0;
  if (!s->conn) {
    snprintf(errbuf, errlen, "out of memory");
    rc = PAWL_ENOMEM;
    goto fail;
  }
  if (PQstatus(s->conn) != CONNECTION_OK) {
    char msg[300], where[300];
    pawl__pg_message(s, NULL, msg, sizeof msg);
    pg_describe(conninfo, where, sizeof where);
    snprintf(errbuf, errlen, "cannot connect to PostgreSQL (%s): %s", where,
             msg);
    rc = PAWL_EUNAVAIL;
    goto fail;
  }
  PQsetNoticeProcessor(s->conn, pg_quiet, NULL);
  if ((rc = pg_session_setup(s))) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    goto fail;
  }
  if (!s->base.clock && (rc = pg_measure_skew(s, &s->base.skew_ms))) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    goto fail;
  }
  rc = pawl__pg_migrate_with(s, cfg->create, !cfg->no_migrate);
  if (!rc && cfg->no_migrate) {
    int cur = 0, latest = 0;
    rc = pawl__pg_version(&s->base, &cur, &latest);
    if (!rc && cur < latest)
      rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "database %s is at schema version %d, this pawl needs "
                      "%d: run `pawl migrate`",
                      PQdb(s->conn), cur, latest);
  }
  if (!rc) rc = pawl__pg_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc && cfg->age_boost_ms >= 0 && cfg->age_boost_ms != s->boost_ms)
    rc = pg_set_age_boost(s, cfg->age_boost_ms);
  if (rc) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    goto fail;
  }
  *out = &s->base;
  return 0;
fail:
  pg_close(&s->base);
  return rc;
}
