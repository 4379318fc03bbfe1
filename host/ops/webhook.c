/* webhook.c: the sender thread of pawl.alert.webhook.
 *
 * Hooks run on worker threads (a type's on_dead) or on the loader thread
 * (the global one, alerts.c); neither may wait for the network. A hook's
 * post is copied into the queue of its destination (scheme, host and
 * port: weburl.h), each bounded (WEBHOOK_QUEUE_MAX; a full queue refuses
 * the post, the hook's error says so, and the drop is counted), so a
 * destination that never answers fills only its own queue and delays no
 * other's alerts. This thread sends with libcurl's multi interface: one
 * try at a time per destination, all destinations at once, each try
 * bounded by the post's timeout; a failed try (no answer, or a status
 * outside 2xx) is logged and tried again after a delay that doubles from
 * the post's backoff, until its attempts are used up (then logged as
 * given up). A stop ends the tries in flight and drops what is queued,
 * with one log line saying how many. The URL is never logged as written:
 * its user information and query are replaced (they may carry
 * credentials). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "ops.h"
#include "metrics.h"
#include "redact.h"
#include "weburl.h"

#define WEBHOOK_QUEUE_MAX 256 /* posts waiting, per destination */
#define WEBHOOK_DESTS_MAX 64  /* destinations with a queue */
#define WEBHOOK_BODY_MAX (1024 * 1024)

typedef struct webhook_post {
  struct webhook_post *next;
  char *url;
  char shown[512];           /* the URL as logs may show it */
  struct curl_slist *headers;
  char *body;
  long timeout_ms;
  int attempts, tries;
  int64_t backoff_ms;
  int64_t due;               /* mono ms */
} webhook_post_t;

/* One destination: its queue (unordered; the thread picks the post due
 * first) and the try in flight. Made on its first post, kept until the
 * host stops. */
typedef struct webhook_dest {
  struct webhook_dest *next;
  char name[PAWL__WEB_DEST_MAX];
  webhook_post_t *head;
  size_t n;
  webhook_post_t *flying;    /* its try in flight, NULL: none */
  CURL *easy;                /* flying's transfer */
  char cerr[CURL_ERROR_SIZE];
} webhook_dest_t;

struct webhook {
  host_t *h;
  pthread_t thread;
  pthread_mutex_t mu;        /* guards dests' queues, ndests and stop */
  CURLM *multi;              /* the thread's; curl_multi_wakeup from others */
  webhook_dest_t *dests;
  int ndests;
  int stop;
  int started;
};

static void webhook_post_free(webhook_post_t *w) {
  if (!w) return;
  pawl__free(w->url);
  curl_slist_free_all(w->headers);
  pawl__free(w->body);
  pawl__free(w);
}

