/* ljson.c: pawl's JSON for Lua; see ljson.h.
 *
 * decode builds the value as json.h's tokenizer reads the text, in one
 * pass: the tokenizer checks the policy and writes every message. encode
 * walks the value with raw accesses only (no metamethods run, nothing allocates on the Lua
 * side), so it cannot raise halfway and leave its buffer behind. */
#include "ljson.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lauxlib.h"

#define LJSON_BOX "pawl.json.box" /* registry: metatable of encode's buffer */

/* ---- decode --------------------------------------------------------------- */

/* Pushes the contents s[0..n) of a string the tokenizer accepted. */
static void ljd_string(lua_State *L, const char *s, size_t n, int escaped) {
  if (!escaped) { /* the common case */
    lua_pushlstring(L, s, n);
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  const char *e = s + n;
  while (s < e) {
    const char *q = memchr(s, '\\', (size_t)(e - s));
    if (!q) q = e;
    luaL_addlstring(&b, s, (size_t)(q - s));
    if (q == e) break;
    char u[4];
    size_t used, k = pawl__json_unescape_one(q, (size_t)(e - q), u, &used);
    luaL_addlstring(&b, u, k);
    s = q + used;
  }
  luaL_pushresult(&b);
}

/* Pushes the number s[0..n) (its grammar checked). strtod stops at the
 * number's end, but for a "0" before an 'x' (hex to strtod, refused by the
 * tokenizer only at its next token) or digits past len in a text that
 * goes on: then it reads a NUL-terminated copy. */
static void ljd_number(lua_State *L, const char *s, size_t n) {
  char *end = NULL;
  double d = pawl__json_strtod(s, &end);
  if (end != s + n) {
    lua_pushlstring(L, s, n);
    d = pawl__json_strtod(lua_tostring(L, -1), NULL);
    lua_pop(L, 1);
  }
  lua_pushnumber(L, d);
}

/* [-0, +1, m] The array metatable, made on first use. */
static void ljson_push_array_mt(lua_State *L) {
  if (luaL_newmetatable(L, LJSON_ARRAY)) {
    /* Protected: job code can neither read nor change it (it is shared by
     * every array of the state, so a change would reach other jobs). */
    lua_pushliteral(L, LJSON_ARRAY);
    lua_setfield(L, -2, "__metatable");
  }
}

int pawl__ljson_decode(lua_State *L, const char *s, size_t len, char *err,
                 size_t errlen) {
  /* One pass: the tokenizer checks each token (JSON_READ: a big integer is
   * read as the nearest double, as PostgreSQL may have written a double's
   * digits out in full) and the value is built as it goes, containers on
   * the Lua stack. On an error, what was built is dropped. */
  int base = lua_gettop(L);
  ljson_push_array_mt(L);
  int mt = base + 1;
  pawl_json_lexer_t lx;
  pawl_json_tok_t t;
  pawl__json_lex_init(&lx, s, len, JSON_READ, err, errlen);
  /* The next index of each open array. */
  int next[JSON_MAX_DEPTH];
  for (;;) {
    int k = pawl__json_next(&lx, &t);
    switch (k) {
    case JSON_TOK_END:
      lua_remove(L, mt);
      return 0;
    case JSON_TOK_OBJECT:
    case JSON_TOK_ARRAY:
      /* The table, and its key and value to come. */
      luaL_checkstack(L, 3, "JSON nested too deep");
      lua_newtable(L);
      if (k == JSON_TOK_ARRAY) {
        lua_pushvalue(L, mt);
        lua_setmetatable(L, -2);
        next[lx.depth - 1] = 1;
      }
      continue;
    case JSON_TOK_KEY:
      ljd_string(L, s + t.start + 1, t.end - t.start - 2, t.escaped);
      continue;
    case JSON_TOK_OBJECT_END:
    case JSON_TOK_ARRAY_END: break; /* the table is the value */
    case JSON_TOK_STRING:
      ljd_string(L, s + t.start + 1, t.end - t.start - 2, t.escaped);
      break;
    case JSON_TOK_NUMBER: ljd_number(L, s + t.start, t.end - t.start); break;
    case JSON_TOK_TRUE: lua_pushboolean(L, 1); break;
    case JSON_TOK_FALSE: lua_pushboolean(L, 0); break;
    case JSON_TOK_NULL: lua_pushlightuserdata(L, NULL); break;
    default:
      lua_settop(L, base);
      return -1;
    }
    /* A value is complete: into its container, if any. */
    if (lx.depth == 0) continue;
    if (lx.open[lx.depth - 1] == '[')
      lua_rawseti(L, -2, next[lx.depth - 1]++);
    else
      lua_rawset(L, -3);
  }
}

/* ---- encode --------------------------------------------------------------- */

typedef struct lje {
  lua_State *L;
  pawl_buf_t *out;
  char *err;
  size_t errlen;
  char path[160]; /* where we are, for messages: ".items[3].name" */
  size_t plen;
  unsigned values; /* encoded so far, for luaJIT_pollhook */
} lje_t;

/* pawl's LuaJIT has it (cmake/luajit-interrupts.patch); the Lua module,
 * loaded by another luajit, finds it missing (NULL) and does not poll. */
extern void luaJIT_pollhook(lua_State *L, int steps) __attribute__((weak));

static int lje_fail(lje_t *e, const char *what) {
  if (e->err && e->errlen)
    snprintf(e->err, e->errlen, "%s%s%s", what, e->plen ? " at " : "",
             e->plen ? e->path : "");
  return -1;
}

/* Appends a path step; returns the length to restore. */
static size_t lje_step(lje_t *e, const char *fmt, const char *s, size_t n,
                       long long i) {
  size_t old = e->plen;
  if (e->plen + 1 < sizeof e->path) {
    int w = fmt ? snprintf(e->path + e->plen, sizeof e->path - e->plen, fmt, i)
                : snprintf(e->path + e->plen, sizeof e->path - e->plen,
                           ".%.*s%s", n > 32 ? 32 : (int)n, s, n > 32 ? "..." : "");
    if (w > 0) e->plen += (size_t)w;
    if (e->plen >= sizeof e->path) e->plen = sizeof e->path - 1;
  }
  return old;
}

static void lje_unstep(lje_t *e, size_t old) {
  e->plen = old;
  e->path[old] = 0;
}

static int lje_string(lje_t *e, const char *s, size_t n) {
  /* Its text is at least n bytes: refuse before the one C call that
   * escapes it. */
  if (e->out->len > LJSON_TEXT_MAX || n > LJSON_TEXT_MAX - e->out->len)
    return lje_fail(e, "the text would be longer than 128 MB");
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0) return lje_fail(e, "a string holds a NUL byte");
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k = pawl__json_utf8_len((const unsigned char *)s + i, n - i);
    if (k == 0) return lje_fail(e, "a string is not valid UTF-8");
    i += k;
  }
  pawl__buf_json_string(e->out, s, n);
  return 0;
}

