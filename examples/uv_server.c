/* uv_server.c: pawl on a libuv server's own loop (pawl_attach_uv).
 *
 * A small HTTP server on 127.0.0.1: every request enqueues a job, and pawl
 * runs the jobs attached to the same loop, so the server needs no thread
 * of its own for them. Requests (GET; one per connection):
 *
 *   /enqueue?name=NAME  enqueue a Lua job "greet" (NAME: [A-Za-z0-9_-])
 *   /hold               enqueue a C job "hold" that waits until GATE_FILE
 *                       exists (a job that takes long: a test opens the
 *                       gate after it has seen requests answered)
 *   /stats              "enqueued E started S succeeded D failed F holding H"
 *   /quit               answer, then detach pawl and stop the loop
 *
 * Each answer is one line of text/plain. The mode (PAWL_UV_THREADS by
 * default, "loop" for PAWL_UV_LOOP) says where jobs run: on pawl's worker
 * threads (the loop keeps serving while a job runs), or on the loop thread
 * between requests (no thread at all, short jobs only: a held job would
 * hold the server). The counters come from pawl's event callback.
 *
 *   uv_server DB_PATH PORT_FILE GATE_FILE [threads|loop]
 *
 * It listens on a port the kernel picks and writes it to PORT_FILE (for
 * the test) once it accepts connections. On /quit it prints a summary and
 * exits 0 if every job it enqueued succeeded. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pawl.h>
#include <uv.h>

static pawl_t *pawl;
static uv_tcp_t server;
static const char *gate_file;
static int quitting;
/* Written by the event callback (the completer thread in threads mode)
 * and the hold job (a worker), read by the loop: atomics. */
static _Atomic long n_enqueued, n_started, n_succeeded, n_failed;
static _Atomic int holding;

static void on_event(void *data, const pawl_job_event_t *ev) {
  (void)data;
  switch (ev->kind) {
  case PAWL_EV_ENQUEUED: atomic_fetch_add(&n_enqueued, 1); break;
  case PAWL_EV_STARTED: atomic_fetch_add(&n_started, 1); break;
  case PAWL_EV_SUCCEEDED: atomic_fetch_add(&n_succeeded, 1); break;
  case PAWL_EV_FAILED: atomic_fetch_add(&n_failed, 1); break;
  default: break;
  }
}

/* A job that takes as long as the gate stays shut (10 minutes at most:
 * then it fails). A real one: a report, an upload. */
static int hold_job(const pawl_job_t *job, pawl_ctx_t *ctx, void *ud) {
  (void)job;
  (void)ud;
  atomic_fetch_add(&holding, 1);
  int open = 0;
  for (int i = 0; i < 600000 && !(open = access(gate_file, F_OK) == 0); i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  atomic_fetch_sub(&holding, 1);
  if (!open) {
    pawl_ctx_fail(ctx, "the gate stayed shut");
    return PAWL_JOB_FATAL;
  }
  return pawl_ctx_set_result(ctx, "{\"held\":true}") ? PAWL_JOB_FAILED
                                                    : PAWL_JOB_OK;
}

/* ---- one connection: read the request head, answer one line, close --- */

typedef struct conn {
  uv_tcp_t tcp;
  uv_write_t wr;
  char in[2048];
  size_t len;
  char out[512];
  int answered;
} conn_t;

static void on_closed(uv_handle_t *h) { free(h->data); }

static void on_close_server(uv_handle_t *h) { (void)h; }

static void stop_server(void) {
  int rc = pawl_detach_uv(pawl);
  if (rc) fprintf(stderr, "uv_server: detach: %s\n", pawl_strerror(rc));
  uv_close((uv_handle_t *)&server, on_close_server);
}

static void on_written(uv_write_t *wr, int status) {
  (void)status;
  conn_t *c = wr->data;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
  if (quitting == 1) {
    quitting = 2;
    stop_server();
  }
}

static void answer(conn_t *c, int code, const char *body) {
  c->answered = 1;
  int n = snprintf(c->out, sizeof c->out,
                   "HTTP/1.0 %d %s\r\nContent-Type: text/plain\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                   code, code == 200 ? "OK" : "Bad Request",
                   strlen(body) + 1, body);
  if (n < 0 || (size_t)n >= sizeof c->out) n = 0;
  uv_buf_t b = uv_buf_init(c->out, (unsigned)n);
  c->wr.data = c;
  if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written))
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void enqueue(conn_t *c, const char *type, const char *payload) {
  pawl_id_t id;
  char text[PAWL_ID_STRLEN], body[128];
  int rc = pawl_enqueue(pawl, type, payload, NULL, &id, NULL);
  if (rc) {
    snprintf(body, sizeof body, "error %s", pawl_errmsg(pawl));
    answer(c, 400, body);
    return;
  }
  pawl_id_format(&id, text);
  snprintf(body, sizeof body, "queued %s", text);
  answer(c, 200, body);
}

