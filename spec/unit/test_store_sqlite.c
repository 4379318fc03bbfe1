/* test_store_sqlite.c: what only SQLite has: the migrator, pragmas, the
 * claim's query plan, the readable view. The contract suite runs on SQLite
 * from spec/contract/contract_sqlite.c. */
#include <errno.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "pawl.h"
#include "handle.h"
#include "sqlite_int.h"
#include "sqlite_sql.h"
#include "store_contract.h"

sqlite3 *pawl__store_sqlite_db(store_t *st);
extern const store_migration_t pawl__store_sqlite_migrations[];
extern const size_t pawl__store_sqlite_migration_count;
#include "unit.h"

static const char *sqlite_url(const char *name) {
  static char url[4200];
  snprintf(url, sizeof url, "sqlite:%s/%s.db", unit_tmpdir(), name);
  return url;
}

/* ---- helpers ------------------------------------------------------------ */

static pawl_t *open_ok(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open %s: %s", url, err);
  return p;
}

static int open_err(const char *url, char *err, size_t errlen) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  int rc = pawl_open(&p, &o, err, errlen);
  if (rc == 0) pawl_close(p);
  return rc;
}

static sqlite3 *raw(const char *path) {
  sqlite3 *db;
  CHECK_INT(sqlite3_open(path, &db), ==, SQLITE_OK);
  return db;
}

static void raw_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, 0, 0, &msg) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "%s: %s", sql, msg);
}

static long long raw_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), ==, SQLITE_OK);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  long long v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* ---- migrations --------------------------------------------------------- */

void test_sqlite_migrate_records(void) {
  pawl_t *p = open_ok("sqlite:m.db");
  int cur = 0, latest = 0;
  CHECK_OK(pawl_schema_version(p, &cur, &latest));
  CHECK_INT(cur, ==, latest);
  CHECK_INT(latest, >=, 1);
  pawl_close(p);
  sqlite3 *db = raw("m.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema"), ==, latest);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema WHERE name = "
                        "'V001__init.sql' AND length(checksum) = 8"),
            ==, 1);
  sqlite3_close(db);
  /* Reopening applies nothing again. */
  p = open_ok("sqlite:m.db");
  pawl_close(p);
  db = raw("m.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema"), ==, latest);
  sqlite3_close(db);
}

void test_sqlite_migrate_checksum_changed(void) {
  pawl_close(open_ok("sqlite:c.db"));
  pawl_id_t id;
  pawl_t *p = open_ok("sqlite:c.db");
  CHECK_OK(pawl_enqueue(p, "keep", "{}", NULL, &id, NULL));
  pawl_close(p);
  /* What an edited V001__init.sql looks like from the database's side. */
  sqlite3 *db = raw("c.db");
  raw_exec(db, "UPDATE pawl_schema SET checksum = 'deadbeef' WHERE version = 1");
  sqlite3_close(db);
  char err[512];
  CHECK_INT(open_err("sqlite:c.db", err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "V001__init.sql") != NULL);
  CHECK(strstr(err, "changed") != NULL);
  db = raw("c.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_jobs"), ==, 1);
  sqlite3_close(db);
}

/* A database migrated before the comments of V006__queues.sql and
 * V013__types.sql were edited recorded the sums of their text as shipped
 * (b1bdb1df, 0f50b20c): it still opens. A shipped sum recorded for
 * another file, or a statement changed under an old sum, is refused. */
void test_sqlite_migrate_comment_edits(void) {
  pawl_close(open_ok("sqlite:ce.db"));
  sqlite3 *db = raw("ce.db");
  raw_exec(db, "UPDATE pawl_schema SET checksum = 'b1bdb1df' WHERE name = "
               "'V006__queues.sql'");
  raw_exec(db, "UPDATE pawl_schema SET checksum = '0f50b20c' WHERE name = "
               "'V013__types.sql'");
  sqlite3_close(db);
  pawl_close(open_ok("sqlite:ce.db"));
  db = raw("ce.db");
  raw_exec(db, "UPDATE pawl_schema SET checksum = 'b1bdb1df' WHERE name = "
               "'V007__ordering.sql'");
  sqlite3_close(db);
  char err[512];
  CHECK_INT(open_err("sqlite:ce.db", err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "V007__ordering.sql") != NULL);
  /* The rule itself: the shipped sum holds while the statements are the
   * same, comment lines aside. */
  const store_migration_t *v6 = &pawl__store_sqlite_migrations[5];
  CHECK_STR(v6->name, "V006__queues.sql");
  char want[16];
  CHECK(pawl__store_sum_ok("sqlite", v6, "b1bdb1df", want));
  CHECK(!pawl__store_sum_ok("postgres", v6, "b1bdb1df", want));
  size_t len = v6->len + 64;
  char *more = malloc(len), *stmt = malloc(len);
  CHECK(more && stmt);
  int n = snprintf(more, len, "-- a new comment line\n%.*s", (int)v6->len,
                   v6->sql);
  store_migration_t m = {6, "V006__queues.sql", more, (size_t)n};
  CHECK(pawl__store_sum_ok("sqlite", &m, "b1bdb1df", want));
  n = snprintf(stmt, len, "%.*s\nSELECT 1;\n", (int)v6->len, v6->sql);
  m.sql = stmt;
  m.len = (size_t)n;
  CHECK(!pawl__store_sum_ok("sqlite", &m, "b1bdb1df", want));
  free(more);
  free(stmt);
}

