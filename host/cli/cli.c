/* cli.c: the `pawl` command-line tool.
 *
 * Written on the public API (pawl.h) only, like any other embedder, plus the
 * small helpers of host/core/ for buffers, JSON checking and ISO 8601
 * times (the build that links it against libpawl.so proves it). The
 * output is in cli_output.c, `pawl cron next` in cli_cron.c, `pawl bench`
 * in bench/cli_bench.c.
 *
 * main() runs in four steps: parse the command line (nothing is opened, so a
 * usage error touches no file), open the database, run the command, close.
 * Every helper returns a status and leaves its message in the caller's error
 * buffer; only main() prints it, as one "pawl: ..." line on stderr, so every
 * failure looks the same and nothing exits with resources still open.
 *
 * Exit status: 0 success, 1 the operation failed (database, state, missing
 * job, business key held), 2 bad usage or bad input. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <limits.h>
#include <math.h> /* isfinite, a macro: no libm needed */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bounds.h"
#include "buf.h"
#include "cli.h"
#include "clock.h"
#include "cli_admin.h"
#include "iso8601.h"
#include "json.h"
#include "pawl.h"
#include "redact.h"
#include "weburl.h"

/* ---- commands and options ----------------------------------------------- */

typedef enum cli_cmd {
  CLI_NONE = -1,
  CLI_MIGRATE,
  CLI_ENQUEUE,
  CLI_SHOW,
  CLI_JOBS,
  CLI_CANCEL,
  CLI_PAUSE,
  CLI_RESUME,
  CLI_RETRY,
  CLI_RUN,
  CLI_CRON,
  CLI_STATS,   /* cli/cli_admin.c */
  CLI_NODES,
  CLI_LOCKS,
  CLI_CONSOLE, /* cli/console.c */
  CLI_QUEUE,   /* cli/cli_queue.c */
  CLI_LIMIT,   /* cli/cli_limits.c */
  CLI_SIGNAL,  /* cli/cli_flow.c */
  CLI_REPLACE,
  CLI_BATCH,   /* cli/cli_batch.c */
  CLI_CLEANUP, /* cli/cli_cleanup.c (retention) */
  CLI_VERSION,
  CLI_HELP,
  CLI_CMD_COUNT
} cli_cmd_t;

static const char *const cli_cmd_names[CLI_CMD_COUNT] = {
    "migrate", "enqueue", "show", "jobs",    "cancel",
    "pause",   "resume",  "retry", "run",     "cron",
    "stats",   "nodes",   "locks", "console", "queue",   "limit",
    "signal",  "replace", "batch",   "cleanup", "version", "help"};

#define CLI_BIT(c) (1u << (c))
#define CLI_ACTIONS                                                          \
  (CLI_BIT(CLI_CANCEL) | CLI_BIT(CLI_PAUSE) | CLI_BIT(CLI_RESUME) |          \
   CLI_BIT(CLI_RETRY))

typedef enum cli_opt_id {
  CLI_O_JSON,
  CLI_O_QUEUE,
  CLI_O_PRIORITY,
  CLI_O_DELAY,
  CLI_O_RUN_AT,
  CLI_O_MAX_ATTEMPTS,
  CLI_O_TIMEOUT,
  CLI_O_KEY,
  CLI_O_BUSINESS_KEY,
  CLI_O_EXISTING,
  CLI_O_TAG,
  CLI_O_PARAMS,
  CLI_O_CORRELATION_ID,
  CLI_O_BLOCKED,
  CLI_O_ORDERING_KEY,
  CLI_O_AFTER,
  CLI_O_WHEN,
  CLI_O_STATE,
  CLI_O_TYPE,
  CLI_O_LIMIT,
  CLI_O_REASON,
  CLI_O_SCRIPTS,
  CLI_O_WORKERS,
  CLI_O_QUEUES,
  CLI_O_NODE_ID,
  CLI_O_UNTIL_IDLE,
  CLI_O_LOG_LEVEL,
  CLI_O_LOG_FORMAT,
  CLI_O_POLL,
  CLI_O_GRACE,
  CLI_O_LEASE,
  CLI_O_PREFETCH,
  CLI_O_AHEAD_HOLD,
  CLI_O_IDLE_WAIT,
  CLI_O_GIVE_UP,
  CLI_O_LOAD_TIMEOUT,
  CLI_O_JOB_MEMORY,
  CLI_O_UNSAFE_LUA,
  CLI_O_ALLOW_IO,
  CLI_O_ALLOW_ENV,
  CLI_O_ALLOW_SIGNAL,
  CLI_O_ALLOW_REPLACE,
  CLI_O_ALLOW_RESTART,
  CLI_O_ALLOW_WEBHOOK,
  CLI_O_TZ,
  CLI_O_FROM,
  CLI_O_COUNT,
  CLI_O_OLDER_THAN,
  CLI_O_YES,
  CLI_O_CODE,
  CLI_O_ADMIN_SOCKET,
  CLI_O_ADMIN_LISTEN,
  CLI_O_ADMIN_TOKEN_FILE,
  CLI_O_ADMIN_TIMEOUT,
  CLI_O_CONNECT,
  CLI_O_AGE_BOOST,
  CLI_O_RESOURCE,
  CLI_O_RATE,
  CLI_O_SIGNAL,         /* signals */
  CLI_O_SIGNAL_TIMEOUT,
  CLI_O_PAYLOAD,
  CLI_O_RAW,            /* show, jobs: no redaction */
  CLI_O_TRACE,          /* show: the attempts' tracebacks */
  CLI_O_DRY_RUN,        /* retention */
  CLI_O_RETAIN,
  CLI_O_METRICS,        /* the metrics endpoint */
  CLI_O_METRICS_TOKEN_FILE,
  CLI_O_METRICS_REFRESH
} cli_opt_id_t;

/* Which command takes which option: one table, so that the parser, the
 * "unknown option --x for CMD" message and the help text cannot disagree. */
static const struct cli_opt {
  const char *name;
  cli_opt_id_t id;
  int has_value;
  unsigned cmds;
} cli_opts[] = {
    {"--json", CLI_O_JSON, 0,
     CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS) | CLI_ACTIONS | CLI_BIT(CLI_STATS) |
         CLI_BIT(CLI_NODES) | CLI_BIT(CLI_LOCKS) | CLI_BIT(CLI_CONSOLE) |
         CLI_BIT(CLI_QUEUE) | CLI_BIT(CLI_LIMIT) | CLI_BIT(CLI_SIGNAL) |
         CLI_BIT(CLI_REPLACE) | CLI_BIT(CLI_BATCH) | CLI_BIT(CLI_CLEANUP)},
    {"--queue", CLI_O_QUEUE, 1,
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_JOBS) | CLI_ACTIONS |
         CLI_BIT(CLI_REPLACE)},
    {"--priority", CLI_O_PRIORITY, 1,
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--delay", CLI_O_DELAY, 1, CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--run-at", CLI_O_RUN_AT, 1, CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--max-attempts", CLI_O_MAX_ATTEMPTS, 1,
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--timeout", CLI_O_TIMEOUT, 1,
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--key", CLI_O_KEY, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--business-key", CLI_O_BUSINESS_KEY, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--existing", CLI_O_EXISTING, 0, CLI_BIT(CLI_ENQUEUE)},
    {"--tag", CLI_O_TAG, 1,
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_JOBS) | CLI_ACTIONS},
    {"--params", CLI_O_PARAMS, 1, CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--payload", CLI_O_PAYLOAD, 1, CLI_BIT(CLI_REPLACE)},
    {"--signal", CLI_O_SIGNAL, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--signal-timeout", CLI_O_SIGNAL_TIMEOUT, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--correlation-id", CLI_O_CORRELATION_ID, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--blocked", CLI_O_BLOCKED, 0, CLI_BIT(CLI_ENQUEUE)},
    {"--ordering-key", CLI_O_ORDERING_KEY, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--resource", CLI_O_RESOURCE, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--rate", CLI_O_RATE, 1, CLI_BIT(CLI_LIMIT)},
    {"--after", CLI_O_AFTER, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--when", CLI_O_WHEN, 1, CLI_BIT(CLI_ENQUEUE)},
    {"--state", CLI_O_STATE, 1,
     CLI_BIT(CLI_JOBS) | CLI_ACTIONS | CLI_BIT(CLI_CLEANUP)},
    {"--type", CLI_O_TYPE, 1, CLI_BIT(CLI_JOBS) | CLI_ACTIONS},
    {"--limit", CLI_O_LIMIT, 1, CLI_BIT(CLI_JOBS) | CLI_ACTIONS},
    {"--older-than", CLI_O_OLDER_THAN, 1,
     CLI_BIT(CLI_JOBS) | CLI_ACTIONS | CLI_BIT(CLI_CLEANUP)},
    /* retention */
    {"--dry-run", CLI_O_DRY_RUN, 0, CLI_BIT(CLI_CLEANUP)},
    {"--retain", CLI_O_RETAIN, 1, CLI_BIT(CLI_RUN) | CLI_BIT(CLI_CLEANUP)},
    {"--yes", CLI_O_YES, 0, CLI_ACTIONS},
    {"-e", CLI_O_CODE, 1, CLI_BIT(CLI_CONSOLE)},
    {"--connect", CLI_O_CONNECT, 1, CLI_BIT(CLI_CONSOLE)},
    {"--admin-socket", CLI_O_ADMIN_SOCKET, 1, CLI_BIT(CLI_RUN)},
    {"--admin-listen", CLI_O_ADMIN_LISTEN, 1, CLI_BIT(CLI_RUN)},
    {"--admin-token-file", CLI_O_ADMIN_TOKEN_FILE, 1,
     CLI_BIT(CLI_RUN) | CLI_BIT(CLI_CONSOLE)},
    {"--admin-timeout", CLI_O_ADMIN_TIMEOUT, 1, CLI_BIT(CLI_RUN)},
    {"--metrics", CLI_O_METRICS, 1, CLI_BIT(CLI_RUN)},
    {"--metrics-token-file", CLI_O_METRICS_TOKEN_FILE, 1, CLI_BIT(CLI_RUN)},
    {"--metrics-refresh", CLI_O_METRICS_REFRESH, 1, CLI_BIT(CLI_RUN)},
    {"--reason", CLI_O_REASON, 1,
     CLI_ACTIONS | CLI_BIT(CLI_QUEUE) | CLI_BIT(CLI_REPLACE)},
    {"--age-boost", CLI_O_AGE_BOOST, 1, CLI_BIT(CLI_QUEUE)},
    {"--scripts", CLI_O_SCRIPTS, 1,
     CLI_BIT(CLI_RUN) | CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_CONSOLE) |
         CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS)},
    {"--workers", CLI_O_WORKERS, 1, CLI_BIT(CLI_RUN)},
    {"--queues", CLI_O_QUEUES, 1, CLI_BIT(CLI_RUN)},
    {"--node-id", CLI_O_NODE_ID, 1, CLI_BIT(CLI_RUN)},
    {"--until-idle", CLI_O_UNTIL_IDLE, 0, CLI_BIT(CLI_RUN)},
    {"--log-level", CLI_O_LOG_LEVEL, 1, CLI_BIT(CLI_RUN)},
    {"--log-format", CLI_O_LOG_FORMAT, 1, CLI_BIT(CLI_RUN)},
    {"--poll", CLI_O_POLL, 1, CLI_BIT(CLI_RUN)},
    {"--grace", CLI_O_GRACE, 1, CLI_BIT(CLI_RUN)},
    {"--lease", CLI_O_LEASE, 1, CLI_BIT(CLI_RUN)},
    {"--prefetch", CLI_O_PREFETCH, 1, CLI_BIT(CLI_RUN)},
    {"--ahead-hold", CLI_O_AHEAD_HOLD, 1, CLI_BIT(CLI_RUN)},
    {"--idle-wait", CLI_O_IDLE_WAIT, 1, CLI_BIT(CLI_RUN)},
    {"--give-up", CLI_O_GIVE_UP, 1, CLI_BIT(CLI_RUN)},
    {"--load-timeout", CLI_O_LOAD_TIMEOUT, 1, CLI_BIT(CLI_RUN)},
    {"--job-memory", CLI_O_JOB_MEMORY, 1, CLI_BIT(CLI_RUN)},
    {"--unsafe-lua", CLI_O_UNSAFE_LUA, 0, CLI_BIT(CLI_RUN)},
    {"--allow-io", CLI_O_ALLOW_IO, 0, CLI_BIT(CLI_RUN)},
    {"--allow-env", CLI_O_ALLOW_ENV, 0, CLI_BIT(CLI_RUN)},
    {"--allow-signal", CLI_O_ALLOW_SIGNAL, 0, CLI_BIT(CLI_RUN)},
    {"--allow-replace", CLI_O_ALLOW_REPLACE, 0, CLI_BIT(CLI_RUN)},
    {"--allow-restart", CLI_O_ALLOW_RESTART, 0, CLI_BIT(CLI_RUN)},
    {"--allow-webhook", CLI_O_ALLOW_WEBHOOK, 1, CLI_BIT(CLI_RUN)},
    {"--tz", CLI_O_TZ, 1, CLI_BIT(CLI_CRON)},
    {"--from", CLI_O_FROM, 1, CLI_BIT(CLI_CRON)},
    {"--count", CLI_O_COUNT, 1, CLI_BIT(CLI_CRON)},
    {"--raw", CLI_O_RAW, 0, CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS)},
    {"--trace", CLI_O_TRACE, 0, CLI_BIT(CLI_SHOW)},
};

