/* store.c: the SQLite store itself: opening the file (checks, WAL, pragmas,
 * the SQL functions the statements call), closing it, the vtable, the
 * statement cache, errors, transactions, reading rows, the age boost
 * setting, and maintenance (checkpoint, data version). */
#include "sqlite_int.h"

/* The SQL of this file's statements, by their ids (sqlite_int.h,
 * "Statements"). */
#define SQ_HERE SQ__STORE
const char *const pawl__sq_sql_store[SQ__JOBS - SQ__STORE] = {
    SQ_AT(SQ_BEGIN) = "BEGIN IMMEDIATE",
    SQ_AT(SQ_COMMIT) = "COMMIT",
    SQ_AT(SQ_ROLLBACK) = "ROLLBACK",
    SQ_AT(SQ_GET) = "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs WHERE id = ?1",
    SQ_AT(SQ_SETTING_GET) = "SELECT value FROM pawl_settings WHERE name = ?1",
    SQ_AT(SQ_SETTING_SET) = "INSERT INTO pawl_settings (name, value) VALUES "
                            "(?1, ?2) ON CONFLICT (name) DO UPDATE SET "
                            "value = excluded.value",
    /* The database's boost changed: every pending job ranks anew, those of
     * a queue with a boost of its own (pawl_queues) as before. ?2: one
     * queue only (its boost changed), NULL: all. */
    SQ_AT(SQ_RERANK) =
        "UPDATE pawl_jobs SET rank = pawl_rank(priority, run_at, "
        SQLITE_SQL_QUEUE_BOOST("?1") ") WHERE state = 0 AND "
        "(?2 IS NULL OR queue = ?2)",
    /* Changes when another connection commits (SQLite's own counter: one
     * read of the write-ahead log's header, no table). */
    SQ_AT(SQ_DATA_VERSION) = "PRAGMA data_version",
};
#undef SQ_HERE

/* ---- errors ------------------------------------------------------------- */

int pawl__sq_rc_to_err(int rc) {
  switch (rc & 0xff) {
  case SQLITE_OK:
  case SQLITE_ROW:
  case SQLITE_DONE:
    return PAWL_OK;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return PAWL_EBUSY;
  case SQLITE_NOMEM:
    return PAWL_ENOMEM;
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_IOERR:
  case SQLITE_PERM:
  case SQLITE_FULL:
    return PAWL_EIO;
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return PAWL_ESCHEMA;
  default:
    return PAWL_ESTORE;
  }
}

/* Records the connection's error, naming what we were doing. */
int pawl__sq_fail(sq_store_t *s, int rc, const char *what) {
  return pawl__store_fail(&s->base, pawl__sq_rc_to_err(rc),
                          "%s: %s (sqlite:%s)", what, sqlite3_errmsg(s->db),
                          s->path);
}

/* Every file's SQL table, in the order of the enum's groups; a group
 * ends where the next begins. */
static const struct {
  int first;
  const char *const *sql;
} sq_files[] = {
    {SQ__STORE, pawl__sq_sql_store},
    {SQ__JOBS, pawl__sq_sql_jobs},
    {SQ__CLAIM, pawl__sq_sql_claim},
    {SQ__LIMITS, pawl__sq_sql_limits},
    {SQ__TERMINAL, pawl__sq_sql_terminal},
    {SQ__CONTROL, pawl__sq_sql_control},
    {SQ__HISTORY, pawl__sq_sql_history},
    {SQ__LOCKS, pawl__sq_sql_locks},
    {SQ__NODES, pawl__sq_sql_nodes},
    {SQ__QUEUES, pawl__sq_sql_queues},
    {SQ__TYPES, pawl__sq_sql_types},
    {SQ__RECURRING, pawl__sq_sql_recurring},
    {SQ__FLOW, pawl__sq_sql_flow},
    {SQ__BATCH, pawl__sq_sql_batch},
    {SQ__DEPS, pawl__sq_sql_deps},
    {SQ__STEPS, pawl__sq_sql_steps},
    {SQ__ALERTS, pawl__sq_sql_alerts},
    {SQ__RETENTION, pawl__sq_sql_retention},
    {SQ__ADMIN, pawl__sq_sql_admin},
    {SQ__METRICS, pawl__sq_sql_metrics},
    {SQ_COUNT, NULL},
};

