/* pg_pressure.c: pawl's PostgreSQL hot path under pressure.
 *
 *   pawl_pg_pressure --db URL --pawl PATH --scripts DIR [options]
 *   pawl_pg_pressure --db URL --audit-only --ids FILE [--schema S]
 *
 * A program, not a test: it measures and prints, and judges only the
 * exactly-once audit. bench/run_pg_pressure.sh runs it on a throwaway
 * server; `--help` lists the options.
 *
 * Processes. A producer thread enqueues no-op jobs (type "noop") through
 * the public API, pawl_enqueue_many every 10 ms at an offered rate,
 * open loop: a tick that ran late enqueues what fell due meanwhile, as
 * a real producer's callers would. --nodes `pawl run` processes (the
 * given binary, the scripts directory holding noop.lua) run them. All of
 * it works in one schema (--schema), made here and refused if it exists,
 * so that a run never mixes with another's jobs.
 *
 * Phases. capacity: the producer keeps at least 10,000 jobs pending, and
 * the completions per second after the first window are the clean
 * capacity C (rates may then be given as fractions of C: --rate 0.5C);
 * the backlog drains. Then warmup and clean at the rate, then the
 * scenario's stress phase, then recovery, then a drain until every job
 * has ended:
 *   clean      no stress phase;
 *   pinned     a session holds `BEGIN; SELECT txid_current();` idle
 *              through the stress phase, so vacuum removes nothing;
 *   readers    4 REPEATABLE READ sessions scan pawl_jobs every 2 s, each
 *              keeping its transaction (its snapshot) for --reader-hold
 *              seconds, their starts staggered so one is always held;
 *   overload   the stress phase offers 1.5 x the rate, recovery 0.5 x;
 *   chaos      the stress phase breaks things on a schedule of its own
 *              (below), at the rate.
 *
 * Chaos. Every --chaos-kill-every seconds (5) a node, round robin, is
 * killed with SIGKILL and started again at once as a new incarnation
 * (its own --node-id, as pawl's default hostname-pid would be); it is
 * stopped first (SIGSTOP) until it holds a job, so that the kill cuts
 * attempts short. Every --chaos-terminate-every seconds (3) every
 * connection of the nodes and the producer is ended with
 * pg_terminate_backend(), found by application name: each node's
 * connections are "pawl-pressure-PID-node-K", the producer's
 * "...-producer", this program's own "...-own" and "...-flood" (PID is
 * this program's), which are never ended. At a third of the phase the
 * server is restarted by --restart-cmd (run_pg_pressure.sh's restarts
 * its server, down for a second); this program's connections connect
 * again. At two thirds a flood opens connections until the server
 * refuses one ("too many clients"), ends pawl's and takes their slots,
 * and holds them --chaos-flood-hold seconds (5), ending pawl's again on
 * the termination schedule: the nodes and the producer get connection
 * errors all along, and must survive them. Events run one at a time,
 * each waiting for the nodes started again to record themselves in
 * pawl_nodes (a node that cannot reach the database as it starts exits,
 * as `pawl run` does); a kind not reached when the phase ends is done
 * then, so that a run does each at least once. The phase's summary and
 * the log count them.
 *
 * The nodes run with a 3 s lease in chaos (--lease): they beat every
 * second (a third of it), and each sweeps for expired leases every
 * 1.5 s (half of it), so a killed node's jobs are taken back within
 * about 4.5 s, and a node cut off from the database for longer than
 * 3 s loses its jobs, stops starting new ones, and finds its outcomes
 * refused. The producer's jobs carry idempotency keys in chaos, so an
 * enqueue whose commit is unknown (its connection ended) is tried again
 * with the same keys and yields the same ids (producer_main()).
 *
 * Samples. Every --window seconds one CSV row: offered and completed
 * jobs per second, pickup p50/p99/max, backlog, the oldest transaction
 * age, WAL bytes, CPU busy, and for each pawl table its n_live_tup,
 * n_dead_tup, n_tup_upd, n_tup_hot_upd, size and autovacuum count, and
 * for each pawl index its size and idx_tup_read (entries walked: dead
 * ones included). Each phase ends with a summary on stdout.
 *
 * Pickup is the store's own record of each end: created_at is written by
 * the enqueue's transaction (the database clock), started_at by the
 * worker when the body starts (the worker's wall clock, 1 ms resolution,
 * same machine), so a no-op job stays a no-op: nothing is added to its
 * payload or result. The completions of a window are found by reading
 * the producer's own ids that had not ended at the last sample (primary
 * key lookups in enqueue order, stopping past the last one found
 * ended), so that sampling costs no scan of pawl_jobs, which a pinned
 * horizon makes ever longer.
 *
 * Audit. After the drain the nodes stop and every id the producer got
 * back is checked (pawl_jobs, pawl_attempts, pawl_events): each present,
 * succeeded, ended once (no transition out of an ended state), no two
 * started attempts of one job overlapping in time or sharing an attempt
 * number, and no "noop" job the producer did not enqueue.
 *
 * An attempt lost with its node (killed, or cut off past its lease) has
 * no end of its own: lease recovery records it as lost, its ended_at the
 * time of the recovery. Its node may have died earlier, or run it until
 * its lease expired, which is the bound pawl guarantees; recovery comes
 * after that, and the job can be claimed again only after recovery. So
 * the lost attempt's interval ends at the recovery, and an attempt
 * starting before that overlaps it: a second run while the first lease
 * may still have been valid. A released attempt (a job handed back
 * before its body ran: claimed ahead, or its start could not be
 * recorded) gives its number back to the next claim, so it counts for
 * overlaps but not for numbers. In chaos a job may also fail as a poison
 * job: pawl fails a job lost while running more than 3 times (the limit
 * of `pawl run`, which has no option for it), and that is a job run to
 * the end of its retries, so the audit accepts it when it says so and
 * has more than 3 lost attempts, and counts it. Its attempts cannot run
 * out otherwise: the producer gives them the most pawl allows (10,000),
 * and a job loses at most one to each event while it is held. The exit
 * status is 0 only if it holds: 1 if not (or on a failure), 2 for bad
 * options, 130 when interrupted (SIGINT, SIGTERM: the nodes are stopped
 * first). --ids-out keeps the ids, and --audit-only checks them again
 * (the test corrupts a database and expects the audit to say so). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pawl.h"

#define TICK_NS 10000000L           /* the producer's period: 10 ms */
#define CALL_MAX 10000              /* jobs per pawl_enqueue_many at most */
#define CAP_LOW 10000               /* capacity: keep this many pending */
#define CHUNK 20000                 /* ids per completion lookup */
#define NODES_MAX 16
#define READERS 4
#define RATE_MAX 1000000.0
#define SECS_MAX 86400L
#define JOB_TYPE "noop"

extern char **environ;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps `s` seconds, in steps short enough to notice an interrupt. */
static void nap(double s) {
  double end = mono_s() + s;
  while (!g_stop) {
    double left = end - mono_s();
    if (left <= 0) break;
    if (left > 0.1) left = 0.1;
    struct timespec ts = {0, (long)(left * 1e9)};
    nanosleep(&ts, NULL);
  }
}

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pawl_pg_pressure: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- options ------------------------------------------------------------ */

enum { SC_CLEAN, SC_PINNED, SC_READERS, SC_OVERLOAD, SC_CHAOS, SC_COUNT };
static const char *const scenario_names[] = {"clean", "pinned", "readers",
                                             "overload", "chaos"};

typedef struct {
  const char *db, *pawl, *scripts, *csv, *schema, *ids_out, *ids_in;
  const char *node_log;
  int scenario, nodes, workers, audit_only, check_args;
  double rate;      /* jobs/s, or a fraction of C when rate_of_c */
  int rate_of_c;
  double capacity_rate; /* C given instead of measured (0: measure) */
  long capacity, warmup, clean, stress, recovery, window, drain;
  long reader_hold;
  long lease;       /* the nodes' --lease (0: pawl's own) */
  const char *restart_cmd;
  long kill_every, terminate_every, flood_hold;
  const char *chaos_only; /* a chaos option given (for the refusal) */
} opts_t;

static void usage(FILE *f) {
  fputs(
      "usage: pawl_pg_pressure --db URL --pawl PATH --scripts DIR [options]\n"
      "       pawl_pg_pressure --db URL --audit-only --ids FILE [--schema S]\n"
      "The PostgreSQL hot path under pressure: a producer at a fixed rate,\n"
      "`pawl run` nodes, phases, a CSV row per window, an exactly-once audit.\n"
      "  --db URL            a PostgreSQL server (postgres://..., postgresql://...\n"
      "                      or postgres:CONNINFO)\n"
      "  --schema S          the schema of the run, created here; refused if it\n"
      "                      exists (default pawl_pressure)\n"
      "  --pawl PATH         the pawl binary the nodes run\n"
      "  --scripts DIR       the nodes' job scripts (noop.lua: a no-op job)\n"
      "  --nodes N           `pawl run` processes, 1 to 16 (default 1)\n"
      "  --workers N         worker threads per node, 1 to 256 (default: pawl's)\n"
      "  --scenario S        clean, pinned, readers, overload or chaos (default\n"
      "                      pinned)\n"
      "  --rate R            offered jobs/s, 1 to 1000000, or a fraction of the\n"
      "                      clean capacity C: 0.5C, 0.01C to 5C (default 0.5C)\n"
      "  --capacity S        seconds of the capacity phase, 0 or 3 to 3600\n"
      "                      (default 60; 0: no capacity phase)\n"
      "  --capacity-rate N   C in jobs/s, 1 to 1000000, instead of measuring it\n"
      "  --warmup S          seconds, 0 to 86400 (default 60)\n"
      "  --clean S           seconds, 1 to 86400 (default 180)\n"
      "  --stress S          seconds of the pin, readers or overload, 1 to 86400\n"
      "                      (default 600)\n"
      "  --recovery S        seconds, 0 to 86400 (default 180)\n"
      "  --window S          seconds per CSV row, 1 to 600 (default 10)\n"
      "  --drain S           longest wait for the backlog to end, 1 to 86400\n"
      "                      (default 600)\n"
      "  --reader-hold S     readers: seconds each keeps its snapshot, 1 to 86400\n"
      "                      (default 60)\n"
      "  --lease S           the nodes' lease (pawl run --lease), 1 to 3600\n"
      "                      (default: pawl's 30; chaos: 3)\n"
      "  --restart-cmd CMD   chaos: a shell command that restarts the server\n"
      "                      (required; run_pg_pressure.sh gives it)\n"
      "  --chaos-kill-every S       chaos: SIGKILL a node (round robin) and start\n"
      "                             it again, every S s, 1 to 3600 (default 5)\n"
      "  --chaos-terminate-every S  chaos: pg_terminate_backend every connection\n"
      "                             of the nodes and the producer, every S s,\n"
      "                             1 to 3600 (default 3)\n"
      "  --chaos-flood-hold S       chaos: hold every free connection slot for\n"
      "                             S s, 1 to 3600 (default 5)\n"
      "  --csv FILE          the samples (default pressure.csv)\n"
      "  --node-log FILE     the nodes' output (default: this program's stderr)\n"
      "  --ids-out FILE      write the enqueued ids, one a line, for --audit-only\n"
      "  --audit-only        audit the ids of --ids FILE, then exit\n"
      "  --ids FILE          with --audit-only\n"
      "  --check-args        check the options, then exit (0 if good)\n"
      "Exit status: 0 audit holds, 1 it does not or the run failed, 2 bad\n"
      "options, 130 interrupted.\n",
      f);
}