void test_sqlite_migrate_newer_schema(void) {
  pawl_close(open_ok("sqlite:n.db"));
  sqlite3 *db = raw("n.db");
  raw_exec(db, "INSERT INTO pawl_schema VALUES (99, 'V099__future.sql', "
               "'00000000', 0)");
  sqlite3_close(db);
  char err[512];
  CHECK_INT(open_err("sqlite:n.db", err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "99") != NULL);
  CHECK(strstr(err, "newer") != NULL);
}

void test_sqlite_not_pawl_database(void) {
  sqlite3 *db = raw("other.db");
  raw_exec(db, "CREATE TABLE customers (id INTEGER)");
  sqlite3_close(db);
  char err[512];
  CHECK_INT(open_err("sqlite:other.db", err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "not a pawl database") != NULL);
  db = raw("other.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM sqlite_master"), ==, 1);
  sqlite3_close(db);

  FILE *f = fopen("text.db", "w");
  CHECK(f != NULL);
  for (int i = 0; i < 200; i++) fputs("this is not a database\n", f);
  fclose(f);
  CHECK_INT(open_err("sqlite:text.db", err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "not a pawl database") != NULL);
  struct stat sb;
  CHECK_INT(stat("text.db", &sb), ==, 0);
  CHECK_INT(sb.st_size, ==, 200 * 23);
}

void test_sqlite_bad_paths(void) {
  char err[512];
  CHECK_INT(open_err("sqlite:no/such/dir/x.db", err, sizeof err), ==, PAWL_EIO);
  CHECK(strstr(err, "does not exist") != NULL);
  CHECK_INT(open_err("sqlite:", err, sizeof err), ==, PAWL_EINVAL);
  CHECK_INT(open_err("mysql://x", err, sizeof err), ==, PAWL_EINVAL);
  CHECK(strstr(err, "mysql://x") != NULL);
  /* A read-only directory: only meaningful when permissions bite. */
  if (geteuid() != 0) {
    CHECK_INT(mkdir("ro", 0555), ==, 0);
    CHECK_INT(open_err("sqlite:ro/x.db", err, sizeof err), ==, PAWL_EIO);
    CHECK(strstr(err, "not writable") != NULL);
  }
}

void test_sqlite_no_migrate(void) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:fresh.db";
  o.no_migrate = 1;
  pawl_t *p = NULL;
  char err[512];
  CHECK_INT(pawl_open(&p, &o, err, sizeof err), !=, 0);
  CHECK(access("fresh.db", F_OK) != 0); /* not even created */
  pawl_close(open_ok("sqlite:fresh.db"));
  CHECK_OK(pawl_open(&p, &o, err, sizeof err));
  pawl_close(p);
}

/* Several processes opening a new database at once: every one succeeds and
 * each migration is applied exactly once. */
void test_sqlite_migrate_concurrent(void) {
  enum { N = 8 };
  contract_open_race(sqlite_url("race"), N);
  sqlite3 *db = raw("race.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema"), ==,
            raw_int(db, "SELECT max(version) FROM pawl_schema"));
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_jobs"), ==, N);
  sqlite3_close(db);
}

/* A database made by a pawl that only knew V001, holding a job, is brought
 * to the current schema when opened: the job is kept and gains the new
 * columns, and logs work on it. */
