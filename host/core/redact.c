/* redact.c: keeping database passwords out of what pawl shows; see
 * redact.h.
 *
 * Two tools. Spans: where a connection string keeps its password, found
 * the way libpq reads it but without giving up on a malformed string (the
 * URI's user information up to its last '@', a password= query parameter
 * whose name may be percent-encoded, a password keyword with a quoted or
 * escaped value). Patterns: anything in free text that looks like a URL's
 * password or a password= pair, for messages that quote a URL we were not
 * told about. A message is cleaned with both, plus every form of the known
 * password wherever it appears. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"
#include "redact.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "buf.h"

#define REDACT_MAX 32 /* spans or secrets kept per string: plenty */

/* ---- small helpers -------------------------------------------------------- */

static int redact_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

static int redact_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

static int redact_hex(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decodes p[0..n) into out (n + 1 bytes); a bad escape stays as
 * written. Returns the length. */
static size_t redact_decode(const char *p, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '%' && i + 2 < n && redact_hex((unsigned char)p[i + 1]) >= 0 &&
        redact_hex((unsigned char)p[i + 2]) >= 0) {
      out[k++] = (char)(redact_hex((unsigned char)p[i + 1]) << 4 |
                        redact_hex((unsigned char)p[i + 2]));
      i += 2;
    } else {
      out[k++] = p[i];
    }
  }
  out[k] = 0;
  return k;
}

/* Puts the result of a step (next) in place of its input (cur); next is
 * emptied for the step after. Out of memory stays recorded on cur. */
static void redact_swap(pawl_buf_t *cur, pawl_buf_t *next) {
  int oom = cur->oom || next->oom;
  pawl_buf_t t = *cur;
  *cur = *next;
  *next = t;
  pawl__buf_reset(next);
  cur->oom = oom;
}

/* ---- spans: where a connection string keeps its password ------------------ */

enum { SPAN_URI = 1, SPAN_KEYWORD = 2 };

typedef struct redact_span {
  size_t start, end; /* the value, without its quotes */
  int kind;
} redact_span_t;

typedef struct redact_spans {
  redact_span_t s[REDACT_MAX];
  size_t n;
} redact_spans_t;

static void span_add(redact_spans_t *z, size_t start, size_t end, int kind) {
  if (end > start && z->n < REDACT_MAX)
    z->s[z->n++] = (redact_span_t){start, end, kind};
}

/* Length of "scheme://" at the start of s, or 0. */
static size_t redact_scheme(const char *s) {
  size_t i = 0;
  while (redact_alnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' ||
         s[i] == '.')
    i++;
  return i > 0 && strncmp(s + i, "://", 3) == 0 ? i + 3 : 0;
}

/* 1 if p[0..n), percent-decoded, is "password" (any case). */
static int redact_is_password_key(const char *p, size_t n) {
  char key[32];
  if (n >= sizeof key) return 0;
  size_t k = redact_decode(p, n, key);
  return k == 8 && strncasecmp(key, "password", 8) == 0;
}

static void spans_uri(const char *s, size_t a, redact_spans_t *z) {
  size_t len = strlen(s);
  /* The user information: up to the last '@' (a password may hold '@',
   * '/' or '?', however libpq then splits it), and as libpq reads it: up
   * to the first '@' before a '/'. */
  const char *last = strrchr(s + a, '@');
  if (last) {
    const char *colon = memchr(s + a, ':', (size_t)(last - (s + a)));
    if (colon) span_add(z, (size_t)(colon + 1 - s), (size_t)(last - s), SPAN_URI);
  }
  size_t p = a;
  while (s[p] && s[p] != '@' && s[p] != '/') p++;
  if (s[p] == '@') {
    const char *colon = memchr(s + a, ':', p - a);
    if (colon) span_add(z, (size_t)(colon + 1 - s), p, SPAN_URI);
  }
  /* The query, after the user information. */
  const char *q = strchr(last ? last : s + a, '?');
  for (size_t i = q ? (size_t)(q - s) + 1 : len; i < len;) {
    size_t k0 = i, eq = 0;
    while (i < len && s[i] != '&') {
      if (s[i] == '=' && !eq) eq = i;
      i++;
    }
    if (eq && redact_is_password_key(s + k0, eq - k0))
      span_add(z, eq + 1, i, SPAN_URI);
    i++;
  }
}

