/* steps.c: restartable steps and job instances over the
 * store interface: the checks of what a worker writes for a step (a
 * checkpoint, counters, exit codes) and the enqueue of a job whose script
 * declares `identity` (docs/flows.md "Restartable steps").
 *
 * An instance is (type, key): the key is the JSON object of the payload's
 * identifying fields, in the order the script lists them, each value as
 * its JSON text without the whitespace outside strings (so {"date": "x"}
 * and {"date":"x"} are one instance; 1 and 1.0 are two). The fields are
 * found by json.h's tokenizer (pawl__json_members). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "store.h"

/* Identifying fields: at most this many; their key at most this long (it
 * is a primary key: PostgreSQL's index entries stop at about 2.7 kB). */
#define STEPS_IDENTITY_MAX 16
#define STEPS_KEY_MAX 1000
/* Counters: what a double holds exactly (job code counts in doubles). */
#define STEPS_COUNT_MAX INT64_C(9007199254740991)

/* ---- checks --------------------------------------------------------------- */

/* Valid UTF-8 text (what every backend stores) of at most `max` bytes. */
static int steps_check_text(pawl_t *p, const char *what, const char *s,
                            size_t max) {
  size_t n = strlen(s);
  if (n > max)
    return pawl__fail(p, PAWL_EINVAL, "%s is %zu bytes, more than the limit "
                      "of %zu", what, n, max);
  for (size_t i = 0, k; i < n; i += k)
    if (!(k = pawl__json_utf8_len((const unsigned char *)s + i, n - i)))
      return pawl__fail(p, PAWL_EINVAL, "%s is not valid UTF-8 (at byte %zu)",
                        what, i + 1);
  return 0;
}

static int steps_check_checkpoint(pawl_t *p, const char *cp) {
  if (!cp) return 0;
  size_t n = strlen(cp);
  if (n > PAWL_CHECKPOINT_MAX)
    return pawl__fail(p, PAWL_EINVAL, "checkpoint is %zu bytes of JSON, more "
                      "than the limit of %d", n, PAWL_CHECKPOINT_MAX);
  char err[256];
  if (pawl__json_validate(cp, n, err, sizeof err) != 0)
    return pawl__fail(p, PAWL_EINVAL, "checkpoint is not valid JSON: %s", err);
  return 0;
}

static int steps_check_counts(pawl_t *p, const int64_t *counts) {
  static const char *const names[PAWL_STEP_NCOUNTS] = {
      "read", "written", "filtered", "skipped", "commits", "rollbacks"};
  for (int k = 0; counts && k < PAWL_STEP_NCOUNTS; k++)
    if (counts[k] < 0 || counts[k] > STEPS_COUNT_MAX)
      return pawl__fail(p, PAWL_EINVAL, "counter %s must be between 0 and "
                        "%lld (got %lld)", names[k],
                        (long long)STEPS_COUNT_MAX, (long long)counts[k]);
  return 0;
}

static int steps_check_exit(pawl_t *p, const char *code, const char *msg) {
  int rc;
  if (code) {
    if (!*code) return pawl__fail(p, PAWL_EINVAL, "exit code must not be empty");
    if (strlen(code) > PAWL_EXIT_CODE_MAX)
      return pawl__fail(p, PAWL_EINVAL, "exit code is longer than %d bytes",
                        PAWL_EXIT_CODE_MAX);
    if ((rc = pawl__check_name(p, "exit code", code))) return rc;
    if ((rc = steps_check_text(p, "exit code", code, PAWL_EXIT_CODE_MAX)))
      return rc;
  }
  if (msg && (rc = steps_check_text(p, "exit message", msg,
                                    PAWL_EXIT_MESSAGE_MAX)))
    return rc;
  return 0;
}

/* ---- the worker's writes ---------------------------------------------------- */