static pthread_once_t webhook_once = PTHREAD_ONCE_INIT;
static int webhook_curl_ok;
static void webhook_curl_init(void) {
  webhook_curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/* The destination named `name`, made on first use; NULL when
 * WEBHOOK_DESTS_MAX have queues already or out of memory. Called with
 * s->mu held. */
static webhook_dest_t *webhook_dest(struct webhook *s, const char *name) {
  for (webhook_dest_t *d = s->dests; d; d = d->next)
    if (strcmp(d->name, name) == 0) return d;
  if (s->ndests >= WEBHOOK_DESTS_MAX) return NULL;
  webhook_dest_t *d = pawl__calloc(1, sizeof *d);
  if (!d) return NULL;
  snprintf(d->name, sizeof d->name, "%s", name);
  d->next = s->dests;
  s->dests = d;
  s->ndests++;
  return d;
}

int pawl__webhook_post(void *data, const pawl__lua_post_t *req, char *err,
                       size_t errlen) {
  host_t *h = data;
  struct webhook *s = h ? h->webhook : NULL;
  if (!s) {
    snprintf(err, errlen, "no sender: webhooks post from a running host "
                          "(pawl run, pawl_start)");
    return -1;
  }
  if (strlen(req->body) > WEBHOOK_BODY_MAX) {
    snprintf(err, errlen, "the alert's body is %zu bytes, more than %d",
             strlen(req->body), WEBHOOK_BODY_MAX);
    return -1;
  }
  webhook_post_t *w = pawl__calloc(1, sizeof *w);
  int oom = !w;
  if (w) {
    w->url = pawl__strdup(req->url);
    w->body = pawl__strdup(req->body);
    oom = !w->url || !w->body;
    w->headers = curl_slist_append(NULL, "Content-Type: application/json");
    oom |= !w->headers;
    for (size_t i = 0; !oom && i < req->nheaders; i++) {
      struct curl_slist *l = curl_slist_append(w->headers, req->headers[i]);
      if (!l)
        oom = 1;
      else
        w->headers = l;
    }
  }
  if (oom) {
    webhook_post_free(w);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pawl__redact_web_url(req->url, w->shown, sizeof w->shown);
  w->timeout_ms = (long)(req->timeout_s * 1000);
  w->attempts = req->attempts;
  w->backoff_ms = (int64_t)(req->backoff_s * 1000);
  w->due = pawl__mono_ms();
  char dest[PAWL__WEB_DEST_MAX];
  if (pawl__web_dest(req->url, dest) != 0) {
    webhook_post_free(w);
    snprintf(err, errlen, "%s is not an http:// or https:// URL with a host",
             w->shown);
    return -1;
  }
  pthread_mutex_lock(&s->mu);
  webhook_dest_t *d = s->stop ? NULL : webhook_dest(s, dest);
  int full = !d || d->n >= WEBHOOK_QUEUE_MAX;
  if (!full) {
    w->next = d->head;
    d->head = w;
    d->n++;
  }
  pthread_mutex_unlock(&s->mu);
  if (!full) {
    curl_multi_wakeup(s->multi);
    return 0;
  }
  if (s->h->metrics) pawl__metrics_add(s->h->metrics, MET_WEBHOOK_DROPS, 1);
  if (!d && !s->stop)
    snprintf(err, errlen, "%d webhook destinations have queues already: "
             "alert to %s dropped", WEBHOOK_DESTS_MAX, dest);
  else if (!d)
    snprintf(err, errlen, "the host is stopping: alert to %s dropped", dest);
  else
    snprintf(err, errlen, "the webhook queue of %s is full (%d posts "
             "waiting): alert dropped", dest, WEBHOOK_QUEUE_MAX);
  webhook_post_free(w);
  return -1;
}

static size_t webhook_discard(char *p, size_t size, size_t n, void *data) {
  (void)p, (void)data;
  return size * n;
}

/* Starts the try of `w` for destination `d` (w stays in d's queue until
 * this succeeds); 0, or -1 when out of memory. */
static int webhook_start(struct webhook *s, webhook_dest_t *d,
                         webhook_post_t *w) {
  CURL *c = curl_easy_init();
  if (!c) return -1;
  d->cerr[0] = 0;
  curl_easy_setopt(c, CURLOPT_URL, w->url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, w->headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, w->body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, w->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, w->timeout_ms);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, d->cerr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, webhook_discard);
  curl_easy_setopt(c, CURLOPT_PRIVATE, d);
  if (curl_multi_add_handle(s->multi, c) != CURLM_OK) {
    curl_easy_cleanup(c);
    return -1;
  }
  d->easy = c;
  d->flying = w;
  return 0;
}

/* The try of `w` ended (rc: libcurl's code, status: the HTTP status):
 * logs it, then frees `w` or puts it back in d's queue for its next try.
 * Called without s->mu. */
static void webhook_ended(struct webhook *s, webhook_dest_t *d,
                          webhook_post_t *w, CURLcode rc, long status) {
  char why[256] = "";
  /* libcurl's message may quote the URL: show ours instead. */
  if (rc != CURLE_OK)
    snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
  else if (status < 200 || status > 299)
    snprintf(why, sizeof why, "the server answered %ld", status);
  log_line_t line;
  if (!why[0]) {
    pawl__log_begin(&line, &s->h->log, PAWL_LOG_INFO, "alert posted");
    pawl__log_str(&line, "url", w->shown);
    pawl__log_int(&line, "try", w->tries);
    pawl__log_end(&line);
    webhook_post_free(w);
    return;
  }
  int again = w->tries < w->attempts;
  pawl__log_begin(&line, &s->h->log, again ? PAWL_LOG_WARN : PAWL_LOG_ERROR,
                  again ? "alert post failed: will try again"
                        : "alert post failed: giving up");
  pawl__log_str(&line, "url", w->shown);
  pawl__log_int(&line, "try", w->tries);
  pawl__log_int(&line, "attempts", w->attempts);
  pawl__log_str(&line, "error", why);
  pawl__log_end(&line);
  if (!again) {
    webhook_post_free(w);
    return;
  }
  /* backoff * 2^(tries - 1), at most an hour. */
  int64_t delay = w->backoff_ms;
  for (int i = 1; i < w->tries && delay < 3600000; i++) delay *= 2;
  if (delay > 3600000) delay = 3600000;
  w->due = pawl__mono_ms() + delay;
  pthread_mutex_lock(&s->mu);
  w->next = d->head;
  d->head = w;
  d->n++;
  pthread_mutex_unlock(&s->mu);
}

/* Starts the due post of every destination without a try in flight;
 * returns how long until the next post falls due (ms; -1: none waits).
 * Called with s->mu held. */
static int64_t webhook_launch(struct webhook *s) {
  int64_t now = pawl__mono_ms(), wait = -1;
  for (webhook_dest_t *d = s->dests; d; d = d->next) {
    if (d->flying) continue;
    webhook_post_t **best = NULL;
    for (webhook_post_t **pp = &d->head; *pp; pp = &(*pp)->next)
      if (!best || (*pp)->due < (*best)->due) best = pp;
    if (!best) continue;
    webhook_post_t *w = *best;
    if (w->due <= now && webhook_start(s, d, w) == 0) {
      *best = w->next;
      d->n--;
      w->tries++;
      continue;
    }
    /* Not due yet, or no memory to start it: a second later. */
    if (w->due <= now) w->due = now + 1000;
    if (wait < 0 || w->due - now < wait) wait = w->due - now;
  }
  return wait;
}

static void *webhook_main(void *arg) {
  struct webhook *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    int64_t wait = stop ? 0 : webhook_launch(s);
    pthread_mutex_unlock(&s->mu);
    if (stop) break;
    int running = 0;
    curl_multi_perform(s->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(s->multi, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL *c = msg->easy_handle;
      CURLcode rc = msg->data.result;
      webhook_dest_t *d = NULL;
      long status = 0;
      curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&d);
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(s->multi, c);
      curl_easy_cleanup(c);
      webhook_post_t *w = d->flying;
      /* d->flying is the thread's own; posting threads never read it. */
      d->flying = NULL;
      d->easy = NULL;
      webhook_ended(s, d, w, rc, status);
    }
    /* Sleeps until a transfer needs us, a post falls due, or another
     * thread posts or stops us (curl_multi_wakeup). */
    int timeout = wait < 0 || wait > 1000 ? 1000 : (int)wait;
    curl_multi_poll(s->multi, NULL, 0, timeout, NULL);
  }
  return NULL;
}

