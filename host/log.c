/* log.c: see log.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "iso8601.h"

static const char *const log_names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *name) {
  for (int i = 0; name && i < 4; i++)
    if (strcmp(name, log_names[i]) == 0) return i;
  return PAWL_EINVAL;
}

const char *log_level_name(int level) {
  return level >= 0 && level < 4 ? log_names[level] : "?";
}

void log_init(host_logger_t *lg, int level, int json, pawl_log_fn fn,
              void *data) {
  lg->level = level;
  lg->json = json;
  lg->fn = fn;
  lg->data = data;
  pthread_mutex_init(&lg->lock, NULL);
}

void log_destroy(host_logger_t *lg) { pthread_mutex_destroy(&lg->lock); }

void log_begin(log_line_t *l, host_logger_t *lg, int level, const char *msg) {
  l->lg = lg;
  l->level = level;
  l->on = lg && level >= lg->level;
  buf_init(&l->buf);
  if (!l->on) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char when[32];
  iso8601_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when);
  if (lg->json) {
    buf_puts(&l->buf, "{\"ts\":\"");
    buf_puts(&l->buf, when);
    buf_puts(&l->buf, "\",\"level\":\"");
    buf_puts(&l->buf, log_level_name(level));
    buf_puts(&l->buf, "\",\"msg\":");
    buf_json_string(&l->buf, msg, strlen(msg));
  } else {
    buf_printf(&l->buf, "%s %-5s %s", when, log_level_name(level), msg);
  }
}

/* Text values are quoted when they hold spaces, quotes or control
 * characters, so a line always splits back into key=value pairs. */
static void log_text_value(pawl_buf_t *b, const char *v) {
  int plain = *v != 0;
  for (const char *c = v; *c && plain; c++)
    if ((unsigned char)*c <= ' ' || *c == '"' || *c == '=' || *c == '\\')
      plain = 0;
  if (plain)
    buf_puts(b, v);
  else
    buf_json_string(b, v, strlen(v));
}

void log_str(log_line_t *l, const char *key, const char *value) {
  if (!l->on || !value) return;
  if (l->lg->json) {
    buf_putc(&l->buf, ',');
    buf_json_string(&l->buf, key, strlen(key));
    buf_putc(&l->buf, ':');
    buf_json_string(&l->buf, value, strlen(value));
  } else {
    buf_printf(&l->buf, " %s=", key);
    log_text_value(&l->buf, value);
  }
}

void log_int(log_line_t *l, const char *key, int64_t value) {
  if (!l->on) return;
  if (l->lg->json)
    buf_printf(&l->buf, ",\"%s\":%lld", key, (long long)value);
  else
    buf_printf(&l->buf, " %s=%lld", key, (long long)value);
}

void log_num(log_line_t *l, const char *key, double value) {
  if (!l->on) return;
  if (l->lg->json)
    buf_printf(&l->buf, ",\"%s\":%.3f", key, value);
  else
    buf_printf(&l->buf, " %s=%.3f", key, value);
}

void log_id(log_line_t *l, const char *key, const pawl_id_t *id) {
  if (!l->on) return;
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  log_str(l, key, text);
}

void log_end(log_line_t *l) {
  if (!l->on) return;
  host_logger_t *lg = l->lg;
  buf_puts(&l->buf, lg->json ? "}\n" : "\n");
  if (!l->buf.oom) {
    pthread_mutex_lock(&lg->lock);
    if (lg->fn)
      lg->fn(lg->data, l->level, buf_cstr(&l->buf));
    else
      fwrite(l->buf.data, 1, l->buf.len, stderr);
    pthread_mutex_unlock(&lg->lock);
  }
  buf_free(&l->buf);
}
