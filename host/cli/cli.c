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
  CLI_SIGNAL,  /* cli/cli_flow.c */
  CLI_REPLACE,
  CLI_BATCH,   /* cli/cli_batch.c */
  CLI_RUN,
  CLI_CONSOLE, /* cli/console.c */
  CLI_TOP,     /* cli/cli_top.c: parses its own options */
  CLI_STATS,   /* cli/cli_admin.c */
  CLI_NODES,
  CLI_LOCKS,
  CLI_QUEUE,   /* cli/cli_queue.c */
  CLI_LIMIT,   /* cli/cli_limits.c */
  CLI_CRON,    /* cli/cli_cron.c */
  CLI_RECURRING, /* cli/cli_recurring.c: parses its own verbs and options */
  CLI_CLEANUP, /* cli/cli_cleanup.c (retention) */
  CLI_BENCH,   /* bench/cli_bench.c: parses its own options */
  CLI_VERSION,
  CLI_HELP,
  CLI_CMD_COUNT
} cli_cmd_t;

/* Every command, in the order `pawl --help` lists them: its name, its
 * usage (one form a line, the words after the command's name), the one
 * line `pawl --help` shows, and what `pawl CMD --help` says under the
 * usage (NULL: the one line). The options each takes are in cli_opts
 * below. recurring, top and bench parse their own arguments and print
 * their own help (beside their parsers); they are here for the list. */