int pawl__webhook_new(host_t *h, char *err, size_t errlen) {
  pthread_once(&webhook_once, webhook_curl_init);
  if (!webhook_curl_ok) {
    snprintf(err, errlen, "libcurl could not be initialised");
    return PAWL_ESTORE;
  }
  struct webhook *s = pawl__calloc(1, sizeof *s);
  if (!s || !(s->multi = curl_multi_init())) {
    pawl__free(s);
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->h = h;
  pthread_mutex_init(&s->mu, NULL);
  if (pthread_create(&s->thread, NULL, webhook_main, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    curl_multi_cleanup(s->multi);
    pawl__free(s);
    snprintf(err, errlen, "cannot start the webhook sender thread");
    return PAWL_ENOMEM;
  }
  s->started = 1;
  h->webhook = s;
  return 0;
}

void pawl__webhook_free(host_t *h) {
  struct webhook *s = h->webhook;
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_mutex_unlock(&s->mu);
  curl_multi_wakeup(s->multi);
  pthread_join(s->thread, NULL);
  size_t dropped = 0;
  while (s->dests) {
    webhook_dest_t *d = s->dests;
    s->dests = d->next;
    if (d->easy) {
      curl_multi_remove_handle(s->multi, d->easy);
      curl_easy_cleanup(d->easy);
      webhook_post_free(d->flying);
      dropped++;
    }
    while (d->head) {
      webhook_post_t *w = d->head;
      d->head = w->next;
      webhook_post_free(w);
      dropped++;
    }
    pawl__free(d);
  }
  curl_multi_cleanup(s->multi);
  if (dropped) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                    "alert posts not sent: the host stopped");
    pawl__log_int(&line, "dropped", (int64_t)dropped);
    pawl__log_end(&line);
  }
  pthread_mutex_destroy(&s->mu);
  pawl__free(s);
  h->webhook = NULL;
}
