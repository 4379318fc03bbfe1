/* loader.c: the scripts directory and the loader thread.
 *
 * The loader scans the directory every reload_ms; when it changed, it
 * loads the new list in a Lua state of its own (the probe: each broken
 * script is reported once) and installs it for the workers, who reload
 * between jobs. pawl_script_info() loads one script the same way, on the
 * caller's thread, with a guard thread as its watchdog. See host.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "clock.h"
#include "host.h"
#include "metrics.h"
#include "pawl_internal.h"
#include "worker.h"

/* ---- scripts ------------------------------------------------------------ */

void pawl__host_scripts_free(host_script_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    pawl__free(s[i].name);
    pawl__free(s[i].path);
    pawl__free(s[i].src);
    pawl__free((char *)s[i].copts.queue);
  }
  pawl__free(s);
}

/* A copy of `len` bytes and a NUL, or NULL. */
static char *host_memdup(const char *p, size_t len) {
  char *c = pawl__malloc(len + 1);
  if (!c) return NULL;
  memcpy(c, p, len);
  c[len] = 0;
  return c;
}

host_script_t *pawl__host_scripts_copy(host_t *h, size_t *n, uint64_t *gen) {
  pthread_mutex_lock(&h->mu);
  host_script_t *c = pawl__calloc(h->nscripts ? h->nscripts : 1, sizeof *c);
  size_t k = 0;
  for (size_t i = 0; c && i < h->nscripts; i++) {
    const host_script_t *s = &h->scripts[i];
    c[k].name = pawl__strdup(s->name);
    c[k].path = pawl__strdup(s->path);
    c[k].src = s->src ? host_memdup(s->src, s->len) : NULL;
    c[k].len = s->len;
    c[k].fn = s->fn;
    c[k].ud = s->ud;
    c[k].copts = s->copts;
    c[k].copts.queue = s->copts.queue ? pawl__strdup(s->copts.queue) : NULL;
    if (c[k].name && c[k].path && (c[k].src || !s->src) &&
        (c[k].copts.queue || !s->copts.queue)) {
      k++;
    } else {
      pawl__free(c[k].name);
      pawl__free(c[k].path);
      pawl__free(c[k].src);
      pawl__free((char *)c[k].copts.queue);
    }
  }
  *gen = h->scripts_gen;
  pthread_mutex_unlock(&h->mu);
  *n = k;
  return c;
}

static int host_script_cmp(const void *a, const void *b) {
  return strcmp(((const host_script_t *)a)->name,
                ((const host_script_t *)b)->name);
}

/* The contents of `path` (NUL-terminated, *len bytes), or NULL if it
 * cannot be read. */
static char *host_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  pawl_buf_t b;
  pawl__buf_init(&b);
  char chunk[8192];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) pawl__buf_append(&b, chunk, k);
  int bad = ferror(f) || b.oom;
  fclose(f);
  *len = b.len;
  char *s = bad ? NULL : pawl__buf_detach(&b);
  pawl__buf_free(&b);
  return s;
}

/* Lists the scripts directory: NAME.lua files are job types, _defaults.lua
 * the defaults; other files starting with '_' or '.' are ignored. Each
 * file's text is read here, once for all workers. *sig receives a
 * signature of names, sizes, modification times and contents, so any
 * change to the directory shows. Returns -1 if the directory is unusable. */