/* A whole number of seconds in [lo, hi] (or exactly 0 when zero_ok). */
static int parse_secs(const char *flag, const char *v, long lo, long hi,
                      int zero_ok, long *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno) {
    fail("%s %s is not a whole number of seconds", flag, v);
    return -1;
  }
  if ((x < lo || x > hi) && !(zero_ok && x == 0)) {
    if (zero_ok)
      fail("%s %s is out of range: it must be 0 or from %ld to %ld (seconds)",
           flag, v, lo, hi);
    else
      fail("%s %s is out of range: it must be from %ld to %ld (seconds)", flag,
           v, lo, hi);
    return -1;
  }
  *out = (long)x;
  return 0;
}

static int parse_count(const char *flag, const char *v, long lo, long hi,
                       int *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno) {
    fail("%s %s is not a whole number", flag, v);
    return -1;
  }
  if (x < lo || x > hi) {
    fail("%s %s is out of range: it must be from %ld to %ld", flag, v, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

/* jobs/s, or "F C" / "FC": a fraction of the capacity. */
static int parse_rate(const char *flag, const char *v, int allow_c,
                      double *out, int *of_c) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  int c = allow_c && (*end == 'C' || *end == 'c') && end[1] == 0;
  if (end == v || (*end && !c) || errno || !isfinite(x)) {
    fail(allow_c ? "%s %s is not a rate: jobs per second (2000) or a fraction "
                   "of the capacity (0.5C)"
                 : "%s %s is not a rate in jobs per second",
         flag, v);
    return -1;
  }
  if (c && (x < 0.01 || x > 5)) {
    fail("%s %s is out of range: a fraction of the capacity must be from "
         "0.01C to 5C",
         flag, v);
    return -1;
  }
  if (!c && (x < 1 || x > RATE_MAX)) {
    fail("%s %s is out of range: it must be from 1 to 1000000 jobs/s", flag,
         v);
    return -1;
  }
  *out = x;
  if (of_c) *of_c = c;
  return 0;
}

static int parse_args(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.schema = "pawl_pressure", .csv = "pressure.csv",
                .scenario = SC_PINNED, .nodes = 1, .rate = 0.5, .rate_of_c = 1,
                .capacity = 60, .warmup = 60, .clean = 180, .stress = 600,
                .recovery = 180, .window = 10, .drain = 600,
                .reader_hold = 60, .kill_every = 5, .terminate_every = 3,
                .flood_hold = 5};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strcmp(a, "--audit-only") == 0) {
      o->audit_only = 1;
      continue;
    }
    if (strcmp(a, "--check-args") == 0) {
      o->check_args = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      fail("unexpected argument %s (--help lists the options)", a);
      return -1;
    }
    if (i + 1 >= argc) {
      fail("%s needs a value", a);
      return -1;
    }
    const char *v = argv[++i];
    int rc = 0;
    if (strcmp(a, "--db") == 0) o->db = v;
    else if (strcmp(a, "--pawl") == 0) o->pawl = v;
    else if (strcmp(a, "--scripts") == 0) o->scripts = v;
    else if (strcmp(a, "--csv") == 0) o->csv = v;
    else if (strcmp(a, "--schema") == 0) o->schema = v;
    else if (strcmp(a, "--ids-out") == 0) o->ids_out = v;
    else if (strcmp(a, "--ids") == 0) o->ids_in = v;
    else if (strcmp(a, "--node-log") == 0) o->node_log = v;
    else if (strcmp(a, "--nodes") == 0) rc = parse_count(a, v, 1, NODES_MAX, &o->nodes);
    else if (strcmp(a, "--workers") == 0) rc = parse_count(a, v, 1, 256, &o->workers);
    else if (strcmp(a, "--rate") == 0) rc = parse_rate(a, v, 1, &o->rate, &o->rate_of_c);
    else if (strcmp(a, "--capacity-rate") == 0)
      rc = parse_rate(a, v, 0, &o->capacity_rate, NULL);
    else if (strcmp(a, "--capacity") == 0) rc = parse_secs(a, v, 3, 3600, 1, &o->capacity);
    else if (strcmp(a, "--warmup") == 0) rc = parse_secs(a, v, 0, SECS_MAX, 0, &o->warmup);
    else if (strcmp(a, "--clean") == 0) rc = parse_secs(a, v, 1, SECS_MAX, 0, &o->clean);
    else if (strcmp(a, "--stress") == 0) rc = parse_secs(a, v, 1, SECS_MAX, 0, &o->stress);
    else if (strcmp(a, "--recovery") == 0) rc = parse_secs(a, v, 0, SECS_MAX, 0, &o->recovery);
    else if (strcmp(a, "--window") == 0) rc = parse_secs(a, v, 1, 600, 0, &o->window);
    else if (strcmp(a, "--drain") == 0) rc = parse_secs(a, v, 1, SECS_MAX, 0, &o->drain);
    else if (strcmp(a, "--reader-hold") == 0)
      rc = parse_secs(a, v, 1, SECS_MAX, 0, &o->reader_hold);
    else if (strcmp(a, "--lease") == 0) rc = parse_secs(a, v, 1, 3600, 0, &o->lease);
    else if (strcmp(a, "--restart-cmd") == 0) {
      if (!*v) {
        fail("--restart-cmd is empty: a shell command that restarts the server");
        return -1;
      }
      o->chaos_only = a;
      o->restart_cmd = v;
    } else if (strcmp(a, "--chaos-kill-every") == 0) {
      o->chaos_only = a;
      rc = parse_secs(a, v, 1, 3600, 0, &o->kill_every);
    } else if (strcmp(a, "--chaos-terminate-every") == 0) {
      o->chaos_only = a;
      rc = parse_secs(a, v, 1, 3600, 0, &o->terminate_every);
    } else if (strcmp(a, "--chaos-flood-hold") == 0) {
      o->chaos_only = a;
      rc = parse_secs(a, v, 1, 3600, 0, &o->flood_hold);
    } else if (strcmp(a, "--scenario") == 0) {
      int k = -1;
      for (int s = 0; s < SC_COUNT; s++)
        if (strcmp(v, scenario_names[s]) == 0) k = s;
      if (k < 0) {
        fail("--scenario %s is unknown: clean, pinned, readers, overload or "
             "chaos", v);
        return -1;
      }
      o->scenario = k;
    } else {
      fail("unknown option %s (--help lists the options)", a);
      return -1;
    }
    if (rc) return -1;
  }
  if (!o->db) {
    fail("--db URL is required: a PostgreSQL server");
    return -1;
  }
  if (strncmp(o->db, "sqlite:", 7) == 0) {
    fail("--db %s is not PostgreSQL: this benchmark measures the PostgreSQL "
         "store", o->db);
    return -1;
  }
  size_t sl = strlen(o->schema);
  if (sl == 0 || sl > 63 || strspn(o->schema, "abcdefghijklmnopqrstuvwxyz0123456789_") != sl ||
      (o->schema[0] >= '0' && o->schema[0] <= '9')) {
    fail("--schema %s is not a plain name: 1 to 63 of a-z, 0-9 and _, not "
         "beginning with a digit", o->schema);
    return -1;
  }
  if (o->audit_only) {
    if (!o->ids_in) {
      fail("--audit-only needs --ids FILE");
      return -1;
    }
    return 0;
  }
  if (o->ids_in) {
    fail("--ids FILE goes with --audit-only (a run writes --ids-out FILE)");
    return -1;
  }
  if (!o->pawl || !o->scripts) {
    fail("--pawl PATH and --scripts DIR are required: the nodes' binary and "
         "job scripts");
    return -1;
  }
  if (o->rate_of_c && o->capacity == 0 && o->capacity_rate == 0) {
    fail("--rate %gC is a fraction of the capacity: measure it (--capacity S) "
         "or give it (--capacity-rate N)", o->rate);
    return -1;
  }
  if (o->capacity_rate > 0 && o->capacity > 0) {
    fail("--capacity-rate gives the capacity: use --capacity 0 with it");
    return -1;
  }
  if (o->scenario == SC_CHAOS) {
    if (!o->restart_cmd) {
      fail("--scenario chaos needs --restart-cmd CMD: a shell command that "
           "restarts the server (bench/run_pg_pressure.sh gives it)");
      return -1;
    }
    if (!o->lease) o->lease = 3;
  } else if (o->chaos_only) {
    fail("%s goes with --scenario chaos", o->chaos_only);
    return -1;
  }
  return 0;
}

/* ---- connections ---------------------------------------------------------- */

/* The libpq conninfo of --db with search_path = schema and
 * application_name = app (NULL: unchanged), and the same as a pawl URL
 * ("postgres:" + conninfo). The application name tells the run's
 * connections apart in pg_stat_activity: chaos ends the nodes' and the
 * producer's, never this program's own. */
static int make_conninfo(const char *db, const char *schema, const char *app,
                         char *out, size_t len) {
  const char *ci = strncmp(db, "postgres:", 9) == 0 &&
                           strncmp(db, "postgres://", 11) != 0
                       ? db + 9
                       : db;
  char *err = NULL;
  PQconninfoOption *opt = PQconninfoParse(ci, &err);
  if (!opt) {
    fail("--db %s is not a PostgreSQL URL or conninfo: %s", db,
         err ? err : "out of memory");
    PQfreemem(err);
    return -1;
  }
  size_t n = 0;
  out[0] = 0;
  for (PQconninfoOption *k = opt; k->keyword; k++) {
    if (!k->val || (schema && strcmp(k->keyword, "options") == 0) ||
        (app && strcmp(k->keyword, "application_name") == 0))
      continue;
    n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s='", k->keyword);
    for (const char *c = k->val; *c; c++) {
      if (*c == '\'' || *c == '\\') n += (size_t)snprintf(out + n, n < len ? len - n : 0, "\\");
      n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%c", *c);
    }
    n += (size_t)snprintf(out + n, n < len ? len - n : 0, "' ");
  }
  if (app)
    n += (size_t)snprintf(out + n, n < len ? len - n : 0,
                          "application_name='%s' ", app);
  if (schema)
    n += (size_t)snprintf(out + n, n < len ? len - n : 0,
                          "options='-csearch_path=%s'", schema);
  PQconninfoFree(opt);
  if (n >= len) {
    fail("--db %s is too long", db);
    return -1;
  }
  return 0;
}

static PGconn *connect_db(const char *conninfo) {
  PGconn *c = PQconnectdb(conninfo);
  if (PQstatus(c) != CONNECTION_OK) {
    fail("connecting: %s", PQerrorMessage(c));
    PQfinish(c);
    return NULL;
  }
  PGresult *r = PQexec(c, "SET client_min_messages = warning");
  PQclear(r);
  return c;
}

/* After a failed query on one of this program's own connections: if the
 * connection itself is gone (the server restarted), connects again, for
 * up to 60 s. 0 when it is back (run the query again), -1 if it was not
 * the connection or it did not come back. */
static int reconnect(PGconn *c, long long *count) {
  if (PQstatus(c) == CONNECTION_OK) return -1;
  double end = mono_s() + 60;
  while (!g_stop) {
    PQreset(c);
    if (PQstatus(c) == CONNECTION_OK) {
      PQclear(PQexec(c, "SET client_min_messages = warning"));
      if (count) (*count)++;
      return 0;
    }
    if (mono_s() > end) break;
    nap(0.2);
  }
  fail("reconnecting: %s", PQerrorMessage(c));
  return -1;
}