int pawl_step_begin(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                    int32_t index, const char *name, const char *checkpoint,
                    int64_t *exec) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc;
  if (index < 1 || index > PAWL_STEPS_MAX)
    return pawl__fail(p, PAWL_EINVAL, "step index must be between 1 and %d "
                      "(got %d)", PAWL_STEPS_MAX, (int)index);
  if ((rc = pawl__check_name(p, "step name", name)) ||
      (rc = steps_check_checkpoint(p, checkpoint)))
    return rc;
  int64_t e = 0;
  rc = pawl__from_store(p, p->store->ops->steps.begin(
                               p->store, id, &p->incarnation, attempt, index,
                               name, checkpoint, &e));
  if (!rc && exec) *exec = e;
  return rc;
}

int pawl_step_save(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                   int64_t exec, const char *checkpoint,
                   const int64_t *counts) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc;
  if ((rc = steps_check_checkpoint(p, checkpoint)) ||
      (rc = steps_check_counts(p, counts)))
    return rc;
  return pawl__from_store(p, p->store->ops->steps.save(
                                 p->store, id, &p->incarnation, attempt, exec,
                                 checkpoint, counts));
}

int pawl_step_end(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                  int64_t exec, int status, const char *exit_code,
                  const char *exit_message, const int64_t *counts) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc;
  if (status != PAWL_STEP_COMPLETED && status != PAWL_STEP_FAILED &&
      status != PAWL_STEP_STOPPED)
    return pawl__fail(p, PAWL_EINVAL, "a step ends completed (%d), failed "
                      "(%d) or stopped (%d) (got %d)", PAWL_STEP_COMPLETED,
                      PAWL_STEP_FAILED, PAWL_STEP_STOPPED, status);
  if ((rc = steps_check_exit(p, exit_code, exit_message)) ||
      (rc = steps_check_counts(p, counts)))
    return rc;
  return pawl__from_store(p, p->store->ops->steps.end(
                                 p->store, id, &p->incarnation, attempt, exec,
                                 status, exit_code, exit_message, counts));
}

int pawl_job_exit(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                  const char *exit_code, const char *exit_message) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!exit_code) return pawl__fail(p, PAWL_EINVAL, "exit code is NULL");
  int rc = steps_check_exit(p, exit_code, exit_message);
  if (rc) return rc;
  return pawl__from_store(p, p->store->ops->steps.exit(
                                 p->store, id, &p->incarnation, attempt,
                                 exit_code, exit_message));
}

int pawl_steps(pawl_t *p, const pawl_id_t *id, pawl_steps_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->steps.get(p->store, id, out));
}

/* ---- job instances ---------------------------------------------------------- */

/* Appends the JSON value s[0..n) (its text checked) to b without the
 * whitespace outside its strings: its tokens, and the ',' and ':' between
 * them. */
static void steps_compact(const char *s, size_t n, pawl_buf_t *b) {
  pawl_json_lexer_t lx;
  pawl_json_tok_t t;
  pawl__json_lex_init(&lx, s, n, JSON_GRAMMAR, NULL, 0);
  size_t at = 0;
  while (pawl__json_next(&lx, &t) > 0) {
    for (; at < t.start; at++)
      if (s[at] == ',' || s[at] == ':') pawl__buf_putc(b, s[at]);
    pawl__buf_append(b, s + t.start, t.end - t.start);
    at = t.end;
  }
}

/* The instance key of `payload` (valid JSON) for the fields `names`:
 * {"a":1,"b":"x"}. Each field is the payload's top-level member whose key,
 * escapes decoded, is its name; of duplicates the last, as job code and
 * jsonb read it. 0, or PAWL_EINVAL naming a missing field. */
