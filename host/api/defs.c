/* defs.c: job types defined on a handle (pawl_define, pawl_define_file,
 * pawl_define_c): kept here, under a lock of the handle's own, and copied
 * by the runner when it looks at its scripts (pawl__defs_copy), so that a
 * program needs no scripts directory. Nothing here runs Lua: a broken
 * source is found when the runner loads it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "buf.h"
#include "handle.h"

struct pawl__defs {
  pthread_mutex_t mu;
  pawl__def_t *list;
  size_t n;
  uint64_t gen;
};

static void defs_free_one(pawl__def_t *d) {
  pawl__free(d->type);
  pawl__free(d->src);
  pawl__free(d->path);
  pawl__free((char *)d->opts.queue);
}

void pawl__defs_free(pawl__def_t *d, size_t n) {
  for (size_t i = 0; i < n; i++) defs_free_one(&d[i]);
  pawl__free(d);
}

struct pawl__defs *pawl__defs_new(void) {
  struct pawl__defs *d = pawl__calloc(1, sizeof *d);
  if (d) pthread_mutex_init(&d->mu, NULL);
  return d;
}

void pawl__defs_destroy(struct pawl__defs *d) {
  if (!d) return;
  pawl__defs_free(d->list, d->n);
  pthread_mutex_destroy(&d->mu);
  pawl__free(d);
}

/* A copy of `in` into `out` (zeroed on failure). 0 or -1. */
static int defs_dup(pawl__def_t *out, const pawl__def_t *in) {
  *out = *in;
  out->type = pawl__strdup(in->type);
  out->path = in->path ? pawl__strdup(in->path) : NULL;
  out->src = NULL;
  if (in->src && (out->src = pawl__malloc(in->len + 1))) {
    memcpy(out->src, in->src, in->len);
    out->src[in->len] = 0;
  }
  out->opts.queue = in->opts.queue ? pawl__strdup(in->opts.queue) : NULL;
  if (!out->type || (in->path && !out->path) || (in->src && !out->src) ||
      (in->opts.queue && !out->opts.queue)) {
    defs_free_one(out);
    memset(out, 0, sizeof *out);
    return -1;
  }
  return 0;
}

int pawl__defs_copy(pawl_t *p, pawl__def_t **out, size_t *n, uint64_t *gen) {
  struct pawl__defs *d = p->defs;
  *out = NULL;
  *n = 0;
  *gen = 0;
  if (!d) return 0;
  pthread_mutex_lock(&d->mu);
  pawl__def_t *c = pawl__calloc(d->n ? d->n : 1, sizeof *c);
  size_t k = 0;
  int oom = !c;
  for (size_t i = 0; !oom && i < d->n; i++, k++)
    oom = defs_dup(&c[k], &d->list[i]) != 0;
  *gen = d->gen;
  pthread_mutex_unlock(&d->mu);
  if (oom) {
    pawl__defs_free(c, k);
    return PAWL_ENOMEM;
  }
  *out = c;
  *n = k;
  return 0;
}

size_t pawl__defs_count(pawl_t *p) {
  struct pawl__defs *d = p->defs;
  if (!d) return 0;
  pthread_mutex_lock(&d->mu);
  size_t n = d->n;
  pthread_mutex_unlock(&d->mu);
  return n;
}

/* Adds (or replaces) `def`, taking over its strings. On failure they are
 * freed. */
static int defs_put(pawl_t *p, pawl__def_t *def) {
  if (!p->defs && !(p->defs = pawl__defs_new())) { /* a sibling handle */
    defs_free_one(def);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  struct pawl__defs *d = p->defs;
  pthread_mutex_lock(&d->mu);
  for (size_t i = 0; i < d->n; i++) {
    if (strcmp(d->list[i].type, def->type) == 0) {
      defs_free_one(&d->list[i]);
      d->list[i] = *def;
      d->gen++;
      pthread_mutex_unlock(&d->mu);
      return 0;
    }
  }
  void *grown = pawl__realloc(d->list, (d->n + 1) * sizeof *d->list);
  if (!grown) {
    pthread_mutex_unlock(&d->mu);
    defs_free_one(def);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  d->list = grown;
  d->list[d->n++] = *def;
  d->gen++;
  pthread_mutex_unlock(&d->mu);
  return 0;
}

/* A job type's name, as pawl_enqueue() takes it. */
static int defs_check_type(pawl_t *p, const char *fn, const char *type,
                           int c_type) {
  if (!type || !*type)
    return pawl__fail(p, PAWL_EINVAL, "%s: the type must not be empty", fn);
  size_t n = strlen(type);
  if (n > 200)
    return pawl__fail(p, PAWL_EINVAL, "%s: the type is longer than 200 bytes",
                      fn);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)type[i] < 0x20 || type[i] == 0x7f)
      return pawl__fail(p, PAWL_EINVAL,
                        "%s: the type contains a control character", fn);
  if (c_type && strcmp(type, "_defaults") == 0)
    return pawl__fail(p, PAWL_EINVAL,
                      "%s: _defaults holds defaults, not a job type", fn);
  return 0;
}

