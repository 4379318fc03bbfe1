/* webhook.c: the sender thread of pawl.alert.webhook (issue 16).
 *
 * Hooks run on worker threads (a type's on_dead) or on the loader thread
 * (the global one, alerts.c); neither may wait for the network. A hook's
 * post is copied into a bounded queue (WEBHOOK_QUEUE_MAX; a full queue
 * refuses the post and the hook's error says so) and this thread sends
 * it with libcurl: one try at a time, each bounded by the post's timeout;
 * a failed try (no answer, or a status outside 2xx) is logged and tried
 * again after a delay that doubles from the post's backoff, until its
 * attempts are used up (then logged as given up). A stop ends the try in
 * flight (the progress callback) and drops what is queued, with one log
 * line saying how many. The URL is never logged as written: its user
 * information and query are replaced (they may carry credentials). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "redact.h"

#define WEBHOOK_QUEUE_MAX 256
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

struct webhook {
  host_t *h;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  webhook_post_t *head;      /* unordered; the thread picks the due one */
  size_t n;
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
  pthread_mutex_lock(&s->mu);
  int full = s->n >= WEBHOOK_QUEUE_MAX || s->stop;
  if (!full) {
    w->next = s->head;
    s->head = w;
    s->n++;
    pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  if (full) {
    webhook_post_free(w);
    snprintf(err, errlen, "the webhook queue is full (%d posts waiting) "
                          "or the host is stopping: alert dropped",
             WEBHOOK_QUEUE_MAX);
    return -1;
  }
  return 0;
}

/* libcurl's progress callback: a stop ends the try in flight. */
static int webhook_progress(void *data, curl_off_t a, curl_off_t b,
                            curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  struct webhook *s = data;
  pthread_mutex_lock(&s->mu);
  int stop = s->stop;
  pthread_mutex_unlock(&s->mu);
  return stop;
}

static size_t webhook_discard(char *p, size_t size, size_t n, void *data) {
  (void)p, (void)data;
  return size * n;
}

/* One try of `w`: 0 when the server answered 2xx, else -1 with `why`. */
static int webhook_try(struct webhook *s, webhook_post_t *w, char *why,
                       size_t len) {
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(why, len, "cannot start a transfer (out of memory)");
    return -1;
  }
  char cerr[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, w->url);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, w->headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, w->body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, w->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, w->timeout_ms);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, webhook_discard);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, webhook_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    /* libcurl's message may quote the URL: show ours instead. */
    snprintf(why, len, "%s", curl_easy_strerror(rc));
    return -1;
  }
  if (status < 200 || status > 299) {
    snprintf(why, len, "the server answered %ld", status);
    return -1;
  }
  return 0;
}

static void *webhook_main(void *arg) {
  struct webhook *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    /* The post due first. */
    webhook_post_t **best = NULL;
    for (webhook_post_t **pp = &s->head; *pp; pp = &(*pp)->next)
      if (!best || (*pp)->due < (*best)->due) best = pp;
    int64_t now = pawl__mono_ms();
    if (!best || (*best)->due > now) {
      if (best) {
        struct timespec ts = pawl__mono_deadline((*best)->due - now);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
      } else {
        pthread_cond_wait(&s->cv, &s->mu);
      }
      continue;
    }
    webhook_post_t *w = *best;
    *best = w->next;
    s->n--;
    pthread_mutex_unlock(&s->mu);
    char why[256];
    w->tries++;
    int rc = webhook_try(s, w, why, sizeof why);
    log_line_t line;
    if (rc == 0) {
      pawl__log_begin(&line, &s->h->log, PAWL_LOG_INFO, "alert posted");
      pawl__log_str(&line, "url", w->shown);
      pawl__log_int(&line, "try", w->tries);
      pawl__log_end(&line);
      webhook_post_free(w);
      pthread_mutex_lock(&s->mu);
      continue;
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
      pthread_mutex_lock(&s->mu);
      continue;
    }
    /* backoff * 2^(tries - 1), at most an hour. */
    int64_t delay = w->backoff_ms;
    for (int i = 1; i < w->tries && delay < 3600000; i++) delay *= 2;
    if (delay > 3600000) delay = 3600000;
    w->due = pawl__mono_ms() + delay;
    pthread_mutex_lock(&s->mu);
    w->next = s->head;
    s->head = w;
    s->n++;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int pawl__webhook_new(host_t *h, char *err, size_t errlen) {
  pthread_once(&webhook_once, webhook_curl_init);
  if (!webhook_curl_ok) {
    snprintf(err, errlen, "libcurl could not be initialised");
    return PAWL_ESTORE;
  }
  struct webhook *s = pawl__calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->h = h;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, webhook_main, s) != 0) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
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
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  size_t dropped = 0;
  while (s->head) {
    webhook_post_t *w = s->head;
    s->head = w->next;
    webhook_post_free(w);
    dropped++;
  }
  if (dropped) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                    "alert posts not sent: the host stopped");
    pawl__log_int(&line, "dropped", (int64_t)dropped);
    pawl__log_end(&line);
  }
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  pawl__free(s);
  h->webhook = NULL;
}