#define CLI_NOPTS (sizeof cli_opts / sizeof cli_opts[0])

static const char cli_usage_text[] =
    "usage: pawl [--db URL] [--sync-full] COMMAND [ARGS] [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  migrate                 create the database or bring its schema up to "
    "date\n"
    "  enqueue TYPE [JSON]     add a job (payload JSON, default {}); prints "
    "its id;\n"
    "                          JSON - reads it from stdin, @FILE from FILE\n"
    "                          (at most 16 MiB; also for --params)\n"
    "      --queue Q             queue name (default \"default\")\n"
    "      --priority N          higher runs first (default 0)\n"
    "      --delay SECONDS       run no sooner than now + SECONDS (decimals "
    "allowed)\n"
    "      --run-at TIME         run no sooner than TIME, ISO 8601 with a zone\n"
    "                            (2026-11-21T21:05:03Z, ...+01:00, or "
    "2026-11-21)\n"
    "      --max-attempts N      attempts before it fails for good (default:\n"
    "                            the script's when it runs, else 25)\n"
    "      --timeout SECONDS     limit for one attempt (default: the script's\n"
    "                            when it runs, else the host's)\n"
    "      --key K               idempotency key: a repeat prints the first "
    "job's id\n"
    "      --business-key K      refused while another live job holds K\n"
    "      --existing            with --business-key: print the holder's id "
    "instead\n"
    "      --tag T               a tag; repeat for more\n"
    "      --params JSON         parameters for the job's handler\n"
    "      --correlation-id C    id tying the job to a request or a trace\n"
    "      --blocked             start blocked instead of pending\n"
    "      --ordering-key K      run one at a time with the other jobs of key\n"
    "                            K, in enqueue order (default: the script's\n"
    "                            ordering_key string; one it computes from\n"
    "                            the payload must be given here)\n"
    "      --resource R          hold a permit of resource R while it runs\n"
    "                            (see limit)\n"
    "      --signal KEY          wait (blocked) for `pawl signal KEY ...`;\n"
    "                            KEY is unique among live jobs\n"
    "      --signal-timeout SECONDS  fail if no decision comes in time\n"
    "      --after ID[,ID...]    wait (blocked) until these jobs have ended;\n"
    "                            repeat for more\n"
    "      --when W              with --after: run if the parents ended as W\n"
    "                            says: success (default), failure, done or\n"
    "                            branch:NAME; else the job is canceled\n"
    "      --scripts DIR         where the job's script is (default ./scripts):\n"
    "                            its queue, priority and resource apply\n"
    "                            unless given\n"
    "                            here (max_attempts and timeout apply when\n"
    "                            the job runs, from the worker's script)\n"
    "  show ID [--json] [--trace]\n"
    "                          a job with its attempts, events and logs;\n"
    "                          --trace: each attempt's Lua traceback\n"
    "  jobs [--json]           jobs, newest first\n"
    "      --raw                 (show, jobs) payloads as stored: by default\n"
    "                            secret fields (password, token, key, ...,\n"
    "                            and the script's redact list) show as\n"
    "                            \"<redacted>\"\n"
    "      --scripts DIR         (show, jobs) the scripts that tell the\n"
    "                            max_attempts and timeout of jobs enqueued\n"
    "                            without them (default ./scripts)\n"
    "      --state S             pending, running, succeeded, failed, "
    "canceled,\n"
    "                            paused or blocked\n"
    "      --queue Q  --type T   only this queue / job type\n"
    "      --limit N             at most N jobs (default 100)\n"
    "      --tag X  --older-than DUR  tagged X / finished (or, unfinished,\n"
    "                            created) longer ago than DUR\n"
    "  cancel ID               pending, running, blocked or paused -> "
    "canceled\n"
    "  pause ID                pending or failed -> paused\n"
    "  resume ID               paused -> the state it was paused from\n"
    "  retry ID                failed -> pending, attempts reset\n"
    "      --reason TEXT         recorded in the job's history\n"
    "      --json                print the job as JSON instead of \"ID: "
    "STATE\"\n"
    "  cancel|pause|resume|retry --state S --queue Q --type T --tag X\n"
    "          --older-than DUR [--limit N] [--yes]\n"
    "                          the same for every matching job (at least one\n"
    "                          filter; DUR like 90s, 15m, 2h, 7d); above 100\n"
    "                          jobs it asks on a terminal, else needs --yes\n"
    "  signal KEY approve|reject [JSON] [--json]\n"
    "                          deliver a decision (and a payload) to the job\n"
    "                          waiting for KEY: it runs and reads it as\n"
    "                          job.signal; exit 3 if one was delivered before\n"
    "                          (nothing changed)\n"
    "  replace ID [--payload JSON] [--params JSON] [--queue Q] [--priority N]\n"
    "          [--delay S | --run-at T] [--max-attempts N] [--timeout S]\n"
    "          [--reason TEXT] [--json]\n"
    "                          enqueue a copy of the job with these changes\n"
    "                          and cancel the job (a running one is asked to\n"
    "                          stop), in one transaction; prints the new id\n"
    "  stats [--json]          jobs by state and queue, throughput, waits\n"
    "  cleanup [--dry-run] [--state S] [--older-than DUR] [--retain POLICY]\n"
    "          [--json]        remove old finished jobs now, as the retention\n"
    "                          policy says (default succeeded=1d,failed=7d,\n"
    "                          canceled=1d; --older-than: one age for all);\n"
    "                          prints the counts by state, queue and type;\n"
    "                          --dry-run changes nothing\n"
    "  batch show ID [--json]  a batch's progress: children ended by outcome,\n"
    "                            left, metrics, callbacks (docs/flows.md)\n"
    "  queue list [--json]     the queues: jobs by state, oldest due wait,\n"
    "                          paused or not, age boost (docs/scheduling.md)\n"
    "  queue pause Q [--reason TEXT] [--json]\n"
    "                          no node claims Q's jobs until it is resumed\n"
    "                          (running ones finish)\n"
    "  queue resume Q [--json] claim Q's jobs again\n"
    "  queue set Q --age-boost DUR [--json]\n"
    "                          Q's own age boost: +1 priority per DUR waited\n"
    "                          (60s, 15m; 0: none; database: the database's)\n"
    "  nodes [--json]          the nodes serving this database\n"
    "  locks [--json]          the distributed locks\n"
    "  limit list [--json]     resource and rate limits, with running jobs\n"
    "  limit set NAME [MAX] [--rate N/DUR] [--json]\n"
    "                          at most MAX jobs of resource NAME running at\n"
    "                          once, and/or N starts per window DUR (like\n"
    "                          100/60s; fixed windows); NAME queue:Q limits\n"
    "                          queue Q; replaces NAME's limit\n"
    "  limit rm NAME [--json]  remove a limit\n"
    "  console [FILE.lua | -e CODE] [--json] [--scripts DIR]\n"
    "                          the Lua admin console (docs/console.md)\n"
    "      --connect PATH|ADDRESS:PORT  attach to a running `pawl run` (its\n"
    "                            admin socket, or its --admin-listen with\n"
    "                            --admin-token-file F)\n"
    "  top [--interval SECONDS] [--once] [--json]\n"
    "                          a live view: throughput, queues, nodes, the\n"
    "                          longest running and the newest dead jobs;\n"
    "                          keys: tab/arrows/j/k select, p pause/resume\n"
    "                          the queue or job, i a job by id, q quit. Not\n"
    "                          a terminal: a plain print every interval\n"
    "                          (default 1; 0.1..3600 s); --json: JSON lines\n"
    "      --connect PATH|ADDRESS:PORT  read through a running `pawl run`'s\n"
    "                            admin socket (--admin-token-file F for TCP)\n"
    "  run                     run the jobs: a worker host with Lua job scripts\n"
    "      --scripts DIR         job scripts (default ./scripts)\n"
    "      --workers N           worker threads (default: one per core);\n"
    "                            with --queues Q=N, those of the queues\n"
    "                            without a number\n"
    "      --queues Q1,Q2        serve only these queues (default all);\n"
    "                            Q=N gives Q N workers of its own (at most N\n"
    "                            of its jobs at once); the others share\n"
    "                            --workers: mail=4,default=8 or mail=4,default\n"
    "      --node-id ID          this node's name (default hostname-pid)\n"
    "      --until-idle          exit once nothing is running or due\n"
    "      --idle-wait SECONDS   with --until-idle, wait for jobs due this\n"
    "                            soon, like retries, and for jobs a dead node\n"
    "                            left running whose leases expire this soon\n"
    "                            (default 5); jobs still running elsewhere\n"
    "                            at exit are counted in the log\n"
    "      --give-up SECONDS     with --until-idle, exit 1 once the database\n"
    "                            has failed claims, heartbeats or writes (or,\n"
    "                            locked at start, opening it) for this long\n"
    "                            (default 60; 0: never)\n"
    "      --log-level L         debug, info, warn or error (default info)\n"
    "      --log-format F        text or json (default text)\n"
    "      --poll SECONDS        poll interval (default 1)\n"
    "      --lease SECONDS       lease of a claimed job (default 30)\n"
    "      --grace SECONDS       on SIGINT/SIGTERM, time running jobs get to\n"
    "                            finish (default 30); a second signal stops\n"
    "                            at once\n"
    "      --prefetch N          jobs claimed ahead of free workers (default:\n"
    "                            about 10 ms of work per worker)\n"
    "      --ahead-hold SECONDS  every worker busy with no job started or\n"
    "                            ended for this long: hand back the jobs\n"
    "                            claimed ahead (default 0.1)\n"
    "      --allow-io            let job code read and write files (io.open,\n"
    "                            io.lines, io.read, io.write, io.type)\n"
    "      --allow-env           let job code read the environment (os.getenv)\n"
    "      --allow-signal        let job code signal any job (pawl.signal);\n"
    "                            without it, only the jobs it enqueued\n"
    "      --allow-replace       let job code replace or cancel any job\n"
    "                            (pawl.replace); without it, only its own\n"
    "      --allow-restart       let job code restart any dead job instance\n"
    "                            (enqueueing its identity); without it, only\n"
    "                            its own\n"
    "      --allow-webhook HOST[:PORT]  let job code post webhooks\n"
    "                            (pawl.alert.webhook) to this destination\n"
    "                            (repeatable; no port: 80 or 443)\n"
    "      --load-timeout SECONDS  how long a script's top level may run when\n"
    "                            it is loaded (default 10)\n"
    "      --job-memory SIZE     heap ceiling of a job whose script sets no\n"
    "                            memory (\"64M\", \"1G\", bytes; default 256M)\n"
    "      --unsafe-lua          give job code the full standard library\n"
    "      --admin-socket PATH   the attached console's unix socket (default:\n"
    "                            the SQLite database's path + .sock; none on\n"
    "                            PostgreSQL); none: no socket\n"
    "      --admin-listen ADDRESS:PORT  also a TCP listener, only with\n"
    "      --admin-token-file F  a token file (mode 600)\n"
    "      --admin-timeout SECONDS  how long a console's chunk may run\n"
    "                            (default 30)\n"
    "      --retain POLICY       retention of finished jobs, swept by one node\n"
    "                            at a time (default succeeded=1d,failed=7d,\n"
    "                            canceled=1d); items STATE=DUR, queue:Q.STATE=\n"
    "                            DUR, type:T.STATE=DUR, archive, batch=N,\n"
    "                            pause=DUR, every=DUR; DUR or forever; off:\n"
    "                            no sweep on this node\n"
    "      --metrics ADDRESS:PORT  serve Prometheus metrics on /metrics\n"
    "                            (127.0.0.1:9464; port 0: any free one)\n"
    "      --metrics-token-file F  the token scrapers send (Authorization:\n"
    "                            Bearer); required for a non-loopback address\n"
    "      --metrics-refresh SECONDS  how often the database gauges are\n"
    "                            read (default 5)\n"
    "  cron next EXPR          print the next fire times of a cron expression\n"
    "                          (docs/scheduling.md); opens no "
    "database\n"
    "      --tz ZONE             IANA time zone, like Europe/Berlin (default "
    "UTC)\n"
    "      --from TIME           start after TIME, ISO 8601 with a zone "
    "(default now)\n"
    "      --count N             how many, 1-1000 (default 5)\n"
    "  recurring VERB          recurring definitions (cron in the database):\n"
    "                          list|add|set|pause|resume|trigger|rm, all with\n"
    "                          --json; `pawl recurring --help` for more\n"
    "  bench [--help]          measure enqueue, throughput and pickup latency\n"
    "  version                 print pawl's version\n"
    "  help                    print this text\n"
    "\n"
    "Global options (anywhere on the line):\n"
    "  --db URL                the database: sqlite:PATH, postgres://... (a\n"
    "                          libpq URI) or postgres:CONNINFO (any libpq\n"
    "                          connection string); default $PAWL_DB, else\n"
    "                          sqlite:./pawl.db\n"
    "  --create                create the database if there is none (only\n"
    "                          migrate does without it)\n"
    "  --db-mode MODE          permission bits of a new SQLite database file\n"
    "                          and its -wal/-shm files (default 0600)\n"
    "  --sync-full             SQLite synchronous=FULL: commits survive power\n"
    "                          loss, at some cost in speed\n"
    "\n"
    "Options also take the form --name=value; \"--\" ends the options.\n"
    "Exit status: 0 success, 1 the operation failed, 2 bad usage or input.\n";

