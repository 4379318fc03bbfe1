/* test_batch_pg.c: a batch's callbacks fire exactly once when its last
 * children end on several nodes at the same instant (PostgreSQL, READ
 * COMMITTED; the argument is in schema/postgres/V009__batch.sql). Three
 * processes, each with its own connection, claim the children between
 * them, finish all but their last, then wait at a gate and finish their
 * last ones together, round after round. Every finish must succeed (a
 * second firing would insert a callback's id twice and fail the finish),
 * the counters must equal the total, and each callback job exist once. */
#include <sys/wait.h>
#include <unistd.h>

#include "pawl.h"
#include "pgtest.h"
#include "unit.h"

#define BP_PROCS 3
#define BP_ROUNDS 15
#define BP_CHILDREN 30

static pawl_t *bp_open(const char *url) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = url;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "pawl_open: %s\n", err);
    return NULL;
  }
  return p;
}

/* One node: claims its share (BP_CHILDREN / BP_PROCS) of round `round`'s
 * queue, finishes all but one, tells the parent (ready), waits for the
 * gate, finishes the last. Exit status 0 when every finish was stored. */
static int bp_node(const char *url, int ready_fd, int gate_fd) {
  pawl_t *p = bp_open(url);
  if (!p) return 1;
  for (int round = 0; round < BP_ROUNDS; round++) {
    char q[32];
    snprintf(q, sizeof q, "r%d", round);
    const char *qs[1] = {q};
    pawl_claim_opts_t co = {.queues = qs, .nqueues = 1};
    pawl_job_t **jobs = NULL;
    size_t n = 0;
    /* Another node may claim between our two claims: take what we get,
     * up to our share. */
    if (pawl_claim(p, &co, BP_CHILDREN / BP_PROCS, &jobs, &n) || n == 0) {
      fprintf(stderr, "claim: %s (n %zu)\n", pawl_errmsg(p), n);
      return 1;
    }
    for (size_t i = 0; i < n; i++) {
      pawl_outcome_t o = {.id = jobs[i]->id, .attempt = jobs[i]->attempt,
                          .kind = PAWL_OUT_SUCCEEDED,
                          .store_key = jobs[i]->store_key};
      if (i + 1 == n) {
        char c = 'r', g;
        if (write(ready_fd, &c, 1) != 1 || read(gate_fd, &g, 1) != 1)
          return 1;
      }
      int rcs[1] = {99};
      if (pawl_finish(p, &o, 1, rcs) || rcs[0]) {
        fprintf(stderr, "finish: %s (rc %d)\n", pawl_errmsg(p), rcs[0]);
        return 1;
      }
    }
    pawl_jobs_free(jobs, n);
  }
  pawl_close(p);
  return 0;
}

void test_store_pg_batch_concurrent(void) {
  const char *url = pgtest_url("batch_concurrent");
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", url);
  pawl_t *p = bp_open(copy);
  CHECK(p != NULL);
  pawl_id_t bids[BP_ROUNDS];
  for (int round = 0; round < BP_ROUNDS; round++) {
    char q[32];
    snprintf(q, sizeof q, "r%d", round);
    pawl_enqueue_opts_t o;
    pawl_enqueue_opts_init(&o);
    o.queue = q;
    pawl_enqueue_item_t items[BP_CHILDREN];
    for (int i = 0; i < BP_CHILDREN; i++)
      items[i] = (pawl_enqueue_item_t){"child", "{}", &o};
    pawl_enqueue_opts_t cbo;
    pawl_enqueue_opts_init(&cbo);
    cbo.queue = "callbacks";
    pawl_enqueue_item_t ok = {"ok", "{}", &cbo}, done = {"done", "{}", &cbo};
    pawl_batch_opts_t bo;
    pawl_batch_opts_init(&bo);
    bo.on_success = &ok;
    bo.on_complete = &done;
    if (pawl_batch_enqueue(p, items, BP_CHILDREN, &bo, &bids[round], NULL))
      unit_fail(__FILE__, __LINE__, "batch: %s", pawl_errmsg(p));
  }
  int ready[2], gates[BP_PROCS][2];
  CHECK_INT(pipe(ready), ==, 0);
  pid_t kids[BP_PROCS];
  for (int k = 0; k < BP_PROCS; k++) CHECK_INT(pipe(gates[k]), ==, 0);
  for (int k = 0; k < BP_PROCS; k++) {
    kids[k] = fork();
    CHECK(kids[k] >= 0);
    if (kids[k] == 0) _exit(bp_node(copy, ready[1], gates[k][0]));
  }
  /* Each round: all three hold their last child; then all go at once. */
  for (int round = 0; round < BP_ROUNDS; round++) {
    for (int k = 0; k < BP_PROCS; k++) {
      char c;
      CHECK_INT(read(ready[0], &c, 1), ==, 1);
    }
    for (int k = 0; k < BP_PROCS; k++)
      CHECK_INT(write(gates[k][1], "g", 1), ==, 1);
  }
  for (int k = 0; k < BP_PROCS; k++) {
    int status;
    CHECK_INT(waitpid(kids[k], &status, 0), ==, kids[k]);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), ==, 0);
  }
  for (int round = 0; round < BP_ROUNDS; round++) {
    pawl_batch_t b;
    CHECK_OK(pawl_batch_get(p, &bids[round], &b));
    CHECK_INT(b.succeeded, ==, BP_CHILDREN);
    CHECK_INT(b.states[PAWL_SUCCEEDED], ==, BP_CHILDREN);
    CHECK_INT(b.finished_at, >, 0);
    CHECK_INT(b.callbacks[0].fired_at, >, 0);
    CHECK_INT(b.callbacks[2].fired_at, >, 0);
  }
  /* Two callbacks per round, each once. */
  PGconn *c = pgtest_connect(copy);
  CHECK_INT(pgtest_int(c, "SELECT count(*) FROM pawl_jobs WHERE queue = "
                          "'callbacks'"),
            ==, 2 * BP_ROUNDS);
  PQfinish(c);
  pawl_close(p);
}