static const struct cli_cmd_info {
  const char *name, *usage, *summary, *about;
} cli_cmds[CLI_CMD_COUNT] = {
    [CLI_MIGRATE] = {"migrate", "", "create the database or bring its schema "
                     "up to date", NULL},
    [CLI_ENQUEUE] = {"enqueue", "TYPE [JSON | - | @FILE] [OPTIONS]",
                     "add a job; prints its id",
                     "Adds a job of TYPE with the payload JSON (default {}; - "
                     "reads it from standard input, @FILE from FILE, at most "
                     "16 MiB; the same for --params) and prints its id. The "
                     "script's queue, priority and resource apply unless "
                     "given here; its max_attempts and timeout apply when the "
                     "job runs."},
    [CLI_SHOW] = {"show", "ID [OPTIONS]",
                  "a job with its attempts, transitions and logs", NULL},
    [CLI_JOBS] = {"jobs", "[OPTIONS]", "list jobs, newest first", NULL},
    [CLI_CANCEL] = {"cancel", "ID [OPTIONS]\nFILTER... [--limit N] [--yes] "
                    "[OPTIONS]",
                    "pending, running, blocked or paused -> canceled",
                    "Cancels the job ID, or every job the filter options "
                    "match (at least one filter; above 100 jobs it asks on "
                    "a terminal, else needs --yes)."},
    [CLI_PAUSE] = {"pause", "ID [OPTIONS]\nFILTER... [--limit N] [--yes] "
                   "[OPTIONS]",
                   "pending or failed -> paused",
                   "Pauses the job ID, or every job the filter options match "
                   "(at least one filter; above 100 jobs it asks on a "
                   "terminal, else needs --yes)."},
    [CLI_RESUME] = {"resume", "ID [OPTIONS]\nFILTER... [--limit N] [--yes] "
                    "[OPTIONS]",
                    "paused -> the state it was paused from",
                    "Resumes the job ID, or every job the filter options "
                    "match (at least one filter; above 100 jobs it asks on "
                    "a terminal, else needs --yes)."},
    [CLI_RETRY] = {"retry", "ID [OPTIONS]\nFILTER... [--limit N] [--yes] "
                   "[OPTIONS]",
                   "failed -> pending, attempts reset",
                   "Retries the job ID, or every job the filter options "
                   "match (at least one filter; above 100 jobs it asks on "
                   "a terminal, else needs --yes)."},
    [CLI_SIGNAL] = {"signal", "KEY approve|reject [JSON] [OPTIONS]",
                    "deliver a decision to the job waiting for KEY",
                    "Delivers a decision (and a payload) to the job waiting "
                    "for KEY: it runs and reads it as job.signal. Exit "
                    "status 3 if one was delivered before (nothing "
                    "changed)."},
    [CLI_REPLACE] = {"replace", "ID [OPTIONS]",
                     "enqueue a changed copy of a job and cancel it",
                     "Enqueues a copy of the job with the changes given and "
                     "cancels the job (a running one is asked to stop), in "
                     "one transaction; prints the new id."},
    [CLI_BATCH] = {"batch", "show ID [OPTIONS]",
                   "a batch's progress: children by outcome, callbacks",
                   NULL},
    [CLI_RUN] = {"run", "[OPTIONS]",
                 "run the jobs: a worker host with Lua job scripts",
                 "Runs the jobs: a worker host with the Lua job scripts of "
                 "--scripts DIR. The first SIGINT or SIGTERM stops it "
                 "gracefully (running jobs get --grace seconds), a second "
                 "one at once."},
    [CLI_CONSOLE] = {"console", "[FILE.lua | -e CODE] [OPTIONS]",
                     "the operator's Lua console (a REPL on a terminal)",
                     NULL},
    [CLI_TOP] = {"top", "[OPTIONS]",
                 "a live view: throughput, queues, nodes, running and dead "
                 "jobs", NULL},
    [CLI_STATS] = {"stats", "[OPTIONS]",
                   "jobs by state and queue, throughput, waits", NULL},
    [CLI_NODES] = {"nodes", "[OPTIONS]", "the nodes serving this database",
                   NULL},
    [CLI_LOCKS] = {"locks", "[OPTIONS]", "the distributed locks", NULL},
    [CLI_QUEUE] = {"queue", "list [OPTIONS]\npause Q [--reason TEXT] "
                   "[OPTIONS]\nresume Q [OPTIONS]\nset Q --age-boost DUR "
                   "[OPTIONS]",
                   "list, pause and resume queues; set a queue's age boost",
                   "queue list: the queues, their jobs by state, oldest due "
                   "wait, paused or not, age boost. queue pause: no node "
                   "claims Q's jobs until it is resumed (running ones "
                   "finish). queue set: Q's own age boost."},
    [CLI_LIMIT] = {"limit", "list [OPTIONS]\nset NAME [MAX] [--rate N/DUR] "
                   "[OPTIONS]\nrm NAME [OPTIONS]",
                   "resource and rate limits: list, set, remove",
                   "limit set: at most MAX jobs of resource NAME running at "
                   "once, and/or N starts per window DUR; NAME queue:Q "
                   "limits queue Q; replaces NAME's limit."},
    [CLI_CRON] = {"cron", "next EXPR [OPTIONS]",
                  "the next fire times of a cron expression (no database)",
                  NULL},
    [CLI_RECURRING] = {"recurring", "VERB [ARGS] [OPTIONS]",
                       "recurring jobs kept in the database (cron with "
                       "time zones)", NULL},
    [CLI_CLEANUP] = {"cleanup", "[OPTIONS]",
                     "remove old finished jobs now, as the retention policy "
                     "says",
                     "Removes old finished jobs now, as the retention policy "
                     "says (default succeeded=1d,failed=7d,canceled=1d), and "
                     "prints the counts by state, queue and type."},
    [CLI_BENCH] = {"bench", "[OPTIONS]",
                   "measure enqueue, throughput and pickup latency", NULL},
    [CLI_VERSION] = {"version", "", "print pawl's version", NULL},
    [CLI_HELP] = {"help", "[COMMAND]",
                  "this text, or a command's own (pawl COMMAND --help)",
                  NULL},
};

#define CLI_BIT(c) (1u << (c))
#define CLI_ACTIONS                                                          \
  (CLI_BIT(CLI_CANCEL) | CLI_BIT(CLI_PAUSE) | CLI_BIT(CLI_RESUME) |          \
   CLI_BIT(CLI_RETRY))
#define CLI_LISTS (CLI_BIT(CLI_JOBS) | CLI_ACTIONS) /* the job filters */