void test_sqlite_migrate_v001_database(void) {
  CHECK_INT(pawl__store_sqlite_migration_count, >=, 2);
  const store_migration_t *v1 = &pawl__store_sqlite_migrations[0];
  CHECK_STR(v1->name, "V001__init.sql");
  sqlite3 *db = raw("old.db");
  raw_exec(db, "CREATE TABLE pawl_schema (version INTEGER PRIMARY KEY, "
               "name TEXT NOT NULL, checksum TEXT NOT NULL, "
               "applied_at INTEGER NOT NULL)");
  char *sql = strndup(v1->sql, v1->len);
  CHECK(sql != NULL);
  raw_exec(db, sql);
  free(sql);
  char *rec = sqlite3_mprintf("INSERT INTO pawl_schema VALUES (1, "
                              "'V001__init.sql', '%08x', 0)",
                              (unsigned)pawl__store_crc32(v1->sql, v1->len));
  raw_exec(db, rec);
  sqlite3_free(rec);
  raw_exec(db, "INSERT INTO pawl_jobs (id, type, queue, state, priority, "
               "rank, payload, run_at, max_attempts, created_at, updated_at) "
               "VALUES (X'018f0000000070008000000000000001', 'old', "
               "'default', 0, 0, 0, '{\"kept\":1}', 1000, 25, 1000, 1000)");
  sqlite3_close(db);

  /* Not migrated when told not to. */
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:old.db";
  o.no_migrate = 1;
  pawl_t *p = NULL;
  char err[512];
  CHECK_INT(pawl_open(&p, &o, err, sizeof err), ==, PAWL_ESCHEMA);
  CHECK(strstr(err, "version 1") != NULL);

  p = open_ok("sqlite:old.db");
  int cur = 0, latest = 0;
  CHECK_OK(pawl_schema_version(p, &cur, &latest));
  CHECK_INT(cur, ==, latest);
  pawl_id_t id;
  CHECK_OK(pawl_id_parse(&id, "018f0000-0000-7000-8000-000000000001"));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_STR(j->payload, "{\"kept\":1}");
  CHECK(j->progress_done == 0 && j->progress_total == 0);
  pawl_job_free(j);
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  CHECK_OK(pawl_progress(p, &id, 1, 1, 2));
  pawl_log_entry_t line = {5000, "info", "after the upgrade", NULL};
  pawl_outcome_t out = {.id = id, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
                        .logs = &line, .nlogs = 1};
  int rcs[1];
  CHECK_OK(pawl_finish(p, &out, 1, rcs));
  CHECK_INT(rcs[0], ==, 0);
  pawl_jobs_free(jobs, n);
  pawl_close(p);

  db = raw("old.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema"), ==, latest);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_schema WHERE version = 2 "
                        "AND name = 'V002__logs_progress.sql'"),
            ==, 1);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pragma_table_info('pawl_jobs') "
                        "WHERE name IN ('progress_done', 'progress_total') "
                        "AND type = 'REAL'"),
            ==, 2);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pragma_table_info('pawl_jobs_v') "
                        "WHERE name IN ('progress_done', 'progress_total')"),
            ==, 2);
  CHECK_INT(raw_int(db, "SELECT progress_total FROM pawl_jobs_v"), ==, 2);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_logs WHERE attempt = 1 "
                        "AND at = 5000 AND level = 'info'"),
            ==, 1);
  sqlite3_close(db);
}

/* ---- statements --------------------------------------------------------- */

/* Every statement id has SQL in the table of the file that owns it
 * (sqlite_int.h, "Statements"), and the SQL prepares on a migrated
 * database: a statement whose entry went missing, or a group whose
 * marker is off by one, fails here instead of on the first use of a rare
 * path. */
void test_sqlite_statements_prepare(void) {
  pawl_t *p = open_ok(sqlite_url("stmts"));
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  CHECK(db != NULL);
  for (int id = 0; id < SQ_COUNT; id++) {
    const char *sql = pawl__sq_sql(id);
    if (!sql) unit_fail(__FILE__, __LINE__, "statement %d has no SQL", id);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
      unit_fail(__FILE__, __LINE__, "statement %d does not prepare: %s: %s",
                id, sqlite3_errmsg(db), sql);
    sqlite3_finalize(st);
  }
  CHECK(pawl__sq_sql(-1) == NULL);
  CHECK(pawl__sq_sql(SQ_COUNT) == NULL);
  pawl_close(p);
}

/* ---- connection settings ------------------------------------------------ */

static long long own_int(pawl_t *p, const char *sql) {
  sqlite3 *db = pawl__store_sqlite_db(p->store);
  CHECK(db != NULL);
  return raw_int(db, sql);
}

/* synchronous and foreign_keys are per connection: read them on the
 * store's own connection. */