static int lje_number(lje_t *e, double d) {
  if (!isfinite(d))
    return lje_fail(e, "NaN and infinity have no JSON form");
  char t[40];
  pawl__json_number_text(d, t, sizeof t);
  pawl__buf_puts(e->out, t);
  return 0;
}

static int lje_value(lje_t *e, int idx, int depth);

/* A key that is a positive integer (the array test). */
static int lje_index(lua_State *L, int k, double *v) {
  if (lua_type(L, k) != LUA_TNUMBER) return 0;
  *v = lua_tonumber(L, k);
  return *v >= 1 && *v == floor(*v) && *v <= (double)JSON_MAX_SAFE_INT;
}

static int lje_table(lje_t *e, int idx, int depth) {
  lua_State *L = e->L;
  if (depth >= JSON_MAX_DEPTH)
    return lje_fail(e, "tables nested deeper than 512 (a table that contains "
                       "itself?)");
  int marked = 0;
  if (lua_getmetatable(L, idx)) {
    lua_getfield(L, LUA_REGISTRYINDEX, LJSON_ARRAY);
    marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
  }
  /* One pass over the keys: all positive integers (and the largest)? */
  double max = 0, v;
  size_t count = 0;
  int all_index = 1;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
    if (lje_index(L, -1, &v)) {
      if (v > max) max = v;
    } else {
      all_index = 0;
    }
  }
  if (marked && !all_index)
    return lje_fail(e, "an array (pawl.json.array) has a key that is not a "
                       "positive integer");
  int array = marked || (count > 0 && all_index);
  if (array && max > 10 && max > 2.0 * (double)count)
    return lje_fail(e, "an array with more holes than values");
  if (array) {
    pawl__buf_putc(e->out, '[');
    for (long long i = 1; i <= (long long)max; i++) {
      if (i > 1) pawl__buf_putc(e->out, ',');
      size_t old = lje_step(e, "[%lld]", NULL, 0, i);
      lua_rawgeti(L, idx, (int)i);
      int rc = lje_value(e, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
      lje_unstep(e, old);
      if (rc) return rc;
    }
    pawl__buf_putc(e->out, ']');
    return 0;
  }
  pawl__buf_putc(e->out, '{');
  int first = 1;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    /* Key at -2, value at -1. The key is read, never converted in place
     * (that would confuse lua_next). */
    size_t klen = 0, old;
    int rc = 0;
    if (!first) pawl__buf_putc(e->out, ',');
    first = 0;
    if (lua_type(L, -2) == LUA_TSTRING) {
      const char *k = lua_tolstring(L, -2, &klen);
      old = lje_step(e, NULL, k, klen, 0);
      rc = lje_string(e, k, klen);
    } else if (lua_type(L, -2) == LUA_TNUMBER) {
      char t[40] = "nan";
      double kd = lua_tonumber(L, -2);
      if (isfinite(kd)) pawl__json_number_text(kd, t, sizeof t);
      old = lje_step(e, NULL, t, strlen(t), 0);
      if (!isfinite(kd)) rc = lje_fail(e, "a key is NaN or infinity");
      else pawl__buf_json_string(e->out, t, strlen(t));
    } else {
      old = e->plen;
      char what[80];
      snprintf(what, sizeof what, "a table key of type %s has no JSON form",
               lua_typename(L, lua_type(L, -2)));
      rc = lje_fail(e, what);
    }
    if (!rc) {
      pawl__buf_putc(e->out, ':');
      rc = lje_value(e, lua_gettop(L), depth + 1);
    }
    lje_unstep(e, old);
    if (rc) {
      lua_pop(L, 2);
      return rc;
    }
    lua_pop(L, 1);
  }
  pawl__buf_putc(e->out, '}');
  return 0;
}