/* Everything the command line asked for. Pointers borrow argv. */
typedef struct cli_args {
  cli_cmd_t cmd;
  int no_args;             /* nothing at all on the command line */
  const char *db;          /* NULL: let pawl_open apply $PAWL_DB or default */
  int sync_full;
  int create;              /* --create: any command may create the database */
  unsigned db_mode;        /* --db-mode: bits of a new SQLite file; 0: 0600 */
  int json;
  int raw;                 /* show, jobs: --raw */
  int trace;               /* show: --trace */
  const char *pos[3];      /* positional arguments after the command */
  size_t npos;
  pawl_enqueue_opts_t enq;
  const char **tags;       /* owned by main: room for every argument */
  size_t ntags;
  const char *webhooks[64]; /* run: --allow-webhook */
  size_t nwebhooks;
  int has_delay, has_run_at, has_priority;
  pawl_filter_t filter;
  const char *reason;
  pawl_id_t id;            /* show and the actions */
  pawl_host_opts_t host;   /* run */
  const char *node_id;
  int64_t lease_ms;
  pawl_id_t *after;        /* owned: --after's ids */
  size_t nafter;
  char *queues_copy;       /* owned: --queues split in place */
  const char **queues;     /* owned: points into queues_copy */
  int *queue_conc;         /* owned: --queues Q=N, 0 for a bare name */
  const char *age_boost;   /* queue set --age-boost */
  char *payload_read;      /* owned: payload read from stdin or a file */
  char *params_read;       /* owned: --params read from stdin or a file */
  const char *cron_tz, *cron_from, *cron_count; /* cron next, checked there */
  int yes;                 /* bulk actions: no confirmation */
  int has_filter;          /* bulk actions: a filter option was given */
  const char *code;        /* console -e */
  const char *admin_socket; /* run: --admin-socket ("none": off) */
  pawl_admin_opts_t admin;  /* run: the admin console's listeners */
  pawl_metrics_opts_t metrics; /* run: the metrics endpoint */
  const char *connect;     /* console --connect */
  cli_limit_args_t limit;  /* limit list|set|rm */
  const char *replace_payload; /* replace --payload (read and checked with
                                  the positionals) */
  char *replace_payload_read;  /* owned: --payload from stdin or a file */
  /* retention: cleanup and run */
  int dry_run, has_older_than;
  const char *retain;      /* --retain POLICY ("off": run sweeps nothing) */
} cli_args_t;

/* ---- small helpers ------------------------------------------------------ */

int cli_fail(char *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, CLI_ERRLEN, fmt, ap);
  va_end(ap);
  return code;
}

/* A failed library call: its detail, and the exit status its code means. */
static int cli_lib_fail(pawl_t *p, int rc, char *err) {
  return cli_fail(err, rc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL, "%s",
                  pawl_errmsg(p));
}

/* ---- number and value parsing ------------------------------------------- */

/* Parses a whole decimal integer within [min, max]. strtoll alone accepts
 * leading blanks, trailing junk and silently clamps on overflow: all three
 * are refused here. */
static int cli_parse_int(const char *opt, const char *s, long long min,
                         long long max, long long *out, char *err) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  int starts_ok = *s && !(*s == ' ' || (*s >= '\t' && *s <= '\r'));
  if (!starts_ok || end == s || *end != '\0')
    return cli_fail(err, CLI_USAGE, "%s expects an integer, got \"%s\"", opt,
                    s);
  if (errno == ERANGE || v < min || v > max)
    return cli_fail(err, CLI_USAGE, "%s must be between %lld and %lld, got \"%s\"",
                    opt, min, max, s);
  *out = v;
  return 0;
}

/* Parses decimal seconds ("30", "0.5", ".25") into milliseconds, by hand:
 * strtod would also take "1e3", "inf", hex and the locale's decimal point.
 * Digits past milliseconds are dropped. At most `max_ms`. */
static int cli_parse_seconds(const char *opt, const char *s, int64_t max_ms,
                             int64_t *ms, char *err) {
  const char *p = s;
  int64_t whole = 0, frac = 0;
  int nint = 0, nfrac = 0, over = 0;
  for (; *p >= '0' && *p <= '9'; p++, nint++) {
    whole = whole * 10 + (*p - '0');
    if (whole > max_ms / 1000 + 1) {
      over = 1; /* keep reading: junk after the digits is reported first */
      whole = max_ms / 1000 + 1;
    }
  }
  if (*p == '.') {
    int64_t scale = 100;
    for (p++; *p >= '0' && *p <= '9'; p++, nfrac++) {
      frac += (*p - '0') * scale;
      scale /= 10;
    }
  }
  if (*p != '\0' || nint + nfrac == 0)
    return cli_fail(err, CLI_USAGE,
                    "%s expects a number of seconds like 30 or 0.5, got \"%s\"",
                    opt, s);
  if (over || whole * 1000 + frac > max_ms)
    return cli_fail(err, CLI_USAGE,
                    "%s must be between 0 and %lld%s seconds, got \"%s\"", opt,
                    (long long)(max_ms / 1000), max_ms % 1000 ? ".999" : "", s);
  *ms = whole * 1000 + frac;
  return 0;
}

/* --db-mode: octal permission bits, like chmod's ("0640", "640"). */
static int cli_parse_mode(const char *s, unsigned *out, char *err) {
  unsigned v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '7' && p - s < 5; p++) v = v * 8 + (unsigned)(*p - '0');
  if (p == s || *p != '\0' || v > 0777 || (v & 0600) != 0600)
    return cli_fail(err, CLI_USAGE,
                    "--db-mode expects octal permission bits within 0777 that "
                    "give the owner read and write, like 0600 or 0640, got "
                    "\"%s\"",
                    s);
  *out = v;
  return 0;
}

/* Largest payload or --params read from stdin or a file. A command-line
 * argument stops at 128 KiB (the kernel's MAX_ARG_STRLEN), hence `-` and
 * `@FILE`; past a few MiB a payload belongs elsewhere (a file or an object
 * store) with a reference in the job. */
#define CLI_MAX_INPUT (16u << 20)

/* The JSON of a payload or --params as given: "-" reads stdin, "@PATH"
 * reads the file PATH (up to CLI_MAX_INPUT bytes), anything else is the
 * JSON itself. *owned receives what was read (the caller frees it). */
static int cli_json_input(const char *what, const char *v, const char **out,
                          char **owned, char *err) {
  *out = v;
  if (strcmp(v, "-") != 0 && v[0] != '@') return 0;
  const char *src = strcmp(v, "-") == 0 ? "standard input" : v + 1;
  FILE *f = stdin;
  if (strcmp(v, "-") != 0 && (!*src || !(f = fopen(src, "rb")))) {
    return cli_fail(err, CLI_USAGE, "cannot read %s from \"%s\": %s", what,
                    src, *src ? strerror(errno) : "no file named after @");
  }
  pawl_buf_t b;
  pawl__buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= CLI_MAX_INPUT)
    pawl__buf_append(&b, chunk, n);
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  int rc = 0;
  if (bad)
    rc = cli_fail(err, CLI_USAGE, "cannot read %s from %s: %s", what, src,
                  strerror(errno));
  else if (b.oom)
    rc = cli_fail(err, CLI_FAIL, "out of memory reading %s", what);
  else if (b.len > CLI_MAX_INPUT)
    rc = cli_fail(err, CLI_USAGE,
                  "%s from %s is larger than %u bytes (16 MiB): put the "
                  "data elsewhere and a reference to it in the job",
                  what, src, CLI_MAX_INPUT);
  else if (memchr(pawl__buf_cstr(&b), '\0', b.len))
    rc = cli_fail(err, CLI_USAGE, "%s from %s contains a NUL byte", what, src);
  if (rc) {
    pawl__buf_free(&b);
    return rc;
  }
  *owned = pawl__buf_detach(&b);
  if (!*owned) *owned = strdup(""); /* nothing read: empty, refused below */
  if (!*owned) return cli_fail(err, CLI_FAIL, "out of memory");
  *out = *owned;
  return 0;
}