void test_sqlite_pragmas(void) {
  pawl_t *p = open_ok("sqlite:pragma.db");
  sqlite3 *db = raw("pragma.db");
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), ==,
            SQLITE_OK);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
  CHECK_INT(own_int(p, "PRAGMA synchronous"), ==, 1); /* NORMAL */
  CHECK_INT(own_int(p, "PRAGMA foreign_keys"), ==, 1);
  CHECK_INT(own_int(p, "PRAGMA busy_timeout"), ==, 5000);
  CHECK_INT(own_int(p, "PRAGMA temp_store"), ==, 2); /* MEMORY */
  pawl_close(p);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:pragma.db";
  o.sync_full = 1;
  o.busy_timeout_ms = 1234;
  char err[256];
  CHECK_OK(pawl_open(&p, &o, err, sizeof err));
  CHECK_INT(own_int(p, "PRAGMA synchronous"), ==, 2); /* FULL */
  CHECK_INT(own_int(p, "PRAGMA busy_timeout"), ==, 1234);
  pawl_close(p);
}

/* Every command opens the store, and a busy host holds SQLite's one write
 * lock most of the time: opening a database that is already current must
 * read alone, or `pawl show` waits its busy timeout behind the host. A
 * node (check_writable) still takes the lock once at open. */
void test_sqlite_open_current_needs_no_write_lock(void) {
  pawl_close(open_ok("sqlite:current.db"));
  sqlite3 *db = raw("current.db");
  raw_exec(db, "BEGIN IMMEDIATE");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:current.db";
  o.busy_timeout_ms = 1;
  pawl_t *p = NULL;
  char err[512] = "";
  int rc = pawl_open(&p, &o, err, sizeof err);
  if (rc) unit_fail(__FILE__, __LINE__, "open under a held write lock: %s", err);
  pawl_job_t *j = NULL;
  pawl_id_t none;
  memset(&none, 0, sizeof none);
  CHECK_INT(pawl_get(p, &none, &j), ==, PAWL_ENOTFOUND);
  pawl_close(p);
  /* A program about to write asks for the lock at open, and is told. */
  o.check_writable = 1;
  p = NULL;
  CHECK_INT(pawl_open(&p, &o, err, sizeof err), ==, PAWL_EBUSY);
  CHECK(p == NULL);
  CHECK(strstr(err, "database is locked") != NULL);
  raw_exec(db, "ROLLBACK");
  sqlite3_close(db);
}

/* Temporary files opened through the default VFS, counted by a shim that
 * passes every call on to the real one. */
static sqlite3_vfs *g_real_vfs;
static sqlite3_vfs g_count_vfs;
static int g_temp_opens;

static int count_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
                      int flags, int *out_flags) {
  (void)vfs;
  if (!name || (flags & (SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_TEMP_DB |
                         SQLITE_OPEN_TRANSIENT_DB | SQLITE_OPEN_TEMP_JOURNAL)))
    g_temp_opens++;
  return g_real_vfs->xOpen(g_real_vfs, name, f, flags, out_flags);
}

/* A claim and a finish each change many rows in one statement, so SQLite
 * keeps a statement journal to undo that statement alone. With temporary
 * files, a journal past 64 KiB spills into a file that is created,
 * unlinked and closed again for every claim; the store keeps temporary
 * data in memory, so a claim+finish cycle of 1,000 jobs opens no file. */
void test_sqlite_claim_no_temp_files(void) {
  enum { N = 1000 };
  g_real_vfs = sqlite3_vfs_find(NULL);
  CHECK(g_real_vfs != NULL);
  g_count_vfs = *g_real_vfs;
  g_count_vfs.zName = "pawl-count";
  g_count_vfs.xOpen = count_open;
  CHECK_INT(sqlite3_vfs_register(&g_count_vfs, 1), ==, SQLITE_OK);
  pawl_t *p = open_ok("sqlite:temp.db");
  static pawl_enqueue_item_t items[N];
  static pawl_outcome_t outs[N];
  static int rcs[N];
  const char *payload = "{\"to\":\"user@example.com\",\"template\":\"welcome\"}";
  for (int i = 0; i < N; i++) items[i] = (pawl_enqueue_item_t){"t", payload, NULL};
  CHECK_OK(pawl_enqueue_many(p, items, N, NULL, NULL));
  g_temp_opens = 0;
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, N, &jobs, &n));
  CHECK_INT(n, ==, N);
  for (size_t i = 0; i < n; i++)
    outs[i] = (pawl_outcome_t){.id = jobs[i]->id,
                               .attempt = jobs[i]->attempt,
                               .kind = PAWL_OUT_SUCCEEDED,
                               .result = "{\"ok\":true}",
                               .store_key = jobs[i]->store_key};
  CHECK_OK(pawl_finish(p, outs, n, rcs));
  for (size_t i = 0; i < n; i++) CHECK_INT(rcs[i], ==, 0);
  pawl_jobs_free(jobs, n);
  CHECK_INT(g_temp_opens, ==, 0);
  pawl_close(p);
  sqlite3_vfs_unregister(&g_count_vfs);
}

