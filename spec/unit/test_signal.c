/* test_signal.c: the host's interrupt signal belongs to the process.
 * An embedder's handler installed before pawl_start
 * still gets the signals not meant for a pawl worker while hosts run, and
 * is back once the last host has stopped; with PAWL_INTERRUPT_NONE nothing
 * is installed; another signal can take SIGURG's place. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "pawl.h"
#include "unit.h"

static _Atomic int got_sigs;
static _Atomic int got_code, got_pid;

/* The embedder's own handler, SA_SIGINFO: its siginfo must arrive too. */
static void embedder_handler(int sig, siginfo_t *info, void *uc) {
  (void)uc;
  if (sig != SIGURG) return;
  atomic_store(&got_code, info->si_code);
  atomic_store(&got_pid, (int)info->si_pid);
  atomic_fetch_add(&got_sigs, 1);
}

static void install_embedder_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = embedder_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  CHECK_INT(sigaction(SIGURG, &sa, NULL), ==, 0);
}

static int embedder_handler_installed(void) {
  struct sigaction cur;
  CHECK_INT(sigaction(SIGURG, NULL, &cur), ==, 0);
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == embedder_handler;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* Waits (generously: the machine may be loaded) until `n` signals reached
 * the embedder's handler. */
static void wait_sigs(int line, int n) {
  for (int i = 0; i < 30000 && atomic_load(&got_sigs) < n; i++) sleep_ms(1);
  if (atomic_load(&got_sigs) < n)
    unit_fail(__FILE__, line, "the embedder's handler got %d signals, not %d",
              atomic_load(&got_sigs), n);
}

static pawl_t *signal_open(const char *name) {
  char url[64];
  snprintf(url, sizeof url, "sqlite:%s.db", name);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

static void start_host(pawl_t *p, int sig) {
  mkdir("scripts", 0700);
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.scripts_dir = "scripts";
  ho.workers = 2;
  ho.log_level = PAWL_LOG_ERROR;
  ho.interrupt_signal = sig;
  if (pawl_start(p, &ho) != 0)
    unit_fail(__FILE__, __LINE__, "pawl_start: %s", pawl_errmsg(p));
}

static void stop_host(pawl_t *p) {
  pawl_stop(p, PAWL_STOP_NOW);
  CHECK_OK(pawl_wait(p, 60000));
}

void test_host_signal_chains_threads(void) {
  install_embedder_handler();
  pawl_t *a = signal_open("a"), *b = signal_open("b");
  start_host(a, 0);
  start_host(b, 0);
  /* pawl's handler is in place while the hosts run ... */
  CHECK(!embedder_handler_installed());
  /* ... and passes on a SIGURG sent to this (non-worker) thread, */
  CHECK_INT(pthread_kill(pthread_self(), SIGURG), ==, 0);
  wait_sigs(__LINE__, 1);
  CHECK_INT(atomic_load(&got_code), ==, SI_TKILL);
  /* and one sent to the process that lands on a worker thread (this
   * thread blocks it, and the hosts' other threads do too), with its
   * siginfo. */
  sigset_t urg, old;
  sigemptyset(&urg);
  sigaddset(&urg, SIGURG);
  CHECK_INT(pthread_sigmask(SIG_BLOCK, &urg, &old), ==, 0);
  CHECK_INT(kill(getpid(), SIGURG), ==, 0);
  wait_sigs(__LINE__, 2);
  CHECK_INT(atomic_load(&got_code), ==, SI_USER);
  CHECK_INT(atomic_load(&got_pid), ==, getpid());
  CHECK_INT(pthread_sigmask(SIG_SETMASK, &old, NULL), ==, 0);
  /* One host stopping leaves the handler to the other ... */
  stop_host(a);
  CHECK(!embedder_handler_installed());
  CHECK_INT(pthread_kill(pthread_self(), SIGURG), ==, 0);
  wait_sigs(__LINE__, 3);
  /* ... the last one puts the embedder's back. */
  stop_host(b);
  CHECK(embedder_handler_installed());
  CHECK_INT(pthread_kill(pthread_self(), SIGURG), ==, 0);
  wait_sigs(__LINE__, 4);
  pawl_close(a);
  pawl_close(b);
  CHECK(embedder_handler_installed());
  CHECK_INT(atomic_load(&got_sigs), ==, 4);
}

void test_host_signal_none_threads(void) {
  install_embedder_handler();
  pawl_t *p = signal_open("none");
  start_host(p, PAWL_INTERRUPT_NONE);
  CHECK(embedder_handler_installed());
  CHECK_INT(kill(getpid(), SIGURG), ==, 0);
  wait_sigs(__LINE__, 1);
  stop_host(p);
  CHECK(embedder_handler_installed());
  pawl_close(p);
}

void test_host_signal_refused(void) {
  pawl_t *p = signal_open("refused");
  mkdir("scripts", 0700);
  int bad[] = {SIGKILL, SIGSEGV, SIGINT, SIGCHLD, -2, 9999};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pawl_host_opts_t ho;
    pawl_host_opts_init(&ho);
    ho.scripts_dir = "scripts";
    ho.interrupt_signal = bad[i];
    CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
    CHECK(strstr(pawl_errmsg(p), "interrupt_signal must be") != NULL);
  }
  pawl_close(p);
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

/* A loop that never returns is stopped by its timeout through SIGUSR2,
 * while SIGURG stays the embedder's. */
/* The loop sleeps (nanosleep) on every turn: ThreadSanitizer holds a
 * signal back until its thread next enters an intercepted libc call, and
 * this test runs under it too. It is about which signal is used, not about stopping
 * compiled code (runaway_spec covers that). */
void test_host_signal_custom_stops_job(void) {
  install_embedder_handler();
  mkdir("scripts", 0700);
  CHECK_INT(write_file("scripts/spin.lua",
                       "return { max_attempts = 1, timeout = 0.2,\n"
                       "  run = function() while true do pawl.sleep(0.01) end end }\n"),
            ==, 0);
  pawl_t *p = signal_open("custom");
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "spin", NULL, NULL, &id, NULL));
  start_host(p, SIGUSR2);
  CHECK(embedder_handler_installed());
  pawl_job_t *j = NULL;
  for (int i = 0; i < 600; i++) {
    CHECK_OK(pawl_get(p, &id, &j));
    int done = j->state == PAWL_FAILED;
    if (!done) pawl_job_free(j);
    if (done) break;
    j = NULL;
    sleep_ms(100);
  }
  if (!j) unit_fail(__FILE__, __LINE__, "the looping job was never stopped");
  CHECK(strstr(j->last_error, "timed out") != NULL);
  pawl_job_free(j);
  stop_host(p);
  struct sigaction cur;
  CHECK_INT(sigaction(SIGUSR2, NULL, &cur), ==, 0);
  CHECK(cur.sa_handler == SIG_DFL);
  pawl_close(p);
}