static void handle(conn_t *c) {
  char path[256];
  if (sscanf(c->in, "GET %255s ", path) != 1) {
    answer(c, 400, "error only GET");
    return;
  }
  char body[256];
  if (strncmp(path, "/enqueue?name=", 14) == 0) {
    const char *name = path + 14;
    size_t n = strlen(name);
    if (n == 0 || n > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-") != n) {
      answer(c, 400, "error name: 1..64 of [A-Za-z0-9_-]");
      return;
    }
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    enqueue(c, "greet", body);
  } else if (strcmp(path, "/hold") == 0) {
    enqueue(c, "hold", NULL);
  } else if (strcmp(path, "/stats") == 0) {
    snprintf(body, sizeof body,
             "enqueued %ld started %ld succeeded %ld failed %ld holding %d",
             atomic_load(&n_enqueued), atomic_load(&n_started),
             atomic_load(&n_succeeded), atomic_load(&n_failed),
             atomic_load(&holding));
    answer(c, 200, body);
  } else if (strcmp(path, "/quit") == 0) {
    if (!quitting) quitting = 1;
    answer(c, 200, "bye");
  } else {
    answer(c, 400, "error unknown path");
  }
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b) {
  (void)want;
  conn_t *c = h->data;
  *b = uv_buf_init(c->in + c->len, (unsigned)(sizeof c->in - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  (void)b;
  conn_t *c = s->data;
  if (c->answered) return;
  if (n < 0) {
    uv_close((uv_handle_t *)s, on_closed);
    return;
  }
  c->len += (size_t)n;
  c->in[c->len] = '\0';
  if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
    uv_read_stop(s);
    handle(c);
  } else if (c->len == sizeof c->in - 1) {
    uv_read_stop(s);
    answer(c, 400, "error request too long");
  }
}

static void on_connection(uv_stream_t *srv, int status) {
  if (status < 0) return;
  conn_t *c = calloc(1, sizeof *c);
  if (!c) return;
  uv_tcp_init(srv->loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(srv, (uv_stream_t *)&c->tcp) ||
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read))
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: uv_server DB_PATH PORT_FILE GATE_FILE [threads|loop]\n");
    return 2;
  }
  gate_file = argv[3];
  int loop_mode = argc > 4 && strcmp(argv[4], "loop") == 0;
  char db[1024];
  snprintf(db, sizeof db, "sqlite:%s", argv[1]);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  char err[512];
  if (pawl_open(&pawl, &o, err, sizeof err)) {
    fprintf(stderr, "uv_server: %s\n", err);
    return 1;
  }
  pawl_define_c(pawl, "hold", hold_job, NULL, NULL);
  pawl_define(pawl, "greet", "return { run = function(job) "
                             "return 'hello ' .. job.payload.name end }");

  uv_loop_t *loop = uv_default_loop();
  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", 0, &addr);
  uv_tcp_init(loop, &server);
  int rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
  if (!rc) rc = uv_listen((uv_stream_t *)&server, 128, on_connection);
  if (rc) {
    fprintf(stderr, "uv_server: listen: %s\n", uv_strerror(rc));
    return 1;
  }

  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.workers = 2;
  ho.log_level = PAWL_LOG_WARN;
  ho.event_fn = on_event;
  pawl_uv_opts_t uo;
  pawl_uv_opts_init(&uo);
  uo.mode = loop_mode ? PAWL_UV_LOOP : PAWL_UV_THREADS;
  uo.host = &ho;
  if ((rc = pawl_attach_uv(pawl, loop, &uo))) {
    fprintf(stderr, "uv_server: attach: %s\n", pawl_errmsg(pawl));
    return 1;
  }

  /* The port, once the server accepts: written to a temporary name and
   * renamed, so a reader never sees half of it. */
  struct sockaddr_storage name;
  int len = sizeof name;
  uv_tcp_getsockname(&server, (struct sockaddr *)&name, &len);
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
  FILE *f = fopen(tmp, "w");
  if (!f || fprintf(f, "%d\n", ntohs(((struct sockaddr_in *)&name)->sin_port))
                < 0 || fclose(f) || rename(tmp, argv[2])) {
    fprintf(stderr, "uv_server: cannot write %s\n", argv[2]);
    return 1;
  }

  uv_run(loop, UV_RUN_DEFAULT);

  long enq = atomic_load(&n_enqueued), ok = atomic_load(&n_succeeded);
  printf("mode %s, jobs enqueued %ld, started %ld, succeeded %ld, "
         "failed %ld\n", loop_mode ? "loop" : "threads", enq,
         atomic_load(&n_started), ok, atomic_load(&n_failed));
  uv_loop_close(loop);
  pawl_close(pawl);
  return enq > 0 && ok == enq ? 0 : 1;
}