/* Runs `sql` (no parameters); 0 if it worked. */
static int exec_ok(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  int st = PQresultStatus(r);
  int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!ok) fail("%s: %s", sql, PQerrorMessage(c));
  PQclear(r);
  return ok ? 0 : -1;
}

/* ---- shared state --------------------------------------------------------- */

enum { MODE_IDLE, MODE_RATE, MODE_CAPACITY };

static struct {
  pthread_mutex_t mu;
  pawl_id_t *ids; /* every id enqueued, in order */
  uint8_t *done;  /* ended (seen by the sampler) */
  size_t n, cap;
  long long errors;    /* enqueues given up: their jobs are not counted */
  long long retried;   /* chaos: failed enqueues tried again */
  long long committed; /* chaos: ... found committed by their keys */
  char last_error[512];
  int mode;
  double rate;
  int quit;
  int busy; /* the producer is between reading the mode and having
               appended the ids of its tick */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int ids_append(const pawl_id_t *ids, size_t k) {
  pthread_mutex_lock(&g.mu);
  if (g.n + k > g.cap) {
    size_t cap = g.cap ? g.cap : 65536;
    while (cap < g.n + k) cap *= 2;
    pawl_id_t *ni = realloc(g.ids, cap * sizeof *ni);
    if (ni) g.ids = ni;
    uint8_t *nd = ni ? realloc(g.done, cap) : NULL;
    if (nd) g.done = nd;
    if (!ni || !nd) {
      pthread_mutex_unlock(&g.mu);
      return -1;
    }
    g.cap = cap;
  }
  memcpy(g.ids + g.n, ids, k * sizeof *ids);
  memset(g.done + g.n, 0, k);
  g.n += k;
  pthread_mutex_unlock(&g.mu);
  return 0;
}

/* ---- the producer ----------------------------------------------------------- */

typedef struct {
  pawl_t *p;
  PGconn *pc; /* pending counts of the capacity phase */
  int chaos;  /* keys and retries: see producer_main() */
  int32_t max_attempts;
} producer_t;

static long long pending_count(PGconn *c) {
  PGresult *r = PQexec(c, "SELECT count(*) FROM pawl_jobs WHERE state = 0");
  long long n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  return n;
}

#define KEY_LEN 32

/* The producer. In chaos its connection is ended every few seconds and
 * the server restarts, so an enqueue may fail after its commit went
 * through (the answer lost with the connection): every job then carries
 * an idempotency key ("pressure-" and its number in the run) and a failed
 * call is tried again with the same keys until it works, which returns
 * each job's id whether this try or a lost one made it; the id list stays
 * exact. Other scenarios enqueue without keys (the plain hot path) and
 * count a failed call as an error that fails the run. */
static void *producer_main(void *arg) {
  producer_t *pr = arg;
  pawl_enqueue_item_t *items = malloc(CALL_MAX * sizeof *items);
  pawl_id_t *ids = malloc(CALL_MAX * sizeof *ids);
  int *status = malloc(CALL_MAX * sizeof *status);
  pawl_enqueue_opts_t *opts = pr->chaos ? malloc(CALL_MAX * sizeof *opts) : NULL;
  char *keys = pr->chaos ? malloc((size_t)CALL_MAX * KEY_LEN) : NULL;
  if (!items || !ids || !status || (pr->chaos && (!opts || !keys))) {
    fail("producer: out of memory");
    g_stop = 1;
    free(items);
    free(ids);
    free(status);
    free(opts);
    free(keys);
    return NULL;
  }
  long long seq = 0;
  for (int i = 0; i < CALL_MAX; i++) {
    items[i] = (pawl_enqueue_item_t){JOB_TYPE, "{}", NULL};
    if (pr->chaos) {
      pawl_enqueue_opts_init(&opts[i]);
      opts[i].max_attempts = pr->max_attempts;
      opts[i].idempotency_key = keys + (size_t)i * KEY_LEN;
      items[i].opts = &opts[i];
    }
  }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  double last = mono_s(), credit = 0;
  long tick = 0;
  for (;;) {
    next.tv_nsec += TICK_NS;
    if (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec++;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    pthread_mutex_lock(&g.mu);
    int mode = g.mode, quit = g.quit;
    double rate = g.rate;
    g.busy = 1;
    pthread_mutex_unlock(&g.mu);
    if (quit || g_stop) break;
    double t = mono_s();
    long long due = 0;
    if (mode == MODE_RATE) {
      credit += rate * (t - last);
      due = (long long)credit;
      credit -= (double)due;
    } else {
      credit = 0;
      /* Top up every 100 ms: 10,000 pending last a node a second or more. */
      if (mode == MODE_CAPACITY && tick % 10 == 0) {
        long long pend = pending_count(pr->pc);
        if (pend >= 0 && pend < CAP_LOW) due = CAP_LOW;
      }
    }
    last = t;
    tick++;
    while (due > 0 && !g_stop) {
      size_t k = due > CALL_MAX ? CALL_MAX : (size_t)due;
      /* The capacity phase enqueues as bulk producers do, 1,000 a call. */
      if (mode == MODE_CAPACITY && k > 1000) k = 1000;
      for (size_t i = 0; keys && i < k; i++)
        snprintf(keys + i * KEY_LEN, KEY_LEN, "pressure-%lld", seq + (long long)i);
      int ok = 0, tries = 0;
      double backoff = 0.02;
      while (!ok) {
        tries++;
        int erc = pawl_enqueue_many(pr->p, items, k, ids, status);
        if (erc == 0) {
          ok = 1;
          break;
        }
        /* Only the database being away is tried again: anything else
         * would be refused again. Given up: an error, which fails the run
         * (its jobs may exist, as jobs nobody enqueued). */
        pthread_mutex_lock(&g.mu);
        int retry = pr->chaos && !g_stop && !g.quit &&
                    (erc == PAWL_EUNAVAIL || erc == PAWL_EBUSY);
        if (retry) g.retried++;
        else g.errors++;
        snprintf(g.last_error, sizeof g.last_error, "%s", pawl_errmsg(pr->p));
        pthread_mutex_unlock(&g.mu);
        if (!retry) break;
        nap(backoff);
        if (backoff < 0.5) backoff *= 2;
      }
      if (ok) {
        /* One transaction: a lost try that committed shows as k
         * duplicates; some but not all would be a call half committed,
         * and any on a first try a key used twice. */
        size_t dup = 0;
        for (size_t i = 0; keys && i < k; i++) dup += status[i] == PAWL_ENQ_DUPLICATE;
        if (dup) {
          int whole = dup == k && tries > 1;
          pthread_mutex_lock(&g.mu);
          if (whole) g.committed++;
          else g.errors++;
          if (!whole)
            snprintf(g.last_error, sizeof g.last_error,
                     "%zu of %zu jobs of an enqueue (try %d) were there "
                     "already", dup, k, tries);
          pthread_mutex_unlock(&g.mu);
        }
        if (ids_append(ids, k) != 0) {
          fail("producer: out of memory for the ids");
          g_stop = 1;
        }
      }
      seq += (long long)k;
      due -= (long long)k;
    }
    pthread_mutex_lock(&g.mu);
    g.busy = 0;
    pthread_mutex_unlock(&g.mu);
  }
  pthread_mutex_lock(&g.mu);
  g.busy = 0;
  pthread_mutex_unlock(&g.mu);
  free(items);
  free(ids);
  free(status);
  free(opts);
  free(keys);
  return NULL;
}

static void set_mode(int mode, double rate) {
  pthread_mutex_lock(&g.mu);
  g.mode = mode;
  g.rate = rate;
  pthread_mutex_unlock(&g.mu);
}

/* ---- the pin and the readers -------------------------------------------------- */

typedef struct {
  const char *conninfo;
  int index;
  long hold;
  volatile int stop;
  pthread_t th;
  int started;
} reader_t;

static void *reader_main(void *arg) {
  reader_t *r = arg;
  PGconn *c = connect_db(r->conninfo);
  if (!c) return NULL;
  /* Staggered: each holds its snapshot for `hold` seconds, one starting
   * every hold/4, so that the horizon is always held by one of them. */
  double wait = (double)r->hold * r->index / READERS;
  for (double end = mono_s() + wait; !r->stop && !g_stop && mono_s() < end;)
    nap(0.1);
  while (!r->stop && !g_stop) {
    if (exec_ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ") != 0) break;
    double end = mono_s() + (double)r->hold;
    while (!r->stop && !g_stop && mono_s() < end) {
      PGresult *res = PQexec(c, "SELECT count(*) FROM pawl_jobs");
      PQclear(res);
      for (int i = 0; i < 20 && !r->stop && !g_stop; i++) nap(0.1);
    }
    if (exec_ok(c, "COMMIT") != 0) break;
  }
  PQfinish(c);
  return NULL;
}

/* ---- relation statistics -------------------------------------------------------- */

#define TCOLS 6 /* live, dead, upd, hot_upd, bytes, autovacuums */
#define ICOLS 2 /* bytes, tup_read */

typedef struct {
  int ntab, nidx;
  char **tab, **idx; /* names, in column order */
  int jobs;          /* index of pawl_jobs in tab */
  int *jobs_idx;     /* 1: the index belongs to pawl_jobs */
} rels_t;

typedef struct {
  long long *t; /* ntab * TCOLS */
  long long *i; /* nidx * ICOLS */
  long long xmin_age, wal;
} stats_t;

static int rels_load(PGconn *c, rels_t *r) {
  PGresult *res = PQexec(
      c, "SELECT c.relname, c.relkind, coalesce(t.relname, '') FROM pg_class c "
         "JOIN pg_namespace n ON n.oid = c.relnamespace "
         "LEFT JOIN pg_index x ON x.indexrelid = c.oid "
         "LEFT JOIN pg_class t ON t.oid = x.indrelid "
         "WHERE n.nspname = current_schema() AND c.relname LIKE 'pawl\\_%' "
         "AND c.relkind IN ('r', 'i') ORDER BY c.relkind DESC, c.relname");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    fail("listing pawl's relations: %s", PQerrorMessage(c));
    PQclear(res);
    return -1;
  }
  int n = PQntuples(res);
  r->tab = calloc((size_t)n + 1, sizeof *r->tab);
  r->idx = calloc((size_t)n + 1, sizeof *r->idx);
  r->jobs_idx = calloc((size_t)n + 1, sizeof *r->jobs_idx);
  r->jobs = -1;
  for (int k = 0; k < n; k++) {
    char *name = strdup(PQgetvalue(res, k, 0));
    if (PQgetvalue(res, k, 1)[0] == 'r') {
      if (strcmp(name, "pawl_jobs") == 0) r->jobs = r->ntab;
      r->tab[r->ntab++] = name;
    } else {
      r->jobs_idx[r->nidx] = strcmp(PQgetvalue(res, k, 2), "pawl_jobs") == 0;
      r->idx[r->nidx++] = name;
    }
  }
  PQclear(res);
  if (r->jobs < 0) {
    fail("no pawl_jobs table in the schema");
    return -1;
  }
  return 0;
}

static void rels_free(rels_t *r) {
  for (int k = 0; k < r->ntab; k++) free(r->tab[k]);
  for (int k = 0; k < r->nidx; k++) free(r->idx[k]);
  free(r->tab);
  free(r->idx);
  free(r->jobs_idx);
}

static int find_name(char **names, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (strcmp(names[k], name) == 0) return k;
  return -1;
}

static int stats_read(PGconn *c, const rels_t *r, stats_t *s) {
  memset(s->t, 0, (size_t)r->ntab * TCOLS * sizeof *s->t);
  memset(s->i, 0, (size_t)r->nidx * ICOLS * sizeof *s->i);
  PGresult *res = PQexec(
      c, "SELECT relname, n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd, "
         "pg_relation_size(relid), autovacuum_count FROM pg_stat_user_tables "
         "WHERE schemaname = current_schema()");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) goto bad;
  for (int k = 0; k < PQntuples(res); k++) {
    int at = find_name(r->tab, r->ntab, PQgetvalue(res, k, 0));
    for (int col = 0; at >= 0 && col < TCOLS; col++)
      s->t[at * TCOLS + col] = atoll(PQgetvalue(res, k, col + 1));
  }
  PQclear(res);
  res = PQexec(c, "SELECT indexrelname, pg_relation_size(indexrelid), "
                  "idx_tup_read FROM pg_stat_user_indexes WHERE schemaname = "
                  "current_schema()");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) goto bad;
  for (int k = 0; k < PQntuples(res); k++) {
    int at = find_name(r->idx, r->nidx, PQgetvalue(res, k, 0));
    for (int col = 0; at >= 0 && col < ICOLS; col++)
      s->i[at * ICOLS + col] = atoll(PQgetvalue(res, k, col + 1));
  }
  PQclear(res);
  /* A txid_current() pin has an xid and no snapshot; a reader the reverse. */
  res = PQexec(c, "SELECT coalesce(max(greatest(age(backend_xmin), "
                  "age(backend_xid))), 0), pg_current_wal_lsn() - '0/0' "
                  "FROM pg_stat_activity");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) goto bad;
  s->xmin_age = atoll(PQgetvalue(res, 0, 0));
  s->wal = atoll(PQgetvalue(res, 0, 1));
  PQclear(res);
  return 0;