typedef enum cli_opt_id {
  CLI_O_DB, /* the global options */
  CLI_O_CREATE,
  CLI_O_DB_MODE,
  CLI_O_SYNC_FULL,
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

/* Which command takes which option, and what `pawl CMD --help` says of it:
 * one table, so that the parser, the "unknown option --x for CMD" message
 * and the help texts cannot disagree. An option whose meaning differs
 * between commands has one row per meaning (the same id). Global options
 * (cmds 0, global 1) go anywhere on the line. docs/cli.md and the manual
 * pages list the same options per command: spec/functional/cli_help_spec
 * checks both ways. */
static const struct cli_opt {
  const char *name;
  cli_opt_id_t id;
  const char *arg; /* the value's name in the help; NULL: takes none */
  unsigned cmds;
  int global;
  const char *help; /* one line, wrapped when printed */
} cli_opts[] = {
    {"--db", CLI_O_DB, "URL", 0, 1,
     "the database: sqlite:PATH, postgres://... (a libpq URI) or "
     "postgres:CONNINFO; default $PAWL_DB, else sqlite:./pawl.db"},
    {"--create", CLI_O_CREATE, NULL, 0, 1,
     "create the database if there is none (only migrate does without it)"},
    {"--db-mode", CLI_O_DB_MODE, "MODE", 0, 1,
     "permission bits of a new SQLite database file and its -wal/-shm files "
     "(default 0600)"},
    {"--sync-full", CLI_O_SYNC_FULL, NULL, 0, 1,
     "SQLite synchronous=FULL: commits survive power loss, at some cost in "
     "speed"},
    {"--queue", CLI_O_QUEUE, "Q", CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE),
     0, "the queue (default: the script's, else \"default\")"},
    {"--queue", CLI_O_QUEUE, "Q", CLI_LISTS, 0, "only jobs of queue Q"},
    {"--priority", CLI_O_PRIORITY, "N",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "higher runs first (default: the script's, else 0)"},
    {"--delay", CLI_O_DELAY, "SECONDS",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "run no sooner than now + SECONDS (decimals allowed)"},
    {"--run-at", CLI_O_RUN_AT, "TIME",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "run no sooner than TIME, ISO 8601 with a zone (2026-11-21T21:05:03Z, "
     "...+01:00, or 2026-11-21)"},
    {"--max-attempts", CLI_O_MAX_ATTEMPTS, "N",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "attempts before it fails for good (default: the script's when it "
     "runs, else 25)"},
    {"--timeout", CLI_O_TIMEOUT, "SECONDS",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "limit for one attempt (default: the script's when it runs, else the "
     "host's)"},
    {"--key", CLI_O_KEY, "K", CLI_BIT(CLI_ENQUEUE), 0,
     "idempotency key: a repeat prints the first job's id"},
    {"--business-key", CLI_O_BUSINESS_KEY, "K", CLI_BIT(CLI_ENQUEUE), 0,
     "refused while another live job holds K"},
    {"--existing", CLI_O_EXISTING, NULL, CLI_BIT(CLI_ENQUEUE), 0,
     "with --business-key: print the holder's id instead"},
    {"--tag", CLI_O_TAG, "T", CLI_BIT(CLI_ENQUEUE), 0,
     "a tag; repeat for more"},
    {"--tag", CLI_O_TAG, "T", CLI_LISTS, 0, "only jobs tagged T"},
    {"--params", CLI_O_PARAMS, "JSON",
     CLI_BIT(CLI_ENQUEUE) | CLI_BIT(CLI_REPLACE), 0,
     "parameters for the job's handler (- or @FILE: read them)"},
    {"--payload", CLI_O_PAYLOAD, "JSON", CLI_BIT(CLI_REPLACE), 0,
     "the copy's payload (- or @FILE: read it; default the job's)"},
    {"--signal", CLI_O_SIGNAL, "KEY", CLI_BIT(CLI_ENQUEUE), 0,
     "wait (blocked) for `pawl signal KEY ...`; KEY is unique among live "
     "jobs"},
    {"--signal-timeout", CLI_O_SIGNAL_TIMEOUT, "SECONDS", CLI_BIT(CLI_ENQUEUE),
     0, "with --signal: fail if no decision comes in time"},
    {"--correlation-id", CLI_O_CORRELATION_ID, "C", CLI_BIT(CLI_ENQUEUE), 0,
     "id tying the job to a request or a trace"},
    {"--blocked", CLI_O_BLOCKED, NULL, CLI_BIT(CLI_ENQUEUE), 0,
     "start blocked instead of pending"},
    {"--ordering-key", CLI_O_ORDERING_KEY, "K", CLI_BIT(CLI_ENQUEUE), 0,
     "run one at a time with the other jobs of key K, in enqueue order "
     "(default: the script's ordering_key string)"},
    {"--resource", CLI_O_RESOURCE, "R", CLI_BIT(CLI_ENQUEUE), 0,
     "hold a permit of resource R while it runs (see pawl limit)"},
    {"--after", CLI_O_AFTER, "ID[,ID...]", CLI_BIT(CLI_ENQUEUE), 0,
     "wait (blocked) until these jobs have ended; repeat for more"},
    {"--when", CLI_O_WHEN, "W", CLI_BIT(CLI_ENQUEUE), 0,
     "with --after: run if the parents ended as W says: success (default), "
     "failure, done or branch:NAME; else the job is canceled"},
    {"--scripts", CLI_O_SCRIPTS, "DIR", CLI_BIT(CLI_ENQUEUE), 0,
     "where the job's script is (default ./scripts)"},
    {"--rate", CLI_O_RATE, "N/DUR", CLI_BIT(CLI_LIMIT), 0,
     "limit set: at most N starts per window DUR (like 100/60s; fixed "
     "windows)"},
    {"--state", CLI_O_STATE, "S", CLI_LISTS, 0,
     "only jobs in state S: pending, running, succeeded, failed, canceled, "
     "paused or blocked"},
    {"--state", CLI_O_STATE, "S", CLI_BIT(CLI_CLEANUP), 0,
     "only finished jobs in state S: succeeded, failed or canceled"},
    {"--type", CLI_O_TYPE, "T", CLI_LISTS, 0, "only jobs of type T"},
    {"--older-than", CLI_O_OLDER_THAN, "DUR", CLI_LISTS, 0,
     "only jobs finished (or, unfinished, created) longer ago than DUR (90s, "
     "15m, 2h, 7d)"},
    {"--older-than", CLI_O_OLDER_THAN, "DUR", CLI_BIT(CLI_CLEANUP), 0,
     "one age for every finished state, in place of the policy's ages"},
    {"--limit", CLI_O_LIMIT, "N", CLI_BIT(CLI_JOBS), 0,
     "at most N jobs (default 100)"},
    {"--limit", CLI_O_LIMIT, "N", CLI_ACTIONS, 0,
     "with a filter: at most N jobs"},
    {"--yes", CLI_O_YES, NULL, CLI_ACTIONS, 0,
     "with a filter: act on more than 100 jobs without asking"},
    {"--reason", CLI_O_REASON, "TEXT", CLI_ACTIONS | CLI_BIT(CLI_REPLACE), 0,
     "recorded in the job's history"},
    {"--reason", CLI_O_REASON, "TEXT", CLI_BIT(CLI_QUEUE), 0,
     "queue pause: recorded with the pause"},
    {"--age-boost", CLI_O_AGE_BOOST, "DUR", CLI_BIT(CLI_QUEUE), 0,
     "queue set: +1 priority per DUR waited (60s, 15m; 0: none; database: "
     "the database's setting)"},
    {"--raw", CLI_O_RAW, NULL, CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS), 0,
     "payloads as stored: by default secret fields (password, token, key, "
     "..., and the script's redact list) show as \"<redacted>\""},
    {"--trace", CLI_O_TRACE, NULL, CLI_BIT(CLI_SHOW), 0,
     "each attempt's Lua traceback"},
    {"--scripts", CLI_O_SCRIPTS, "DIR", CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS),
     0, "the scripts that tell the max_attempts and timeout of jobs "
     "enqueued without them (default ./scripts)"},
    {"-e", CLI_O_CODE, "CODE", CLI_BIT(CLI_CONSOLE), 0,
     "run CODE instead of reading a FILE or the terminal"},
    {"--scripts", CLI_O_SCRIPTS, "DIR", CLI_BIT(CLI_CONSOLE), 0,
     "the scripts the console's views read (default ./scripts)"},
    {"--connect", CLI_O_CONNECT, "PATH|ADDRESS:PORT", CLI_BIT(CLI_CONSOLE), 0,
     "attach to a running `pawl run`: its admin socket, or its "
     "--admin-listen"},
    {"--admin-token-file", CLI_O_ADMIN_TOKEN_FILE, "F", CLI_BIT(CLI_CONSOLE),
     0, "with --connect ADDRESS:PORT: the file holding the host's token"},
    /* pawl run */
    {"--scripts", CLI_O_SCRIPTS, "DIR", CLI_BIT(CLI_RUN), 0,
     "job scripts (default ./scripts)"},
    {"--workers", CLI_O_WORKERS, "N", CLI_BIT(CLI_RUN), 0,
     "worker threads (default: one per core); with --queues Q=N, those of "
     "the queues without a number"},
    {"--queues", CLI_O_QUEUES, "Q1,Q2", CLI_BIT(CLI_RUN), 0,
     "serve only these queues (default all); Q=N gives Q N workers of its "
     "own: mail=4,default"},
    {"--node-id", CLI_O_NODE_ID, "ID", CLI_BIT(CLI_RUN), 0,
     "this node's name (default hostname-pid)"},
    {"--until-idle", CLI_O_UNTIL_IDLE, NULL, CLI_BIT(CLI_RUN), 0,
     "exit once nothing is running or due"},
    {"--idle-wait", CLI_O_IDLE_WAIT, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "with --until-idle, wait for jobs due this soon and for expiring "
     "leases of dead nodes (default 5)"},
    {"--give-up", CLI_O_GIVE_UP, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "with --until-idle, exit 1 once the database has failed for this long "
     "(default 60; 0: never)"},
    {"--log-level", CLI_O_LOG_LEVEL, "L", CLI_BIT(CLI_RUN), 0,
     "debug, info, warn or error (default info)"},
    {"--log-format", CLI_O_LOG_FORMAT, "F", CLI_BIT(CLI_RUN), 0,
     "text or json (default text)"},
    {"--poll", CLI_O_POLL, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "poll interval (default 1)"},
    {"--lease", CLI_O_LEASE, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "lease of a claimed job (default 30)"},
    {"--grace", CLI_O_GRACE, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "on SIGINT/SIGTERM, time running jobs get to finish (default 30)"},
    {"--prefetch", CLI_O_PREFETCH, "N", CLI_BIT(CLI_RUN), 0,
     "jobs claimed ahead of free workers (default: about 10 ms of work per "
     "worker)"},
    {"--ahead-hold", CLI_O_AHEAD_HOLD, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "every worker busy and nothing started or ended for this long: hand "
     "back the jobs claimed ahead (default 0.1)"},
    {"--load-timeout", CLI_O_LOAD_TIMEOUT, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "how long a script's top level may run when it is loaded (default 10)"},
    {"--job-memory", CLI_O_JOB_MEMORY, "SIZE", CLI_BIT(CLI_RUN), 0,
     "heap ceiling of a job whose script sets no memory (64M, 1G, bytes; "
     "default 256M)"},
    {"--allow-io", CLI_O_ALLOW_IO, NULL, CLI_BIT(CLI_RUN), 0,
     "let job code read and write files (io.open, io.lines, ...)"},
    {"--allow-env", CLI_O_ALLOW_ENV, NULL, CLI_BIT(CLI_RUN), 0,
     "let job code read the environment (os.getenv)"},
    {"--allow-signal", CLI_O_ALLOW_SIGNAL, NULL, CLI_BIT(CLI_RUN), 0,
     "let job code signal any job (without it, only the jobs it enqueued)"},
    {"--allow-replace", CLI_O_ALLOW_REPLACE, NULL, CLI_BIT(CLI_RUN), 0,
     "let job code replace or cancel any job (without it, only its own)"},
    {"--allow-restart", CLI_O_ALLOW_RESTART, NULL, CLI_BIT(CLI_RUN), 0,
     "let job code restart any dead job instance (without it, only its "
     "own)"},
    {"--allow-webhook", CLI_O_ALLOW_WEBHOOK, "HOST[:PORT]", CLI_BIT(CLI_RUN), 0,
     "let job code post webhooks to this destination (repeatable)"},
    {"--unsafe-lua", CLI_O_UNSAFE_LUA, NULL, CLI_BIT(CLI_RUN), 0,
     "give job code the full standard library"},
    {"--admin-socket", CLI_O_ADMIN_SOCKET, "PATH", CLI_BIT(CLI_RUN), 0,
     "the attached console's unix socket (default: the SQLite database's "
     "path + .sock; none: no socket)"},
    {"--admin-listen", CLI_O_ADMIN_LISTEN, "ADDRESS:PORT", CLI_BIT(CLI_RUN), 0,
     "also a TCP listener for consoles (needs --admin-token-file)"},
    {"--admin-token-file", CLI_O_ADMIN_TOKEN_FILE, "F", CLI_BIT(CLI_RUN), 0,
     "the token file (mode 600) a TCP console must present"},
    {"--admin-timeout", CLI_O_ADMIN_TIMEOUT, "SECONDS", CLI_BIT(CLI_RUN), 0,
     "how long a console's chunk may run (default 30)"},
    {"--metrics", CLI_O_METRICS, "ADDRESS:PORT", CLI_BIT(CLI_RUN), 0,
     "serve Prometheus metrics on /metrics (127.0.0.1:9464; port 0: any "
     "free one)"},
    {"--metrics-token-file", CLI_O_METRICS_TOKEN_FILE, "F", CLI_BIT(CLI_RUN),
     0, "the bearer token scrapers send; required for a non-loopback "
     "address"},
    {"--metrics-refresh", CLI_O_METRICS_REFRESH, "SECONDS", CLI_BIT(CLI_RUN),
     0, "how often the database gauges are read (default 5)"},
    {"--retain", CLI_O_RETAIN, "POLICY", CLI_BIT(CLI_RUN), 0,
     "retention of finished jobs (default succeeded=1d,failed=7d,"
     "canceled=1d; off: no sweep on this node)"},
    /* retention */
    {"--dry-run", CLI_O_DRY_RUN, NULL, CLI_BIT(CLI_CLEANUP), 0,
     "count what would be removed; change nothing"},
    {"--retain", CLI_O_RETAIN, "POLICY", CLI_BIT(CLI_CLEANUP), 0,
     "the policy to apply (default succeeded=1d,failed=7d,canceled=1d)"},
    {"--tz", CLI_O_TZ, "ZONE", CLI_BIT(CLI_CRON), 0,
     "IANA time zone, like Europe/Berlin (default UTC)"},
    {"--from", CLI_O_FROM, "TIME", CLI_BIT(CLI_CRON), 0,
     "start after TIME, ISO 8601 with a zone (default now)"},
    {"--count", CLI_O_COUNT, "N", CLI_BIT(CLI_CRON), 0,
     "how many, 1-1000 (default 5)"},
    {"--json", CLI_O_JSON, NULL,
     CLI_BIT(CLI_SHOW) | CLI_BIT(CLI_JOBS) | CLI_ACTIONS | CLI_BIT(CLI_STATS) |
         CLI_BIT(CLI_NODES) | CLI_BIT(CLI_LOCKS) | CLI_BIT(CLI_CONSOLE) |
         CLI_BIT(CLI_QUEUE) | CLI_BIT(CLI_LIMIT) | CLI_BIT(CLI_SIGNAL) |
         CLI_BIT(CLI_REPLACE) | CLI_BIT(CLI_BATCH) | CLI_BIT(CLI_CLEANUP),
     0, "print JSON instead of text (JSON Lines for lists)"},
};