const char *pawl__sq_sql(int id) {
  if (id < 0 || id >= SQ_COUNT) return NULL;
  size_t i = 0;
  while (id >= sq_files[i + 1].first) i++;
  return sq_files[i].sql[id - sq_files[i].first];
}

sqlite3_stmt *pawl__sq_prepare(sq_store_t *s, int id) {
  const char *sql = pawl__sq_sql(id);
  if (!sql) {
    pawl__store_fail(&s->base, PAWL_ESTORE,
                     "statement %d has no SQL (sqlite_int.h)", id);
    return NULL;
  }
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                              &st, NULL);
  if (rc != SQLITE_OK) {
    pawl__sq_fail(s, rc, "prepare");
    return NULL;
  }
  s->stmt[id] = st;
  return st;
}

/* Every write transaction: pawl__sq_begin(), then pawl__sq_end() (or
 * sq_commit() / sq_rollback()), which also release the write gate. */
int pawl__sq_begin(sq_store_t *s) {
  /* What pawl__sq_queue_boost() remembers is for one transaction. */
  s->tx_seq++;
  if (s->nkeys || s->key_oom)
    pawl__sq_keys_clear(s); /* a rollback's leftovers */
  sqlite3_stmt *st = sq_stmt(s, SQ_BEGIN);
  if (!st) return s->base.errmsg[0] ? PAWL_ESTORE : PAWL_ENOMEM;
  sq_gate(s);
  int rc = sq_exec(s, st, "begin transaction");
  if (rc) sq_ungate(s);
  return rc;
}