bad:
  if (PQstatus(c) == CONNECTION_OK)
    fail("reading statistics: %s", PQerrorMessage(c));
  PQclear(res);
  return -1;
}

/* pawl_jobs and its indexes, in bytes. */
static long long jobs_bytes(const rels_t *r, const stats_t *s) {
  long long b = s->t[r->jobs * TCOLS + 4];
  for (int k = 0; k < r->nidx; k++)
    if (r->jobs_idx[k]) b += s->i[k * ICOLS];
  return b;
}

static long long all_bytes(const rels_t *r, const stats_t *s) {
  long long b = 0;
  for (int k = 0; k < r->ntab; k++) b += s->t[k * TCOLS + 4];
  for (int k = 0; k < r->nidx; k++) b += s->i[k * ICOLS];
  return b;
}

/* ---- samples and phases --------------------------------------------------------- */

typedef struct {
  double *v;
  size_t n, cap;
} vec_t;

static int vec_push(vec_t *v, double x) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 4096;
    double *nv = realloc(v->v, cap * sizeof *nv);
    if (!nv) return -1;
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = x;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* p50, p99, max of v (sorted in place); NAN when empty. */
static void pct(vec_t *v, double out[3]) {
  if (v->n == 0) {
    out[0] = out[1] = out[2] = NAN;
    return;
  }
  qsort(v->v, v->n, sizeof *v->v, cmp_double);
  out[0] = v->v[(size_t)(0.50 * (double)(v->n - 1))];
  out[1] = v->v[(size_t)(0.99 * (double)(v->n - 1))];
  out[2] = v->v[v->n - 1];
}

typedef struct {
  const char *conninfo;
  PGconn *c;
  FILE *csv;
  rels_t rels;
  stats_t prev, cur;
  double t0;        /* the run's start */
  double last_t;    /* the last sample */
  size_t last_n;    /* ids enqueued at the last sample */
  size_t head;      /* first id not seen ended */
  long long ended, failed;
  long long ended_last; /* ended at the last sample */
  vec_t win;            /* pickups seen since the last sample */
  unsigned long long cpu_busy, cpu_total;
  /* the phase */
  const char *phase;
  double target, phase_t0, phase_end;
  long long p_offered, p_done, p_errors0;
  vec_t p_pick, p_pick_t; /* pickups and when each was seen */
  long long p_bytes0, p_all0;
  double window_rate; /* completions/s of the last window */
  long long reconnects; /* of c, after a server restart */
  /* The nodes: a chaos thread kills and starts them while the sampler
   * checks that they run, under nodes_mu. Node k's incarnation gen[k]
   * has its own --node-id, node_id[k], so that its start is seen in
   * pawl_nodes. */
  pthread_mutex_t nodes_mu;
  pid_t *nodes;
  int nnodes;
  int gen[NODES_MAX];
  char node_id[NODES_MAX][40];
} run_t;

static void cpu_read(unsigned long long *busy, unsigned long long *total) {
  FILE *f = fopen("/proc/stat", "r");
  unsigned long long v[8] = {0};
  if (f) {
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
      memset(v, 0, sizeof v);
    fclose(f);
  }
  *total = 0;
  for (int k = 0; k < 8; k++) *total += v[k];
  *busy = *total - v[3] - v[4];
}

/* Finds which of the first `limit` ids ended since the last look, for the
 * window and the phase. The limit keeps the backlog exact: ids enqueued
 * after it was taken are left for the next look. */
static int observe(run_t *r, size_t limit, double now) {
  static size_t pos[CHUNK];
  char *arr = malloc((size_t)CHUNK * PAWL_ID_STRLEN + 4);
  if (!arr) return -1;
  const char *sql =
      "SELECT u.ord, j.state, extract(epoch FROM j.started_at - j.created_at) "
      "* 1000 FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, ord) JOIN "
      "pawl_jobs AS j ON j.id = u.id WHERE j.state IN (2, 3, 4)";
  size_t from = r->head;
  int rc = 0;
  for (;;) {
    size_t k = 0, len = 0;
    pthread_mutex_lock(&g.mu);
    arr[len++] = '{';
    for (size_t i = from; i < limit && k < CHUNK; i++) {
      if (g.done[i]) continue;
      if (k) arr[len++] = ',';
      pawl_id_format(&g.ids[i], arr + len);
      len += PAWL_ID_STRLEN - 1;
      pos[k++] = i;
    }
    pthread_mutex_unlock(&g.mu);
    arr[len++] = '}';
    arr[len] = 0;
    if (k == 0) break;
    const char *vals[1] = {arr};
    PGresult *res = PQexecParams(r->c, sql, 1, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
      /* A connection gone is said by reconnect() if it stays gone. */
      if (PQstatus(r->c) == CONNECTION_OK)
        fail("looking up the ended jobs: %s", PQerrorMessage(r->c));
      PQclear(res);
      rc = -1;
      break;
    }
    int tail = 0;
    for (int row = 0; row < PQntuples(res); row++) {
      size_t ord = (size_t)atoll(PQgetvalue(res, row, 0)) - 1;
      int state = atoi(PQgetvalue(res, row, 1));
      pthread_mutex_lock(&g.mu);
      g.done[pos[ord]] = 1;
      pthread_mutex_unlock(&g.mu);
      r->ended++;
      r->p_done++;
      if (ord >= k - k / 10) tail = 1;
      if (state != 2) r->failed++;
      if (state == 2 && !PQgetisnull(res, row, 2)) {
        double ms = strtod(PQgetvalue(res, row, 2), NULL);
        if (vec_push(&r->win, ms) || vec_push(&r->p_pick, ms) ||
            vec_push(&r->p_pick_t, now))
          rc = -1;
      }
    }
    PQclear(res);
    /* Jobs are claimed in enqueue order, give or take a batch: past a
     * chunk whose last tenth has nothing ended, nothing has. */
    if (rc || k < CHUNK || !tail) break;
    from = pos[k - 1] + 1;
  }
  pthread_mutex_lock(&g.mu);
  while (r->head < g.n && g.done[r->head]) r->head++;
  pthread_mutex_unlock(&g.mu);
  free(arr);
  return rc;
}

static void csv_header(run_t *r) {
  fprintf(r->csv, "t_s,phase,window_s,target_per_s,offered_per_s,"
                  "completed_per_s,pickup_p50_ms,pickup_p99_ms,pickup_max_ms,"
                  "backlog,enqueue_errors,oldest_xact_age,wal_bytes,"
                  "cpu_busy_pct,load1");
  static const char *tc[TCOLS] = {"live", "dead", "upd", "hot_upd", "bytes",
                                  "autovacuums"};
  static const char *ic[ICOLS] = {"bytes", "tup_read"};
  for (int k = 0; k < r->rels.ntab; k++)
    for (int col = 0; col < TCOLS; col++)
      fprintf(r->csv, ",%s.%s", r->rels.tab[k], tc[col]);
  for (int k = 0; k < r->rels.nidx; k++)
    for (int col = 0; col < ICOLS; col++)
      fprintf(r->csv, ",%s.%s", r->rels.idx[k], ic[col]);
  fputc('\n', r->csv);
  fflush(r->csv);
}

/* Checks that the nodes still run. */
static int nodes_alive(run_t *r) {
  int rc = 0;
  pthread_mutex_lock(&r->nodes_mu);
  for (int k = 0; k < r->nnodes && !rc; k++) {
    int st;
    if (r->nodes[k] > 0 && waitpid(r->nodes[k], &st, WNOHANG) == r->nodes[k]) {
      fail("node %d (%s, pid %d) exited (status %d) in phase %s", k + 1,
           r->node_id[k], (int)r->nodes[k],
           WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), r->phase);
      r->nodes[k] = 0;
      rc = -1;
    }
  }
  pthread_mutex_unlock(&r->nodes_mu);
  return rc;
}

/* One sample: a CSV row for the window that ends now. */
static int sample(run_t *r) {
  double now = mono_s();
  pthread_mutex_lock(&g.mu);
  size_t n = g.n;
  long long errors = g.errors;
  pthread_mutex_unlock(&g.mu);
  /* Our connection is cut when the server restarts (chaos): again once. */
  if (observe(r, n, now) != 0 &&
      (reconnect(r->c, &r->reconnects) || observe(r, n, now)))
    return -1;
  if (stats_read(r->c, &r->rels, &r->cur) != 0 &&
      (reconnect(r->c, &r->reconnects) ||
       stats_read(r->c, &r->rels, &r->cur)))
    return -1;
  unsigned long long busy, total;
  cpu_read(&busy, &total);
  double cpu = total > r->cpu_total
                   ? 100.0 * (double)(busy - r->cpu_busy) / (double)(total - r->cpu_total)
                   : 0;
  r->cpu_busy = busy;
  r->cpu_total = total;
  double load[1] = {0};
  if (getloadavg(load, 1) != 1) load[0] = NAN;
  double dt = now - r->last_t;
  double p[3];
  pct(&r->win, p);
  long long offered = (long long)(n - r->last_n);
  r->p_offered += offered;
  r->window_rate = (double)(r->ended - r->ended_last) / dt;
  r->ended_last = r->ended;
  fprintf(r->csv, "%.1f,%s,%.2f,%.0f,%.1f,%.1f,%.2f,%.2f,%.2f,%lld,%lld,%lld,%lld,%.0f,%.2f",
          now - r->t0, r->phase, dt, r->target, (double)offered / dt,
          r->window_rate, p[0], p[1], p[2], (long long)n - r->ended, errors,
          r->cur.xmin_age, r->cur.wal, cpu, load[0]);
  for (int k = 0; k < r->rels.ntab * TCOLS; k++) fprintf(r->csv, ",%lld", r->cur.t[k]);
  for (int k = 0; k < r->rels.nidx * ICOLS; k++) fprintf(r->csv, ",%lld", r->cur.i[k]);
  fputc('\n', r->csv);
  fflush(r->csv);
  r->win.n = 0;
  r->last_t = now;
  r->last_n = n;
  stats_t t = r->prev;
  r->prev = r->cur;
  r->cur = t;
  return nodes_alive(r);
}