static int cli_check_json(const char *what, const char *s, char *err) {
  char detail[256];
  if (pawl__json_validate(s, strlen(s), detail, sizeof detail) != 0)
    return cli_fail(err, CLI_USAGE, "%s is not valid JSON: %s", what, detail);
  return 0;
}

static int cli_parse_state(const char *s, int *out, char *err) {
  int st = pawl_state_parse(s);
  if (st >= 0) {
    *out = st;
    return 0;
  }
  char names[128] = "";
  size_t len = 0;
  for (int i = 0; i < PAWL_STATE_COUNT && len < sizeof names; i++)
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                            i ? ", " : "", pawl_state_name(i));
  return cli_fail(err, CLI_USAGE, "unknown state \"%s\" (expected one of %s)",
                  s, names);
}

/* ---- command line ------------------------------------------------------- */

/* --queues q1,q2 (or mail=4,default=8: a queue's own
 * concurrency): splits a copy in place. */
static int cli_split_queues(cli_args_t *a, const char *v, char *err) {
  free(a->queues_copy);
  free(a->queues);
  free(a->queue_conc);
  a->queues_copy = strdup(v);
  size_t n = 1;
  for (const char *c = v; *c; c++) n += *c == ',';
  a->queues = calloc(n, sizeof *a->queues);
  a->queue_conc = calloc(n, sizeof *a->queue_conc);
  if (!a->queues_copy || !a->queues || !a->queue_conc)
    return cli_fail(err, CLI_FAIL, "out of memory");
  size_t k = 0;
  int numbered = 0;
  char *save = NULL;
  for (char *q = strtok_r(a->queues_copy, ",", &save); q;
       q = strtok_r(NULL, ",", &save)) {
    char *eq = strrchr(q, '=');
    if (eq) {
      /* The number: a whole 1..PAWL_QUEUE_CONCURRENCY_MAX, nothing else. */
      *eq = 0;
      char *end = NULL;
      long c = eq[1] >= '0' && eq[1] <= '9' ? strtol(eq + 1, &end, 10) : -1;
      if (c < 1 || c > PAWL_QUEUE_CONCURRENCY_MAX || !end || *end)
        return cli_fail(err, CLI_USAGE,
                        "--queues: the concurrency of queue %s must be a "
                        "whole number between 1 and %d (got \"%s\")",
                        q, PAWL_QUEUE_CONCURRENCY_MAX, eq + 1);
      a->queue_conc[k] = (int)c;
      numbered = 1;
    }
    if (!*q) return cli_fail(err, CLI_USAGE, "--queues: a queue name is empty");
    a->queues[k++] = q;
  }
  if (k == 0) return cli_fail(err, CLI_USAGE, "--queues needs queue names");
  a->host.queues = a->queues;
  a->host.nqueues = k;
  a->host.queue_concurrency = numbered ? a->queue_conc : NULL;
  return 0;
}

/* --after ID[,ID...]: appended to a->after. */
static int cli_parse_after(cli_args_t *a, const char *v, char *err) {
  const char *p = v;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char text[PAWL_ID_STRLEN];
    pawl_id_t id;
    if (len != PAWL_ID_STRLEN - 1 ||
        (memcpy(text, p, len), text[len] = 0, pawl_id_parse(&id, text)))
      return cli_fail(err, CLI_USAGE, "--after: \"%.*s\" is not a job id",
                      (int)(len > 60 ? 60 : len), p);
    if (a->nafter >= PAWL_AFTER_MAX)
      return cli_fail(err, CLI_USAGE, "--after: at most %d jobs",
                      PAWL_AFTER_MAX);
    pawl_id_t *g = realloc(a->after, (a->nafter + 1) * sizeof *g);
    if (!g) return cli_fail(err, CLI_FAIL, "out of memory");
    a->after = g;
    a->after[a->nafter++] = id;
    if (!comma) break;
    p = comma + 1;
  }
  a->enq.after = a->after;
  a->enq.nafter = a->nafter;
  return 0;
}

/* Stores one option's value in the arguments, checking it. */
static int cli_apply(cli_args_t *a, const struct cli_opt *o, const char *v,
                     char *err) {
  long long n = 0;
  int rc = 0;
  switch (o->id) {
  case CLI_O_JSON: a->json = 1; break;
  case CLI_O_RAW: a->raw = 1; break;
  case CLI_O_TRACE: a->trace = 1; break;
  case CLI_O_QUEUE:
    if (a->cmd == CLI_ENQUEUE || a->cmd == CLI_REPLACE) a->enq.queue = v;
    else a->filter.queue = v, a->has_filter = 1;
    break;
  case CLI_O_PRIORITY:
    if (!(rc = cli_parse_int(o->name, v, PAWL_PRIORITY_MIN, PAWL_PRIORITY_MAX,
                             &n, err))) {
      a->enq.priority = (int32_t)n;
      a->has_priority = 1;
    }
    break;
  case CLI_O_DELAY:
    if (a->has_run_at)
      return cli_fail(err, CLI_USAGE, "--delay and --run-at cannot be combined");
    a->has_delay = 1;
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS, &a->enq.delay_ms,
                           err);
    break;
  case CLI_O_RUN_AT:
    if (a->has_delay)
      return cli_fail(err, CLI_USAGE, "--delay and --run-at cannot be combined");
    a->has_run_at = 1;
    if (pawl__iso8601_parse(v, &a->enq.run_at) != 0)
      return cli_fail(err, CLI_USAGE,
                      "--run-at expects an ISO 8601 time with a zone, like "
                      "2026-11-21T21:05:03Z, got \"%s\"",
                      v);
    /* run_at 0 means "now" in the API, and negative times are refused. */
    if (a->enq.run_at <= 0 || a->enq.run_at > PAWL_TIME_MAX_MS)
      return cli_fail(err, CLI_USAGE,
                      "--run-at must be after 1970-01-01T00:00:00Z and before "
                      "10000-01-01T00:00:00Z, got \"%s\"",
                      v);
    break;
  case CLI_O_MAX_ATTEMPTS:
    if (!(rc = cli_parse_int(o->name, v, 1, PAWL_ATTEMPTS_MAX, &n, err)))
      a->enq.max_attempts = (int32_t)n;
    break;
  case CLI_O_TIMEOUT:
    if (!(rc = cli_parse_int(o->name, v, 0, PAWL_TIMEOUT_MAX_S, &n, err)))
      a->enq.timeout_s = (int32_t)n;
    break;
  case CLI_O_KEY: a->enq.idempotency_key = v; break;
  case CLI_O_BUSINESS_KEY: a->enq.business_key = v; break;
  case CLI_O_EXISTING: a->enq.return_existing = 1; break;
  case CLI_O_TAG:
    if (a->cmd != CLI_ENQUEUE) {
      a->filter.tag = v; /* jobs and the bulk actions: a filter */
      a->has_filter = 1;
      break;
    }
    a->tags[a->ntags++] = v;
    break;
  case CLI_O_PARAMS:
    a->enq.params = v; /* read and checked with the positionals */
    break;
  case CLI_O_CORRELATION_ID: a->enq.correlation_id = v; break;
  case CLI_O_BLOCKED: a->enq.blocked = 1; break;
  case CLI_O_ORDERING_KEY: a->enq.ordering_key = v; break;
  case CLI_O_RESOURCE: a->enq.resource = v; break;
  case CLI_O_RATE: {
    char msg[256];
    if (pawl_rate_parse(v, &a->limit.rate, &a->limit.window_ms, msg,
                        sizeof msg))
      return cli_fail(err, CLI_USAGE, "--rate: %s", msg);
    break;
  }
  case CLI_O_AFTER: return cli_parse_after(a, v, err);
  case CLI_O_WHEN: a->enq.when = v; break;
  case CLI_O_STATE:
    rc = cli_parse_state(v, &a->filter.state, err);
    a->has_filter = 1;
    break;
  case CLI_O_TYPE: a->filter.type = v, a->has_filter = 1; break;
  case CLI_O_OLDER_THAN: {
    char msg[256];
    if (pawl_duration_parse(v, &a->filter.older_than_ms, msg, sizeof msg))
      return cli_fail(err, CLI_USAGE, "--older-than: %s", msg);
    a->has_filter = 1;
    a->has_older_than = 1;
    break;
  }
  case CLI_O_DRY_RUN: a->dry_run = 1; break;
  case CLI_O_RETAIN: a->retain = v; break;
  case CLI_O_YES: a->yes = 1; break;
  case CLI_O_CODE: a->code = v; break;
  case CLI_O_CONNECT: a->connect = v; break;
  case CLI_O_ADMIN_SOCKET: a->admin_socket = v; break;
  case CLI_O_ADMIN_LISTEN: a->admin.listen = v; break;
  case CLI_O_ADMIN_TOKEN_FILE: a->admin.token_file = v; break;
  case CLI_O_ADMIN_TIMEOUT:
    rc = cli_parse_seconds(o->name, v, PAWL_TIMEOUT_MAX_S * INT64_C(1000),
                           &a->admin.timeout_ms, err);
    if (!rc && a->admin.timeout_ms == 0)
      return cli_fail(err, CLI_USAGE, "--admin-timeout must be more than 0");
    break;
  case CLI_O_METRICS: a->metrics.listen = v; break;
  case CLI_O_METRICS_TOKEN_FILE: a->metrics.token_file = v; break;
  case CLI_O_METRICS_REFRESH:
    rc = cli_parse_seconds(o->name, v, 3600000, &a->metrics.refresh_ms, err);
    if (!rc && a->metrics.refresh_ms < 100)
      return cli_fail(err, CLI_USAGE,
                      "--metrics-refresh must be between 0.1 and 3600 "
                      "seconds (got %s)",
                      v);
    break;
  case CLI_O_LIMIT:
    if (!(rc = cli_parse_int(o->name, v, 1, INT_MAX, &n, err)))
      a->filter.limit = (int)n;
    break;
  case CLI_O_REASON: a->reason = v; break;
  case CLI_O_SCRIPTS: a->host.scripts_dir = v; break;
  case CLI_O_WORKERS:
    if (!(rc = cli_parse_int(o->name, v, 1, 1024, &n, err)))
      a->host.workers = (int)n;
    break;
  case CLI_O_QUEUES: rc = cli_split_queues(a, v, err); break;
  case CLI_O_NODE_ID: a->node_id = v; break;
  case CLI_O_UNTIL_IDLE: a->host.until_idle = 1; break;
  case CLI_O_LOG_LEVEL: {
    static const char *const levels[] = {"debug", "info", "warn", "error"};
    int found = -1;
    for (int i = 0; i < 4; i++)
      if (strcmp(v, levels[i]) == 0) found = i;
    if (found < 0)
      return cli_fail(err, CLI_USAGE,
                      "--log-level expects debug, info, warn or error, got "
                      "\"%s\"",
                      v);
    a->host.log_level = found;
    break;
  }
  case CLI_O_LOG_FORMAT:
    if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0)
      return cli_fail(err, CLI_USAGE,
                      "--log-format expects text or json, got \"%s\"", v);
    a->host.log_json = strcmp(v, "json") == 0;
    break;
  case CLI_O_POLL:
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS, &a->host.poll_ms, err);
    break;
  case CLI_O_GRACE:
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS, &a->host.grace_ms, err);
    break;
  case CLI_O_LEASE:
    rc = cli_parse_seconds(o->name, v, PAWL_LEASE_MAX_MS, &a->lease_ms, err);
    break;
  case CLI_O_LOAD_TIMEOUT:
    rc = cli_parse_seconds(o->name, v, PAWL_TIMEOUT_MAX_S * INT64_C(1000),
                           &a->host.load_timeout_ms, err);
    break;
  case CLI_O_JOB_MEMORY: {
    char why[300];
    if (pawl__bounds_size("--job-memory", v, PAWL_JOB_MEMORY_MIN,
                          PAWL_JOB_MEMORY_MAX, &a->host.job_memory, why,
                          sizeof why))
      return cli_fail(err, CLI_USAGE, "%s", why);
    break;
  }
  case CLI_O_IDLE_WAIT:
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS, &a->host.idle_wait_ms,
                           err);
    if (!rc && a->host.idle_wait_ms == 0) a->host.idle_wait_ms = -1;
    break;
  case CLI_O_PREFETCH:
    if (!(rc = cli_parse_int(o->name, v, 0, 100000, &n, err)))
      a->host.prefetch = (int)n;
    break;
  case CLI_O_AHEAD_HOLD:
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS, &a->host.ahead_hold_ms,
                           err);
    if (!rc && a->host.ahead_hold_ms == 0)
      rc = cli_fail(err, CLI_USAGE, "%s must be more than 0 seconds (got %s)",
                    o->name, v);
    break;
  case CLI_O_GIVE_UP:
    rc = cli_parse_seconds(o->name, v, PAWL_GIVE_UP_MAX_MS,
                           &a->host.give_up_ms, err);
    if (!rc && a->host.give_up_ms == 0) a->host.give_up_ms = -1;
    break;
  case CLI_O_UNSAFE_LUA: a->host.unsafe_lua = 1; break;
  case CLI_O_ALLOW_IO: a->host.allow_io = 1; break;
  case CLI_O_ALLOW_ENV: a->host.allow_env = 1; break;
  case CLI_O_ALLOW_SIGNAL: a->host.allow_signal = 1; break;
  case CLI_O_ALLOW_REPLACE: a->host.allow_replace = 1; break;
  case CLI_O_ALLOW_RESTART: a->host.allow_restart = 1; break;
  case CLI_O_ALLOW_WEBHOOK:
    if (a->nwebhooks >= 64)
      return cli_fail(err, CLI_USAGE, "--allow-webhook: at most 64 destinations");
    char why[300];
    if (pawl__web_grant_check(v, why, sizeof why) != 0)
      return cli_fail(err, CLI_USAGE, "--allow-webhook: %s", why);
    a->webhooks[a->nwebhooks++] = v;
    a->host.allow_webhook = a->webhooks;
    a->host.nallow_webhook = a->nwebhooks;
    break;
  case CLI_O_TZ: a->cron_tz = v; break;
  case CLI_O_FROM: a->cron_from = v; break;
  case CLI_O_COUNT: a->cron_count = v; break;
  case CLI_O_AGE_BOOST: a->age_boost = v; break;
  case CLI_O_SIGNAL: a->enq.signal = v; break;
  case CLI_O_SIGNAL_TIMEOUT:
    rc = cli_parse_seconds(o->name, v, PAWL_DELAY_MAX_MS,
                           &a->enq.signal_timeout_ms, err);
    if (!rc && a->enq.signal_timeout_ms == 0)
      return cli_fail(err, CLI_USAGE, "--signal-timeout must be more than 0");
    break;
  case CLI_O_PAYLOAD: a->replace_payload = v; break;
  }
  return rc;
}

