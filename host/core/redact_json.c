/* redact_json.c: secret members of a JSON payload, hidden in admin views;
 * see redact.h, "JSON payloads in admin views".
 *
 * One pass of json.h's tokenizer over the text. At each member's key the
 * key is decoded (escapes, surrogate pairs) and looked at; a secret one's
 * value is stepped over and the marker written in its place. Everything
 * else is copied as written, in spans between secret values: nothing is
 * parsed into a double, so no digit is lost, and no member moves. */
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

/* "not JSON: <the tokenizer's message>" into err, -1. */
static int rj_fail(char *err, size_t errlen) {
  if (errlen) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s", err);
    snprintf(err, errlen, "not JSON: %s", msg);
  }
  return -1;
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
  /* JSON_GRAMMAR: what the store holds passed the policy when it was
   * written, but a view also shows what an older pawl stored, or
   * PostgreSQL wrote back (a double's digits in full): RFC 8259 is the
   * bound, and anything else is refused (the caller shows a placeholder). */
  pawl_json_lexer_t lx;
  pawl_json_tok_t t;
  pawl__json_lex_init(&lx, json, len, JSON_GRAMMAR, err, errlen);
  char key[REDACT_KEY_MAX];
  size_t copied = 0; /* the text up to here is in out */
  for (;;) {
    int k = pawl__json_next(&lx, &t);
    if (k < 0) return rj_fail(err, errlen);
    if (k == JSON_TOK_END) break;
    if (k != JSON_TOK_KEY) continue;
    const char *kt = json + t.start + 1;
    size_t kn = t.end - t.start - 2;
    if (t.escaped) {
      kn = pawl__json_unescape(kt, kn, key, sizeof key);
      kt = key;
    }
    if (kn > sizeof key || pawl__redact_key(kt, kn, names, nnames)) {
      /* The value: copied up to its start (the key, ':', whitespace as
       * written), then stepped over, whole, and the marker in its place. */
      if ((k = pawl__json_next(&lx, &t)) < 0) return rj_fail(err, errlen);
      pawl__buf_append(out, json + copied, t.start - copied);
      size_t depth = lx.depth;
      if (k == JSON_TOK_OBJECT || k == JSON_TOK_ARRAY)
        while (lx.depth >= depth)
          if (pawl__json_next(&lx, &t) < 0) return rj_fail(err, errlen);
      pawl__buf_puts(out, REDACT_JSON_MARK);
      copied = t.end;
      if (out->oom) return -2;
    }
  }
  pawl__buf_append(out, json + copied, len - copied);
  return out->oom ? -2 : 0;
}

int pawl__redact_names(const char *json, char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  size_t len = json ? strlen(json) : 0;
  /* Two passes: count the names, then decode them into one block (a
   * decoded name is never longer than its text). */
  size_t count = 0;
  for (int pass = 0; pass < 2; pass++) {
    char **v = *names;
    char *at = pass ? (char *)(v + count + 1) : NULL;
    size_t k = 0;
    pawl_json_lexer_t lx;
    pawl_json_tok_t t;
    pawl__json_lex_init(&lx, json, len, JSON_READ, NULL, 0);
    if (pawl__json_next(&lx, &t) != JSON_TOK_ARRAY) goto bad;
    int tok;
    while ((tok = pawl__json_next(&lx, &t)) == JSON_TOK_STRING) {
      if (pass) {
        size_t klen = pawl__json_unescape(json + t.start + 1,
                                          t.end - t.start - 2, at, len);
        v[k] = at;
        at[klen] = 0;
        at += klen + 1;
      }
      k++;
    }
    if (tok != JSON_TOK_ARRAY_END || pawl__json_next(&lx, &t) != JSON_TOK_END)
      goto bad;
    if (!pass) {
      count = k;
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
