/* top_json.c: `pawl top`'s snapshot reader; see top_json.h. */
#include "top_json.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

void top_json_free(tj_t *v) {
  if (!v) return;
  free(v->str);
  for (size_t i = 0; i < v->n; i++) {
    top_json_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

/* The decoded contents of the string token t (malloc'd). */
static char *tj_string(const char *s, const pawl_json_tok_t *t) {
  size_t n = t->end - t->start - 2;
  char *out = malloc(n + 1);
  if (!out) return NULL;
  out[pawl__json_unescape(s + t->start + 1, n, out, n)] = 0;
  return out;
}

/* Room for one more member in v. */
static int tj_push(tj_t *v, size_t *cap) {
  if (v->n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 8;
  tj_t *items = realloc(v->items, c * sizeof *items);
  if (!items) return -1;
  v->items = items;
  if (v->t == TJ_OBJ) {
    char **keys = realloc(v->keys, c * sizeof *keys);
    if (!keys) return -1;
    v->keys = keys;
  }
  *cap = c;
  return 0;
}

/* The value whose first token is t (kind k) into *v; what it holds is
 * freed by the caller's top_json_free, also on an error. */
static int tj_value(pawl_json_lexer_t *lx, const char *s, int k,
                    const pawl_json_tok_t *t, tj_t *v) {
  memset(v, 0, sizeof *v);
  switch (k) {
  case JSON_TOK_NULL: return 0;
  case JSON_TOK_TRUE: v->t = TJ_BOOL, v->num = 1; return 0;
  case JSON_TOK_FALSE: v->t = TJ_BOOL; return 0;
  case JSON_TOK_NUMBER: {
    /* Its grammar is checked: a NUL-terminated copy ends it for strtod. */
    char num[64], *text = num;
    size_t n = t->end - t->start;
    if (n >= sizeof num && !(text = malloc(n + 1))) return -1;
    memcpy(text, s + t->start, n);
    text[n] = 0;
    v->t = TJ_NUM;
    v->num = pawl__json_strtod(text, NULL);
    if (text != num) free(text);
    return 0;
  }
  case JSON_TOK_STRING:
    v->t = TJ_STR;
    return (v->str = tj_string(s, t)) ? 0 : -1;
  case JSON_TOK_OBJECT:
  case JSON_TOK_ARRAY: break;
  default: return -1;
  }
  if (lx->depth > TOP_JSON_DEPTH) return -1;
  v->t = k == JSON_TOK_OBJECT ? TJ_OBJ : TJ_ARR;
  size_t cap = 0;
  pawl_json_tok_t e;
  for (;;) {
    int ek = pawl__json_next(lx, &e);
    if (ek == JSON_TOK_OBJECT_END || ek == JSON_TOK_ARRAY_END) return 0;
    if (ek < 0 || tj_push(v, &cap)) return -1;
    if (v->t == TJ_OBJ) {
      /* The tokenizer gives a key first in an object. */
      if (!(v->keys[v->n] = tj_string(s, &e))) return -1;
      ek = pawl__json_next(lx, &e);
    }
    int rc = tj_value(lx, s, ek, &e, &v->items[v->n]);
    v->n++; /* freed with the rest, also when it failed */
    if (rc) return -1;
  }
}

int top_json_parse(const char *s, size_t n, tj_t *out) {
  pawl_json_lexer_t lx;
  pawl_json_tok_t t;
  pawl__json_lex_init(&lx, s, n, JSON_READ, NULL, 0);
  int k = pawl__json_next(&lx, &t);
  memset(out, 0, sizeof *out);
  if (k != JSON_TOK_OBJECT || tj_value(&lx, s, k, &t, out) ||
      pawl__json_next(&lx, &t) != JSON_TOK_END) {
    top_json_free(out);
    return -1;
  }
  return 0;
}

const tj_t *top_json_get(const tj_t *o, const char *key) {
  if (!o || o->t != TJ_OBJ) return NULL;
  /* From the end: of duplicate keys the last one counts, as everywhere
   * pawl reads JSON (json.h). */
  for (size_t i = o->n; i-- > 0;)
    if (strcmp(o->keys[i], key) == 0) return &o->items[i];
  return NULL;
}