static int lje_value(lje_t *e, int idx, int depth) {
  lua_State *L = e->L;
  /* One table may be reached many times (t = {t, t}, forty times over, is
   * 2^40 values), all in this C loop: the text is bounded (a Lua string
   * could not hold more anyway), and every 1024 values an armed count
   * hook (a job's timeout) may run and raise. Whatever it raises, the
   * caller's buffer is freed by its box. */
  if (e->out->len > LJSON_TEXT_MAX)
    return lje_fail(e, "the text would be longer than 128 MB (a table "
                       "reached many times?)");
  if ((++e->values & 1023) == 0 && luaJIT_pollhook) luaJIT_pollhook(L, 1024);
  switch (lua_type(L, idx)) {
  case LUA_TNIL: pawl__buf_puts(e->out, "null"); return 0;
  case LUA_TBOOLEAN:
    pawl__buf_puts(e->out, lua_toboolean(L, idx) ? "true" : "false");
    return 0;
  case LUA_TNUMBER: return lje_number(e, lua_tonumber(L, idx));
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    return lje_string(e, s, n);
  }
  case LUA_TTABLE: return lje_table(e, idx, depth);
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) { /* null (pawl.json.null, cjson.null) */
      pawl__buf_puts(e->out, "null");
      return 0;
    }
    /* fall through */
  default: {
    char what[64];
    snprintf(what, sizeof what, "a %s has no JSON form",
             lua_typename(L, lua_type(L, idx)));
    return lje_fail(e, what);
  }
  }
}

int pawl__ljson_encode(lua_State *L, int idx, pawl_buf_t *out, char *err,
                 size_t errlen) {
  if (idx < 0 && idx > LUA_REGISTRYINDEX) idx = lua_gettop(L) + idx + 1;
  /* Each level of nesting holds a key and a value on the stack: make room
   * for the deepest now, so that nothing below can raise. */
  luaL_checkstack(L, 2 * JSON_MAX_DEPTH + 8, "JSON nested too deep");
  lje_t e = {.L = L, .out = out, .err = err, .errlen = errlen};
  if (err && errlen) err[0] = 0;
  int rc = lje_value(&e, idx, 0);
  if (!rc && out->oom) {
    if (err && errlen) snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  return rc;
}

/* ---- the module ----------------------------------------------------------- */

/* __gc of encode's buffer box: frees it if an error left it behind. */
static int ljson_box_gc(lua_State *L) {
  pawl__buf_free(lua_touserdata(L, 1));
  return 0;
}

/* pawl.json.encode(v) -> string [-1, +1, e] */
static int ljson_l_encode(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  /* The buffer lives in a userdata whose __gc frees it: whatever raises
   * below (out of memory pushing the result), nothing leaks. */
  pawl_buf_t *b = lua_newuserdata(L, sizeof *b);
  pawl__buf_init(b);
  luaL_getmetatable(L, LJSON_BOX);
  lua_setmetatable(L, -2);
  char err[256];
  if (pawl__ljson_encode(L, 1, b, err, sizeof err) != 0) {
    pawl__buf_free(b);
    return luaL_error(L, "pawl.json.encode: %s", err);
  }
  lua_pushlstring(L, b->data ? b->data : "", b->len);
  pawl__buf_free(b);
  return 1;
}

/* pawl.json.decode(s) -> value [-1, +1, e] */
static int ljson_l_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char err[256];
  if (pawl__ljson_decode(L, s, n, err, sizeof err) != 0)
    return luaL_error(L, "pawl.json.decode: %s", err);
  return 1;
}

/* pawl.json.array([t]) -> t, marked as an array [-(0|1), +1, e] */
static int ljson_l_array(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  ljson_push_array_mt(L);
  if (lua_getmetatable(L, 1)) {
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    if (!same)
      return luaL_error(L, "pawl.json.array: the table has a metatable of "
                           "its own");
  }
  lua_setmetatable(L, 1);
  return 1;
}

int pawl__ljson_open(lua_State *L) {
  if (luaL_newmetatable(L, LJSON_BOX)) {
    lua_pushcfunction(L, ljson_box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  ljson_push_array_mt(L);
  lua_pop(L, 1);
  lua_createtable(L, 0, 4);
  lua_pushcfunction(L, ljson_l_encode);
  lua_setfield(L, -2, "encode");
  lua_pushcfunction(L, ljson_l_decode);
  lua_setfield(L, -2, "decode");
  lua_pushcfunction(L, ljson_l_array);
  lua_setfield(L, -2, "array");
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  return 1;
}
