/* cli_admin.h: the `pawl` CLI's admin verbs (cli_admin.c) and console
 * (console.c), called from cli.c's dispatch. Each returns an exit status
 * (0 success, 1 the operation failed, 2 bad usage or input) and leaves its
 * message in err for main() to print. */
#ifndef PAWL_CLI_ADMIN_H
#define PAWL_CLI_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "pawl.h"

/* Above this many matching jobs a bulk action asks before it acts: in a
 * terminal it asks, elsewhere it needs --yes (the console: force = true). */
#define CLI_CONFIRM_ABOVE 100

int cli_admin_stats(pawl_t *p, int json, char *err, size_t errlen);
int cli_admin_nodes(pawl_t *p, int json, char *err, size_t errlen);
int cli_admin_locks(pawl_t *p, int json, char *err, size_t errlen);
int cli_admin_bulk(pawl_t *p, pawl_action_t action, const pawl_filter_t *f,
                   const char *reason, int yes, int json, char *err,
                   size_t errlen);

/* `pawl queue list|pause|resume|set` (cli_queue.c): `verb` one of those;
 * `name` the queue (not for list); `reason` (pause; may be NULL);
 * `age_boost` (set: a duration, 0, or "database"). */
int cli_queue_main(pawl_t *p, const char *verb, const char *name,
                   const char *reason, const char *age_boost, int json,
                   char *err, size_t errlen);
/* `pawl limit list|set|rm` (cli_limits.c). cli.c has checked
 * the verb and parsed the numbers; strings borrow argv. */
typedef struct cli_limit_args {
  const char *verb;        /* "list", "set" or "rm" */
  const char *name;        /* set, rm */
  int64_t max_running;     /* set: 0 none */
  int64_t rate, window_ms; /* set --rate: 0 none */
  int json;
} cli_limit_args_t;

int cli_limits_main(pawl_t *p, const cli_limit_args_t *a, char *err);

/* `pawl batch show ID` (cli_batch.c). */
int cli_batch_main(pawl_t *p, const char *verb, const char *id, int json,
                   char *err, size_t errlen);

/* `pawl show`'s line naming the job's batch and its role (text), or a
 * "batch" member (json not NULL); nothing when it belongs to none. */
struct pawl_buf;
void cli_batch_of_job(pawl_t *p, const pawl_id_t *id, struct pawl_buf *json);

/* What `pawl console` was asked (strings borrow argv). */
typedef struct cli_console_args {
  const char *db;       /* NULL: $PAWL_DB, else sqlite:./pawl.db */
  int create;
  unsigned db_mode;
  int sync_full;
  const char *scripts;  /* NULL: ./scripts */
  const char *code;     /* -e CODE */
  const char *file;     /* FILE.lua */
  int json;
  const char *connect;    /* --connect: a running host's socket (a path)
                             or ADDRESS:PORT; NULL: direct */
  const char *token_file; /* --admin-token-file, for ADDRESS:PORT */
} cli_console_args_t;

int cli_console_main(const cli_console_args_t *a, char *err, size_t errlen);

#endif