#define CLI_NOPTS (sizeof cli_opts / sizeof cli_opts[0])

/* Prints "  LEFT  TEXT" with TEXT in a column of its own, wrapped at 79
 * columns (a LEFT too wide for the column puts TEXT on the next line). */
static void cli_help_item(FILE *f, const char *left, const char *arg,
                          const char *text) {
  enum { COL = 28, WIDTH = 79 };
  int col = fprintf(f, "  %s%s%s", left, arg ? " " : "", arg ? arg : "");
  if (col > COL - 2) {
    fputc('\n', f);
    col = 0;
  }
  fprintf(f, "%*s", COL - col, "");
  col = COL;
  for (const char *p = text; *p;) {
    int w = (int)strcspn(p, " ");
    if (col > COL && col + 1 + w > WIDTH) {
      fprintf(f, "\n%*s", COL, "");
      col = COL;
    } else if (col > COL) {
      fputc(' ', f);
      col++;
    }
    col += fprintf(f, "%.*s", w, p);
    for (p += w; *p == ' '; p++) {}
  }
  fputc('\n', f);
}

/* Prints a paragraph wrapped at 79 columns. */
static void cli_help_para(FILE *f, const char *text) {
  int col = 0;
  for (const char *p = text; *p;) {
    int w = (int)strcspn(p, " ");
    if (col && col + 1 + w > 79) {
      fputc('\n', f);
      col = 0;
    } else if (col) {
      fputc(' ', f);
      col++;
    }
    col += fprintf(f, "%.*s", w, p);
    for (p += w; *p == ' '; p++) {}
  }
  fputc('\n', f);
}