/* keyword = value pairs, values bare (with backslash escapes) or in single
 * quotes; read leniently: an unterminated quote runs to the end. */
static void spans_keywords(const char *s, redact_spans_t *z) {
  size_t i = 0, len = strlen(s);
  while (i < len) {
    while (i < len && redact_space((unsigned char)s[i])) i++;
    size_t k0 = i;
    while (i < len && s[i] != '=' && !redact_space((unsigned char)s[i])) i++;
    size_t k1 = i;
    while (i < len && redact_space((unsigned char)s[i])) i++;
    if (i >= len || s[i] != '=') {
      if (i == k0) i++; /* never stand still */
      continue;
    }
    i++;
    while (i < len && redact_space((unsigned char)s[i])) i++;
    size_t v0 = i, v1;
    if (i < len && s[i] == '\'') {
      v0 = ++i;
      while (i < len && s[i] != '\'') i += s[i] == '\\' && i + 1 < len ? 2 : 1;
      v1 = i < len ? i : len;
      if (i < len) i++;
    } else {
      while (i < len && !redact_space((unsigned char)s[i]))
        i += s[i] == '\\' && i + 1 < len ? 2 : 1;
      v1 = i < len ? i : len;
    }
    /* A key that ends in "password" (libpq knows only "password"; a
     * longer one costs nothing to hide). */
    if (k1 - k0 >= 8 && strncasecmp(s + k1 - 8, "password", 8) == 0)
      span_add(z, v0, v1, SPAN_KEYWORD);
  }
}

static void redact_spans(const char *s, redact_spans_t *z) {
  z->n = 0;
  size_t a = redact_scheme(s);
  if (a) spans_uri(s, a, z);
  else spans_keywords(s, z);
}

/* ---- patterns: secrets in free text --------------------------------------- */

/* Copies `in` to `out`, replacing what looks like a password: in a URL
 * ("scheme://user:PASSWORD@"), up to the last '@' of the URL's word, and
 * the value of a "password=" pair (bare, or quoted with ' or "). */
static void redact_patterns(const char *in, pawl_buf_t *out) {
  size_t len = strlen(in);
  for (size_t i = 0; i < len;) {
    if (strncmp(in + i, "://", 3) == 0) {
      size_t a = i + 3, end = a, at = 0;
      while (end < len && !redact_space((unsigned char)in[end]) &&
             in[end] != '"' && in[end] != '\'')
        end++;
      for (size_t k = a; k < end; k++)
        if (in[k] == '@') at = k;
      const char *colon = at ? memchr(in + a, ':', at - a) : NULL;
      if (colon) {
        size_t c = (size_t)(colon - in);
        pawl__buf_append(out, in + i, c + 1 - i);
        pawl__buf_puts(out, REDACT_MARK);
        i = at;
        continue;
      }
      pawl__buf_append(out, in + i, 3);
      i += 3;
      continue;
    }
    if (strncasecmp(in + i, "password", 8) == 0) {
      size_t k = i + 8;
      while (k < len && in[k] == ' ') k++;
      if (k < len && in[k] == '=') {
        k++;
        while (k < len && in[k] == ' ') k++;
        pawl__buf_append(out, in + i, k - i);
        if (k < len && (in[k] == '\'' || in[k] == '"')) {
          char q = in[k++];
          while (k < len && in[k] != q) k += in[k] == '\\' && k + 1 < len ? 2 : 1;
          pawl__buf_putc(out, q);
          pawl__buf_puts(out, REDACT_MARK);
          if (k < len) pawl__buf_putc(out, q), k++;
        } else {
          size_t v = k;
          while (k < len && !redact_space((unsigned char)in[k]) && in[k] != '&' &&
                 in[k] != '"' && in[k] != '\'' && in[k] != ',' && in[k] != ';' &&
                 in[k] != ')')
            k += in[k] == '\\' && k + 1 < len ? 2 : 1;
          if (k > v) pawl__buf_puts(out, REDACT_MARK);
        }
        i = k;
        continue;
      }
    }
    pawl__buf_putc(out, in[i++]);
  }
}

