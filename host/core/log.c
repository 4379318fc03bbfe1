/* log.c: see log.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "iso8601.h"
#include "json.h"

static const char *const log_names[] = {"debug", "info", "warn", "error"};

int pawl__log_level_parse(const char *name) {
  for (int i = 0; name && i < 4; i++)
    if (strcmp(name, log_names[i]) == 0) return i;
  return PAWL_EINVAL;
}

const char *pawl__log_level_name(int level) {
  return level >= 0 && level < 4 ? log_names[level] : "?";
}

void pawl__log_init(host_logger_t *lg, int level, int json, pawl_log_fn fn,
              void *data) {
  lg->level = level;
  lg->json = json;
  lg->fn = fn;
  lg->data = data;
  pthread_mutex_init(&lg->lock, NULL);
}

void pawl__log_destroy(host_logger_t *lg) { pthread_mutex_destroy(&lg->lock); }

/* ---- escaping ------------------------------------------------------------
 *
 * Job code writes text that ends up in log lines (ctx:log messages, print,
 * errors), and an operator reads the log on a terminal. So whatever a job
 * writes, a line stays one line and nothing in it reaches the terminal as a
 * control: C0 controls (a newline would forge a line), DEL, C1 controls
 * (U+0080..U+009F, which some terminals obey), the line and paragraph
 * separators and the bidirectional overrides (which reorder what is shown)
 * are written as \uXXXX escapes, and invalid UTF-8 as \ufffd, in text mode
 * as in JSON mode. */

/* The code point of the valid UTF-8 sequence of length k at p. */
static uint32_t log_code_point(const unsigned char *p, size_t k) {
  if (k == 1) return p[0];
  uint32_t c = p[0] & (0xFF >> (k + 1));
  for (size_t i = 1; i < k; i++) c = (c << 6) | (p[i] & 0x3F);
  return c;
}

/* Code points written escaped, besides C0: DEL, C1, U+2028/2029 and the
 * bidirectional embeddings, overrides and isolates. */
static int log_is_control(uint32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029 ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

/* Appends s as a JSON string, with the escapes above. */
static void log_json_string(pawl_buf_t *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s), i = 0, run = 0; /* p[run..i) not yet appended */
  pawl__buf_putc(b, '"');
  while (i < n) {
    size_t k = pawl__json_utf8_len(p + i, n - i);
    uint32_t c = k ? log_code_point(p + i, k) : 0xFFFD;
    if (k && c != '"' && c != '\\' && !log_is_control(c)) {
      i += k;
      continue;
    }
    pawl__buf_append(b, p + run, i - run);
    switch (c) {
    case '"': pawl__buf_append(b, "\\\"", 2); break;
    case '\\': pawl__buf_append(b, "\\\\", 2); break;
    case '\n': pawl__buf_append(b, "\\n", 2); break;
    case '\r': pawl__buf_append(b, "\\r", 2); break;
    case '\t': pawl__buf_append(b, "\\t", 2); break;
    default: {
      char u[6] = {'\\', 'u', hex[(c >> 12) & 15], hex[(c >> 8) & 15],
                   hex[(c >> 4) & 15], hex[c & 15]};
      pawl__buf_append(b, u, 6);
    }
    }
    /* An invalid byte is replaced alone: resynchronising at the next byte
     * never swallows a valid character after a broken one. */
    i += k ? k : 1;
    run = i;
  }
  pawl__buf_append(b, p + run, i - run);
  pawl__buf_putc(b, '"');
}

/* Whether s can be written as it is in a text line: valid UTF-8 without
 * the controls above, quotes, backslashes or '=' (a message with '=' could
 * pass for fields); spaces only where `spaces` allows (a message). */
static int log_plain(const char *s, int spaces) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  if (n == 0) return 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F || c == '"' || c == '\\' || c == '=' ||
          (c == ' ' && !spaces))
        return 0;
      i++;
      continue;
    }
    size_t k = pawl__json_utf8_len(p + i, n - i);
    if (k == 0 || log_is_control(log_code_point(p + i, k))) return 0;
    i += k;
  }
  return 1;
}

void pawl__log_begin(log_line_t *l, host_logger_t *lg, int level, const char *msg) {
  l->lg = lg;
  l->level = level;
  l->on = lg && level >= lg->level;
  pawl__buf_init(&l->buf);
  if (!l->on) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char when[32];
  pawl__iso8601_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when);
  if (lg->json) {
    pawl__buf_puts(&l->buf, "{\"ts\":\"");
    pawl__buf_puts(&l->buf, when);
    pawl__buf_puts(&l->buf, "\",\"level\":\"");
    pawl__buf_puts(&l->buf, pawl__log_level_name(level));
    pawl__buf_puts(&l->buf, "\",\"msg\":");
    log_json_string(&l->buf, msg);
  } else {
    pawl__buf_printf(&l->buf, "%s %-5s ", when, pawl__log_level_name(level));
    /* The host's own messages are plain; a job's (ctx:log) may not be. */
    if (log_plain(msg, 1))
      pawl__buf_puts(&l->buf, msg);
    else
      log_json_string(&l->buf, msg);
  }
}

/* Text values are quoted when they hold spaces, quotes, '=' or control
 * characters, so a line always splits back into key=value pairs. */
static void log_text_value(pawl_buf_t *b, const char *v) {
  if (log_plain(v, 0))
    pawl__buf_puts(b, v);
  else
    log_json_string(b, v);
}

void pawl__log_str(log_line_t *l, const char *key, const char *value) {
  if (!l->on || !value) return;
  if (l->lg->json) {
    pawl__buf_putc(&l->buf, ',');
    log_json_string(&l->buf, key);
    pawl__buf_putc(&l->buf, ':');
    log_json_string(&l->buf, value);
  } else {
    pawl__buf_printf(&l->buf, " %s=", key);
    log_text_value(&l->buf, value);
  }
}

void pawl__log_int(log_line_t *l, const char *key, int64_t value) {
  if (!l->on) return;
  if (l->lg->json)
    pawl__buf_printf(&l->buf, ",\"%s\":%lld", key, (long long)value);
  else
    pawl__buf_printf(&l->buf, " %s=%lld", key, (long long)value);
}

void pawl__log_num(log_line_t *l, const char *key, double value) {
  if (!l->on) return;
  if (l->lg->json)
    pawl__buf_printf(&l->buf, ",\"%s\":%.3f", key, value);
  else
    pawl__buf_printf(&l->buf, " %s=%.3f", key, value);
}

void pawl__log_id(log_line_t *l, const char *key, const pawl_id_t *id) {
  if (!l->on) return;
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  pawl__log_str(l, key, text);
}

void pawl__log_end(log_line_t *l) {
  if (!l->on) return;
  host_logger_t *lg = l->lg;
  pawl__buf_puts(&l->buf, lg->json ? "}\n" : "\n");
  if (!l->buf.oom) {
    pthread_mutex_lock(&lg->lock);
    if (lg->fn)
      lg->fn(lg->data, l->level, pawl__buf_cstr(&l->buf));
    else
      fwrite(l->buf.data, 1, l->buf.len, stderr);
    pthread_mutex_unlock(&lg->lock);
  }
  pawl__buf_free(&l->buf);
}