static void phase_begin(run_t *r, const char *name, int mode, double rate) {
  r->phase = name;
  r->target = mode == MODE_RATE ? rate : 0;
  /* Phases tile the samples: one begins where the last window ended. */
  r->phase_t0 = r->last_t;
  r->p_offered = r->p_done = 0;
  r->p_pick.n = r->p_pick_t.n = 0;
  r->p_bytes0 = jobs_bytes(&r->rels, &r->prev);
  r->p_all0 = all_bytes(&r->rels, &r->prev);
  pthread_mutex_lock(&g.mu);
  r->p_errors0 = g.errors;
  pthread_mutex_unlock(&g.mu);
  set_mode(mode, rate);
}

/* Samples every window until `secs` have passed since the phase began. */
static int phase_run(run_t *r, double secs, double window) {
  double end = r->phase_t0 + secs;
  while (!g_stop) {
    double now = mono_s();
    if (now >= end - 1e-3) break;
    double next = r->last_t + window;
    if (next > end) next = end;
    nap(next - now);
    if (g_stop) break;
    if (sample(r) != 0) return -1;
  }
  return g_stop ? -1 : 0;
}

/* Samples until every job enqueued has ended, at most `secs`; the last
 * row is the window in which the last job ended. A call of the producer
 * still under way (a tick begun before the drain, an enqueue being tried
 * again) is waited for: its jobs are part of the run. */
static int drain(run_t *r, double secs, double window) {
  double end = mono_s() + secs;
  for (;;) {
    pthread_mutex_lock(&g.mu);
    size_t n = g.n;
    int busy = g.busy;
    pthread_mutex_unlock(&g.mu);
    if ((long long)n == r->ended && !busy) return sample(r);
    if (g_stop) return -1;
    if (mono_s() >= end) {
      fail("%lld jobs had not ended %.0f s after the producer stopped",
           (long long)n - r->ended, secs);
      return -1;
    }
    double next = r->last_t + window;
    /* Check often, write a row per window. */
    nap(0.2 < next - mono_s() ? 0.2 : next - mono_s());
    if (mono_s() >= next) {
      if (sample(r) != 0) return -1;
    } else if (observe(r, n, mono_s()) != 0 &&
               (reconnect(r->c, &r->reconnects) || observe(r, n, mono_s()))) {
      return -1;
    }
  }
}

static void phase_summary(run_t *r) {
  double dur = r->last_t - r->phase_t0;
  double all[3], last[3];
  /* The last minute (the whole phase if shorter). */
  double from = r->last_t - 60;
  vec_t lm = {0};
  for (size_t k = 0; k < r->p_pick.n; k++)
    if (r->p_pick_t.v[k] > from + 1e-6) vec_push(&lm, r->p_pick.v[k]);
  pct(&r->p_pick, all);
  pct(&lm, last);
  free(lm.v);
  long long b1 = jobs_bytes(&r->rels, &r->prev), a1 = all_bytes(&r->rels, &r->prev);
  double mins = dur / 60;
  pthread_mutex_lock(&g.mu);
  long long errs = g.errors - r->p_errors0;
  pthread_mutex_unlock(&g.mu);
  printf("phase %-9s %6.0f s  target %7.0f/s  offered %8.1f/s  completed "
         "%8.1f/s  completed/offered %s",
         r->phase, dur, r->target, (double)r->p_offered / dur,
         (double)r->p_done / dur, r->p_offered ? "" : "-");
  if (r->p_offered) printf("%.3f", (double)r->p_done / (double)r->p_offered);
  printf("  enqueue errors %lld\n", errs);
  printf("  pickup ms  all p50 %.2f p99 %.2f max %.2f  last minute p50 %.2f "
         "p99 %.2f max %.2f\n",
         all[0], all[1], all[2], last[0], last[1], last[2]);
  printf("  pawl_jobs+indexes %.1f -> %.1f MB (%+.2f MB/min, %+.1f%%/min); all "
         "pawl %.1f -> %.1f MB; pawl_jobs dead %lld live %lld; oldest xact "
         "age %lld\n",
         (double)r->p_bytes0 / 1e6, (double)b1 / 1e6,
         mins > 0 ? (double)(b1 - r->p_bytes0) / 1e6 / mins : 0,
         mins > 0 && r->p_bytes0 > 0
             ? 100.0 * (double)(b1 - r->p_bytes0) / (double)r->p_bytes0 / mins
             : 0,
         (double)r->p_all0 / 1e6, (double)a1 / 1e6,
         r->prev.t[r->rels.jobs * TCOLS + 1], r->prev.t[r->rels.jobs * TCOLS + 0],
         r->prev.xmin_age);
  fflush(stdout);
}

/* ---- nodes ------------------------------------------------------------------- */

/* Node k's --node-id in its incarnation gen (0: the first): each start
 * its own, as pawl's default (hostname-pid) would be. */
static void node_name(char *out, size_t len, int k, int gen) {
  if (gen == 0) snprintf(out, len, "pressure-node-%d", k + 1);
  else snprintf(out, len, "pressure-node-%d.%d", k + 1, gen);
}

/* Starts a `pawl run` node. Its parent-death signal is tied to the thread
 * that starts it (Linux), so that thread must outlive the node. */
