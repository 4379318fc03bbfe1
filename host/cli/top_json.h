/* top_json.h: `pawl top`'s reader of the snapshot's JSON text
 * (pawl_top_snapshot(), include/pawl.h) into a small tree, on json.h's
 * tokenizer: what it accepts is what pawl reads back (JSON_READ), nested
 * at most TOP_JSON_DEPTH deep. */
#ifndef PAWL_TOP_JSON_H
#define PAWL_TOP_JSON_H

#include <stddef.h>
#include <stdint.h>

/* The deepest JSON the snapshot reader follows (the snapshot has 3): a
 * snapshot deeper than this is not one, whatever json.h allows. */
#define TOP_JSON_DEPTH 16

typedef enum { TJ_NULL, TJ_BOOL, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ } tj_type_t;

typedef struct tj {
  tj_type_t t;
  double num;
  char *str;        /* TJ_STR, malloc'd, escapes decoded, NUL-terminated */
  struct tj *items; /* TJ_ARR, TJ_OBJ: values */
  char **keys;      /* TJ_OBJ, like str */
  size_t n;
} tj_t;

/* The JSON object s[0..n) as a tree in *out (free it with
 * top_json_free); -1 when it is not an object within JSON_READ and
 * TOP_JSON_DEPTH, or out of memory (*out is then empty). */
int top_json_parse(const char *s, size_t n, tj_t *out);

/* Frees what *v holds and empties it. */
void top_json_free(tj_t *v);

/* A member of an object (the last of that name), or NULL. */
const tj_t *top_json_get(const tj_t *o, const char *key);

#endif