static int sq_commit(sq_store_t *s) {
  sqlite3_stmt *st = sq_stmt(s, SQ_COMMIT);
  int rc = st ? sq_exec(s, st, "commit") : PAWL_ESTORE;
  if (rc) {
    /* A failed COMMIT may leave the transaction open; end it so the next
     * operation starts clean. */
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  sq_ungate(s);
  return rc;
}

static void sq_rollback(sq_store_t *s) {
  if (!sqlite3_get_autocommit(s->db)) {
    sqlite3_stmt *st = sq_stmt(s, SQ_ROLLBACK);
    if (st) {
      sqlite3_step(st);
      sqlite3_reset(st);
    } else {
      sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    }
  }
  sq_ungate(s);
}

/* Ends a transaction: commit when rc == 0, else roll back. */
int pawl__sq_end(sq_store_t *s, int rc) {
  s->tx_seq++;
  /* Dependencies: the jobs this transaction ended release their
   * children in it. Nothing noted: one test. */
  if (rc == 0 && (s->ndep || s->dep_oom)) rc = pawl__sq_deps_flush(s);
  s->ndep = 0;
  s->dep_oom = 0;
  /* Holds: after the dependencies, whose releases move keyed rows too. */
  if (rc == 0 && (s->nkeys || s->key_oom)) rc = pawl__sq_keys_flush(s);
  pawl__sq_keys_clear(s);
  if (rc == 0) return sq_commit(s);
  sq_rollback(s);
  return rc;
}

/* The column accessors of a row of a stepped statement (store_row_t). */
static const char *sq_row_text(const store_row_t *r, int col, size_t *len) {
  sqlite3_stmt *st = (sqlite3_stmt *)r->res;
  const char *t = (const char *)sqlite3_column_text(st, col);
  *len = t ? (size_t)sqlite3_column_bytes(st, col) : 0;
  return t;
}

static int64_t sq_row_int64(const store_row_t *r, int col) {
  return sqlite3_column_int64((sqlite3_stmt *)r->res, col);
}

static double sq_row_dbl(const store_row_t *r, int col) {
  return sqlite3_column_double((sqlite3_stmt *)r->res, col);
}

static void sq_row_id(const store_row_t *r, int col, pawl_id_t *out) {
  sq_col_id((sqlite3_stmt *)r->res, col, out);
}

store_row_t pawl__sq_row(sqlite3_stmt *st) {
  return (store_row_t){sq_row_text, sq_row_int64, sq_row_dbl, sq_row_id, st, 0};
}

/* A pawl_job_t from a row of SQLITE_JOB_COLS, with `owner` (when not NULL)
 * as its lease owner instead of the row's. NULL when out of memory. */
pawl_job_t *pawl__sq_row_to_job(sqlite3_stmt *st, const char *owner) {
  store_job_row_t r;
  for (int k = 0; k < STORE_JOB_NTEXT; k++) {
    int c = pawl__store_job_texts[k];
    /* The owner given replaces the row's: no need to read it. */
    r.text[c] = owner && c == STORE_JOB_LEASE_OWNER
                    ? NULL
                    : (const char *)sqlite3_column_text(st, c);
    r.len[c] = r.text[c] ? (size_t)sqlite3_column_bytes(st, c) : 0;
  }
  for (int k = 0; k < STORE_JOB_NINT; k++) {
    int c = pawl__store_job_ints[k];
    r.num[c] = sqlite3_column_int64(st, c);
  }
  sq_col_id(st, STORE_JOB_ID, &r.id);
  r.progress_done = sqlite3_column_double(st, STORE_JOB_PROGRESS_DONE);
  r.progress_total = sqlite3_column_double(st, STORE_JOB_PROGRESS_TOTAL);
  pawl_job_t *j = pawl__store_job_from_row(&r, owner);
  if (j) j->store_key = sqlite3_column_int64(st, SQLITE_JOB_SEQ_COL);
  return j;
}

/* Reads job `id` inside the current transaction. */
int pawl__sq_read_job(sq_store_t *s, const pawl_id_t *id, pawl_job_t **out) {
  sqlite3_stmt *st = sq_stmt(s, SQ_GET);
  if (!st) return PAWL_ESTORE;
  sq_bind_id(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(st);
    return pawl__store_no_job(&s->base, id);
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(st);
    return pawl__sq_fail(s, rc, "read job");
  }
  pawl_job_t *j = pawl__sq_row_to_job(st, NULL);
  sqlite3_reset(st);
  if (!j) return pawl__store_fail(&s->base, PAWL_ENOMEM, "out of memory");
  *out = j;
  return 0;
}

/* ---- settings ----------------------------------------------------------- */

int pawl__sq_setting_get(sq_store_t *s, const char *name, int64_t *out) {
  sqlite3_stmt *st = sq_stmt(s, SQ_SETTING_GET);
  if (!st) return PAWL_ESTORE;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return pawl__sq_fail(s, rc, name);
  return 0;
}

/* Stores a new age boost and re-ranks the pending rows, in one
 * transaction, so every node orders the queue the same way. */
static int sq_set_age_boost(sq_store_t *s, int64_t ms) {
  int rc = pawl__sq_begin(s);
  if (rc) return rc;
  sqlite3_stmt *st = sq_stmt(s, SQ_SETTING_SET);
  if (!st) return pawl__sq_end(s, PAWL_ESTORE);
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)ms);
  sqlite3_bind_text(st, 1, "age_boost_ms", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, v, -1, SQLITE_TRANSIENT);
  rc = sq_exec(s, st, "store age boost");
  if (!rc) {
    st = sq_stmt(s, SQ_RERANK);
    if (!st) return pawl__sq_end(s, PAWL_ESTORE);
    sqlite3_bind_int64(st, 1, ms);
    sqlite3_bind_null(st, 2);
    rc = sq_exec(s, st, "re-rank pending jobs");
  }
  rc = pawl__sq_end(s, rc);
  if (!rc) s->boost_ms = ms;
  return rc;
}

static int sq_age_boost(store_t *base, int64_t *ms) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = pawl__sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc) *ms = s->boost_ms;
  return rc;
}

/* pawl_rank(priority, run_at, boost_ms): store_rank(). The arguments are
 * the rows' own (bounded when they were stored) and a boost the store
 * binds. */
static void sq_rank_fn(sqlite3_context *ctx, int argc, sqlite3_value **v) {
  (void)argc;
  int64_t prio = sqlite3_value_int64(v[0]);
  if (prio > INT32_MAX) prio = INT32_MAX;
  if (prio < INT32_MIN) prio = INT32_MIN;
  sqlite3_result_int64(ctx, store_rank((int32_t)prio, sqlite3_value_int64(v[1]),
                                       sqlite3_value_int64(v[2])));
}

/* ---- open and close ----------------------------------------------------- */