static pid_t node_start(const opts_t *o, const char *url, const char *id) {
  char workers[16], lease[24];
  snprintf(workers, sizeof workers, "%d", o->workers);
  snprintf(lease, sizeof lease, "%ld", o->lease);
  const char *argv[20];
  int a = 0;
  argv[a++] = o->pawl;
  argv[a++] = "run";
  argv[a++] = "--db";
  argv[a++] = url;
  argv[a++] = "--scripts";
  argv[a++] = o->scripts;
  argv[a++] = "--node-id";
  argv[a++] = id;
  argv[a++] = "--log-level";
  argv[a++] = "warn";
  if (o->workers) {
    argv[a++] = "--workers";
    argv[a++] = workers;
  }
  if (o->lease) {
    argv[a++] = "--lease";
    argv[a++] = lease;
  }
  argv[a] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    /* A node must not outlive the benchmark, whatever ends it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (o->node_log) {
      int fd = open(o->node_log, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    execv(o->pawl, (char *const *)argv);
    fprintf(stderr, "pawl_pg_pressure: cannot run %s: %s\n", o->pawl,
            strerror(errno));
    _exit(127);
  }
  if (pid < 0) fail("fork: %s", strerror(errno));
  return pid;
}

/* SIGTERM (a graceful stop), then SIGKILL after 30 s. */
static void nodes_stop(run_t *r) {
  pthread_mutex_lock(&r->nodes_mu);
  pid_t *nodes = r->nodes;
  int n = r->nnodes;
  for (int k = 0; k < n; k++)
    if (nodes[k] > 0) kill(nodes[k], SIGTERM);
  double end = mono_s() + 30;
  for (int k = 0; k < n; k++) {
    while (nodes[k] > 0) {
      int st;
      pid_t w = waitpid(nodes[k], &st, WNOHANG);
      if (w == nodes[k] || (w < 0 && errno == ECHILD)) {
        nodes[k] = 0;
      } else if (mono_s() > end) {
        kill(nodes[k], SIGKILL);
        waitpid(nodes[k], &st, 0);
        nodes[k] = 0;
      } else {
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
      }
    }
  }
  pthread_mutex_unlock(&r->nodes_mu);
}

/* ---- chaos ------------------------------------------------------------------- */

#define UP_WAIT_S 60 /* longest wait for a node started again */

enum { EV_KILL, EV_TERMINATE, EV_RESTART, EV_FLOOD };

typedef struct {
  const opts_t *o;
  run_t *r;
  const char *conninfo; /* ours: the control connection */
  const char *flood_ci; /* the flood's */
  const char *const *urls; /* the nodes' */
  /* Application names: node k's, the producer's, and all of them as an
   * array literal (the connections to end). */
  const char *const *app_node;
  const char *app_producer, *apps;
  pthread_t th;
  int started;
  atomic_int active; /* set by main through the stress phase */
  atomic_int quit;   /* set by main when the run ends */
  atomic_int done;   /* set here when the events are over */
  int failed;
  PGconn *c;
  double t0;
  int next_node;
  int up[NODES_MAX];           /* the node's incarnation is in pawl_nodes */
  double killed_at[NODES_MAX]; /* 0: never killed */
  double since[NODES_MAX];     /* waited for since */
  /* What was done, read by main once done is set. */
  long long kills, held, rounds, ended_nodes, ended_producer, restarts, floods;
  long long reconnects;
  int flood_held, flood_cap, flood_pawl_left;
  double up_max_s, restart_s, flood_s;
  char refusal[200];
} chaos_t;

static int chaos_quit(chaos_t *ch) { return atomic_load(&ch->quit) || g_stop; }

static void quiet(void *arg, const char *msg) {
  (void)arg;
  (void)msg;
}

/* A query on the control connection, again once if the server restarted
 * under it. NULL (said on stderr) if it failed. */
static PGresult *ch_exec(chaos_t *ch, const char *sql, int n,
                         const char *const *vals) {
  for (int again = 0;; again++) {
    PGresult *res = PQexecParams(ch->c, sql, n, NULL, vals, NULL, NULL, 0);
    int st = PQresultStatus(res);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return res;
    PQclear(res);
    if (again || reconnect(ch->c, &ch->reconnects)) {
      fail("chaos: %s: %s", sql, PQerrorMessage(ch->c));
      return NULL;
    }
  }
}

/* Waits until every node's incarnation has recorded itself in pawl_nodes
 * (its first node beat, once its handle is open and its host started):
 * before that a node may still exit for want of the database, as `pawl
 * run` does when it cannot connect at its start, so no event that takes
 * the database away comes while a node starts. */
static int chaos_check_up(chaos_t *ch, int *all) {
  run_t *r = ch->r;
  *all = 1;
  for (int k = 0; k < r->nnodes; k++) {
    if (ch->up[k]) continue;
    char id[40];
    pthread_mutex_lock(&r->nodes_mu);
    snprintf(id, sizeof id, "%s", r->node_id[k]);
    pid_t pid = r->nodes[k];
    pthread_mutex_unlock(&r->nodes_mu);
    if (pid <= 0) return -1; /* it exited: the sampler says so */
    const char *v[1] = {id};
    PGresult *res = ch_exec(ch, "SELECT 1 FROM pawl_nodes WHERE id = $1", 1, v);
    if (!res) return -1;
    ch->up[k] = PQntuples(res) > 0;
    PQclear(res);
    if (!ch->up[k]) {
      *all = 0;
      if (mono_s() - ch->since[k] > UP_WAIT_S) {
        fail("chaos: node %d (%s, pid %d) has not started within %d s", k + 1,
             id, (int)pid, UP_WAIT_S);
        return -1;
      }
    } else if (ch->killed_at[k] > 0 &&
               mono_s() - ch->killed_at[k] > ch->up_max_s) {
      ch->up_max_s = mono_s() - ch->killed_at[k];
    }
  }
  return 0;
}

static int chaos_wait_up(chaos_t *ch) {
  for (;;) {
    int all;
    if (chaos_quit(ch) || chaos_check_up(ch, &all)) return -1;
    if (all) return 0;
    nap(0.02);
  }
}

/* SIGKILL the next node, round robin, and start it again at once as a new
 * incarnation (its own --node-id). Whatever it held stays leased to the
 * dead one until its lease expires and lease recovery takes it back.
 *
 * A no-op job is held for milliseconds, so a kill at a random moment
 * often finds the node holding none. So that kills cut attempts short,
 * the node is first stopped (SIGSTOP: it can finish nothing) and asked
 * how many jobs it holds; if none, it goes on (SIGCONT) and is asked
 * again 20 ms later, up to 50 times, before it is killed anyway. */
static int chaos_kill(chaos_t *ch) {
  run_t *r = ch->r;
  int k = ch->next_node;
  ch->next_node = (k + 1) % r->nnodes;
  pthread_mutex_lock(&r->nodes_mu);
  pid_t old = r->nodes[k];
  if (chaos_quit(ch) || old <= 0) {
    pthread_mutex_unlock(&r->nodes_mu);
    return -1;
  }
  /* What the node sent before it stopped still runs (its backends do
   * not stop; a pipeline's COMMIT may wait in a socket): the jobs are
   * counted once all its backends are idle outside a transaction, twice
   * in a row, so that nothing of it can commit any more. */
  const char *v[2] = {r->node_id[k], ch->app_node[k]};
  int held = 0;
  for (int t = 0; t < 50 && !chaos_quit(ch); t++) {
    kill(old, SIGSTOP);
    int quiet_seen = 0;
    held = 0;
    for (int w = 0; quiet_seen < 2 && w < 100 && !chaos_quit(ch); w++) {
      PGresult *res = ch_exec(
          ch, "SELECT (SELECT count(*) FROM pg_stat_activity WHERE "
              "application_name = $2 AND state <> 'idle'), (SELECT count(*) "
              "FROM pawl_jobs WHERE state = 1 AND lease_owner = $1)", 2, v);
      if (!res) break;
      quiet_seen = atoi(PQgetvalue(res, 0, 0)) == 0 ? quiet_seen + 1 : 0;
      held = atoi(PQgetvalue(res, 0, 1));
      PQclear(res);
      if (!quiet_seen) nap(0.01);
    }
    if (quiet_seen < 2) held = 0; /* not known: let it go on, try again */
    if (held > 0) break;
    kill(old, SIGCONT);
    nap(0.02);
  }
  kill(old, SIGKILL);
  int st;
  waitpid(old, &st, 0);
  /* Counted again once the server has ended the dead node's sessions:
   * an idle backend may not yet have read a COMMIT waiting in its
   * socket, and nothing of the node can commit after its sessions end. */
  for (int w = 0; held > 0 && w < 500 && !chaos_quit(ch); w++) {
    PGresult *res = ch_exec(
        ch, "SELECT (SELECT count(*) FROM pg_stat_activity WHERE "
            "application_name = $2), (SELECT count(*) FROM pawl_jobs WHERE "
            "state = 1 AND lease_owner = $1)", 2, v);
    if (!res) break;
    int left = atoi(PQgetvalue(res, 0, 0));
    if (left == 0) held = atoi(PQgetvalue(res, 0, 1));
    PQclear(res);
    if (left == 0) break;
    nap(0.01);
  }
  r->gen[k]++;
  node_name(r->node_id[k], sizeof r->node_id[k], k, r->gen[k]);
  pid_t pid = node_start(ch->o, ch->urls[k], r->node_id[k]);
  r->nodes[k] = pid > 0 ? pid : 0;
  pthread_mutex_unlock(&r->nodes_mu);
  if (pid <= 0) return -1;
  ch->up[k] = 0;
  ch->killed_at[k] = ch->since[k] = mono_s();
  ch->kills++;
  ch->held += held;
  printf("# chaos %5.1f s: node %d (pid %d) killed (SIGKILL) holding %d "
         "job(s), started again as %s (pid %d)\n",
         mono_s() - ch->t0, k + 1, (int)old, held, r->node_id[k], (int)pid);
  fflush(stdout);
  return 0;
}

/* Ends every connection of the nodes and the producer (by their
 * application names; ours have others). *ended: how many. */
static int chaos_terminate(chaos_t *ch, int *ended) {
  const char *v[2] = {ch->apps, ch->app_producer};
  PGresult *res = ch_exec(
      ch, "SELECT application_name = $2, count(*) FILTER (WHERE "
          "pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
          "application_name = ANY($1::text[]) AND pid <> pg_backend_pid() "
          "GROUP BY 1",
      2, v);
  if (!res) return -1;
  *ended = 0;
  for (int i = 0; i < PQntuples(res); i++) {
    long long n = atoll(PQgetvalue(res, i, 1));
    if (PQgetvalue(res, i, 0)[0] == 't') ch->ended_producer += n;
    else ch->ended_nodes += n;
    *ended += (int)n;
  }
  PQclear(res);
  ch->rounds++;
  return 0;
}

/* Runs --restart-cmd (sh -c) and waits for it. The nodes and the producer
 * find their connections gone and connect again; ours too, at their next
 * query. */
static int chaos_restart(chaos_t *ch) {
  double t0 = mono_s();
  char *argv[] = {"sh", "-c", (char *)ch->o->restart_cmd, NULL};
  posix_spawnattr_t at;
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGTERM);
  posix_spawnattr_init(&at);
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int err = posix_spawn(&pid, "/bin/sh", NULL, &at, argv, environ);
  posix_spawnattr_destroy(&at);
  if (err) {
    fail("chaos: --restart-cmd: cannot run /bin/sh: %s", strerror(err));
    return -1;
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fail("chaos: --restart-cmd %s: exit status %d", ch->o->restart_cmd,
         WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return -1;
  }
  ch->restarts++;
  ch->restart_s = mono_s() - t0;
  printf("# chaos %5.1f s: server restarted (--restart-cmd, %.1f s)\n",
         t0 - ch->t0, ch->restart_s);
  fflush(stdout);
  return 0;
}

/* Opens connections until the server refuses one for want of a slot. */
static int flood_fill(chaos_t *ch, PGconn **held, int *n) {
  while (*n < ch->flood_cap && !chaos_quit(ch)) {
    PGconn *c = PQconnectdb(ch->flood_ci);
    if (PQstatus(c) == CONNECTION_OK) {
      held[(*n)++] = c;
      continue;
    }
    const char *m = PQerrorMessage(c);
    int full = strstr(m, "too many clients") || strstr(m, "reserved");
    if (!full) {
      fail("chaos: a connection of the flood was refused, not for want of a "
           "slot: %s", m);
      PQfinish(c);
      return -1;
    }
    if (!ch->refusal[0]) {
      const char *f = strstr(m, "FATAL:");
      snprintf(ch->refusal, sizeof ch->refusal, "%s", f ? f : m);
      ch->refusal[strcspn(ch->refusal, "\n")] = 0;
    }
    PQfinish(c);
    return 0;
  }
  if (chaos_quit(ch)) return -1;
  fail("chaos: the server took max_connections (%d) connections of the "
       "flood without refusing one", ch->flood_cap);
  return -1;
}

/* Ends pawl's connections and takes their slots until it holds none: the
 * nodes connect again as fast as the flood does, so a few rounds. */
static int flood_take(chaos_t *ch, PGconn **held, int *n) {
  for (int round = 0; round < 20; round++) {
    int ended = 0;
    if (chaos_terminate(ch, &ended)) return -1;
    if (ended == 0) return 0;
    nap(0.05); /* an ended backend frees its slot as it exits */
    if (flood_fill(ch, held, n)) return -1;
  }
  return 0;
}

/* Holds every free connection slot for --chaos-flood-hold seconds: the
 * nodes' and the producer's connections are ended at the start and then
 * every --chaos-terminate-every seconds, and connecting again is refused
 * ("too many clients") until the flood lets go. */
static int chaos_flood(chaos_t *ch, double *next_term) {
  double t0 = mono_s();
  PGresult *res = ch_exec(ch, "SHOW max_connections", 0, NULL);
  if (!res) return -1;
  ch->flood_cap = atoi(PQgetvalue(res, 0, 0));
  PQclear(res);
  PGconn **held = calloc((size_t)ch->flood_cap + 1, sizeof *held);
  if (!held) {
    fail("chaos: out of memory");
    return -1;
  }
  int n = 0;
  int rc = flood_fill(ch, held, &n);
  if (!rc) rc = flood_take(ch, held, &n);
  double full = mono_s();
  double end = full + (double)ch->o->flood_hold;
  while (!rc && !chaos_quit(ch) && mono_s() < end) {
    if (mono_s() >= *next_term) {
      rc = flood_take(ch, held, &n);
      *next_term = mono_s() + (double)ch->o->terminate_every;
    }
    double left = end - mono_s();
    nap(left < 0.1 ? left : 0.1);
  }
  if (!rc) {
    const char *v[1] = {ch->apps};
    res = ch_exec(ch, "SELECT count(*) FROM pg_stat_activity WHERE "
                      "application_name = ANY($1::text[])", 1, v);
    if (res) {
      ch->flood_pawl_left = atoi(PQgetvalue(res, 0, 0));
      PQclear(res);
    }
  }
  for (int k = 0; k < n; k++) PQfinish(held[k]);
  free(held);
  if (rc) return rc;
  ch->floods++;
  if (n > ch->flood_held) ch->flood_held = n;
  ch->flood_s = mono_s() - full;
  printf("# chaos %5.1f s: connection flood: %d connections held %.1f s "
         "(max_connections %d; filled in %.1f s; pawl's connections at its "
         "end %d); refused: %s\n",
         t0 - ch->t0, n, ch->flood_s, ch->flood_cap, full - t0,
         ch->flood_pawl_left, ch->refusal);
  fflush(stdout);
  return 0;
}

/* The schedule: a kill every --chaos-kill-every seconds, a termination
 * round every --chaos-terminate-every, the server restarted at a third
 * of the phase and the flood at two thirds; each counted from the end of
 * the event before it. An event waits for the nodes started again to be
 * up. When the phase ends, a kind not yet done is done then, so that a
 * run does each at least once. The thread stays until the run ends: the
 * nodes it started get their parent-death signal when it exits. */
static void *chaos_main(void *arg) {
  chaos_t *ch = arg;
  const opts_t *o = ch->o;
  int rc = 0;
  ch->c = connect_db(ch->conninfo);
  if (!ch->c) rc = -1;
  else PQsetNoticeProcessor(ch->c, quiet, NULL);
  while (!rc && !atomic_load(&ch->active) && !chaos_quit(ch)) nap(0.02);
  double t0 = ch->t0 = mono_s();
  for (int k = 0; k < ch->r->nnodes; k++) ch->since[k] = t0;
  double next_kill = t0 + (double)o->kill_every;
  double next_term = t0 + (double)o->terminate_every;
  double restart_at = t0 + (double)o->stress / 3;
  double flood_at = t0 + 2 * (double)o->stress / 3;
  while (!rc && !chaos_quit(ch)) {
    int active = atomic_load(&ch->active);
    double now = mono_s();
    int ev = -1;
    if (!ch->restarts && (now >= restart_at || !active)) ev = EV_RESTART;
    else if (!ch->floods && (now >= flood_at || !active)) ev = EV_FLOOD;
    else if (!active ? !ch->kills : now >= next_kill) ev = EV_KILL;
    else if (!active ? !ch->rounds : now >= next_term) ev = EV_TERMINATE;
    else if (!active) break;
    if (ev < 0) { /* how long a node started again takes, to 20 ms */
      int all;
      rc = chaos_check_up(ch, &all);
      nap(0.02);
      continue;
    }
    if ((rc = chaos_wait_up(ch))) break;
    int ended = 0;
    switch (ev) {
    case EV_RESTART: rc = chaos_restart(ch); break;
    case EV_FLOOD: rc = chaos_flood(ch, &next_term); break;
    case EV_KILL:
      rc = chaos_kill(ch);
      next_kill = mono_s() + (double)o->kill_every;
      break;
    default:
      rc = chaos_terminate(ch, &ended);
      next_term = mono_s() + (double)o->terminate_every;
      break;
    }
  }
  /* The phase ends with every node up. */
  if (!rc) rc = chaos_wait_up(ch);
  if (rc && !chaos_quit(ch)) ch->failed = 1;
  atomic_store(&ch->done, 1);
  while (!chaos_quit(ch)) nap(0.05);
  if (ch->c) PQfinish(ch->c);
  return NULL;
}

static void chaos_summary(const chaos_t *ch) {
  printf("  chaos: node kills %lld (SIGKILL holding jobs %lld, each started "
         "again, up within %.1f s), termination rounds %lld (backends ended "
         "%lld: nodes %lld, producer %lld), server restarts %lld (%.1f s), "
         "connection floods %lld (%d connections held %.1f s, refused: %s)\n",
         ch->kills, ch->held, ch->up_max_s, ch->rounds,
         ch->ended_nodes + ch->ended_producer,
         ch->ended_nodes, ch->ended_producer, ch->restarts, ch->restart_s,
         ch->floods, ch->flood_held, ch->flood_s,
         ch->refusal[0] ? ch->refusal : "-");
  pthread_mutex_lock(&g.mu);
  long long retried = g.retried, committed = g.committed;
  pthread_mutex_unlock(&g.mu);
  printf("  chaos: producer enqueues failed and tried again %lld (found "
         "committed by their keys %lld); own reconnects %lld\n",
         retried, committed, ch->reconnects + ch->r->reconnects);
  fflush(stdout);
}

/* ---- the audit ----------------------------------------------------------------- */

static long long one_count(PGconn *c, const char *sql, int *bad) {
  const char *vals[1] = {JOB_TYPE};
  PGresult *r = PQexecParams(c, sql, strstr(sql, "$1") ? 1 : 0, NULL, vals,
                             NULL, NULL, 0);
  long long n = -1;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
    n = atoll(PQgetvalue(r, 0, 0));
  else {
    fail("audit: %s", PQerrorMessage(c));
    *bad = 1;
  }
  PQclear(r);
  return n;
}

/* Returns 0 if every id ran exactly once and succeeded (in chaos: or
 * failed as a poison job), 1 if not, -1 if the audit itself could not
 * run. */
static int audit(PGconn *c, const pawl_id_t *ids, size_t n, int chaos) {
  if (exec_ok(c, "CREATE TEMP TABLE pressure_ids (id uuid PRIMARY KEY)") ||
      exec_ok(c, "TRUNCATE pressure_ids"))
    return -1;
  PGresult *r = PQexec(c, "COPY pressure_ids FROM STDIN");
  if (PQresultStatus(r) != PGRES_COPY_IN) {
    fail("audit: copy: %s", PQerrorMessage(c));
    PQclear(r);
    return -1;
  }
  PQclear(r);
  char buf[PAWL_ID_STRLEN * 1024];
  size_t len = 0;
  for (size_t k = 0; k < n; k++) {
    pawl_id_format(&ids[k], buf + len);
    len += PAWL_ID_STRLEN - 1;
    buf[len++] = '\n';
    if (len + PAWL_ID_STRLEN > sizeof buf || k + 1 == n) {
      if (PQputCopyData(c, buf, (int)len) != 1) break;
      len = 0;
    }
  }
  if (PQputCopyEnd(c, NULL) != 1) {
    fail("audit: copy: %s", PQerrorMessage(c));
    return -1;
  }
  int bad = 0;
  while ((r = PQgetResult(c)) != NULL) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      fail("audit: copy: %s", PQerrorMessage(c));
      bad = 1;
    }
    PQclear(r);
  }
  if (bad) return -1;
  exec_ok(c, "ANALYZE pressure_ids");
  /* Each started attempt of each job, as a time interval: those the
   * attempts table keeps (failures, retries, recoveries) and the one on
   * the row (a success writes no attempt row; a failure for good writes
   * one and keeps the same attempt on the row, so that one is not
   * counted twice). */
  static const char intervals[] =
      "WITH iv AS (SELECT a.job_id AS id, a.attempt, a.started_at AS s, "
      "a.ended_at AS e, a.outcome = 'released' AS rel FROM pawl_attempts AS "
      "a JOIN pressure_ids AS i ON i.id = a.job_id WHERE a.started_at IS NOT "
      "NULL UNION ALL SELECT j.id, j.attempt, j.started_at, j.finished_at, "
      "false FROM pawl_jobs AS j JOIN pressure_ids AS i ON i.id = j.id WHERE "
      "j.state IN (2, 4) AND j.started_at IS NOT NULL) ";
  /* Two attempts overlap when one starts before another has ended, or
   * both start in the same millisecond (a no-op's attempt often starts
   * and ends in the same one, so an attempt run twice at once shows as
   * two empty intervals at the same time). */
  char sql[2048];
  long long lost = one_count(
      c, "SELECT count(*) FROM pressure_ids AS i WHERE NOT EXISTS (SELECT 1 "
         "FROM pawl_jobs AS j WHERE j.id = i.id)", &bad);
  long long unknown = one_count(
      c, "SELECT count(*) FROM pawl_jobs AS j WHERE j.type = $1 AND NOT "
         "EXISTS (SELECT 1 FROM pressure_ids AS i WHERE i.id = j.id)", &bad);
  long long succeeded = one_count(
      c, "SELECT count(*) FROM pawl_jobs AS j JOIN pressure_ids AS i ON i.id "
         "= j.id WHERE j.state = 2 AND j.finished_at IS NOT NULL AND "
         "j.started_at IS NOT NULL", &bad);
  long long failed = one_count(
      c, "SELECT count(*) FROM pawl_jobs AS j JOIN pressure_ids AS i ON i.id "
         "= j.id WHERE j.state IN (3, 4)", &bad);
  long long unfinished = one_count(
      c, "SELECT count(*) FROM pawl_jobs AS j JOIN pressure_ids AS i ON i.id "
         "= j.id WHERE j.state NOT IN (2, 3, 4) OR j.finished_at IS NULL", &bad);
  long long twice = one_count(
      c, "SELECT count(DISTINCT e.job_id) FROM pawl_events AS e JOIN "
         "pressure_ids AS i ON i.id = e.job_id WHERE e.from_state IN (2, 3, 4)",
      &bad);
  snprintf(sql, sizeof sql,
           "%s, o AS (SELECT id, s, max(e) OVER (PARTITION BY id ORDER BY s, e "
           "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe, lag(s) "
           "OVER (PARTITION BY id ORDER BY s, e) AS ps FROM iv) "
           "SELECT count(DISTINCT id) FROM o WHERE s < pe OR s = ps",
           intervals);
  long long overlap = one_count(c, sql, &bad);
  /* A released attempt gives its number back (its body never ran: a job
   * claimed ahead and handed back, or whose start could not be
   * recorded), so the next claim runs under the same number. */
  snprintf(sql, sizeof sql,
           "%sSELECT count(DISTINCT id) FROM (SELECT id, attempt FROM iv WHERE "
           "NOT rel GROUP BY id, attempt HAVING count(*) > 1) AS d",
           intervals);
  long long repeated = one_count(c, sql, &bad);
  long long retried = one_count(
      c, "SELECT count(*) FROM pawl_attempts AS a JOIN pressure_ids AS i ON "
         "i.id = a.job_id", &bad);
  long long recovered = one_count(
      c, "SELECT count(*) FROM pawl_attempts AS a JOIN pressure_ids AS i ON "
         "i.id = a.job_id WHERE a.outcome = 'lost'", &bad);
  /* pawl's poison rule (pawl_recover()): a job lost while running more
   * than 3 times fails. Such a job has more than 3 lost attempts. */
  long long poison = one_count(
      c, "SELECT count(*) FROM pawl_jobs AS j JOIN pressure_ids AS i ON i.id "
         "= j.id WHERE j.state = 3 AND j.last_error LIKE '%: poison job' AND "
         "(SELECT count(*) FROM pawl_attempts AS a WHERE a.job_id = j.id AND "
         "a.outcome = 'lost') > 3", &bad);
  if (bad) return -1;
  printf("audit: %zu jobs enqueued: %lld succeeded, %lld failed or canceled "
         "(%lld of them poison jobs), %lld not ended, %lld lost, %lld "
         "unknown, %lld ended twice, %lld with overlapping attempts, %lld "
         "with an attempt number run twice; %lld attempt rows (retries, "
         "recoveries), %lld of them lost (lease recovered)\n",
         n, succeeded, failed, poison, unfinished, lost, unknown, twice,
         overlap, repeated, retried, recovered);
  long long allowed = chaos ? poison : 0;
  int ok = succeeded + allowed == (long long)n && failed == allowed &&
           unfinished == 0 && lost == 0 && unknown == 0 && twice == 0 &&
           overlap == 0 && repeated == 0;
  printf("audit: exactly once: %s\n", ok ? "yes" : "NO");
  fflush(stdout);
  return ok ? 0 : 1;
}