/* `pawl --help` (cmd CLI_NONE): every command with its one line, and the
 * global options; `pawl CMD --help`: CMD's usage and every option it
 * takes, one line each, from cli_opts. */
static void cli_help(FILE *f, cli_cmd_t cmd) {
  if (cmd == CLI_NONE) {
    fputs("usage: pawl [GLOBAL OPTIONS] COMMAND [ARGS] [OPTIONS]\n\n"
          "Commands (pawl COMMAND --help, or pawl help COMMAND, lists its "
          "options):\n", f);
    for (int c = 0; c < CLI_CMD_COUNT; c++)
      fprintf(f, "  %-11s %s\n", cli_cmds[c].name, cli_cmds[c].summary);
    fputs("\nGlobal options (anywhere on the line):\n", f);
    for (size_t k = 0; k < CLI_NOPTS; k++)
      if (cli_opts[k].global)
        cli_help_item(f, cli_opts[k].name, cli_opts[k].arg, cli_opts[k].help);
    fputs("\nOptions also take the form --name=value; \"--\" ends the "
          "options.\n"
          "Exit status: 0 success, 1 the operation failed, 2 bad usage or "
          "input.\n"
          "More: man pawl, and docs/cli.md.\n", f);
    return;
  }
  const struct cli_cmd_info *c = &cli_cmds[cmd];
  const char *form = c->usage;
  for (int first = 1; first || *form; first = 0) {
    int len = (int)strcspn(form, "\n");
    fprintf(f, "%s pawl %s%s%.*s\n", first ? "usage:" : "      ", c->name,
            len ? " " : "", len, form);
    form += len + (form[len] == '\n');
  }
  fputc('\n', f);
  cli_help_para(f, c->about ? c->about : c->summary);
  int any = 0;
  for (size_t k = 0; k < CLI_NOPTS; k++) {
    if (!(cli_opts[k].cmds & CLI_BIT(cmd))) continue;
    if (!any++) fputs("\nOptions:\n", f);
    cli_help_item(f, cli_opts[k].name, cli_opts[k].arg, cli_opts[k].help);
  }
  fputs("\nGlobal options (pawl --help):", f);
  for (size_t k = 0; k < CLI_NOPTS; k++)
    if (cli_opts[k].global)
      fprintf(f, " %s%s%s", cli_opts[k].name, cli_opts[k].arg ? " " : "",
              cli_opts[k].arg ? cli_opts[k].arg : "");
  fputc('\n', f);
}

