/* console_client.h: the attached console's end of the wire protocol
 * (docs/console.md, "The wire protocol"): connecting to a running host's
 * admin socket (or its TCP listener, with a token), and the requests the
 * console's front end (console.c) makes: run a chunk, is it incomplete,
 * complete a line, the last traceback. Everything about the terminal stays
 * in console.c. */
#ifndef PAWL_CONSOLE_CLIENT_H
#define PAWL_CONSOLE_CLIENT_H

#include <signal.h>
#include <stddef.h>

typedef struct console_client console_client_t;

/* Set (by a SIGINT handler) while a chunk runs: the client sends the host
 * an interrupt. */
extern volatile sig_atomic_t console_client_interrupt;

/* Connects to `target` (a socket path, or ADDRESS:PORT with the token in
 * token_file) and says hello. 0, or 1 with the reason in err. */
int console_client_open(const char *target, const char *token_file,
                        int interactive, int json, console_client_t **out,
                        char *err, size_t errlen);
void console_client_close(console_client_t *cc);
/* The host's node id (owned by cc). */
const char *console_client_node(const console_client_t *cc);

/* Answers the host's questions (a bulk action's confirmation): a malloc'd
 * answer or NULL. */
typedef char *(*console_client_ask_fn)(void *data, const char *question);

/* Runs a chunk on the host (script_name NULL: REPL rules; else a script
 * named so), printing its output as it comes. 1 when it succeeded, 0 when
 * it failed, -1 when the connection is lost (said on stderr). */
int console_client_eval(console_client_t *cc, const char *chunk, size_t len,
                        const char *script_name, int width,
                        console_client_ask_fn ask, void *ask_data);
/* Runs a chunk on the host as console_client_eval() does (REPL rules),
 * but what it writes to standard output is appended to `out` and its
 * error lines to `errout` (both required), and nothing is printed; the
 * host's questions get no answer. For programs that read what a chunk
 * prints (`pawl top --connect`). 1/0/-1 as console_client_eval(). */
struct pawl_buf;
int console_client_capture(console_client_t *cc, const char *chunk,
                           size_t len, struct pawl_buf *out,
                           struct pawl_buf *errout);
/* 1 when the chunk is incomplete, 0 when not, -1 lost. */
int console_client_incomplete(console_client_t *cc, const char *chunk,
                              size_t len);
/* The host's completion reply (see pawl__admin_complete), malloc'd, or
 * NULL. */
char *console_client_complete(console_client_t *cc, const char *line,
                              size_t len);
/* The traceback of the last error, printed; 0, or -1 lost. */
int console_client_trace(console_client_t *cc);
/* 1 once the connection is gone. */
int console_client_lost(const console_client_t *cc);

#endif
