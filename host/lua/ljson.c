/* ljson.c: pawl's JSON for Lua; see ljson.h.
 *
 * decode validates with pawl__json_validate() first (the policy, and every
 * message), then builds the value from text it knows is well formed, so
 * the builder has no error paths of its own. encode walks the value with
 * raw accesses only (no metamethods run, nothing allocates on the Lua
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

typedef struct ljd {
  lua_State *L;
  const char *s;
  size_t pos;
  int mt; /* stack index of the array metatable */
} ljd_t;

static void ljd_ws(ljd_t *d) {
  while (d->s[d->pos] == ' ' || d->s[d->pos] == '\t' || d->s[d->pos] == '\n' ||
         d->s[d->pos] == '\r')
    d->pos++;
}

static unsigned ljd_hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char c = (unsigned char)p[i];
    v = v << 4 | (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* Pushes the string at d->pos (a '"'); the text is valid (json.h). */
static void ljd_string(ljd_t *d) {
  const char *p = d->s + ++d->pos, *q = p;
  while (*q != '"' && *q != '\\') q++;
  if (*q == '"') { /* no escapes: the common case */
    lua_pushlstring(d->L, p, (size_t)(q - p));
    d->pos += (size_t)(q - p) + 1;
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(d->L, &b);
  for (;;) {
    luaL_addlstring(&b, p, (size_t)(q - p));
    if (*q == '"') break;
    char e = q[1];
    q += 2;
    switch (e) {
    case 'b': luaL_addchar(&b, '\b'); break;
    case 'f': luaL_addchar(&b, '\f'); break;
    case 'n': luaL_addchar(&b, '\n'); break;
    case 'r': luaL_addchar(&b, '\r'); break;
    case 't': luaL_addchar(&b, '\t'); break;
    case 'u': {
      uint32_t cp = ljd_hex4(q);
      q += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF) { /* a pair: json.h checked it */
        cp = 0x10000 + ((cp - 0xD800) << 10) + (ljd_hex4(q + 2) - 0xDC00);
        q += 6;
      }
      char u[4];
      size_t n;
      if (cp < 0x80) u[0] = (char)cp, n = 1;
      else if (cp < 0x800)
        u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
      else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
      else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)),
        n = 4;
      luaL_addlstring(&b, u, n);
      break;
    }
    default: luaL_addchar(&b, e); break; /* " \ / */
    }
    p = q;
    while (*q != '"' && *q != '\\') q++;
  }
  luaL_pushresult(&b);
  d->pos = (size_t)(q + 1 - d->s);
}

/* Pushes the value at d->pos. Depth is bounded by json.h's check. */
static void ljd_value(ljd_t *d) {
  lua_State *L = d->L;
  ljd_ws(d);
  char c = d->s[d->pos];
  if (c == '{' || c == '[') {
    luaL_checkstack(L, 3, "JSON nested too deep");
    lua_newtable(L);
    d->pos++;
    ljd_ws(d);
    if (c == '[') {
      lua_pushvalue(L, d->mt);
      lua_setmetatable(L, -2);
      for (int i = 1; d->s[d->pos] != ']'; i++) {
        ljd_value(d);
        lua_rawseti(L, -2, i);
        ljd_ws(d);
        if (d->s[d->pos] == ',') d->pos++;
      }
    } else {
      while (d->s[d->pos] != '}') {
        ljd_ws(d);
        ljd_string(d);
        ljd_ws(d);
        d->pos++; /* ':' */
        ljd_value(d);
        lua_rawset(L, -3);
        ljd_ws(d);
        if (d->s[d->pos] == ',') d->pos++;
      }
    }
    d->pos++;
    return;
  }
  switch (c) {
  case '"': ljd_string(d); return;
  case 't': lua_pushboolean(L, 1), d->pos += 4; return;
  case 'f': lua_pushboolean(L, 0), d->pos += 5; return;
  case 'n': lua_pushlightuserdata(L, NULL), d->pos += 4; return;
  default: {
    char *end = NULL;
    lua_pushnumber(L, pawl__json_strtod(d->s + d->pos, &end));
    d->pos = (size_t)(end - d->s);
  }
  }
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
  /* JSON_READ: a big integer is read as the nearest double (PostgreSQL
   * may have written a double's digits out in full). */
  if (pawl__json_check(s, len, JSON_READ, err, errlen) != 0) return -1;
  ljson_push_array_mt(L);
  ljd_t d = {L, s, 0, lua_gettop(L)};
  ljd_value(&d);
  lua_remove(L, d.mt);
  return 0;
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