/* limit list | set NAME [MAX] | rm NAME: checked and parsed before the
 * database is opened (the name's rules are the library's). */
static int cli_check_limit(cli_args_t *a, char *err) {
  cli_limit_args_t *l = &a->limit;
  l->json = a->json;
  l->verb = a->npos ? a->pos[0] : "";
  size_t want = 0;
  if (strcmp(l->verb, "list") == 0) want = 1;
  else if (strcmp(l->verb, "set") == 0) want = 3;
  else if (strcmp(l->verb, "rm") == 0) want = 2;
  else
    return cli_fail(err, CLI_USAGE,
                    "limit needs list, set or rm (got \"%s\"; see pawl help)",
                    l->verb);
  if (a->npos < 2 && want > 1)
    return cli_fail(err, CLI_USAGE, "limit %s needs a NAME", l->verb);
  if (a->npos > want)
    return cli_fail(err, CLI_USAGE, "unexpected argument \"%s\" for limit %s",
                    a->pos[want], l->verb);
  if (l->rate && strcmp(l->verb, "set") != 0)
    return cli_fail(err, CLI_USAGE, "--rate goes with limit set");
  l->name = a->npos > 1 ? a->pos[1] : NULL;
  if (want == 3) {
    long long n = 0;
    int rc;
    if (a->npos == 3 &&
        (rc = cli_parse_int("MAX", a->pos[2], 1, PAWL_LIMIT_MAX, &n, err)))
      return rc;
    l->max_running = n;
    if (!l->max_running && !l->rate)
      return cli_fail(err, CLI_USAGE,
                      "limit set %s needs a MAX (1..%d running at once), a "
                      "--rate N/DUR, or both",
                      l->name, PAWL_LIMIT_MAX);
  }
  return 0;
}

/* Checks the positional arguments once the whole line has been read. */
static int cli_check_positionals(cli_args_t *a, char *err) {
  const char *cmd = cli_cmd_names[a->cmd];
  size_t min = 0, max = 0;
  switch (a->cmd) {
  case CLI_ENQUEUE: min = 1, max = 2; break;
  case CLI_SHOW: min = max = 1; break;
  case CLI_SIGNAL: min = 2, max = 3; break;
  case CLI_REPLACE: min = max = 1; break;
  case CLI_CANCEL:
  case CLI_PAUSE:
  case CLI_RESUME:
  case CLI_RETRY: max = 1; min = a->has_filter ? 0 : 1; break; /* bulk */
  case CLI_CONSOLE: max = a->code ? 0 : 1; break; /* FILE.lua */
  case CLI_HELP: max = 1; break; /* "pawl help enqueue": same text */
  case CLI_CRON: min = max = 2; break;
  case CLI_BATCH: min = max = 2; break;
  case CLI_QUEUE:
    min = 1;
    max = a->npos >= 1 && strcmp(a->pos[0], "list") == 0 ? 1 : 2;
    break;
  case CLI_LIMIT: return cli_check_limit(a, err);
  default: break;
  }
  if (a->cmd == CLI_QUEUE) {
    static const char *const verbs[] = {"list", "pause", "resume", "set"};
    int known = 0;
    for (size_t i = 0; a->npos && i < 4; i++) known |= !strcmp(a->pos[0], verbs[i]);
    if (!a->npos || !known)
      return cli_fail(err, CLI_USAGE,
                      "queue needs list, pause Q, resume Q or set Q "
                      "--age-boost DUR%s%s%s",
                      a->npos ? " (got \"" : "", a->npos ? a->pos[0] : "",
                      a->npos ? "\")" : "");
    if (a->npos > max)
      return cli_fail(err, CLI_USAGE, "unexpected argument \"%s\" for queue %s",
                      a->pos[max], a->pos[0]);
    if (max == 2 && a->npos < 2)
      return cli_fail(err, CLI_USAGE, "queue %s needs a queue name",
                      a->pos[0]);
    int set = strcmp(a->pos[0], "set") == 0;
    if (set != (a->age_boost != NULL))
      return cli_fail(err, CLI_USAGE,
                      set ? "queue set needs --age-boost DUR (60s, 15m; 0: "
                            "none; database: the database's setting)"
                          : "--age-boost goes with queue set");
    if (a->reason && strcmp(a->pos[0], "pause") != 0)
      return cli_fail(err, CLI_USAGE, "--reason goes with queue pause");
    return 0;
  }
  if (a->cmd == CLI_CRON && a->npos >= 1 && strcmp(a->pos[0], "next") != 0)
    return cli_fail(err, CLI_USAGE,
                    "unknown cron command \"%s\" (expected cron next EXPR)",
                    a->pos[0]);
  if (a->cmd == CLI_CRON && a->npos < min)
    return cli_fail(err, CLI_USAGE,
                    "cron needs a command and an expression: pawl cron next "
                    "'*/15 * * * *'");
  if (a->npos < min && (CLI_ACTIONS & CLI_BIT(a->cmd)))
    return cli_fail(err, CLI_USAGE,
                    "%s needs a job ID, or a filter for every matching job "
                    "(--state, --queue, --type, --tag, --older-than; see "
                    "pawl help)",
                    cmd);
  if (a->npos < min && a->cmd == CLI_SIGNAL)
    return cli_fail(err, CLI_USAGE,
                    "signal needs a KEY and a decision: pawl signal KEY "
                    "approve|reject [JSON]");
  if (a->npos < min)
    return cli_fail(err, CLI_USAGE, "%s needs a %s (see pawl help)", cmd,
                    a->cmd == CLI_ENQUEUE ? "job TYPE" : "job ID");
  if (a->npos == 1 && a->has_filter && (CLI_ACTIONS & CLI_BIT(a->cmd)))
    return cli_fail(err, CLI_USAGE,
                    "%s takes a job ID or a filter, not both", cmd);
  if (a->cmd == CLI_CONSOLE && a->npos == 1 && a->code)
    return cli_fail(err, CLI_USAGE, "console runs -e CODE or a FILE, not both");
  if (a->npos > max)
    return cli_fail(err, CLI_USAGE, "unexpected argument \"%s\" for %s",
                    a->pos[max], cmd);
  if (a->cmd == CLI_ENQUEUE) {
    int rc;
    if (a->npos == 2 && strcmp(a->pos[1], "-") == 0 && a->enq.params &&
        strcmp(a->enq.params, "-") == 0)
      return cli_fail(err, CLI_USAGE,
                      "only one of the payload and --params can be read "
                      "from standard input");
    if (a->npos == 2 &&
        ((rc = cli_json_input("payload", a->pos[1], &a->pos[1],
                              &a->payload_read, err)) ||
         (rc = cli_check_json("payload", a->pos[1], err))))
      return rc;
    if (a->enq.params &&
        ((rc = cli_json_input("--params", a->enq.params,
                              &a->enq.params, &a->params_read, err)) ||
         (rc = cli_check_json("--params", a->enq.params, err))))
      return rc;
    return 0;
  }
  if (a->cmd == CLI_SIGNAL) {
    int rc;
    if (strcmp(a->pos[1], "approve") != 0 && strcmp(a->pos[1], "reject") != 0)
      return cli_fail(err, CLI_USAGE,
                      "signal: the decision must be approve or reject "
                      "(got \"%s\")",
                      a->pos[1]);
    if (a->npos == 3 &&
        ((rc = cli_json_input("payload", a->pos[2], &a->pos[2],
                              &a->payload_read, err)) ||
         (rc = cli_check_json("payload", a->pos[2], err))))
      return rc;
    return 0;
  }
  if (a->cmd == CLI_REPLACE) {
    int rc;
    if (a->replace_payload && a->enq.params &&
        strcmp(a->replace_payload, "-") == 0 &&
        strcmp(a->enq.params, "-") == 0)
      return cli_fail(err, CLI_USAGE,
                      "only one of --payload and --params can be read "
                      "from standard input");
    if (a->replace_payload &&
        ((rc = cli_json_input("--payload", a->replace_payload,
                              &a->replace_payload, &a->replace_payload_read,
                              err)) ||
         (rc = cli_check_json("--payload", a->replace_payload, err))))
      return rc;
    if (a->enq.params &&
        ((rc = cli_json_input("--params", a->enq.params, &a->enq.params,
                              &a->params_read, err)) ||
         (rc = cli_check_json("--params", a->enq.params, err))))
      return rc;
  }
  if (a->cmd == CLI_CRON || a->cmd == CLI_CONSOLE) return 0;
  if (a->npos == 1 && a->cmd != CLI_ENQUEUE && a->cmd != CLI_HELP &&
      pawl_id_parse(&a->id, a->pos[0]) != 0)
    return cli_fail(err, CLI_USAGE, "\"%s\" is not a job id", a->pos[0]);
  return 0;
}