/* ---- the claim's query plan --------------------------------------------- */

static void plan_of(sqlite3 *db, const char *sql, char *out, size_t n) {
  char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
    unit_fail(__FILE__, __LINE__, "prepare plan: %s", sqlite3_errmsg(db));
  sqlite3_free(q);
  out[0] = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, "%s\n",
             (const char *)sqlite3_column_text(st, 3));
  }
  sqlite3_finalize(st);
}

/* A pawl database `name`.db holding 20,000 jobs in 7 queues, 1% of them
 * pending and the rest finished, analyzed, so that the planner sees a
 * realistic table. */
static sqlite3 *plan_db(const char *name) {
  char url[64], path[64];
  snprintf(url, sizeof url, "sqlite:%s.db", name);
  snprintf(path, sizeof path, "%s.db", name);
  pawl_close(open_ok(url));
  sqlite3 *db = raw(path);
  raw_exec(db, "BEGIN");
  raw_exec(db,
           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
           "WHERE i < 20000) INSERT INTO pawl_jobs (id, type, queue, state, "
           "priority, rank, payload, run_at, max_attempts, created_at, "
           "updated_at) SELECT randomblob(16), 't', 'q' || (i % 7), "
           "CASE WHEN i % 100 = 0 THEN 0 ELSE 2 END, 0, 0, '{}', i, 25, i, i "
           "FROM n");
  raw_exec(db, "COMMIT");
  raw_exec(db, "ANALYZE");
  return db;
}

/* Claiming must walk the partial index of pending rows in claim order: no
 * table scan, no sort. Checked with finished history present, so the
 * planner sees a realistic table. */
void test_sqlite_claim_uses_live_index(void) {
  sqlite3 *db = plan_db("plan");
  char plan[4096];
  plan_of(db, SQLITE_SQL_CLAIM, plan, sizeof plan);
  if (!strstr(plan, "USING INDEX pawl_jobs_claim ") || strstr(plan, "TEMP B-TREE") ||
      strstr(plan, "SCAN pawl_jobs\n"))
    unit_fail(__FILE__, __LINE__, "claim plan:\n%s", plan);
  /* A claim of some queues picks lane by lane, each in claim order. */
  plan_of(db, SQLITE_SQL_CLAIM_LANE, plan, sizeof plan);
  if (!strstr(plan, "USING INDEX pawl_jobs_lane (queue=? AND held=? AND "
                    "early=? AND resource=?)") ||
      strstr(plan, "TEMP B-TREE") || strstr(plan, "SCAN pawl_jobs\n"))
    unit_fail(__FILE__, __LINE__, "lane claim plan:\n%s", plan);
  /* Taking the picked rows finds each by its rowid. */
  plan_of(db, SQLITE_SQL_CLAIM_TAKE, plan, sizeof plan);
  if (!strstr(plan, "SEARCH pawl_jobs USING INTEGER PRIMARY KEY") ||
      strstr(plan, "SCAN pawl_jobs\n"))
    unit_fail(__FILE__, __LINE__, "claim take plan:\n%s", plan);
  sqlite3_close(db);
}

/* Limits: the claim on a database with limits picks as the
 * claim without them does (the same index, no scan, no sort), and counts
 * a limit's permits on the running rows' index, never the history. */
void test_sqlite_limits_claim_uses_live_index(void) {
  sqlite3 *db = plan_db("limits_plan");
  char plan[4096];
  const char *sqls[2] = {SQLITE_SQL_CLAIM_LIM, SQLITE_SQL_CLAIM_LIM_UNPAUSED};
  for (int i = 0; i < 2; i++) {
    plan_of(db, sqls[i], plan, sizeof plan);
    if (!strstr(plan, "USING INDEX pawl_jobs_claim") ||
        strstr(plan, "SCAN pawl_jobs\n") || strstr(plan, "TEMP B-TREE"))
      unit_fail(__FILE__, __LINE__, "limited claim plan %d:\n%s", i, plan);
  }
  const char *counts[2] = {
      "SELECT count(*) FROM pawl_jobs WHERE state = 1 AND resource = ?1",
      "SELECT count(*) FROM pawl_jobs WHERE state = 1 AND queue = ?1"};
  for (int i = 0; i < 2; i++) {
    plan_of(db, counts[i], plan, sizeof plan);
    if (!strstr(plan, "INDEX pawl_jobs_running"))
      unit_fail(__FILE__, __LINE__, "permit count plan %d:\n%s", i, plan);
  }
  sqlite3_close(db);
}