/* Everything the command line asked for. Pointers borrow argv. */
typedef struct cli_args {
  cli_cmd_t cmd;
  cli_cmd_t help_cmd;      /* help: the command asked about (CLI_NONE: all) */
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
  case CLI_O_DB:
    /* pawl_open would quietly take an empty URL as "use the default". */
    if (!*v) return cli_fail(err, CLI_USAGE, "--db needs a value");
    a->db = v;
    break;
  case CLI_O_CREATE: a->create = 1; break;
  case CLI_O_DB_MODE: rc = cli_parse_mode(v, &a->db_mode, err); break;
  case CLI_O_SYNC_FULL: a->sync_full = 1; break;
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
                    "limit needs list, set or rm (got \"%s\"; see pawl "
                    "limit --help)",
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
  const char *cmd = cli_cmds[a->cmd].name;
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
  case CLI_HELP: max = 1; break; /* "pawl help enqueue": its help */
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
                    "pawl %s --help)",
                    cmd, cmd);
  if (a->npos < min && a->cmd == CLI_SIGNAL)
    return cli_fail(err, CLI_USAGE,
                    "signal needs a KEY and a decision: pawl signal KEY "
                    "approve|reject [JSON]");
  if (a->npos < min)
    return cli_fail(err, CLI_USAGE, "%s needs a %s (see pawl %s --help)",
                    cmd, a->cmd == CLI_ENQUEUE ? "job TYPE" : "job ID", cmd);
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
  if (a->cmd == CLI_HELP) {
    for (int c = 0; a->npos && c < CLI_CMD_COUNT; c++)
      if (strcmp(a->pos[0], cli_cmds[c].name) == 0) a->help_cmd = (cli_cmd_t)c;
    if (a->npos && a->help_cmd == CLI_NONE)
      return cli_fail(err, CLI_USAGE,
                      "help: unknown command \"%s\" (see pawl --help)",
                      a->pos[0]);
    return 0;
  }
  if (a->cmd == CLI_CRON || a->cmd == CLI_CONSOLE) return 0;
  if (a->npos == 1 && a->cmd != CLI_ENQUEUE &&
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
  a->cmd = a->help_cmd = CLI_NONE;
  a->no_args = argc <= 1;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int is_opt = !options_done && arg[0] == '-' && arg[1] != '\0';
    if (!is_opt) {
      if (a->cmd == CLI_NONE) {
        for (int c = 0; c < CLI_CMD_COUNT; c++)
          if (strcmp(arg, cli_cmds[c].name) == 0) a->cmd = (cli_cmd_t)c;
        if (a->cmd == CLI_NONE)
          return cli_fail(err, CLI_USAGE,
                          "unknown command \"%s\" (see pawl --help)", arg);
        /* main() hands these their whole line before it gets here, unless
         * a global option they do not take came first. */
        if (a->cmd == CLI_TOP || a->cmd == CLI_RECURRING ||
            a->cmd == CLI_BENCH)
          return cli_fail(err, CLI_USAGE,
                          "%s takes no global option but --db, --create and "
                          "--sync-full before it (see pawl %s --help)",
                          arg, arg);
      } else if (a->npos < 3) {
        a->pos[a->npos++] = arg;
      } else {
        return cli_fail(err, CLI_USAGE, "unexpected argument \"%s\" for %s",
                        arg, cli_cmds[a->cmd].name);
      }
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      options_done = 1;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      /* Help wins over whatever else was asked: the command's own, if
       * one came first. */
      a->help_cmd = a->cmd;
      a->cmd = CLI_HELP;
      a->npos = 0;
      return 0;
    }
    const char *value;
    size_t len = cli_opt_name_len(arg, &value);
    if (cli_name_is(arg, len, "--version") && a->cmd == CLI_NONE && !value) {
      a->cmd = CLI_VERSION;
      continue;
    }
    /* The row for this command (or a global one); else any row of that
     * name, for the message. */
    const struct cli_opt *o = NULL, *any = NULL;
    for (size_t k = 0; k < CLI_NOPTS && !o; k++) {
      if (!cli_name_is(arg, len, cli_opts[k].name)) continue;
      any = &cli_opts[k];
      if (cli_opts[k].global ||
          (a->cmd != CLI_NONE && (cli_opts[k].cmds & CLI_BIT(a->cmd))))
        o = &cli_opts[k];
    }
    if (!o) {
      if (a->cmd == CLI_NONE)
        return cli_fail(err, CLI_USAGE,
                        any ? "option %.*s goes after the command (see pawl "
                              "--help)"
                            : "unknown option %.*s (see pawl --help)",
                        (int)len, arg);
      return cli_fail(err, CLI_USAGE,
                      "unknown option %.*s for %s (see pawl %s --help)",
                      (int)len, arg, cli_cmds[a->cmd].name,
                      cli_cmds[a->cmd].name);
    }
    if (o->arg && !value) {
      if (i + 1 >= argc)
        return cli_fail(err, CLI_USAGE, "%s needs a value", arg);
      value = argv[++i]; /* even if it starts with '-': --priority -5 */
    } else if (!o->arg && value) {
      return cli_fail(err, CLI_USAGE, "%.*s takes no value", (int)len, arg);
    }
    if ((rc = cli_apply(a, o, value, err))) return rc;
  }
  if (a->cmd == CLI_NONE) {
    a->cmd = CLI_HELP;
    if (!a->no_args)
      return cli_fail(err, CLI_USAGE, "no command given (see pawl --help)");
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
  if (!rc && a.cmd == CLI_HELP &&
      (a.help_cmd == CLI_TOP || a.help_cmd == CLI_RECURRING ||
       a.help_cmd == CLI_BENCH)) {
    /* pawl help top: these print their own help, beside their parsers. */
    char name[16], opt[] = "--help";
    snprintf(name, sizeof name, "%s", cli_cmds[a.help_cmd].name);
    char *hargv[] = {name, opt, NULL};
    rc = a.help_cmd == CLI_TOP ? cli_top_main(2, hargv, NULL, 0, err, sizeof err)
         : a.help_cmd == CLI_RECURRING
             ? cli_recurring_main(2, hargv, NULL, 0, err, sizeof err)
             : cli_bench_main(2, hargv);
  } else if (!rc && a.cmd == CLI_HELP) {
    /* No arguments at all is a usage error: show the text where errors go. */
    cli_help(a.no_args ? stderr : stdout, a.help_cmd);
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