/* ---- the URL ---------------------------------------------------------------- */

static int span_cmp(const void *a, const void *b) {
  const redact_span_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static void redact_copy_out(pawl_buf_t *b, char *out, size_t len) {
  if (len == 0) return;
  const char *text = b->oom ? "(withheld: out of memory)" : pawl__buf_cstr(b);
  size_t n = strlen(text);
  if (n >= len) n = len - 1;
  memcpy(out, text, n);
  out[n] = 0;
}

/* Appends s with its password spans replaced by ***. */
static void redact_url_buf(const char *s, pawl_buf_t *out) {
  redact_spans_t z;
  redact_spans(s, &z);
  qsort(z.s, z.n, sizeof z.s[0], span_cmp);
  size_t at = 0;
  for (size_t i = 0; i < z.n; i++) {
    if (z.s[i].end <= at) continue; /* inside the one before */
    if (z.s[i].start > at) pawl__buf_append(out, s + at, z.s[i].start - at);
    pawl__buf_puts(out, REDACT_MARK);
    at = z.s[i].end;
  }
  pawl__buf_puts(out, s + at);
}

void pawl__redact_url(const char *url, char *out, size_t len) {
  pawl_buf_t a, b;
  pawl__buf_init(&a);
  pawl__buf_init(&b);
  redact_url_buf(url ? url : "", &a);
  redact_patterns(pawl__buf_cstr(&a), &b);
  if (a.oom) b.oom = 1;
  redact_copy_out(&b, out, len);
  pawl__buf_free(&a);
  pawl__buf_free(&b);
}

void pawl__redact_web_url(const char *url, char *out, size_t len) {
  char tmp[512];
  const char *scheme_end = strstr(url, "://");
  size_t off = 0;
  if (scheme_end) {
    const char *auth = scheme_end + 3;
    size_t authlen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', authlen);
    if (at) {
      off = (size_t)snprintf(tmp, sizeof tmp, "%.*s<redacted>@",
                             (int)(auth - url), url);
      url = at + 1;
    }
  }
  if (off >= sizeof tmp) off = sizeof tmp - 1;
  size_t keep = strcspn(url, "?#");
  snprintf(tmp + off, sizeof tmp - off, "%.*s%s", (int)keep, url,
           url[keep] ? "?<redacted>" : "");
  pawl__redact_url(tmp, out, len);
}

/* ---- messages --------------------------------------------------------------- */

typedef struct redact_secrets {
  char *s[REDACT_MAX];
  size_t n;
  int oom;
} redact_secrets_t;

static void secret_add(redact_secrets_t *z, const char *p, size_t n) {
  if (n == 0 || z->n >= REDACT_MAX) return;
  for (size_t i = 0; i < z->n; i++)
    if (strlen(z->s[i]) == n && memcmp(z->s[i], p, n) == 0) return;
  char *c = pawl__strndup(p, n);
  if (!c) {
    z->oom = 1;
    return;
  }
  z->s[z->n++] = c;
}

/* Every form of each password the connection string carries. */
static void redact_collect(const char *conninfo, redact_secrets_t *z) {
  redact_spans_t sp;
  redact_spans(conninfo, &sp);
  for (size_t i = 0; i < sp.n; i++) {
    const char *v = conninfo + sp.s[i].start;
    size_t n = sp.s[i].end - sp.s[i].start;
    char *alt = pawl__malloc(n + 1);
    if (!alt) {
      z->oom = 1;
      return;
    }
    secret_add(z, v, n);
    if (sp.s[i].kind == SPAN_URI) {
      secret_add(z, alt, redact_decode(v, n, alt));
      /* The pieces libpq may cut a malformed one into. */
      for (size_t a = 0, b = 0; b <= n; b++)
        if (b == n || strchr("/@:?#&", v[b])) {
          if (b > a && b - a < n) secret_add(z, v + a, b - a);
          a = b + 1;
        }
    } else {
      size_t k = 0;
      for (size_t j = 0; j < n; j++) {
        if (v[j] == '\\' && j + 1 < n) j++;
        alt[k++] = v[j];
      }
      secret_add(z, alt, k);
    }
    pawl__free(alt);
  }
}

/* Replaces each occurrence of `needle` in `in` by `with`. A short needle
 * (under 4 bytes) is replaced only where it stands alone (no letter or
 * digit beside it), so that a password "ab" does not garble every word. */
static void redact_replace(const char *in, const char *needle,
                           const char *with, pawl_buf_t *out) {
  size_t n = strlen(needle), len = strlen(in);
  int alone = n < 4;
  for (size_t i = 0; i < len;) {
    if (n && i + n <= len && memcmp(in + i, needle, n) == 0 &&
        (!alone || ((i == 0 || !redact_alnum((unsigned char)in[i - 1])) &&
                    (i + n == len || !redact_alnum((unsigned char)in[i + n]))))) {
      pawl__buf_puts(out, with);
      i += n;
    } else {
      pawl__buf_putc(out, in[i++]);
    }
  }
}

static int secret_longer(const void *a, const void *b) {
  size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
  return x > y ? -1 : x < y;
}

void pawl__redact_message(const char *conninfo, const char *msg, int malformed,
                    char *out, size_t len) {
  pawl_buf_t cur, next;
  pawl__buf_init(&cur);
  pawl__buf_init(&next);
  pawl__buf_puts(&cur, msg ? msg : "");
  redact_secrets_t z = {.n = 0};
  if (conninfo && *conninfo) {
    redact_collect(conninfo, &z);
    /* The whole connection string, where the message quotes it. */
    pawl_buf_t shown;
    pawl__buf_init(&shown);
    redact_url_buf(conninfo, &shown);
    if (shown.oom) z.oom = 1;
    redact_replace(pawl__buf_cstr(&cur), conninfo, pawl__buf_cstr(&shown), &next);
    redact_swap(&cur, &next);
    pawl__buf_free(&shown);
    qsort(z.s, z.n, sizeof z.s[0], secret_longer);
    for (size_t i = 0; i < z.n; i++) {
      redact_replace(pawl__buf_cstr(&cur), z.s[i], REDACT_MARK, &next);
      redact_swap(&cur, &next);
    }
    if (malformed && z.n > 0) {
      const char *t = pawl__buf_cstr(&cur);
      /* One character in quotes ("]", "=") is libpq naming what it
       * missed, and kept. */
      for (; *t; t++) {
        const char *close = *t == '"' ? strchr(t + 1, '"') : NULL;
        if (!close) {
          pawl__buf_putc(&next, *t);
        } else if (close - t == 2) {
          pawl__buf_append(&next, t, 3);
          t = close;
        } else {
          pawl__buf_puts(&next, "\"" REDACT_MARK "\"");
          t = close;
        }
      }
      redact_swap(&cur, &next);
    }
  }
  redact_patterns(pawl__buf_cstr(&cur), &next);
  if (cur.oom || z.oom) next.oom = 1; /* never show a half-cleaned text */
  redact_copy_out(&next, out, len);
  for (size_t i = 0; i < z.n; i++) pawl__free(z.s[i]);
  pawl__buf_free(&cur);
  pawl__buf_free(&next);
}