static int host_list_scripts(const char *dir, host_script_t **out, size_t *n,
                             uint64_t *sig) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  host_script_t *list = NULL;
  size_t count = 0, cap = 0;
  uint64_t hash = 1469598103934665603u;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".lua") != 0) continue;
    if (e->d_name[0] == '.') continue;
    if (e->d_name[0] == '_' && strcmp(e->d_name, "_defaults.lua") != 0) continue;
    char *path = NULL;
    if (pawl__asprintf(&path, "%s/%s", dir, e->d_name) < 0) continue;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      pawl__free(path);
      continue;
    }
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      void *p = pawl__realloc(list, cap * sizeof *list);
      if (!p) {
        pawl__free(path);
        break;
      }
      list = p;
    }
    memset(&list[count], 0, sizeof list[count]);
    list[count].name = pawl__strndup(e->d_name, len - 4);
    list[count].path = path;
    if (!list[count].name) {
      pawl__free(path);
      continue;
    }
    host_script_t *s = &list[count];
    s->len = 0;
    s->src = host_read_file(path, &s->len);
    count++;
    uint64_t parts[3] = {(uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec,
                         (uint64_t)sb.st_mtim.tv_nsec};
    for (const char *c = e->d_name; *c; c++) hash = (hash ^ (uint8_t)*c) * 1099511628211u;
    for (int i = 0; i < 3; i++) hash = (hash ^ parts[i]) * 1099511628211u;
    for (size_t i = 0; s->src && i < s->len; i++)
      hash = (hash ^ (uint8_t)s->src[i]) * 1099511628211u;
  }
  closedir(d);
  if (count) qsort(list, count, sizeof *list, host_script_cmp);
  /* readdir order is arbitrary: make the signature order-free by also
   * mixing in the count (xor-free FNV is order dependent, so rehash the
   * sorted names). */
  uint64_t sorted = 1469598103934665603u ^ count;
  for (size_t i = 0; i < count; i++)
    for (const char *c = list[i].name; *c; c++)
      sorted = (sorted ^ (uint8_t)*c) * 1099511628211u;
  *sig = hash ^ sorted;
  *out = list;
  *n = count;
  return 0;
}

/* Adds the job types defined on the host's handle (pawl_define*) to the
 * directory's list, over files of the same names, and their generation
 * to the signature. Out of memory: the list stays as it is (and the
 * definitions are looked at again next time). */
static void host_add_defs(host_t *h, host_script_t **list, size_t *n,
                          uint64_t *sig) {
  pawl__def_t *defs = NULL;
  size_t nd = 0;
  uint64_t gen = 0;
  if (pawl__defs_copy(h->p, &defs, &nd, &gen) != 0 || nd == 0) {
    pawl__free(defs);
    return;
  }
  host_script_t *grown = pawl__realloc(*list, (*n + nd) * sizeof **list);
  if (!grown) {
    pawl__defs_free(defs, nd);
    return;
  }
  *list = grown;
  for (size_t i = 0; i < nd; i++) {
    host_script_t *e = NULL;
    for (size_t k = 0; k < *n && !e; k++)
      if (strcmp(grown[k].name, defs[i].type) == 0) e = &grown[k];
    if (e) {
      pawl__free(e->name);
      pawl__free(e->path);
      pawl__free(e->src);
      pawl__free((char *)e->copts.queue);
    } else {
      e = &grown[(*n)++];
    }
    *e = (host_script_t){.name = defs[i].type, .path = defs[i].path,
                         .src = defs[i].src, .len = defs[i].len,
                         .fn = defs[i].fn, .ud = defs[i].ud,
                         .copts = defs[i].opts};
  }
  pawl__free(defs); /* the strings moved into the list */
  qsort(*list, *n, sizeof **list, host_script_cmp);
  *sig = (*sig ^ gen ^ 0x9e3779b97f4a7c15u) * 1099511628211u;
}

/* The name of the script that held recurring definition `name` in the
 * list installed before (NULL: none). */
static const char *loader_cron_holder(const host_t *h, const char *name) {
  for (size_t i = 0; i < h->ncrons; i++)
    if (h->crons[i].name && strcmp(h->crons[i].name, name) == 0)
      return h->crons[i].script;
  return NULL;
}

/* Two scripts that loaded and declare the same cron_name would write one
 * definition over the other at every sync: the second is refused as a
 * script that fails to load (errors[k], naming both files), so it serves
 * no jobs and its previous version, if any, keeps serving. Which one is
 * second: the one that did not hold the name before, else the later in
 * name order. refused[k] is set for each (its cron is not collected: the
 * probe holds its new version). */