/* A poller asks for the next due time whenever it finds nothing to claim:
 * that must read the pending rows' partial indexes, never the history. */
void test_sqlite_next_due_uses_live_index(void) {
  sqlite3 *db = plan_db("due");
  const char *sqls[3] = {SQLITE_SQL_NEXT_DUE, SQLITE_SQL_NEXT_DUE_QUEUE,
                         SQLITE_SQL_NEXT_DUE_QUEUES};
  char plan[4096];
  /* Every queue or several: the claim index; one: its lane index's
   * ready rows. */
  const char *want[3] = {"INDEX pawl_jobs_claim",
                         "INDEX pawl_jobs_lane (queue=? AND held=? AND early=?)",
                         "INDEX pawl_jobs_claim"};
  for (int i = 0; i < 3; i++) {
    plan_of(db, sqls[i], plan, sizeof plan);
    if (!strstr(plan, want[i]) || strstr(plan, "SCAN pawl_jobs\n") ||
        strstr(plan, "TEMP B-TREE"))
      unit_fail(__FILE__, __LINE__, "next due plan %d:\n%s", i, plan);
  }
  sqlite3_close(db);
}

/* sq_row_to_job() reads the columns by position, seq (the store_key) last. */
void test_sqlite_job_cols_seq_last(void) {
  pawl_close(open_ok("sqlite:cols.db"));
  sqlite3 *db = raw("cols.db");
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(db, "SELECT " SQLITE_JOB_COLS " FROM pawl_jobs",
                               -1, &st, NULL),
            ==, SQLITE_OK);
  CHECK_INT(sqlite3_column_count(st), ==, SQLITE_JOB_SEQ_COL + 1);
  CHECK_STR(sqlite3_column_name(st, 21), "lease_owner");
  CHECK_STR(sqlite3_column_name(st, 26), "progress_done");
  CHECK_STR(sqlite3_column_name(st, 27), "progress_total");
  CHECK_STR(sqlite3_column_name(st, 28), "version");
  CHECK_STR(sqlite3_column_name(st, SQLITE_JOB_SEQ_COL), "seq");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* A job's log lines are read through their job_id index, already in the
 * order they were written. */
void test_sqlite_logs_use_job_index(void) {
  pawl_close(open_ok("sqlite:logs.db"));
  sqlite3 *db = raw("logs.db");
  char plan[4096];
  plan_of(db,
          "SELECT attempt, at, level, message, fields FROM pawl_logs "
          "WHERE job_id = ?1 ORDER BY seq",
          plan, sizeof plan);
  if (!strstr(plan, "pawl_logs_job") || strstr(plan, "TEMP B-TREE"))
    unit_fail(__FILE__, __LINE__, "logs plan:\n%s", plan);
  sqlite3_close(db);
}

/* ---- storage details ---------------------------------------------------- */

void test_sqlite_view_and_blobs(void) {
  pawl_t *p = open_ok("sqlite:view.db");
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "viewed", "{\"a\":1}", NULL, &id, NULL));
  pawl_close(p);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  sqlite3 *db = raw("view.db");
  CHECK_INT(raw_int(db, "SELECT length(id) FROM pawl_jobs"), ==, 16);
  CHECK_INT(raw_int(db, "SELECT typeof(id) = 'blob' FROM pawl_jobs"), ==, 1);
  sqlite3_stmt *st;
  CHECK_INT(sqlite3_prepare_v2(db, "SELECT id, state, run_at FROM pawl_jobs_v",
                               -1, &st, NULL),
            ==, SQLITE_OK);
  CHECK_INT(sqlite3_step(st), ==, SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(st, 0), text);
  CHECK_STR((const char *)sqlite3_column_text(st, 1), "pending");
  CHECK(strchr((const char *)sqlite3_column_text(st, 2), 'T') != NULL);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* Idempotency keys outlive the job rows (retention will delete those). */
void test_sqlite_idempotency_outlives_job(void) {
  pawl_t *p = open_ok("sqlite:idem.db");
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.idempotency_key = "once";
  pawl_id_t first, again;
  int status;
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &first, NULL));
  pawl_close(p);
  sqlite3 *db = raw("idem.db");
  raw_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM pawl_jobs");
  sqlite3_close(db);
  p = open_ok("sqlite:idem.db");
  CHECK_OK(pawl_enqueue(p, "t", "{}", &o, &again, &status));
  CHECK_INT(status, ==, PAWL_ENQ_DUPLICATE);
  CHECK(memcmp(first.bytes, again.bytes, 16) == 0);
  pawl_close(p);
}