static int steps_instance_key(pawl_t *p, const char *payload,
                              const char *const *names, size_t n,
                              pawl_buf_t *key) {
  if (n > STEPS_IDENTITY_MAX)
    return pawl__fail(p, PAWL_EINVAL, "identity lists %zu fields; at most %d",
                      n, STEPS_IDENTITY_MAX);
  const char *s = payload ? payload : "{}";
  size_t len = strlen(s);
  /* The names first: a NULL one is refused before it is looked for. */
  for (size_t i = 0; i < n; i++) {
    int rc = pawl__check_name(p, "identity field", names[i]);
    if (rc) return rc;
  }
  size_t spans[STEPS_IDENTITY_MAX][2];
  if (pawl__json_members(s, len, JSON_POLICY, names, n, spans, NULL, 0) != 0)
    return pawl__fail(p, PAWL_EINVAL, "identity needs a payload that is a "
                      "JSON object");
  int rc = 0;
  pawl__buf_putc(key, '{');
  for (size_t i = 0; i < n && !rc; i++) {
    if (spans[i][1] == 0) {
      rc = pawl__fail(p, PAWL_EINVAL, "identity field %s is not in the "
                      "payload", names[i]);
      break;
    }
    if (i) pawl__buf_putc(key, ',');
    pawl__buf_json_string(key, names[i], strlen(names[i]));
    pawl__buf_putc(key, ':');
    steps_compact(s + spans[i][0], spans[i][1] - spans[i][0], key);
  }
  pawl__buf_putc(key, '}');
  if (!rc && key->oom) rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  if (!rc && key->len > STEPS_KEY_MAX)
    rc = pawl__fail(p, PAWL_EINVAL, "the identifying values are %zu bytes of "
                    "JSON, more than the limit of %d", key->len, STEPS_KEY_MAX);
  return rc;
}

/* How many times an enqueue looks the instance up again after it changed
 * under it (another enqueue took it, or its job moved): each round is
 * caused by another writer's progress, so a few are plenty. */
#define STEPS_INSTANCE_ROUNDS 5

int pawl__enqueue_instance(pawl_t *p, const pawl_enqueue_item_t *item,
                           pawl_id_t *id_out, int *status_out) {
  const pawl_enqueue_opts_t *o = item->opts;
  int rc;
  if ((rc = pawl__check_name(p, "job type", item->type))) return rc;
  if (item->payload) {
    char err[256];
    if (pawl__json_validate(item->payload, strlen(item->payload), err,
                            sizeof err) != 0)
      return pawl__fail(p, PAWL_EINVAL, "payload is not valid JSON: %s", err);
  }
  *status_out = -1;
  pawl_buf_t key = {0};
  rc = steps_instance_key(p, item->payload, o->identity, o->nidentity, &key);
  const char *k = pawl__buf_cstr(&key);
  for (int round = 0; !rc && round < STEPS_INSTANCE_ROUNDS; round++) {
    pawl_id_t id;
    int state = -1;
    rc = p->store->ops->steps.instance(p->store, item->type, k, &id, &state);
    if (rc && rc != PAWL_ENOTFOUND) {
      pawl__from_store(p, rc);
      break;
    }
    if (rc == PAWL_ENOTFOUND || state == PAWL_CANCELED) {
      /* None, or given up: a new job takes it (in the insert's
       * transaction; PAWL_ECONFLICT if another enqueue took it first). */
      rc = pawl__enqueue_keyed(p, item, k, id_out, status_out);
      if (rc == PAWL_ECONFLICT) {
        rc = 0;
        continue;
      }
      break;
    }
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&id, text);
    if (state == PAWL_SUCCEEDED) {
      rc = pawl__fail(p, PAWL_EDONE, "job instance %s of %s already completed "
                      "(job %s); it is not run again", k, item->type, text);
      break;
    }
    if (state == PAWL_FAILED) {
      char reason[600];
      snprintf(reason, sizeof reason, "restarted: instance %s enqueued again",
               k);
      rc = pawl_retry(p, &id, reason, NULL);
      if (rc == PAWL_ESTATE || rc == PAWL_ECONFLICT) {
        rc = 0; /* it moved meanwhile: look again */
        continue;
      }
      if (!rc) {
        *id_out = id;
        *status_out = PAWL_ENQ_RESTARTED;
        pawl__wake(p);
      }
      break;
    }
    /* Live: pending, running, paused, blocked. */
    *id_out = id;
    *status_out = PAWL_ENQ_EXISTING;
    break;
  }
  if (!rc && *status_out < 0)
    rc = pawl__fail(p, PAWL_ECONFLICT, "job instance %s of %s kept changing "
                    "while it was enqueued; try again", k, item->type);
  pawl__buf_free(&key);
  return rc;
}