static void loader_refuse_twins(host_t *h, worker_t *probe,
                                const host_script_t *list, size_t n,
                                char **errors, char *refused) {
  if (!errors || !refused) return;
  char **names = pawl__calloc(n ? n : 1, sizeof *names);
  if (!names) return;
  for (size_t i = 0; i < n; i++) {
    pawl_recurring_t d;
    if (errors[i] || pawl__lua_cron_of(probe->lua, list[i].name, &d) != 1)
      continue;
    names[i] = d.name;
    d.name = NULL;
    pawl_recurring_t *copy = pawl__malloc(sizeof *copy);
    if (copy) {
      *copy = d;
      pawl_recurring_free(copy, 1);
    }
  }
  for (size_t i = 0; i < n; i++) {
    for (size_t k = i + 1; names[i] && k < n; k++) {
      if (!names[k] || strcmp(names[i], names[k]) != 0) continue;
      const char *holder = loader_cron_holder(h, names[i]);
      size_t keep = holder && strcmp(holder, list[k].name) == 0 ? k : i;
      size_t drop = keep == i ? k : i;
      const char *kp = list[keep].path ? list[keep].path : list[keep].name;
      const char *dp = list[drop].path ? list[drop].path : list[drop].name;
      size_t len = strlen(kp) + strlen(dp) + strlen(names[i]) + 120;
      char *msg = pawl__malloc(len);
      if (msg)
        snprintf(msg, len,
                 "%s: cron_name \"%s\" is declared by %s too: this one is "
                 "refused (give each a name of its own)",
                 dp, names[i], kp);
      errors[drop] = msg ? msg : pawl__strdup("cron_name declared twice");
      refused[drop] = 1;
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                      "script not loaded (a previous version, if any, keeps "
                      "serving)");
      pawl__log_str(&line, "script", list[drop].name);
      pawl__log_str(&line, "error", errors[drop] ? errors[drop] : "");
      pawl__log_end(&line);
      pawl__free(names[drop]);
      names[drop] = NULL;
    }
  }
  for (size_t i = 0; i < n; i++) pawl__free(names[i]);
  pawl__free(names);
}

/* Looks at the scripts directory; if it changed, loads the new list in the
 * loader's `probe` state (which logs each broken script) and installs it,
 * bumping the generation. A script that does not load is installed with
 * the text of the version it had: workers reload only between jobs, so
 * one that was busy through the last good change must still get that
 * version, not the one before. One that never loaded is left out, so that
 * workers do not run a top level that failed (or never returned) again.
 * Returns 1 when it installed a new list, 0 when nothing changed, -1 when
 * the host's stop cut the load short (nothing installed). Called by the
 * loader only (the one writer of h->scripts). */