/* Deleting a job (retention) takes its history rows and logs with it. */
void test_sqlite_history_cascades(void) {
  pawl_t *p = open_ok("sqlite:casc.db");
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", "{}", NULL, &id, NULL));
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);
  CHECK_OK(pawl_cancel(p, &id, "x", NULL));
  pawl_log_entry_t line = {1, "info", "late", NULL};
  pawl_outcome_t out = {.id = id, .attempt = 1, .kind = PAWL_OUT_SUCCEEDED,
                        .logs = &line, .nlogs = 1};
  CHECK_OK(pawl_finish(p, &out, 1, NULL));
  pawl_jobs_free(jobs, n);
  pawl_close(p);
  sqlite3 *db = raw("casc.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_events"), ==, 1);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_logs"), ==, 1);
  raw_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM pawl_jobs");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_events"), ==, 0);
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_logs"), ==, 0);
  sqlite3_close(db);
}

static long long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Writes about 6 MB of jobs through a handle on `url`. */
static pawl_t *fill(const char *url, int manual) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  o.manual_checkpoint = manual;
  pawl_t *p = NULL;
  char err[256];
  CHECK_OK(pawl_open(&p, &o, err, sizeof err));
  static char payload[1100];
  memset(payload, 'x', sizeof payload - 1);
  payload[0] = '"';
  payload[sizeof payload - 2] = '"';
  pawl_enqueue_item_t items[500];
  for (int i = 0; i < 500; i++) items[i] = (pawl_enqueue_item_t){"t", payload, NULL};
  for (int r = 0; r < 12; r++) CHECK_OK(pawl_enqueue_many(p, items, 500, NULL, NULL));
  return p;
}

/* With manual_checkpoint, commits leave the pages in the WAL until
 * pawl_checkpoint() moves them; without it, SQLite checkpoints inside the
 * commits once the WAL passes 1000 pages. */
void test_sqlite_manual_checkpoint(void) {
  pawl_t *p = fill("sqlite:manual.db", 1);
  CHECK(file_size("manual.db") < 1000000);
  CHECK(file_size("manual.db-wal") > 5000000);
  CHECK_OK(pawl_checkpoint(p));
  CHECK(file_size("manual.db") > 5000000);
  pawl_close(p);
  p = fill("sqlite:auto.db", 0);
  CHECK(file_size("auto.db") > 4000000);
  CHECK_OK(pawl_checkpoint(p)); /* allowed any time */
  pawl_close(p);
}

/* ---- administration: query plans -----------------------------------------
 * The throughput is read from the minute buckets of pawl_throughput (a
 * range of its primary key), and the finish path finds the rows of its
 * batch by rowid to count them there; the counts of finished jobs are one
 * pass over the table without a sort (tallied in C); the live counts read
 * the partial indexes of pending and running rows. Failed jobs are walked
 * through their own index. Checked on plan_db()'s table (mostly finished
 * history, analyzed). */
#include "sqlite_admin_sql.h"

static void want_plan_sort(sqlite3 *db, const char *what, const char *sql,
                           const char *index, int may_sort) {
  char plan[4096];
  plan_of(db, sql, plan, sizeof plan);
  if (!strstr(plan, index) || strstr(plan, "SCAN pawl_jobs\n") ||
      (strstr(plan, "TEMP B-TREE") && !may_sort))
    unit_fail(__FILE__, __LINE__, "%s: wanted %s, got plan:\n%s", what, index,
              plan);
}

static void want_plan(sqlite3 *db, const char *what, const char *sql,
                      const char *index) {
  want_plan_sort(db, what, sql, index, strstr(what, "running") != NULL);
}