static void sq_close(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  if (!s) return;
  for (int i = 0; i < SQ_COUNT; i++) sqlite3_finalize(s->stmt[i]);
  sqlite3_close(s->db);
  for (size_t i = 0; i < s->ntp; i++) pawl__free(s->tp[i].queue);
  pawl__free(s->tp);
  pawl__free(s->bn);
  pawl__free(s->qb_queue);
  pawl__free(s->dep_seq);
  pawl__free(s->fin);
  pawl__sq_keys_clear(s);
  pawl__free(s->keys);
  pawl__free(s->path);
  pawl__free(s);
}

static int sq_checkpoint(store_t *base) {
  sq_store_t *s = (sq_store_t *)base;
  int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                     NULL, NULL);
  /* Busy only means readers or a writer got there first: try next time. */
  if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
    return pawl__sq_fail(s, rc, "checkpoint");
  return 0;
}

static int sq_data_version(store_t *base, uint64_t *v) {
  sq_store_t *s = (sq_store_t *)base;
  sqlite3_stmt *st = sq_stmt(s, SQ_DATA_VERSION);
  if (!st) return PAWL_ESTORE;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *v = (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  if (rc != SQLITE_ROW) return pawl__sq_fail(s, rc, "read the data version");
  return 0;
}

static const struct store_ops sq_ops = {
    .name = "sqlite",
    .schema = {pawl__sq_migrate, pawl__sq_version},
    .jobs = {pawl__sq_insert, pawl__sq_get, pawl__sq_list, pawl__sq_progress,
             pawl__sq_logs},
    .keys = {pawl__sq_find_idempotent, pawl__sq_find_business},
    .claim = {pawl__sq_claim, pawl__sq_extend, pawl__sq_recover, pawl__sq_start,
              pawl__sq_extend_one, pawl__sq_next_due, NULL},
    .terminal = {pawl__sq_finish},
    .control = {pawl__sq_transition},
    .history = {pawl__sq_history},
    .locks = {pawl__sq_lock_acquire, pawl__sq_lock_extend,
              pawl__sq_lock_release},
    .nodes = {pawl__sq_node_beat, pawl__sq_node_list, pawl__sq_node_reap,
              pawl__sq_node_stop},
    .settings = {sq_age_boost},
    .maintenance = {sq_checkpoint, sq_data_version},
    .wakeup = {NULL, NULL},
    .close = sq_close,
    .admin = {pawl__sq_adm_count, pawl__sq_adm_pick, pawl__sq_adm_apply,
              pawl__sq_adm_stats, pawl__sq_adm_locks, pawl__sq_adm_running},
    .recurring = {pawl__sq_rec_put, pawl__sq_rec_get, pawl__sq_rec_list,
                  pawl__sq_rec_update, pawl__sq_rec_remove, pawl__sq_rec_due,
                  pawl__sq_rec_advance, pawl__sq_rec_disable_gone,
                  pawl__sq_rec_load_error},
    .queues = {pawl__sq_queue_pause, pawl__sq_queue_set_boost,
               pawl__sq_queue_list},
    .limits = {pawl__sq_limit_set, pawl__sq_limit_remove, pawl__sq_limit_list},
    .types = {pawl__sq_types_sync, pawl__sq_type_get},
    .flow = {pawl__sq_sig_deliver, pawl__sq_sig_get, pawl__sq_sig_expire,
             pawl__sq_replace, pawl__sq_replace_links, pawl__sq_sig_next},
    .batch = {pawl__sq_batch_create, pawl__sq_batch_get, pawl__sq_batch_of},
    .deps = {pawl__sq_deps_list},
    .steps = {pawl__sq_steps_get, pawl__sq_step_begin, pawl__sq_step_save,
              pawl__sq_step_end, pawl__sq_step_exit, pawl__sq_instance_find},
    .top = {pawl__sq_top_throughput, pawl__sq_top_running},
    .alerts = {pawl__sq_alert_take, pawl__sq_alert_note, pawl__sq_alert_done},
    .retention = {pawl__sq_ret_scan, pawl__sq_ret_remove},
    .metrics = {pawl__sq_met_gauges},
};

/* Switches to WAL. Changing the journal mode needs an exclusive lock and
 * SQLite may answer SQLITE_BUSY at once instead of calling the busy handler
 * (several processes opening a new file together), so retry until the busy
 * timeout runs out. */
static int sq_set_wal(sqlite3 *db, int timeout_ms, char **msg) {
  for (int waited = 0;; waited += 5) {
    int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", 0, 0, msg);
    int base = rc & 0xff;
    if ((base != SQLITE_BUSY && base != SQLITE_LOCKED) || waited >= timeout_ms)
      return rc;
    sqlite3_free(*msg);
    *msg = NULL;
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
}

/* Checks the file's directory before SQLite does, to name the problem. */
static int sq_check_path(const char *path, char *errbuf, size_t errlen) {
  char *copy = pawl__strdup(path);
  if (!copy) return PAWL_ENOMEM;
  const char *dir = dirname(copy);
  struct stat sb;
  int rc = 0;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: directory %s does not exist",
             path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) != 0 && access(dir, W_OK) != 0) {
    snprintf(errbuf, errlen,
             "cannot create sqlite:%s: directory %s is not writable", path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) == 0 && access(dir, W_OK) != 0) {
    /* WAL mode needs to create -wal and -shm files beside the database. */
    snprintf(errbuf, errlen,
             "cannot open sqlite:%s: directory %s is not writable (SQLite "
             "needs it for the write-ahead log)",
             path, dir);
    rc = PAWL_EIO;
  } else if (access(path, F_OK) == 0 && access(path, R_OK | W_OK) != 0) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: file is not writable",
             path);
    rc = PAWL_EIO;
  }
  pawl__free(copy);
  return rc;
}

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen);

