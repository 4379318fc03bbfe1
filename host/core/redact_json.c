/* redact_json.c: secret members of a JSON payload, hidden in admin views;
 * see redact.h, "JSON payloads in admin views".
 *
 * One pass over the text with a stack of open containers (JSON_MAX_DEPTH
 * of them at most), copying it to the output token by token. At each
 * member's key the key is decoded (escapes, surrogate pairs) and looked
 * at; a secret one's value is skipped over, brackets counted and strings
 * stepped through, and the marker written in its place. Numbers, strings
 * and whitespace are copied as written: nothing is parsed into a double,
 * so no digit is lost, and no member moves. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "redact.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "json.h"

/* A key longer than this (decoded) counts as secret: a secret word is
 * short, so a longer key is not worth a buffer that a payload could make
 * as large as it likes; hiding its value is the safe side. */
#define REDACT_KEY_MAX 1024

#define RJ_STR(x) #x
#define RJ_XSTR(x) RJ_STR(x)
#define RJ_TOO_DEEP "nested deeper than " RJ_XSTR(JSON_MAX_DEPTH) " levels"

typedef struct rj {
  const char *s;
  size_t n, i;
  pawl_buf_t *out;
  char *err;
  size_t errlen;
} rj_t;

static int rj_fail(rj_t *r, const char *what) {
  if (r->errlen)
    snprintf(r->err, r->errlen, "not JSON at byte %zu: %s", r->i, what);
  return -1;
}

static int rj_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Copies whitespace at r->i. */
static void rj_ws(rj_t *r) {
  size_t a = r->i;
  while (r->i < r->n && rj_space(r->s[r->i])) r->i++;
  if (r->i > a) pawl__buf_append(r->out, r->s + a, r->i - a);
}

static int rj_hex4(const char *p, unsigned *v) {
  *v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p[k];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d > 15) return -1;
    *v = *v << 4 | d;
  }
  return 0;
}

/* The end of the string whose opening quote is at r->i (the index after
 * its closing quote), or 0 when it does not close or has a bad escape.
 * When key is not NULL, the decoded text goes there (cap bytes at most),
 * *klen its length, or *klen = cap + 1 when it is longer. */