void pawl_define_opts_init(pawl_define_opts_t *o) { memset(o, 0, sizeof *o); }

int pawl_define_c(pawl_t *p, const char *type, pawl_job_fn fn, void *ud,
                  const pawl_define_opts_t *opts) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = defs_check_type(p, "pawl_define_c", type, 1);
  if (rc) return rc;
  if (!fn)
    return pawl__fail(p, PAWL_EINVAL, "pawl_define_c: fn must not be NULL");
  pawl_define_opts_t o;
  if (opts)
    o = *opts;
  else
    pawl_define_opts_init(&o);
  char *msg = p->errmsg;
  size_t len = sizeof p->errmsg;
  if ((o.has_priority &&
       pawl__bounds_check_int("priority", o.priority, PAWL_PRIORITY_MIN,
                              PAWL_PRIORITY_MAX, NULL, msg, len)) ||
      pawl__bounds_check_int("max_attempts", o.max_attempts, 0,
                             PAWL_ATTEMPTS_MAX, NULL, msg, len))
    return PAWL_EINVAL;
  if (!(o.timeout_s >= 0 && o.timeout_s <= PAWL_TIMEOUT_MAX_S))
    return pawl__fail(p, PAWL_EINVAL,
                      "timeout_s must be between 0 and %d seconds (got %g)",
                      PAWL_TIMEOUT_MAX_S, o.timeout_s);
  if (o.queue && (!*o.queue || strlen(o.queue) > 200))
    return pawl__fail(p, PAWL_EINVAL,
                      "queue must be 1..200 bytes when given");
  pawl__def_t def = {.fn = fn, .ud = ud, .opts = o};
  def.type = pawl__strdup(type);
  def.opts.queue = o.queue ? pawl__strdup(o.queue) : NULL;
  if (pawl__asprintf(&def.path, "=%s (C)", type) < 0) def.path = NULL;
  if (!def.type || !def.path || (o.queue && !def.opts.queue)) {
    defs_free_one(&def);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  return defs_put(p, &def);
}

/* Defines a Lua type from `len` bytes of `src`, named `chunk`. */
static int defs_lua(pawl_t *p, const char *type, const char *src, size_t len,
                    const char *chunk) {
  pawl__def_t def = {.len = len};
  def.type = pawl__strdup(type);
  def.path = pawl__strdup(chunk);
  def.src = pawl__malloc(len + 1);
  if (!def.type || !def.path || !def.src) {
    defs_free_one(&def);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  memcpy(def.src, src, len);
  def.src[len] = 0;
  return defs_put(p, &def);
}

int pawl_define(pawl_t *p, const char *type, const char *lua_source) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = defs_check_type(p, "pawl_define", type, 0);
  if (rc) return rc;
  if (!lua_source)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_define: lua_source must not be NULL");
  char chunk[220];
  snprintf(chunk, sizeof chunk, "(defined) %s", type);
  return defs_lua(p, type, lua_source, strlen(lua_source), chunk);
}

int pawl_define_file(pawl_t *p, const char *path) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!path) return pawl__fail(p, PAWL_EINVAL, "pawl_define_file: no path");
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n < 5 || strcmp(base + n - 4, ".lua") != 0)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_define_file: %s is not a NAME.lua file", path);
  char type[256];
  if (n - 4 >= sizeof type)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_define_file: the type is longer than 200 bytes");
  memcpy(type, base, n - 4);
  type[n - 4] = 0;
  int rc = defs_check_type(p, "pawl_define_file", type, 0);
  if (rc) return rc;
  FILE *f = fopen(path, "rb");
  if (!f)
    return pawl__fail(p, PAWL_EIO, "pawl_define_file: cannot read %s: %s",
                      path, strerror(errno));
  pawl_buf_t b;
  pawl__buf_init(&b);
  char chunk[8192];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) pawl__buf_append(&b, chunk, k);
  int bad = ferror(f);
  fclose(f);
  if (bad || b.oom) {
    pawl__buf_free(&b);
    return bad ? pawl__fail(p, PAWL_EIO, "pawl_define_file: cannot read %s",
                            path)
               : pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  rc = defs_lua(p, type, b.data ? b.data : "", b.len, path);
  pawl__buf_free(&b);
  return rc;
}