int pawl__loader_scan(host_t *h, uint64_t *last_sig, worker_t *probe) {
  host_script_t *list = NULL;
  size_t n = 0;
  uint64_t sig = 0;
  if (h->scripts_dir && host_list_scripts(h->scripts_dir, &list, &n, &sig) != 0)
    sig = 0;
  host_add_defs(h, &list, &n, &sig);
  if (sig == *last_sig && h->scripts_gen != 0) {
    pawl__host_scripts_free(list, n);
    return 0;
  }
  char **errors = pawl__calloc(n ? n : 1, sizeof *errors);
  if (pawl__lua_load(probe->lua, list, n, 1, errors) != 0) {
    for (size_t i = 0; errors && i < n; i++) pawl__free(errors[i]);
    pawl__free(errors);
    pawl__host_scripts_free(list, n);
    return -1;
  }
  *last_sig = sig;
  char *refused = pawl__calloc(n ? n : 1, 1);
  loader_refuse_twins(h, probe, list, n, errors, refused);
  size_t kept = 0, nbroken = 0, nfailed = 0;
  pawl_script_error_t *broken = pawl__calloc(n ? n : 1, sizeof *broken);
  for (size_t i = 0; i < n; i++) {
    if (errors && errors[i] && broken) {
      broken[nbroken].type = pawl__strdup(list[i].name);
      broken[nbroken].error = pawl__strdup(errors[i]);
      if (broken[nbroken].type && broken[nbroken].error) {
        nbroken++;
      } else {
        pawl__free(broken[nbroken].type);
        pawl__free(broken[nbroken].error);
      }
    }
    if (errors && errors[i]) {
      nfailed++;
      const host_script_t *old = NULL;
      for (size_t k = 0; k < h->nscripts && !old; k++)
        if (strcmp(h->scripts[k].name, list[i].name) == 0 && h->scripts[k].src)
          old = &h->scripts[k];
      char *keep = old ? host_memdup(old->src, old->len) : NULL;
      pawl__free(list[i].src);
      list[i].src = keep;
      list[i].len = keep ? old->len : 0;
      pawl__free(errors[i]);
      if (!keep) {
        pawl__free(list[i].name);
        pawl__free(list[i].path);
        continue;
      }
    }
    if (refused) refused[kept] = refused[i];
    list[kept++] = list[i];
  }
  pawl__free(errors);
  pawl__metrics_add(h->metrics, MET_RELOAD_ERRORS, (int64_t)nfailed);
  pawl__metrics_broken(h->metrics, (int)nfailed);
  if (nbroken == 0) {
    pawl__free(broken);
    broken = NULL;
  }
  /* The recurring definitions the loaded versions declare (a broken
   * script's is its previous version's). */
  pawl_recurring_t *crons = pawl__calloc(kept ? kept : 1, sizeof *crons);
  size_t ncrons = 0;
  for (size_t i = 0; crons && i < kept; i++)
    if (!(refused && refused[i]) &&
        pawl__lua_cron_of(probe->lua, list[i].name, &crons[ncrons]) == 1)
      ncrons++;
  pawl__free(refused);
  /* Their redact lists, for the views without the scripts. */
  char *types = pawl__lua_types_json(probe->lua, list, kept);
  pthread_mutex_lock(&h->mu);
  if (types) {
    pawl__free(h->types_json);
    h->types_json = types;
    h->types_gen++;
  }
  if (crons) {
    pawl_recurring_free(h->crons, h->ncrons);
    h->crons = crons;
    h->ncrons = ncrons;
    h->crons_gen++;
  }
  host_script_t *old = h->scripts;
  size_t nold = h->nscripts;
  h->scripts = list;
  h->nscripts = kept;
  h->scripts_gen++;
  /* What pawl_reload() reports: the scripts that did not load now. */
  pawl_script_errors_free(h->load_errors, h->nload_errors);
  h->load_errors = broken;
  h->nload_errors = nbroken;
  /* Idle workers load the new list now, not before their next job. */
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
  pawl__host_scripts_free(old, nold);
  return 1;
}

/* ---- the loader thread -------------------------------------------------- */

/* Loading a script runs its top level, which may take long or never
 * return: that happens here, under the watchdog (the load deadline), never
 * on the poller's path. The loader owns a Lua state that only loads
 * scripts (the probe), so that each broken script is reported once, and
 * installs each new list for the workers. */
typedef struct loader {
  host_t *h;
  worker_t probe;
  /* Dead-letter alerts (alerts.c): a state that runs the global
   * on_dead hook, with a handle of its own, made by the loader thread
   * (loader_alerter_open). has_alerter: it was made. alerts_failing: the
   * last try to make it or to read the outbox failed (logged once). */
  worker_t alerter;
  int has_alerter;
  int alerts_failing;
  uint64_t sig;              /* signature of the directory last loaded */
} loader_t;

/* Makes the alerter on the loader thread, once the scripts are
 * in: a handle of its own (the hooks may enqueue; the outbox's rows are
 * taken through it), then its Lua state. Made here rather than by
 * pawl_start() so that a database that cannot be reached now delays the
 * alerts, not the start (and the start opens the connections it always
 * did, in their order). 0, or -1 (logged once per outage; tried again at
 * the next round). */