static size_t rj_string(rj_t *r, char *key, size_t cap, size_t *klen) {
  size_t i = r->i + 1, k = 0;
#define RJ_PUT(ch)                                                           \
  do {                                                                       \
    if (key) {                                                               \
      if (k < cap) key[k] = (char)(ch);                                      \
      k++;                                                                   \
    }                                                                        \
  } while (0)
  while (i < r->n) {
    unsigned char c = (unsigned char)r->s[i];
    if (c == '"') break;
    if (c < 0x20) return 0;
    if (c != '\\') {
      RJ_PUT(c);
      i++;
      continue;
    }
    if (i + 1 >= r->n) return 0;
    char e = r->s[i + 1];
    i += 2;
    switch (e) {
    case '"': RJ_PUT('"'); break;
    case '\\': RJ_PUT('\\'); break;
    case '/': RJ_PUT('/'); break;
    case 'b': RJ_PUT('\b'); break;
    case 'f': RJ_PUT('\f'); break;
    case 'n': RJ_PUT('\n'); break;
    case 'r': RJ_PUT('\r'); break;
    case 't': RJ_PUT('\t'); break;
    case 'u': {
      unsigned u;
      if (i + 4 > r->n || rj_hex4(r->s + i, &u)) return 0;
      i += 4;
      /* A high surrogate with its low one: one code point. A lone one
       * (the store refuses them) is kept as U+FFFD. */
      if (u >= 0xD800 && u <= 0xDBFF && i + 6 <= r->n && r->s[i] == '\\' &&
          r->s[i + 1] == 'u') {
        unsigned lo;
        if (rj_hex4(r->s + i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD;
      if (u < 0x80) {
        RJ_PUT(u);
      } else if (u < 0x800) {
        RJ_PUT(0xC0 | u >> 6);
        RJ_PUT(0x80 | (u & 0x3F));
      } else if (u < 0x10000) {
        RJ_PUT(0xE0 | u >> 12);
        RJ_PUT(0x80 | (u >> 6 & 0x3F));
        RJ_PUT(0x80 | (u & 0x3F));
      } else {
        RJ_PUT(0xF0 | u >> 18);
        RJ_PUT(0x80 | (u >> 12 & 0x3F));
        RJ_PUT(0x80 | (u >> 6 & 0x3F));
        RJ_PUT(0x80 | (u & 0x3F));
      }
      break;
    }
    default: return 0;
    }
  }
#undef RJ_PUT
  if (i >= r->n) return 0;
  if (key) *klen = k > cap ? cap + 1 : k;
  return i + 1;
}

/* A number or true/false/null at r->i: its end, or 0. Numbers are read
 * leniently (the store checked them); they are copied, never converted. */
static size_t rj_scalar(rj_t *r) {
  size_t i = r->i;
  char c = r->s[i];
  static const char *const words[] = {"true", "false", "null"};
  for (size_t w = 0; w < 3; w++) {
    size_t len = strlen(words[w]);
    if (c == words[w][0])
      return r->n - i >= len && memcmp(r->s + i, words[w], len) == 0 ? i + len
                                                                      : 0;
  }
  if (c != '-' && !(c >= '0' && c <= '9')) return 0;
  while (i < r->n && (strchr("+-.eE", r->s[i]) || (r->s[i] >= '0' &&
                                                   r->s[i] <= '9')))
    i++;
  return i;
}

/* Steps over the value at r->i (a secret member's), at container depth
 * `depth`; 0, or -1 when it is not JSON. */
static int rj_skip(rj_t *r, size_t depth) {
  size_t open = 0;
  do {
    while (r->i < r->n && rj_space(r->s[r->i])) r->i++;
    if (r->i >= r->n) return rj_fail(r, "the text ends inside a value");
    char c = r->s[r->i];
    if (c == '"') {
      size_t end = rj_string(r, NULL, 0, NULL);
      if (!end) return rj_fail(r, "a string that does not end");
      r->i = end;
    } else if (c == '{' || c == '[') {
      if (depth + open >= JSON_MAX_DEPTH)
        return rj_fail(r, RJ_TOO_DEEP);
      open++;
      r->i++;
    } else if (c == '}' || c == ']') {
      if (!open) return rj_fail(r, "a bracket closes nothing");
      open--;
      r->i++;
    } else if (c == ',' || c == ':') {
      if (!open) return rj_fail(r, "a separator where a value goes");
      r->i++;
    } else {
      size_t end = rj_scalar(r);
      if (!end) return rj_fail(r, "an unexpected byte");
      r->i = end;
    }
  } while (open);
  return 0;
}

int pawl__redact_key(const char *key, size_t len, const char *const *names,
                     size_t nnames) {
  static const char *const words[] = {REDACT_JSON_WORDS};
  for (size_t i = 0; i < nnames; i++)
    if (names[i] && strlen(names[i]) == len && memcmp(names[i], key, len) == 0)
      return 1;
  for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
    size_t wl = strlen(words[w]);
    for (size_t i = 0; i + wl <= len; i++) {
      size_t j = 0;
      while (j < wl) {
        char c = key[i + j];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != words[w][j]) break;
        j++;
      }
      if (j == wl) return 1;
    }
  }
  return 0;
}

int pawl__redact_json(const char *json, size_t len, const char *const *names,
                      size_t nnames, pawl_buf_t *out, char *err,
                      size_t errlen) {
  rj_t r = {json ? json : "", json ? len : 0, 0, out, err, errlen};
  if (errlen) err[0] = 0;
  /* The open containers: 1 an object, 0 an array. */
  unsigned char stack[JSON_MAX_DEPTH];
  size_t depth = 0;
  char key[REDACT_KEY_MAX];
  enum { VALUE, KEY, AFTER } want = VALUE;
  for (;;) {
    rj_ws(&r);
    if (out->oom) return -2;
    if (want == AFTER && depth == 0) {
      if (r.i != r.n) return rj_fail(&r, "text after the value");
      return 0;
    }
    if (r.i >= r.n) return rj_fail(&r, "the text ends early");
    char c = r.s[r.i];
    if (want == KEY) {
      size_t klen = 0;
      size_t end = c == '"' ? rj_string(&r, key, sizeof key, &klen) : 0;
      if (!end) return rj_fail(&r, "a member without a string key");
      pawl__buf_append(out, r.s + r.i, end - r.i);
      r.i = end;
      rj_ws(&r);
      if (r.i >= r.n || r.s[r.i] != ':') return rj_fail(&r, "no ':' after a key");
      pawl__buf_putc(out, ':');
      r.i++;
      if (klen > sizeof key || pawl__redact_key(key, klen, names, nnames)) {
        rj_ws(&r);
        if (rj_skip(&r, depth)) return -1;
        pawl__buf_puts(out, REDACT_JSON_MARK);
        want = AFTER;
      } else {
        want = VALUE;
      }
      continue;
    }
    if (want == VALUE) {
      if (c == '{' || c == '[') {
        if (depth >= JSON_MAX_DEPTH)
          return rj_fail(&r, RJ_TOO_DEEP);
        stack[depth++] = c == '{';
        pawl__buf_putc(out, c);
        r.i++;
        rj_ws(&r);
        if (r.i < r.n && r.s[r.i] == (c == '{' ? '}' : ']')) {
          pawl__buf_putc(out, r.s[r.i++]);
          depth--;
          want = AFTER;
        } else {
          want = c == '{' ? KEY : VALUE;
        }
        continue;
      }
      size_t end = c == '"' ? rj_string(&r, NULL, 0, NULL) : rj_scalar(&r);
      if (!end) return rj_fail(&r, "not a value");
      pawl__buf_append(out, r.s + r.i, end - r.i);
      r.i = end;
      want = AFTER;
      continue;
    }
    /* AFTER a value inside a container. */
    int obj = stack[depth - 1];
    if (c == ',') {
      pawl__buf_putc(out, ',');
      r.i++;
      want = obj ? KEY : VALUE;
    } else if (c == (obj ? '}' : ']')) {
      pawl__buf_putc(out, c);
      r.i++;
      depth--;
    } else {
      return rj_fail(&r, "no ',' or closing bracket after a value");
    }
  }
}

int pawl__redact_names(const char *json, char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  size_t len = json ? strlen(json) : 0;
  rj_t r = {json ? json : "", len, 0, NULL, NULL, 0};
  /* Two passes: count the names and their bytes, then decode them into
   * one block (a decoded name is never longer than its text). */
  size_t count = 0;
  while (r.i < len && rj_space(r.s[r.i])) r.i++;
  if (r.i >= len || r.s[r.i] != '[') return -1;
  r.i++;
  size_t start = r.i;
  for (int pass = 0; pass < 2; pass++) {
    char **v = pass ? *names : NULL;
    char *at = pass ? (char *)(v + count + 1) : NULL;
    size_t k = 0;
    r.i = start;
    for (;;) {
      while (r.i < len && rj_space(r.s[r.i])) r.i++;
      if (r.i < len && r.s[r.i] == ']' && k == 0) {
        r.i++;
        break;
      }
      if (r.i >= len || r.s[r.i] != '"') goto bad;
      size_t klen = 0;
      size_t end = rj_string(&r, at, pass ? len : 0, &klen);
      if (!end) goto bad;
      if (pass) {
        v[k] = at;
        at[klen] = 0;
        at += klen + 1;
      }
      k++;
      r.i = end;
      while (r.i < len && rj_space(r.s[r.i])) r.i++;
      if (r.i < len && r.s[r.i] == ',') {
        r.i++;
        continue;
      }
      if (r.i < len && r.s[r.i] == ']') {
        r.i++;
        break;
      }
      goto bad;
    }
    if (!pass) {
      count = k;
      while (r.i < len && rj_space(r.s[r.i])) r.i++;
      if (r.i != len) goto bad;
      *names = pawl__malloc((count + 1) * sizeof(char *) + len + 1);
      if (!*names) return -2;
    } else {
      v[k] = NULL;
    }
  }
  *n = count;
  return 0;
bad:
  pawl__free(*names);
  *names = NULL;
  return -1;
}