/* The store's connection, for tests and the benchmark's plain-SQL loop;
 * NULL if `st` is not an SQLite store. */
sqlite3 *pawl__store_sqlite_db(store_t *st);

sqlite3 *pawl__store_sqlite_db(store_t *st) {
  return st && st->ops == &sq_ops ? ((sq_store_t *)st)->db : NULL;
}

/* Refuses what is not a file path: each connection to ":memory:" is a
 * database of its own, gone when it closes (an enqueue there is lost, and
 * the host's other connections would never see it); SQLite's "file:" URIs
 * can ask for the same (and name a file other than the path we check). */
static int sq_check_url(const char *path, char *errbuf, size_t errlen) {
  if (!path || !*path) {
    snprintf(errbuf, errlen, "database URL sqlite: has an empty path");
    return PAWL_EINVAL;
  }
  if (strcmp(path, ":memory:") == 0) {
    snprintf(errbuf, errlen,
             "sqlite::memory: keeps nothing (each connection has its own "
             "database, gone when it closes): give a file path");
    return PAWL_EINVAL;
  }
  if (strncmp(path, "file:", 5) == 0) {
    snprintf(errbuf, errlen,
             "sqlite:%s: SQLite URIs are not supported: give a file path",
             path);
    return PAWL_EINVAL;
  }
  return 0;
}

/* Only a handle allowed to create makes the file, with the operator's
 * permission bits (0600 by default, exactly: the umask would let a
 * database full of payloads be world-readable). SQLite gives the -wal,
 * -shm and journal files the main file's bits. An empty file is an empty
 * SQLite database. */
static int sq_create_file(const store_config_t *cfg, const char *path,
                          char *errbuf, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) == 0) return 0;
  if (!cfg->create || cfg->no_migrate) {
    snprintf(errbuf, errlen,
             "no database at sqlite:%s: create it with `pawl migrate`", path);
    return PAWL_EIO;
  }
  mode_t mode = cfg->file_mode ? (mode_t)cfg->file_mode : 0600;
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd >= 0) {
    int bad = fchmod(fd, mode) != 0;
    close(fd);
    if (bad) {
      snprintf(errbuf, errlen, "cannot set the mode of sqlite:%s: %s", path,
               strerror(errno));
      unlink(path);
      return PAWL_EIO;
    }
  } else if (errno != EEXIST) { /* EEXIST: another process was first */
    snprintf(errbuf, errlen, "cannot create sqlite:%s: %s", path,
             strerror(errno));
    return PAWL_EIO;
  }
  return 0;
}

/* The message for SQLite's refusal `src` (with its text `msg`, freed) to
 * read the file; returns the PAWL_E* code. */