static int ids_write(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fail("--ids-out %s: %s", path, strerror(errno));
    return -1;
  }
  char s[PAWL_ID_STRLEN];
  for (size_t k = 0; k < g.n; k++) {
    pawl_id_format(&g.ids[k], s);
    fprintf(f, "%s\n", s);
  }
  if (fclose(f) != 0) {
    fail("--ids-out %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int ids_read(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fail("--ids %s: %s", path, strerror(errno));
    return -1;
  }
  char line[128];
  long no = 0;
  while (fgets(line, sizeof line, f)) {
    no++;
    line[strcspn(line, "\n")] = 0;
    pawl_id_t id;
    if (pawl_id_parse(&id, line) != 0) {
      fail("--ids %s: line %ld is not an id: %s", path, no, line);
      fclose(f);
      return -1;
    }
    if (ids_append(&id, 1)) {
      fail("--ids %s: out of memory", path);
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  return 0;
}

/* ---- main --------------------------------------------------------------------- */

int main(int argc, char **argv) {
  opts_t o;
  if (parse_args(argc, argv, &o) != 0) return 2;
  /* Application names: the run's own connections, the flood's, and the
   * nodes' and the producer's (those chaos ends), unique to this process. */
  char own[64], flood[64], app_producer[64], apps[NODES_MAX * 64 + 80];
  static char app_node[NODES_MAX][64];
  snprintf(own, sizeof own, "pawl-pressure-%d-own", (int)getpid());
  snprintf(flood, sizeof flood, "pawl-pressure-%d-flood", (int)getpid());
  snprintf(app_producer, sizeof app_producer, "pawl-pressure-%d-producer",
           (int)getpid());
  static char conninfo[4096], purl[4200], base[4096], ci[4096],
      flood_ci[4096], urls[NODES_MAX][4200];
  if (make_conninfo(o.db, o.schema, own, conninfo, sizeof conninfo) ||
      make_conninfo(o.db, NULL, own, base, sizeof base) ||
      make_conninfo(o.db, o.schema, flood, flood_ci, sizeof flood_ci) ||
      make_conninfo(o.db, o.schema, app_producer, ci, sizeof ci))
    return 2;
  snprintf(purl, sizeof purl, "postgres:%s", ci);
  /* The names hold [a-z0-9-] only: an array literal needs no quoting. */
  size_t al = (size_t)snprintf(apps, sizeof apps, "{%s", app_producer);
  const char *app_nodes[NODES_MAX], *url_of[NODES_MAX];
  for (int k = 0; k < o.nodes; k++) {
    snprintf(app_node[k], sizeof app_node[k], "pawl-pressure-%d-node-%d",
             (int)getpid(), k + 1);
    if (make_conninfo(o.db, o.schema, app_node[k], ci, sizeof ci)) return 2;
    snprintf(urls[k], sizeof urls[k], "postgres:%s", ci);
    app_nodes[k] = app_node[k];
    url_of[k] = urls[k];
    al += (size_t)snprintf(apps + al, sizeof apps - al, ",%s", app_node[k]);
  }
  snprintf(apps + al, sizeof apps - al, "}");
  if (o.check_args) return 0;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (o.audit_only) {
    if (ids_read(o.ids_in)) return 1;
    PGconn *c = connect_db(conninfo);
    if (!c) return 1;
    int rc = audit(c, g.ids, g.n, o.scenario == SC_CHAOS);
    PQfinish(c);
    free(g.ids);
    free(g.done);
    return rc == 0 ? 0 : 1;
  }

  /* The schema: made here, so that no earlier run's jobs are in it. */
  PGconn *bc = connect_db(base);
  if (!bc) return 1;
  {
    const char *vals[1] = {o.schema};
    PGresult *res = PQexecParams(
        bc, "SELECT 1 FROM pg_namespace WHERE nspname = $1", 1, NULL, vals,
        NULL, NULL, 0);
    int exists = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0;
    PQclear(res);
    if (exists) {
      fail("--schema %s exists: a run starts in a schema of its own (drop it "
           "or choose another)", o.schema);
      PQfinish(bc);
      return 2;
    }
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", o.schema);
    if (exec_ok(bc, sql)) {
      PQfinish(bc);
      return 1;
    }
  }
  PQfinish(bc);

  FILE *csv = fopen(o.csv, "w");
  if (!csv) {
    fail("--csv %s: %s", o.csv, strerror(errno));
    return 1;
  }
  pawl_options_t po;
  pawl_options_init(&po);
  po.db = purl;
  po.node_id = "pressure-producer";
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &po, err, sizeof err) != 0) {
    fail("pawl_open: %s", err);
    fclose(csv);
    return 1;
  }

  run_t r;
  memset(&r, 0, sizeof r);
  r.conninfo = conninfo;
  r.csv = csv;
  r.phase = "start";
  int rc = 1;
  /* In chaos a job may lose an attempt to each event while it is held;
   * the most attempts pawl allows keeps them from running out. */
  producer_t pr = {p, NULL, o.scenario == SC_CHAOS, PAWL_ATTEMPTS_MAX};
  chaos_t ch;
  memset(&ch, 0, sizeof ch);
  ch.o = &o;
  ch.r = &r;
  ch.conninfo = conninfo;
  ch.flood_ci = flood_ci;
  ch.urls = url_of;
  ch.app_node = app_nodes;
  ch.app_producer = app_producer;
  ch.apps = apps;
  pthread_t producer;
  int producer_up = 0;
  PGconn *pin = NULL;
  reader_t readers[READERS];
  memset(readers, 0, sizeof readers);
  pid_t nodes[NODES_MAX] = {0};
  r.nodes = nodes;
  r.nnodes = o.nodes;
  pthread_mutex_init(&r.nodes_mu, NULL);

  r.c = connect_db(conninfo);
  pr.pc = connect_db(conninfo);
  if (!r.c || !pr.pc || rels_load(r.c, &r.rels)) goto out;
  r.prev.t = calloc((size_t)r.rels.ntab * TCOLS, sizeof(long long));
  r.cur.t = calloc((size_t)r.rels.ntab * TCOLS, sizeof(long long));
  r.prev.i = calloc((size_t)r.rels.nidx * ICOLS + 1, sizeof(long long));
  r.cur.i = calloc((size_t)r.rels.nidx * ICOLS + 1, sizeof(long long));
  if (!r.prev.t || !r.cur.t || !r.prev.i || !r.cur.i) goto out;
  csv_header(&r);

  for (int k = 0; k < o.nodes; k++) {
    node_name(r.node_id[k], sizeof r.node_id[k], k, 0);
    if ((nodes[k] = node_start(&o, urls[k], r.node_id[k])) < 0) {
      nodes[k] = 0;
      goto out;
    }
  }
  if (pthread_create(&producer, NULL, producer_main, &pr) != 0) {
    fail("cannot start the producer thread");
    goto out;
  }
  producer_up = 1;
  r.t0 = r.last_t = mono_s();
  cpu_read(&r.cpu_busy, &r.cpu_total);
  if (stats_read(r.c, &r.rels, &r.prev)) goto out;
  double window = (double)o.window;
  printf("# pawl_pg_pressure scenario %s, %d node(s), schema %s, csv %s\n",
         scenario_names[o.scenario], o.nodes, o.schema, o.csv);
  fflush(stdout);

  double C = o.capacity_rate;
  if (o.capacity > 0) {
    phase_begin(&r, "capacity", MODE_CAPACITY, 0);
    /* The first window is the nodes' start: it is left out of C. */
    if (phase_run(&r, window < (double)o.capacity ? window : 1, window)) goto out;
    long long d0 = r.ended;
    double t0 = r.last_t;
    if (phase_run(&r, (double)o.capacity, window)) goto out;
    C = (double)(r.ended - d0) / (r.last_t - t0);
    phase_summary(&r);
    printf("capacity C = %.0f jobs/s\n", C);
    phase_begin(&r, "drain", MODE_IDLE, 0);
    if (drain(&r, (double)o.drain, window)) goto out;
    phase_summary(&r);
    if (C < 1) {
      fail("the capacity phase completed no jobs: is `pawl run` running?");
      goto out;
    }
  }
  double R = o.rate_of_c ? o.rate * C : o.rate;
  if (R < 1) R = 1;
  printf("rate R = %.0f jobs/s%s\n", R, o.rate_of_c ? " (a fraction of C)" : "");
  fflush(stdout);

  if (o.warmup > 0) {
    phase_begin(&r, "warmup", MODE_RATE, R);
    if (phase_run(&r, (double)o.warmup, window)) goto out;
    phase_summary(&r);
  }
  phase_begin(&r, "clean", MODE_RATE, R);
  if (phase_run(&r, (double)o.clean, window)) goto out;
  phase_summary(&r);

  if (o.scenario != SC_CLEAN) {
    const char *name = scenario_names[o.scenario];
    if (o.scenario == SC_PINNED) {
      pin = connect_db(conninfo);
      if (!pin || exec_ok(pin, "BEGIN") || exec_ok(pin, "SELECT txid_current()"))
        goto out;
      name = "pin";
    } else if (o.scenario == SC_READERS) {
      for (int k = 0; k < READERS; k++) {
        readers[k] = (reader_t){conninfo, k, o.reader_hold, 0, 0, 0};
        if (pthread_create(&readers[k].th, NULL, reader_main, &readers[k]) == 0)
          readers[k].started = 1;
      }
    } else if (o.scenario == SC_CHAOS) {
      if (pthread_create(&ch.th, NULL, chaos_main, &ch) != 0) {
        fail("cannot start the chaos thread");
        goto out;
      }
      ch.started = 1;
    }
    phase_begin(&r, name, MODE_RATE, o.scenario == SC_OVERLOAD ? 1.5 * R : R);
    atomic_store(&ch.active, 1);
    if (phase_run(&r, (double)o.stress, window)) goto out;
    atomic_store(&ch.active, 0);
    /* The kinds of chaos not done yet are done now, and the nodes are up. */
    if (ch.started) {
      while (!atomic_load(&ch.done)) {
        if (g_stop || nodes_alive(&r)) goto out;
        nap(0.05);
      }
      /* The phase ends here (a row unless it just had one). */
      if (mono_s() - r.last_t >= 0.1 && sample(&r)) goto out;
    }
    phase_summary(&r);
    if (ch.started) {
      chaos_summary(&ch);
      if (ch.failed) goto out;
    }
    if (pin) {
      exec_ok(pin, "ROLLBACK");
      PQfinish(pin);
      pin = NULL;
    }
    for (int k = 0; k < READERS; k++) readers[k].stop = 1;
    for (int k = 0; k < READERS; k++)
      if (readers[k].started) {
        pthread_join(readers[k].th, NULL);
        readers[k].started = 0;
      }
  }
  if (o.recovery > 0) {
    phase_begin(&r, "recovery", MODE_RATE, o.scenario == SC_OVERLOAD ? 0.5 * R : R);
    if (phase_run(&r, (double)o.recovery, window)) goto out;
    phase_summary(&r);
  }
  phase_begin(&r, "drain", MODE_IDLE, 0);
  if (drain(&r, (double)o.drain, window)) goto out;
  phase_summary(&r);
  pthread_mutex_lock(&g.mu);
  g.quit = 1;
  pthread_mutex_unlock(&g.mu);
  pthread_join(producer, NULL);
  producer_up = 0;
  nodes_stop(&r);
  if (o.ids_out && ids_write(o.ids_out)) goto out;
  {
    long long errs = g.errors;
    if (errs) printf("enqueue errors: %lld, the last: %s\n", errs, g.last_error);
    int a = audit(r.c, g.ids, g.n, o.scenario == SC_CHAOS);
    rc = a == 0 && errs == 0 ? 0 : 1;
  }

out:
  if (g_stop) rc = 130;
  pthread_mutex_lock(&g.mu);
  g.quit = 1;
  pthread_mutex_unlock(&g.mu);
  if (producer_up) pthread_join(producer, NULL);
  for (int k = 0; k < READERS; k++) readers[k].stop = 1;
  for (int k = 0; k < READERS; k++)
    if (readers[k].started) pthread_join(readers[k].th, NULL);
  if (pin) PQfinish(pin);
  atomic_store(&ch.quit, 1);
  nodes_stop(&r);
  /* After the nodes: those it started die with it (their parent-death
   * signal). */
  if (ch.started) pthread_join(ch.th, NULL);
  pthread_mutex_destroy(&r.nodes_mu);
  if (rc == 130) fprintf(stderr, "pawl_pg_pressure: interrupted\n");
  pawl_close(p);
  if (r.c) PQfinish(r.c);
  if (pr.pc) PQfinish(pr.pc);
  fclose(csv);
  rels_free(&r.rels);
  free(r.prev.t);
  free(r.prev.i);
  free(r.cur.t);
  free(r.cur.i);
  free(r.win.v);
  free(r.p_pick.v);
  free(r.p_pick_t.v);
  free(g.ids);
  free(g.done);
  return rc;
}