void test_sqlite_admin_uses_indexes(void) {
  sqlite3 *db = plan_db("admin");
  /* Grouping the few buckets of 15 minutes may sort them. */
  want_plan_sort(db, "throughput", SQLITE_ADM_STATS_TP,
                 "SEARCH pawl_throughput USING PRIMARY KEY (minute>?)", 1);
  {
    char plan[4096];
    plan_of(db, SQLITE_ADM_STATS_DONE, plan, sizeof plan);
    if (strstr(plan, "TEMP B-TREE"))
      unit_fail(__FILE__, __LINE__, "finished counts sort:\n%s", plan);
  }
  /* The pending rows' queue index, in queue order (no sort): its cost
   * grows with the pending jobs only. */
  want_plan(db, "pending counts", SQLITE_ADM_STATS_PENDING,
            "INDEX pawl_jobs_lane");
  want_plan(db, "running counts", SQLITE_ADM_STATS_RUNNING,
            "INDEX pawl_jobs_running");
  /* Running rows are few (the nodes' workers): grouping them may sort. */
  want_plan(db, "running counts per node", SQLITE_ADM_RUNNING,
            "INDEX pawl_jobs_running");
  want_plan(db, "failed count", SQLITE_ADM_COUNT_FAILED,
            "INDEX pawl_jobs_failed");
  want_plan(db, "failed walk", SQLITE_ADM_PICK_FAILED,
            "INDEX pawl_jobs_failed");
  /* Any other walk goes through the table once, in rowid order, from
   * where the last batch ended. */
  want_plan(db, "walk", SQLITE_ADM_PICK,
            "SEARCH pawl_jobs USING INTEGER PRIMARY KEY (rowid>?)");
  sqlite3_close(db);
}

/* A success costs no index entry: no index of pawl_jobs holds succeeded
 * rows (the primary key and the id's index aside, which a finish does not
 * change), so the hot path's finish writes the row and nothing else of the
 * table (bench/RESULTS.md: an index of finished rows cost 13% of claim +
 * complete). Each partial index's own WHERE clause is asked about the
 * succeeded rows of plan_db()'s history. */
void test_sqlite_success_in_no_index(void) {
  sqlite3 *db = plan_db("noindex");
  sqlite3_stmt *st = NULL;
  CHECK_INT(sqlite3_prepare_v2(db,
                               "SELECT name, sql FROM sqlite_master WHERE "
                               "type = 'index' AND tbl_name = 'pawl_jobs' "
                               "AND sql IS NOT NULL",
                               -1, &st, NULL),
            ==, SQLITE_OK);
  int partial = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *sql = (const char *)sqlite3_column_text(st, 1);
    const char *where = strstr(sql, " WHERE ");
    if (!where) where = strstr(sql, "\n  WHERE ");
    if (!where)
      unit_fail(__FILE__, __LINE__, "index %s holds every row: %s", name, sql);
    where = strstr(where, "WHERE") + 5;
    char q[1024];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM pawl_jobs WHERE state = 2 AND (%s)", where);
    if (raw_int(db, q) != 0)
      unit_fail(__FILE__, __LINE__, "index %s holds succeeded jobs: %s", name,
                sql);
    partial++;
  }
  sqlite3_finalize(st);
  CHECK(partial >= 5); /* claim, claim by queue, running, failed, keys */
  CHECK(raw_int(db, "SELECT count(*) FROM pawl_jobs WHERE state = 2") > 0);
  sqlite3_close(db);
}

static int64_t trim_clock(void *data) { return *(const int64_t *)data; }

/* A finish that sees the minute change deletes the throughput buckets
 * older than 30 minutes: the table stays a few rows per queue. */
void test_sqlite_throughput_trim(void) {
  int64_t now = 0;
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:trim.db";
  o.clock = trim_clock;
  o.clock_data = &now;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  for (int m = 0; m < 3; m++) {
    now = INT64_C(1800000000000) + 5000 + m * 20 * 60000; /* minute 3e7 */
    for (int k = 0; k < 2; k++) {
      pawl_job_t **jobs = NULL;
      size_t n = 0;
      CHECK_OK(pawl_enqueue(p, "t", "{}", NULL, NULL, NULL));
      CHECK_OK(pawl_claim(p, NULL, 1, &jobs, &n));
      CHECK_INT(n, ==, 1);
      pawl_outcome_t out = {.id = jobs[0]->id, .attempt = jobs[0]->attempt,
                            .kind = PAWL_OUT_SUCCEEDED,
                            .store_key = jobs[0]->store_key};
      int rc = -1;
      CHECK_OK(pawl_finish(p, &out, 1, &rc));
      CHECK_INT(rc, ==, 0);
      pawl_jobs_free(jobs, n);
    }
  }
  pawl_close(p);
  /* Minutes 0, 20 and 40 were written; at 40, minute 0 was deleted. */
  sqlite3 *db = raw("trim.db");
  CHECK_INT(raw_int(db, "SELECT count(*) FROM pawl_throughput"), ==, 2);
  CHECK_INT(raw_int(db, "SELECT min(minute) FROM pawl_throughput"), ==,
            30000020);
  CHECK_INT(raw_int(db, "SELECT sum(count) FROM pawl_throughput"), ==, 4);
  sqlite3_close(db);
}