static int sq_refused(const char *path, int src, char *msg, char *errbuf,
                      size_t errlen) {
  if ((src & 0xff) == SQLITE_NOTADB)
    snprintf(errbuf, errlen, "sqlite:%s is not a pawl database (%s)", path,
             msg ? msg : sqlite3_errstr(src));
  else
    snprintf(errbuf, errlen, "cannot open sqlite:%s: %s", path,
             msg ? msg : sqlite3_errstr(src));
  sqlite3_free(msg);
  return pawl__sq_rc_to_err(src);
}

/* Looks before changing anything: a file that is not a database, or a
 * database that is not pawl's, is refused before the switch to WAL (which
 * would rewrite its header); so is an empty file for a handle that may not
 * create. */
static int sq_look(sq_store_t *s, const store_config_t *cfg, const char *path,
                   char *errbuf, size_t errlen) {
  char *msg = NULL;
  int src = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", 0, 0, &msg);
  if (src != SQLITE_OK) return sq_refused(path, src, msg, errbuf, errlen);
  int has_schema = 0, ntables = 0, rc;
  /* Both looks in one read transaction: another process creating the file
   * right now (pawl_schema first, then the migrations) is seen before or
   * after, never between the two queries as "tables but no pawl_schema". */
  sqlite3_exec(s->db, "BEGIN", 0, 0, 0);
  if ((rc = pawl__sq_table_exists(s, "pawl_schema", &has_schema)) ||
      (!has_schema && (rc = pawl__sq_count_tables(s, &ntables)))) {
    snprintf(errbuf, errlen, "%s", s->base.errmsg);
    sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
    return rc;
  }
  sqlite3_exec(s->db, "COMMIT", 0, 0, 0);
  if (!has_schema && ntables > 0) {
    snprintf(errbuf, errlen,
             "sqlite:%s is not a pawl database (it has %d table%s but no "
             "pawl_schema)",
             path, ntables, ntables == 1 ? "" : "s");
    return PAWL_ESCHEMA;
  }
  if (!has_schema && !cfg->create && !cfg->no_migrate) {
    snprintf(errbuf, errlen,
             "no database at sqlite:%s (the file is empty): create it with "
             "`pawl migrate`",
             path);
    return PAWL_EIO;
  }
  return 0;
}

/* WAL, and the pragmas. temp_store = MEMORY: a claim or a finish changes
 * many rows in one statement, so SQLite keeps a statement journal to undo
 * it alone. With temporary files, a journal past 64 KiB spills into a file
 * created, unlinked and closed again for every batch: about 12% of a
 * claim+complete cycle at batch 100 (bench/RESULTS.md). Temporary data
 * here is bounded by a batch or a LIMIT, so memory is the place for it. */
static int sq_configure(sq_store_t *s, const store_config_t *cfg,
                        const char *path, char *errbuf, size_t errlen) {
  char *msg = NULL;
  int src = sq_set_wal(s->db,
                       cfg->busy_timeout_ms > 0 ? cfg->busy_timeout_ms : 5000,
                       &msg);
  if (src != SQLITE_OK) return sq_refused(path, src, msg, errbuf, errlen);
  const char *sync = cfg->sync_full ? "PRAGMA synchronous = FULL"
                                    : "PRAGMA synchronous = NORMAL";
  if (sqlite3_exec(s->db, sync, 0, 0, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", 0, 0, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", 0, 0, &msg) !=
          SQLITE_OK ||
      (cfg->no_autocheckpoint &&
       sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint = 0", 0, 0, &msg) !=
           SQLITE_OK)) {
    snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
             msg ? msg : "?");
    sqlite3_free(msg);
    return PAWL_ESTORE;
  }
  /* store_rank() for SQL (the requeue, recover and rerank statements),
   * so that one formula ranks jobs everywhere. */
  if (sqlite3_create_function_v2(s->db, "pawl_rank", 3,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC |
                                     SQLITE_DIRECTONLY,
                                 NULL, sq_rank_fn, NULL, NULL,
                                 NULL) != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
             sqlite3_errmsg(s->db));
    return PAWL_ESTORE;
  }
  /* The store's own functions, each with the store as its data. Not
   * deterministic: the notes are called once per row written, for their
   * effect; the pawl_fin_* ones are SQLITE_SQL_SUCCEED_MANY's view of its
   * outcomes (terminal.c). */
  static const struct {
    const char *name;
    int nargs;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
  } fns[] = {
      {"pawl_tp_note", 5, pawl__sq_tp_note_fn},
      {"pawl_dep_note", 3, pawl__sq_dep_note_fn},
      {"pawl_key_note", 2, pawl__sq_key_note_fn},
      {"pawl_fin_ok", 3, pawl__sq_fin_ok_fn},
      {"pawl_fin_result", 1, pawl__sq_fin_result_fn},
      {"pawl_fin_start", 2, pawl__sq_fin_start_fn},
      {"pawl_fin_end", 2, pawl__sq_fin_end_fn},
  };
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (sqlite3_create_function_v2(s->db, fns[i].name, fns[i].nargs,
                                   SQLITE_UTF8 | SQLITE_DIRECTONLY, s,
                                   fns[i].fn, NULL, NULL,
                                   NULL) != SQLITE_OK) {
      snprintf(errbuf, errlen, "cannot configure sqlite:%s: %s", path,
               sqlite3_errmsg(s->db));
      return PAWL_ESTORE;
    }
  return 0;
}

