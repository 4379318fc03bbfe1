/* ljson.h: pawl's JSON for Lua: the codec job code, the worker and the Lua
 * module use, instead of lua-cjson.
 *
 * Why not lua-cjson: Debian's (2.1.0) decodes an empty array to a table
 * that encodes back as an object ([] came back as {}), has no way to tell
 * the two apart (no decode_array_with_array_mt), encodes numbers with at
 * most 14 significant digits (2^53 - 1 came back as 9.007199254741e+15),
 * and decodes a lone surrogate escape to bytes that are not UTF-8. This
 * codec follows json.h's policy both ways, so that what job code returns is
 * what the store accepts, and a value read and written back is unchanged:
 *
 * - decode: arrays get a protected metatable (getmetatable() returns the
 *   string "pawl.json.array"), so an empty array stays an array; objects
 *   are plain tables; null is a light userdata NULL (the same value as
 *   cjson.null); numbers are doubles. Input outside json.h's policy is
 *   refused with its message, but for the integer rule: a big integer is
 *   read as the nearest double (json.h's JSON_READ), since PostgreSQL may
 *   write a double's digits out in full.
 * - encode: a table with the array metatable (decoded, or marked with
 *   pawl.json.array(t)) is an array; another table is an array when all
 *   its keys are positive integers (holes become null, as in lua-cjson,
 *   unless the array would be mostly holes), otherwise an object (number
 *   keys become strings); an empty unmarked table is {}. Numbers are
 *   written with the fewest digits that read back as the same double;
 *   integers beyond 2^53 - 1 get an exponent, so json.h accepts them back.
 *   Refused, with the path of the value: NaN and infinity, strings that
 *   are not UTF-8 or hold a NUL, functions and other values JSON has no
 *   form for, keys that are neither strings nor numbers, and nesting
 *   deeper than JSON_MAX_DEPTH (a table that contains itself), and text
 *   longer than LJSON_TEXT_MAX.
 *
 * Numbers are read and written in the C locale, whatever the process's. */
#ifndef PAWL_LJSON_H
#define PAWL_LJSON_H

#include <stddef.h>

#include "buf.h"
#include "lua.h"

/* The longest text encode makes (the longest string pawl's LuaJIT holds):
 * past it, it fails with "the text would be longer than 128 MB". */
#define LJSON_TEXT_MAX ((size_t)128 << 20)

/* The registry name of the array metatable, and its __metatable. */
#define LJSON_ARRAY "pawl.json.array"

/* Decodes s (NUL-terminated, len bytes) and pushes the value. On input
 * outside json.h's policy (JSON_READ) pushes nothing, writes a one-line
 * message into err and returns -1. [-0, +(0|1), m] */
int pawl__ljson_decode(lua_State *L, const char *s, size_t len, char *err,
                 size_t errlen);

/* Appends the JSON of the value at `idx` to `out`. -1 with a message in
 * err (naming the value's path, like "at .items[3]") when the value has no
 * JSON form; `out` may then hold part of the text. Raises a memory error
 * while checking the stack, before it appends anything, and whatever an
 * armed count hook raises (a job's timeout) while it walks: keep `out`
 * where such an error frees it (encode's userdata box). [-0, +0, e] */
int pawl__ljson_encode(lua_State *L, int idx, pawl_buf_t *out, char *err,
                 size_t errlen);

/* The module "pawl.json": encode(v), decode(s) (both raise on error),
 * null, and array(t) (marks t, or a new table, as an array and returns
 * it). [-0, +1, m] */
int pawl__ljson_open(lua_State *L);

#endif