/* Splits "--name=value"; returns the length of the name part. */
static size_t cli_opt_name_len(const char *arg, const char **inline_value) {
  const char *eq = strchr(arg, '=');
  *inline_value = eq ? eq + 1 : NULL;
  return eq ? (size_t)(eq - arg) : strlen(arg);
}

static int cli_name_is(const char *arg, size_t len, const char *name) {
  return strlen(name) == len && strncmp(arg, name, len) == 0;
}

/* Reads the whole command line into `a`. Global options may appear
 * anywhere; command options only after the command, which decides what
 * they mean. */
static int cli_parse(int argc, char **argv, cli_args_t *a, char *err) {
  int options_done = 0, rc;
  a->cmd = CLI_NONE;
  a->no_args = argc <= 1;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int is_opt = !options_done && arg[0] == '-' && arg[1] != '\0';
    if (!is_opt) {
      if (a->cmd == CLI_NONE) {
        for (int c = 0; c < CLI_CMD_COUNT; c++)
          if (strcmp(arg, cli_cmd_names[c]) == 0) a->cmd = (cli_cmd_t)c;
        if (a->cmd == CLI_NONE)
          return cli_fail(err, CLI_USAGE,
                          "unknown command \"%s\" (see pawl help)", arg);
      } else if (a->npos < 3) {
        a->pos[a->npos++] = arg;
      } else {
        return cli_fail(err, CLI_USAGE, "unexpected argument \"%s\" for %s",
                        arg, cli_cmd_names[a->cmd]);
      }
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      options_done = 1;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      a->cmd = CLI_HELP; /* help wins over whatever else was asked */
      a->npos = 0;
      return 0;
    }
    const char *value;
    size_t len = cli_opt_name_len(arg, &value);
    if (cli_name_is(arg, len, "--version") && a->cmd == CLI_NONE && !value) {
      a->cmd = CLI_VERSION;
      continue;
    }
    if (cli_name_is(arg, len, "--sync-full")) {
      if (value)
        return cli_fail(err, CLI_USAGE, "--sync-full takes no value");
      a->sync_full = 1;
      continue;
    }
    if (cli_name_is(arg, len, "--create")) {
      if (value) return cli_fail(err, CLI_USAGE, "--create takes no value");
      a->create = 1;
      continue;
    }
    if (cli_name_is(arg, len, "--db-mode")) {
      if (!value) {
        if (i + 1 >= argc)
          return cli_fail(err, CLI_USAGE, "--db-mode needs a value");
        value = argv[++i];
      }
      if ((rc = cli_parse_mode(value, &a->db_mode, err))) return rc;
      continue;
    }
    const struct cli_opt *o = NULL;
    int is_db = cli_name_is(arg, len, "--db");
    for (size_t k = 0; k < CLI_NOPTS && !is_db && !o; k++)
      if (cli_name_is(arg, len, cli_opts[k].name)) o = &cli_opts[k];
    if ((is_db || (o && o->has_value)) && !value) {
      if (i + 1 >= argc)
        return cli_fail(err, CLI_USAGE, "%s needs a value", arg);
      value = argv[++i]; /* even if it starts with '-': --priority -5 */
    } else if (o && !o->has_value && value) {
      return cli_fail(err, CLI_USAGE, "%.*s takes no value", (int)len, arg);
    }
    if (is_db) {
      /* pawl_open would quietly take an empty URL as "use the default". */
      if (!*value) return cli_fail(err, CLI_USAGE, "--db needs a value");
      a->db = value;
      continue;
    }
    if (a->cmd == CLI_NONE)
      return cli_fail(err, CLI_USAGE,
                      o ? "option %.*s goes after the command (see pawl help)"
                        : "unknown option %.*s (see pawl help)",
                      (int)len, arg);
    if (!o || !(o->cmds & CLI_BIT(a->cmd)))
      return cli_fail(err, CLI_USAGE, "unknown option %.*s for %s", (int)len,
                      arg, cli_cmd_names[a->cmd]);
    if ((rc = cli_apply(a, o, value, err))) return rc;
  }
  if (a->cmd == CLI_NONE) {
    a->cmd = CLI_HELP;
    if (!a->no_args)
      return cli_fail(err, CLI_USAGE, "no command given (see pawl help)");
    return 0;
  }
  if (a->enq.return_existing && !a->enq.business_key)
    return cli_fail(err, CLI_USAGE, "--existing needs --business-key");
  a->enq.tags = a->tags;
  a->enq.ntags = a->ntags;
  return cli_check_positionals(a, err);
}

/* ---- commands ----------------------------------------------------------- */

/* `pawl run` opening a SQLite database whose write lock another process
 * holds for longer than the busy timeout: wait for the lock, as a running
 * node waits through a busy database, instead of exiting (a node restarted
 * during another process's long write would otherwise stay down). With
 * --until-idle it waits --give-up seconds at most (default 60; 0: never
 * gives up), like the running node. Other commands and other errors
 * return at once. */