static int loader_alerter_open(loader_t *ld) {
  host_t *h = ld->h;
  worker_t *w = &ld->alerter;
  memset(w, 0, sizeof *w);
  w->h = h;
  w->index = -1;
  w->signal = h->interrupt_signal;
  w->thread = pthread_self();
  pthread_mutex_init(&w->dl, NULL);
  char err[400];
  int rc = pawl__open_sibling(h->p, NULL, &w->p, err, sizeof err);
  if (!rc) rc = pawl__worker_open(w, err, sizeof err);
  if (rc) {
    pawl__worker_close(w);
    pawl_close(w->p);
    w->p = NULL;
    pthread_mutex_destroy(&w->dl);
    if (!ld->alerts_failing) {
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                      "alerts: cannot make the alerter (tried again)");
      pawl__log_str(&line, "error", err);
      pawl__log_end(&line);
    }
    ld->alerts_failing = 1;
    return -1;
  }
  pthread_mutex_lock(&h->mu); /* the watchdog and pawl_stop read it */
  h->alerter = w;
  pthread_mutex_unlock(&h->mu);
  ld->has_alerter = 1;
  return 0;
}

void *pawl__loader_main(void *arg) {
  loader_t *ld = arg;
  host_t *h = ld->h;
  ld->probe.thread = pthread_self(); /* before any call the watchdog sees */
  pawl__worker_bind(&ld->probe);
  int first = 1;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    /* pawl_reload() asks for a look now; it is answered once done. */
    uint64_t asked = h->reload_asked;
    pthread_mutex_unlock(&h->mu);
    if (pawl__loader_scan(h, &ld->sig, &ld->probe) > 0) {
      if (!first) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "scripts loaded");
        pawl__log_str(&line, "dir", h->scripts_dir ? h->scripts_dir : "(none)");
        pawl__log_int(&line, "files", (int64_t)h->nscripts);
        pawl__log_end(&line);
      }
      first = 0;
      pawl__host_wake(h); /* jobs may be claimed now */
    }
    pthread_mutex_lock(&h->mu);
    if (asked != h->reload_done) {
      h->reload_done = asked;
      pthread_cond_broadcast(&h->stop_cv);
    }
    if (h->stopping) break;
    if (h->scripts_gen) {
      /* The global on_dead hooks, between two looks. The
       * interrupt signal is the alerter's while its hooks run. */
      pthread_mutex_unlock(&h->mu);
      if (ld->has_alerter || loader_alerter_open(ld) == 0) {
        worker_t *prev = pawl__worker_bind(&ld->alerter);
        pawl__alerts_chore(h, &ld->alerter, &ld->alerts_failing);
        pawl__worker_unbind(prev);
      }
      pthread_mutex_lock(&h->mu);
      if (h->stopping) break;
    }
    if (h->reload_asked != h->reload_done) continue;
    struct timespec ts = pawl__mono_deadline(h->opts.reload_ms);
    pthread_cond_timedwait(&h->load_cv, &h->mu, &ts);
  }
  h->loader_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}