/* The schema as this pawl needs it: migrated (or, for a handle that may
 * not migrate, checked to be current), and the age boost read or set. */
static int sq_ready_schema(sq_store_t *s, const store_config_t *cfg,
                           const char *path, char *errbuf, size_t errlen) {
  int rc = cfg->no_migrate ? pawl__sq_prepare_schema_table(s, 0)
                           : pawl__sq_migrate(&s->base);
  if (!rc && cfg->no_migrate) {
    int cur = 0, latest = 0;
    rc = pawl__sq_version(&s->base, &cur, &latest);
    if (!rc && cur < latest)
      rc = pawl__store_fail(&s->base, PAWL_ESCHEMA,
                      "sqlite:%s is at schema version %d, this pawl needs %d: "
                      "run `pawl migrate`",
                      path, cur, latest);
  }
  if (!rc) rc = pawl__sq_setting_get(s, "age_boost_ms", &s->boost_ms);
  if (!rc && cfg->age_boost_ms >= 0 && cfg->age_boost_ms != s->boost_ms)
    rc = sq_set_age_boost(s, cfg->age_boost_ms);
  if (!rc && cfg->check_writable) {
    int src = sqlite3_exec(s->db, "BEGIN IMMEDIATE", 0, 0, 0);
    if (src != SQLITE_OK) rc = pawl__sq_fail(s, src, "take the write lock");
    else sqlite3_exec(s->db, "ROLLBACK", 0, 0, 0);
  }
  if (rc) snprintf(errbuf, errlen, "%s", s->base.errmsg);
  return rc;
}

int pawl__store_sqlite_open(store_t **out, const store_config_t *cfg,
                      const char *path, char *errbuf, size_t errlen) {
  int rc = sq_check_url(path, errbuf, errlen);
  if (!rc) rc = sq_check_path(path, errbuf, errlen);
  if (!rc) rc = sq_create_file(cfg, path, errbuf, errlen);
  if (rc) return rc;
  sq_store_t *s = pawl__calloc(1, sizeof *s);
  if (!s || !(s->path = pawl__strdup(path))) {
    pawl__free(s);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->base.ops = &sq_ops;
  s->base.clock = cfg->clock;
  s->base.clock_data = cfg->clock_data;
  s->poison = cfg->poison_recoveries > 0 ? cfg->poison_recoveries : 3;
  s->gate = cfg->write_gate;
  /* NOMUTEX: a store is used by one thread at a time, so SQLite's own
   * connection mutex would only cost. */
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  int src = sqlite3_open_v2(path, &s->db, flags, NULL);
  if (src != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot open sqlite:%s: %s", path,
             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
    rc = pawl__sq_rc_to_err(src);
  } else {
    sqlite3_extended_result_codes(s->db, 0);
    sqlite3_busy_timeout(s->db, cfg->busy_timeout_ms > 0 ? cfg->busy_timeout_ms
                                                         : 5000);
    rc = sq_look(s, cfg, path, errbuf, errlen);
  }
  if (!rc) rc = sq_configure(s, cfg, path, errbuf, errlen);
  if (!rc) rc = sq_ready_schema(s, cfg, path, errbuf, errlen);
  if (rc) {
    sq_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}