static int cli_open(pawl_t **p, const pawl_options_t *opts, const cli_args_t *a,
                    char *err, size_t errlen) {
  int64_t start = pawl__mono_ms(), said_at = -1;
  int64_t give_up = a->host.give_up_ms == 0 ? 60000 : a->host.give_up_ms;
  for (;;) {
    int rc = pawl_open(p, opts, err, errlen);
    if (rc != PAWL_EBUSY || a->cmd != CLI_RUN) return rc;
    int64_t now = pawl__mono_ms();
    if (a->host.until_idle && give_up > 0 && now - start >= give_up) {
      char why[512];
      snprintf(why, sizeof why, "%s", err);
      snprintf(err, errlen, "gave up: opening the database has failed for %.1f s: %s",
               (double)(now - start) / 1000.0, why);
      return rc;
    }
    if (said_at < 0 || now - said_at >= 30000) {
      fprintf(stderr, "pawl: warning: %s; waiting for it\n", err);
      said_at = now;
    }
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* The database URL pawl_open used: --db, else $PAWL_DB, else the default. */
static const char *cli_db_url(const cli_args_t *a) {
  const char *url = a->db;
  if (!url) url = getenv("PAWL_DB");
  if (!url || !*url) url = "sqlite:./pawl.db";
  return url;
}

static int cli_migrate(pawl_t *p, const cli_args_t *a, char *err) {
  int current = 0, latest = 0;
  int rc = pawl_schema_version(p, &current, &latest);
  if (rc) return cli_lib_fail(p, rc, err);
  const char *url = cli_db_url(a);
  char shown[1024];
  pawl__redact_url(url, shown, sizeof shown);
  printf("schema at version %d (%s)\n", current, shown);
  return 0;
}

/* The job's script, if this machine has it, says where and how the job
 * runs; what the command line says wins. A broken script is reported and
 * the job enqueued anyway: the workers may have a good version. *missing:
 * 1 when this machine has a scripts directory without the type's script. */
static int cli_script_defaults(const cli_args_t *a, pawl_enqueue_opts_t *o,
                               pawl_script_info_t *info, int *missing,
                               char *cerr) {
  char err[CLI_ERRLEN];
  const char *dir = a->host.scripts_dir ? a->host.scripts_dir : "./scripts";
  int rc = pawl_script_info(dir, a->pos[0], info, err, sizeof err);
  if (rc == PAWL_ENOTFOUND) {
    /* A directory of scripts without this one: most likely a misspelt
     * type, which the workers would retry for hours. The job is stored
     * all the same (another node may have the script); with no directory
     * here at all, this machine only enqueues, and says nothing. */
    struct stat sb;
    *missing = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
    return 0;
  }
  if (rc) {
    fprintf(stderr, "pawl: warning: %s; enqueuing with the given options\n", err);
    return 0;
  }
  if (!o->queue && info->queue[0]) o->queue = info->queue;
  if (!o->resource && info->resource[0]) o->resource = info->resource;
  if (!a->has_priority && info->has_priority) o->priority = info->priority;
  /* Per-key ordering: the script's key string applies; a key the script
   * computes from the payload takes a Lua state this command does not
   * run, and enqueuing without it would let the job pass its key's line:
   * refused, so that the operator gives the key. */
  if (!o->ordering_key && info->ordering_key[0])
    o->ordering_key = info->ordering_key;
  if (!o->ordering_key && info->ordering_key_fn)
    return cli_fail(cerr, CLI_USAGE,
                    "the script of %s computes ordering_key from the "
                    "payload, which the CLI does not run: give "
                    "--ordering-key", a->pos[0]);
  /* Job instances: the script's identifying fields. */
  if (info->nidentity) {
    o->identity = info->identity_ptrs;
    o->nidentity = info->nidentity;
  }
  return 0;
  /* max_attempts and the timeout are not copied: the worker applies the
   * script's own to jobs that set none, when they run. */
}

static int cli_enqueue(pawl_t *p, const cli_args_t *a, char *err) {
  pawl_id_t id;
  int status = PAWL_ENQ_NEW;
  pawl_enqueue_opts_t o = a->enq;
  pawl_script_info_t info;
  int missing = 0;
  int drc = cli_script_defaults(a, &o, &info, &missing, err);
  if (drc) return drc;
  int rc = pawl_enqueue(p, a->pos[0], a->npos > 1 ? a->pos[1] : NULL, &o,
                        &id, &status);
  if (rc) return cli_lib_fail(p, rc, err);
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  printf("%s\n", text);
  if (missing) {
    /* Most likely a misspelt type, which the workers would retry for
     * hours. The job is stored all the same (another node may have the
     * script); with no scripts directory here at all, this machine only
     * enqueues, and nothing is said. */
    pawl_buf_t w;
    pawl__buf_init(&w);
    pawl__buf_puts(&w, "pawl: warning: no script for job type ");
    cli_text(&w, a->pos[0]);
    pawl__buf_puts(&w, " in ");
    cli_text(&w, a->host.scripts_dir ? a->host.scripts_dir : "./scripts");
    pawl__buf_puts(&w, " (where --scripts DIR says the scripts are; "
                   "default ./scripts); the job is stored anyway, for a "
                   "node that has its script");
    if (!w.oom) fprintf(stderr, "%s\n", pawl__buf_cstr(&w));
    pawl__buf_free(&w);
  }
  /* The id goes to stdout either way, so scripts get the job they meant;
   * the note on stderr says it was not a new one. */
  pawl_buf_t note;
  pawl__buf_init(&note);
  if (status == PAWL_ENQ_DUPLICATE && a->enq.idempotency_key) {
    pawl__buf_puts(&note, "duplicate: job already enqueued with key ");
    cli_text(&note, a->enq.idempotency_key);
  } else if (status == PAWL_ENQ_EXISTING && a->enq.business_key) {
    pawl__buf_puts(&note, "existing: business key ");
    cli_text(&note, a->enq.business_key);
    pawl__buf_printf(&note, " is held by live job %s; not enqueued", text);
  } else if (status == PAWL_ENQ_EXISTING && o.nidentity) {
    pawl__buf_printf(&note, "existing: job %s is this instance, and live; "
                     "not enqueued", text);
  } else if (status == PAWL_ENQ_RESTARTED) {
    pawl__buf_printf(&note, "restarted: job %s was this instance, failed; it "
                     "runs again (its completed steps are skipped)", text);
  }
  if (note.len && !note.oom) fprintf(stderr, "%s\n", pawl__buf_cstr(&note));
  pawl__buf_free(&note);
  return 0;
}

static int cli_show(pawl_t *p, const cli_args_t *a, char *err) {
  pawl_job_t *job = NULL;
  pawl_history_t *h = NULL;
  pawl_log_record_t *logs = NULL;
  size_t nlogs = 0;
  cli_deps_t deps;
  cli_deps_init(&deps, a->json);
  pawl_steps_t *steps = NULL; /* restartable steps */
  cli_redact_t red;           /* redaction */
  cli_job_view_t view;
  cli_redact_init(&red, p, a->raw);
  memset(&view, 0, sizeof view);
  int rc = pawl_get(p, &a->id, &job);
  if (!rc) rc = pawl_history(p, &a->id, &h);
  if (!rc) rc = pawl_logs(p, &a->id, &logs, &nlogs);
  if (!rc) rc = pawl_deps_list(p, &a->id, cli_deps_cb, &deps);
  if (!rc) rc = pawl_steps(p, &a->id, &steps);
  if (rc) rc = cli_lib_fail(p, rc, err);
  /* What is shown of the job's JSON: redacted unless --raw. */
  if (!rc) rc = cli_redact_job(&red, job, &view, err);
  for (size_t i = 0; !rc && i < nlogs; i++)
    rc = cli_redact_swap(&red, &logs[i].fields, err);
  for (size_t i = 0; !rc && i < steps->n; i++)
    rc = cli_redact_swap(&red, &steps->execs[i].checkpoint, err);
  if (!rc) rc = cli_redact_swap(&red, &steps->instance, err);
  if (rc) {
    cli_job_view_free(&view);
    cli_redact_free(&red);
    cli_deps_free(&deps);
    pawl_steps_free(steps);
    pawl_logs_free(logs, nlogs);
    pawl_history_free(h);
    pawl_job_free(job);
    return rc;
  }
  if (a->json) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    cli_json_job_fields(&b, &view.job);
    cli_flow_json(p, &a->id, &red, &b); /* signal, replacement links */
    cli_json_history(&b, h);
    cli_json_logs(&b, logs, nlogs);
    cli_batch_of_job(p, &a->id, &b); /* batches */
    cli_deps_json(&b, &deps);
    cli_json_steps(&b, steps);
    pawl__buf_putc(&b, '}');
    rc = cli_emit(&b, err);
    pawl__buf_free(&b);
  } else {
    cli_table_t fields = {.ncols = 2}, attempts = {.ncols = 9},
                events = {.ncols = 4}, lines = {.ncols = 5};
    cli_job_fields(&fields, &view.job);
    cli_flow_fields(p, &a->id, &red, &fields); /* signal, replacement links */
    cli_attempt_rows(&attempts, h);
    cli_event_rows(&events, h);
    cli_log_rows(&lines, logs, nlogs);
    if (fields.oom || attempts.oom || events.oom || lines.oom ||
        cli_deps_oom(&deps)) {
      rc = cli_fail(err, CLI_FAIL, "out of memory");
    } else {
      cli_table_print(&fields, "");
      cli_batch_of_job(p, &a->id, NULL); /* batches */
      cli_deps_print(&deps);
      if (h->nattempts) {
        printf("attempts:\n");
        cli_table_print(&attempts, "  ");
        if (cli_traces_print(h, a->trace) != 0)
          rc = cli_fail(err, CLI_FAIL, "out of memory");
      } else {
        printf("attempts: none\n");
      }
      printf("events:\n");
      cli_table_print(&events, "  ");
      if (nlogs) {
        printf("logs:\n");
        cli_table_print(&lines, "  ");
      } else {
        printf("logs: none\n");
      }
      if (cli_steps_print(steps) != 0)
        rc = cli_fail(err, CLI_FAIL, "out of memory");
    }
    cli_table_free(&fields);
    cli_table_free(&attempts);
    cli_table_free(&events);
    cli_table_free(&lines);
  }
  cli_job_view_free(&view);
  cli_redact_free(&red);
  cli_deps_free(&deps);
  pawl_steps_free(steps);
  pawl_logs_free(logs, nlogs);
  pawl_history_free(h);
  pawl_job_free(job);
  return rc;
}

/* State of a `pawl jobs` listing, for the pawl_list callback. */
typedef struct cli_list {
  int json;
  cli_table_t table;
  pawl_buf_t line;
  int oom;
  cli_redact_t red;        /* redaction */
  int failed;              /* red could not read a type's list: err says */
  char *err;
  int unknown;             /* a row's max_attempts no script here can tell */
} cli_list_t;

static int cli_list_cb(const pawl_job_t *j, void *data) {
  cli_list_t *l = data;
  if (l->json) {
    cli_job_view_t view;
    if (cli_redact_job(&l->red, j, &view, l->err) != 0) {
      cli_job_view_free(&view);
      l->failed = 1;
      return 1;
    }
    pawl__buf_reset(&l->line);
    cli_json_job_fields(&l->line, &view.job);
    cli_job_view_free(&view);
    pawl__buf_puts(&l->line, "}\n");
    if (l->line.oom) {
      l->oom = 1;
      return 1;
    }
    fputs(pawl__buf_cstr(&l->line), stdout);
    return 0;
  }
  char id[PAWL_ID_STRLEN], prio[16], att[32], run_at[ISO8601_STRLEN];
  pawl_id_format(&j->id, id);
  snprintf(prio, sizeof prio, "%d", (int)j->priority);
  /* "2/5"; "2/?" when no script here can tell the max_attempts. */
  int32_t max;
  cli_limit_of(j, 0, &max);
  if (max)
    snprintf(att, sizeof att, "%d/%d", (int)j->attempt, (int)max);
  else
    snprintf(att, sizeof att, "%d/?", (int)j->attempt);
  l->unknown |= !max;
  cli_time(j->run_at, run_at);
  const char *row[7] = {id,   j->type, j->queue, cli_job_state(j),
                        prio, att,     run_at};
  cli_table_row(&l->table, row);
  l->oom = l->table.oom;
  return l->oom;
}

static int cli_jobs(pawl_t *p, const cli_args_t *a, char *err) {
  static const char *const head[7] = {"ID",       "TYPE",    "QUEUE", "STATE",
                                      "PRIORITY", "ATTEMPT", "RUN_AT"};
  cli_list_t l = {.json = a->json, .table = {.ncols = 7}, .err = err};
  pawl__buf_init(&l.line);
  cli_redact_init(&l.red, p, a->raw);
  if (!l.json) cli_table_row(&l.table, head);
  int rc = pawl_list(p, &a->filter, cli_list_cb, &l);
  if (l.failed) rc = CLI_FAIL;
  else if (rc) rc = cli_lib_fail(p, rc, err);
  else if (l.oom || l.table.oom) rc = cli_fail(err, CLI_FAIL, "out of memory");
  else if (!l.json) cli_table_print(&l.table, "");
  if (!rc && l.unknown)
    printf("(N/?: " CLI_NO_SCRIPT " for the type in %s)\n",
           a->host.scripts_dir ? a->host.scripts_dir : "./scripts");
  cli_table_free(&l.table);
  pawl__buf_free(&l.line);
  cli_redact_free(&l.red);
  return rc;
}

static int cli_action(pawl_t *p, const cli_args_t *a, char *err) {
  int (*fn)(pawl_t *, const pawl_id_t *, const char *, pawl_job_t **) =
      a->cmd == CLI_CANCEL   ? pawl_cancel
      : a->cmd == CLI_PAUSE  ? pawl_pause
      : a->cmd == CLI_RESUME ? pawl_resume
                             : pawl_retry;
  pawl_job_t *job = NULL;
  int rc = fn(p, &a->id, a->reason, &job);
  if (rc) return cli_lib_fail(p, rc, err);
  if (a->json) {
    /* The job after the action, its payload redacted. */
    cli_redact_t red;
    cli_job_view_t view;
    cli_redact_init(&red, p, 0);
    rc = cli_redact_job(&red, job, &view, err);
    if (!rc) rc = cli_print_job_json(&view.job, err);
    cli_job_view_free(&view);
    cli_redact_free(&red);
  } else {
    char id[PAWL_ID_STRLEN];
    pawl_id_format(&job->id, id);
    printf("%s: %s\n", id, pawl_state_name(job->state));
  }
  pawl_job_free(job);
  return rc;
}

/* An SQLite database file as `pawl run` found it at start, to notice it
 * being deleted or replaced (a new file under the same name) while the
 * host serves the old one: its connections would keep using the orphaned
 * file, and everything enqueued into the new one would wait for nobody. */
typedef struct cli_dbfile {
  const char *path; /* NULL: not an SQLite file */
  dev_t dev;
  ino_t ino;
} cli_dbfile_t;

static void cli_dbfile_init(cli_dbfile_t *f, const cli_args_t *a) {
  struct stat sb;
  const char *url = cli_db_url(a);
  memset(f, 0, sizeof *f);
  if (strncmp(url, "sqlite:", 7) == 0 && stat(url + 7, &sb) == 0) {
    f->path = url + 7;
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
  }
}

/* 1 if the file is gone or another file has taken its name. */
static int cli_dbfile_changed(const cli_dbfile_t *f) {
  struct stat sb;
  if (!f->path) return 0;
  if (stat(f->path, &sb) != 0) return errno == ENOENT || errno == ENOTDIR;
  return sb.st_dev != f->dev || sb.st_ino != f->ino;
}

/* pawl run: starts the host, then waits for signals in this thread (they
 * are blocked everywhere else) until the host stops. The first SIGINT or
 * SIGTERM stops gracefully, a second one at once. Every second it checks
 * that the SQLite database file is still the one it opened; if not, it
 * stops gracefully and exits with a failure. */
static int cli_host(pawl_t *p, const cli_args_t *a, char *err) {
  /* `pawl run | tee log` and Ctrl-C: the terminal's SIGINT ends the reader
   * too, and the stop's log lines would kill the host by SIGPIPE halfway
   * through its stop, its socket left behind. A write to a pipe nobody
   * reads fails instead (the log line is lost), and the stop goes on. */
  signal(SIGPIPE, SIG_IGN);
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  cli_dbfile_t file;
  cli_dbfile_init(&file, a);
  /* The attached console's socket: --admin-socket, else next to the
   * SQLite database (none by default on PostgreSQL: a database URL names
   * no place on this machine). */
  pawl_host_opts_t host = a->host;
  pawl_admin_opts_t admin = a->admin;
  char *sock = NULL;
  const char *url = cli_db_url(a);
  if (a->admin_socket && strcmp(a->admin_socket, "none") != 0)
    admin.socket_path = a->admin_socket;
  else if (!a->admin_socket && strncmp(url, "sqlite:", 7) == 0 &&
           asprintf(&sock, "%s.sock", url + 7) > 0)
    admin.socket_path = sock;
  if (admin.token_file && !admin.listen) {
    free(sock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return cli_fail(err, CLI_USAGE,
                    "--admin-token-file is for --admin-listen (the unix "
                    "socket checks who connects instead)");
  }
  if (admin.socket_path || admin.listen) host.admin = &admin;
  pawl_metrics_opts_t metrics = a->metrics;
  if ((metrics.token_file || metrics.refresh_ms) && !metrics.listen) {
    free(sock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return cli_fail(err, CLI_USAGE,
                    "--metrics-token-file and --metrics-refresh are for "
                    "--metrics ADDRESS:PORT");
  }
  if (metrics.listen) host.metrics = &metrics;
  /* Retention: on by default, with the default policy. */
  pawl_retention_t *retain = NULL;
  if (cli_retention_policy(a->retain, &retain, err)) {
    free(sock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return CLI_USAGE;
  }
  host.retention = retain;
  int rc = pawl_start(p, &host);
  if (rc && sock && strncmp(pawl_errmsg(p), "admin socket ", 13) == 0) {
    /* The default socket only: a second host on the same SQLite file, a
     * directory others may write to, a path too long. The host runs
     * without it; a path given with --admin-socket is refused instead. */
    fprintf(stderr, "pawl: warning: %s; running without an admin socket\n",
            pawl_errmsg(p));
    admin.socket_path = NULL;
    host.admin = admin.listen ? &admin : NULL;
    rc = pawl_start(p, &host);
  }
  free(sock);
  pawl_retention_free(retain); /* pawl_start copied it */
  if (rc) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return cli_lib_fail(p, rc, err);
  }
  int signals = 0, lost = 0;
  for (unsigned tick = 1; pawl_wait(p, 0) == PAWL_EBUSY; tick++) {
    struct timespec ts = {0, 100 * 1000000};
    int sig = sigtimedwait(&set, NULL, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      signals++;
      pawl_stop(p, signals == 1 ? PAWL_STOP_GRACEFUL : PAWL_STOP_NOW);
    }
    if (!lost && tick % 10 == 0 && cli_dbfile_changed(&file)) {
      lost = 1;
      /* Said now, not at exit: running jobs may take the grace period. */
      fprintf(stderr,
              "pawl: the database file %s was deleted or replaced while "
              "pawl run was serving it; stopping\n",
              file.path);
      pawl_stop(p, PAWL_STOP_GRACEFUL);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (lost)
    return cli_fail(err, CLI_FAIL,
                    "stopped: the database file %s was deleted or replaced",
                    file.path);
  /* It gave up, or left outcomes unstored: say so, and exit 1. */
  if ((rc = pawl_host_status(p)) != 0)
    return cli_fail(err, CLI_FAIL, "%s", pawl_errmsg(p));
  return CLI_OK;
}

static int cli_run(pawl_t *p, const cli_args_t *a, char *err) {
  cli_limits_scripts(a->host.scripts_dir); /* the views' limits */
  switch (a->cmd) {
  case CLI_RUN: return cli_host(p, a, err);
  case CLI_MIGRATE: return cli_migrate(p, a, err);
  case CLI_ENQUEUE: return cli_enqueue(p, a, err);
  case CLI_SHOW: return cli_show(p, a, err);
  case CLI_JOBS: return cli_jobs(p, a, err);
  case CLI_CANCEL:
  case CLI_PAUSE:
  case CLI_RESUME:
  case CLI_RETRY:
    if (a->npos == 0) /* a filter: every matching job */
      return cli_admin_bulk(p,
                            a->cmd == CLI_CANCEL   ? PAWL_ACTION_CANCEL
                            : a->cmd == CLI_PAUSE  ? PAWL_ACTION_PAUSE
                            : a->cmd == CLI_RESUME ? PAWL_ACTION_RESUME
                                                   : PAWL_ACTION_RETRY,
                            &a->filter, a->reason, a->yes, a->json, err,
                            CLI_ERRLEN);
    return cli_action(p, a, err);
  case CLI_STATS: return cli_admin_stats(p, a->json, err, CLI_ERRLEN);
  case CLI_NODES: return cli_admin_nodes(p, a->json, err, CLI_ERRLEN);
  case CLI_LOCKS: return cli_admin_locks(p, a->json, err, CLI_ERRLEN);
  case CLI_BATCH:
    return cli_batch_main(p, a->pos[0], a->pos[1], a->json, err, CLI_ERRLEN);
  case CLI_QUEUE:
    return cli_queue_main(p, a->pos[0], a->npos > 1 ? a->pos[1] : NULL,
                          a->reason, a->age_boost, a->json, err, CLI_ERRLEN);
  case CLI_LIMIT: return cli_limits_main(p, &a->limit, err);
  case CLI_CLEANUP: {
    cli_cleanup_args_t c = {.retain = a->retain, .state = a->filter.state,
                            .older_than_ms = a->has_older_than
                                                 ? a->filter.older_than_ms
                                                 : -1,
                            .dry_run = a->dry_run, .json = a->json};
    return cli_cleanup_main(p, &c, err);
  }
  case CLI_SIGNAL:
    return cli_flow_signal(p, a->pos[0], a->pos[1],
                           a->npos > 2 ? a->pos[2] : NULL, a->json, err,
                           CLI_ERRLEN);
  case CLI_REPLACE: {
    pawl_replace_opts_t o;
    pawl_replace_opts_init(&o);
    o.payload = a->replace_payload;
    o.params = a->enq.params;
    o.queue = a->enq.queue;
    o.set_priority = a->has_priority;
    o.priority = a->enq.priority;
    o.run_at = a->enq.run_at;
    o.delay_ms = a->enq.delay_ms;
    o.max_attempts = a->enq.max_attempts;
    o.timeout_s = a->enq.timeout_s;
    o.reason = a->reason;
    return cli_flow_replace(p, &a->id, &o, a->json, err, CLI_ERRLEN);
  }
  default: return cli_fail(err, CLI_USAGE, "internal: no command to run");
  }
}

/* Prints "pawl: MESSAGE" as exactly one line, whatever the message holds
 * (library messages quote user input, which may contain newlines). */
static void cli_print_error(const char *msg) {
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_puts(&b, "pawl: ");
  cli_text(&b, *msg ? msg : "unknown error");
  fprintf(stderr, "%s\n", b.oom ? "pawl: out of memory" : pawl__buf_cstr(&b));
  pawl__buf_free(&b);
}

/* pawl bench: the end-to-end benchmark (bench/cli_bench.c). */
int cli_bench_main(int argc, char **argv);
/* pawl cron next (host/cli/cli_cron.c): prints to stdout; 0, or 1/2 with a
 * message in err. */
int cli_cron_next(const char *expr, const char *tz, const char *from,
                  const char *count, char *err, size_t errlen);
/* pawl recurring (host/cli/cli_recurring.c): argv[0] is "recurring". */
int cli_recurring_main(int argc, char **argv, const char *db, int create,
                       char *err, size_t errlen);
/* pawl top (host/cli/cli_top.c): argv[0] is "top". */
int cli_top_main(int argc, char **argv, const char *db, int create,
                 char *err, size_t errlen);

int main(int argc, char **argv) {
  char err[CLI_ERRLEN] = "";
  if (argc >= 2 && strcmp(argv[1], "bench") == 0)
    return cli_bench_main(argc - 1, argv + 1);
  /* pawl [--db URL] recurring ... (host/cli/cli_recurring.c parses its
   * own verbs and options). */
  int rec_at = 0, rec_create = 0, top = 0;
  const char *rec_db = NULL;
  for (int i = 1; i < argc && !rec_at; i++) {
    if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      rec_db = argv[++i];
    else if (strcmp(argv[i], "--create") == 0)
      rec_create = 1;
    else if (strcmp(argv[i], "--sync-full") == 0)
      continue;
    else if (strcmp(argv[i], "recurring") == 0)
      rec_at = i;
    else if (strcmp(argv[i], "top") == 0) /* host/cli/cli_top.c */
      rec_at = i, top = 1;
    else
      break;
  }
  if (rec_at) {
    int rc = top ? cli_top_main(argc - rec_at, argv + rec_at, rec_db,
                                rec_create, err, sizeof err)
                 : cli_recurring_main(argc - rec_at, argv + rec_at, rec_db,
                                      rec_create, err, sizeof err);
    if (fflush(stdout) != 0 && !rc) {
      snprintf(err, sizeof err, "cannot write to standard output: %s",
               strerror(errno));
      rc = CLI_FAIL;
    }
    if (rc) cli_print_error(err);
    return rc;
  }
  cli_args_t a;
  memset(&a, 0, sizeof a);
  pawl_enqueue_opts_init(&a.enq);
  pawl_filter_init(&a.filter);
  pawl_host_opts_init(&a.host);
  /* Each --tag takes two arguments, so argc slots always suffice. */
  a.tags = calloc((size_t)argc, sizeof *a.tags);
  if (!a.tags) {
    cli_print_error("out of memory");
    return CLI_FAIL;
  }

  int rc = cli_parse(argc, argv, &a, err), quiet = 0;
  if (!rc && a.cmd == CLI_HELP) {
    /* No arguments at all is a usage error: show the text where errors go. */
    fputs(cli_usage_text, a.no_args ? stderr : stdout);
    rc = a.no_args ? CLI_USAGE : CLI_OK;
  } else if (!rc && a.cmd == CLI_VERSION) {
    printf("pawl %s\n", PAWL_VERSION);
  } else if (!rc && a.cmd == CLI_CRON) {
    rc = cli_cron_next(a.pos[1], a.cron_tz, a.cron_from, a.cron_count, err,
                       sizeof err);
  } else if (!rc && a.cmd == CLI_CONSOLE) {
    /* The console opens its database itself (through the Lua module). */
    cli_console_args_t ca = {.db = a.db, .create = a.create,
                             .db_mode = a.db_mode, .sync_full = a.sync_full,
                             .scripts = a.host.scripts_dir, .code = a.code,
                             .file = a.npos ? a.pos[0] : NULL,
                             .json = a.json, .connect = a.connect,
                             .token_file = a.admin.token_file};
    rc = cli_console_main(&ca, err, sizeof err);
    quiet = rc && !err[0]; /* the console printed its error itself */
  } else if (!rc) {
    pawl_options_t opts;
    pawl_options_init(&opts);
    opts.db = a.db;
    opts.sync_full = a.sync_full;
    /* Only migrate (or --create) makes a database: a mistyped --db must
     * not become a new, empty one that `pawl run` then quietly serves. */
    opts.create = a.cmd == CLI_MIGRATE || a.create;
    opts.file_mode = a.db_mode;
    opts.node_id = a.node_id;
    opts.lease_ms = a.lease_ms;
    /* A node writes at once: it waits for the write lock here (cli_open)
     * rather than start and fail its first writes. */
    opts.check_writable = a.cmd == CLI_RUN;
    pawl_t *p = NULL;
    int orc = cli_open(&p, &opts, &a, err, sizeof err);
    if (orc) {
      if (!err[0]) snprintf(err, sizeof err, "%s", pawl_strerror(orc));
      if (!opts.create && (strncmp(err, "no database at ", 15) == 0 ||
                           strncmp(err, "no pawl database in ", 20) == 0)) {
        size_t n = strlen(err);
        snprintf(err + n, sizeof err - n, " (or pass --create)");
      }
      rc = orc == PAWL_EINVAL ? CLI_USAGE : CLI_FAIL;
    } else {
      rc = cli_run(p, &a, err);
      pawl_close(p);
    }
  }
  free(a.tags);
  free(a.after);
  free(a.queues);
  free(a.queues_copy);
  free(a.queue_conc);
  free(a.payload_read);
  free(a.params_read);
  free(a.replace_payload_read);

  if (fflush(stdout) != 0 && !rc) {
    snprintf(err, sizeof err, "cannot write to standard output: %s",
             strerror(errno));
    rc = CLI_FAIL;
  }
  /* CLI_NOOP (pawl signal: delivered before) said so itself. */
  if (rc && !quiet && !(a.cmd == CLI_HELP && a.no_args) &&
      !(rc == CLI_NOOP && !err[0]))
    cli_print_error(err);
  return rc;
}