int pawl__loader_new(host_t *h, char *err, size_t errlen) {
  loader_t *ld = pawl__calloc(1, sizeof *ld);
  if (!ld) {
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  ld->h = h;
  ld->probe.h = h;
  ld->probe.index = -1;
  ld->probe.signal = h->interrupt_signal;
  pthread_mutex_init(&ld->probe.dl, NULL);
  int rc = pawl__worker_open(&ld->probe, err, errlen);
  if (rc) {
    pthread_mutex_destroy(&ld->probe.dl);
    pawl__free(ld);
    return rc;
  }
  h->loader_state = ld;
  h->probe = &ld->probe;
  return 0;
}

void pawl__loader_free(host_t *h, struct loader *ld) {
  if (!ld) return;
  if (ld->has_alerter) {
    pawl__worker_close(&ld->alerter);
    pawl_close(ld->alerter.p);
    pthread_mutex_destroy(&ld->alerter.dl);
    ld->has_alerter = 0;
    if (h->alerter == &ld->alerter) h->alerter = NULL;
  }
  pawl__worker_close(&ld->probe);
  pthread_mutex_destroy(&ld->probe.dl);
  pawl__free(ld);
  if (h->loader_state == ld) {
    h->loader_state = NULL;
    h->probe = NULL;
  }
}

/* ---- pawl_script_info ----------------------------------------------------- */

/* pawl_script_info runs on the caller's thread, where no host watchdog
 * looks: this thread is its watchdog while it loads. */
typedef struct loader_guard {
  worker_t *w;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} loader_guard_t;

static void *loader_guard_main(void *arg) {
  loader_guard_t *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->done) {
    pthread_mutex_unlock(&g->mu);
    pawl__worker_watch(g->w, pawl__mono_ms());
    pthread_mutex_lock(&g->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    if (!g->done) pthread_cond_timedwait(&g->cv, &g->mu, &ts);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* Loads the type's script (and _defaults.lua) into w, a fresh state, and
 * reads its defaults; 0, or PAWL_EINVAL with `err` saying why. */
static int loader_info(worker_t *w, const char *type, const char *path,
                       const char *defaults, pawl_script_info_t *out,
                       char *err, size_t errlen) {
  host_script_t list[2];
  size_t n = 0;
  if (access(defaults, R_OK) == 0)
    list[n++] = (host_script_t){.name = "_defaults", .path = (char *)defaults};
  list[n++] = (host_script_t){.name = (char *)type, .path = (char *)path};
  char *errors[2] = {NULL, NULL};
  int rc = pawl__lua_load(w->lua, list, n, 0, errors);
  for (size_t i = 0; i < n; i++) {
    if (errors[i] && rc == 0) {
      snprintf(err, errlen, "script %s is broken: %s", list[i].path, errors[i]);
      rc = PAWL_EINVAL;
    }
    pawl__free(errors[i]);
  }
  if (rc) return PAWL_EINVAL;
  pawl__lua_defaults_of(w->lua, type, out);
  return 0;
}

int pawl_script_info(const char *dir, const char *type,
                     pawl_script_info_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char path[4096], defaults[4096];
  snprintf(path, sizeof path, "%s/%s.lua", dir, type);
  snprintf(defaults, sizeof defaults, "%s/_defaults.lua", dir);
  if (strchr(type, '/') || access(path, R_OK) != 0) return PAWL_ENOTFOUND;
  worker_t w;
  memset(&w, 0, sizeof w);
  w.index = -1;
  pthread_mutex_init(&w.dl, NULL);
  int rc = pawl__worker_open(&w, err, errlen);
  if (rc) {
    pthread_mutex_destroy(&w.dl);
    return rc;
  }
  /* The script's top level runs here, under a deadline: this thread takes
   * the interrupt signal while it loads, and a guard thread watches. */
  int held = pawl__worker_signal_acquire(SIGURG) == 0;
  w.signal = held ? SIGURG : 0; /* no signal: the load runs unwatched */
  sigset_t old;
  pthread_sigmask(SIG_SETMASK, NULL, &old);
  w.thread = pthread_self();
  worker_t *prev_self = pawl__worker_bind(&w);
  loader_guard_t g = {.w = &w};
  pthread_mutex_init(&g.mu, NULL);
  pthread_cond_init(&g.cv, NULL);
  pthread_t guard;
  int guarded = pthread_create(&guard, NULL, loader_guard_main, &g) == 0;
  if (!guarded) {
    snprintf(err, errlen, "cannot start a thread to watch the script's loading");
    rc = PAWL_ENOMEM;
  } else {
    rc = loader_info(&w, type, path, defaults, out, err, errlen);
  }
  if (guarded) {
    pthread_mutex_lock(&g.mu);
    g.done = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(guard, NULL);
  }
  pthread_cond_destroy(&g.cv);
  pthread_mutex_destroy(&g.mu);
  pawl__worker_unbind(prev_self);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (held) pawl__worker_signal_release(SIGURG);
  pawl__worker_close(&w);
  pthread_mutex_destroy(&w.dl);
  return rc;
}
