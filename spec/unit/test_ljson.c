/* test_ljson.c: pawl's JSON for Lua (host/lua/ljson.c), driven from Lua code
 * in a fresh state: round trips keep arrays, objects and every digit;
 * what JSON cannot hold is refused with the value's path. */
#include <lauxlib.h>
#include <lualib.h>

#include "ljson.h"
#include "unit.h"

/* Runs `code` in a state where `json` is the module; fails the test with
 * the Lua error if it raises. */
static void lua_check(const char *code) {
  lua_State *L = luaL_newstate();
  CHECK(L != NULL);
  luaL_openlibs(L);
  pawl__ljson_open(L);
  lua_setglobal(L, "json");
  if (luaL_dostring(L, code) != 0)
    unit_fail(__FILE__, __LINE__, "%s", lua_tostring(L, -1));
  lua_close(L);
}

/* Helpers every snippet gets. */
#define PRELUDE                                                               \
  "local function is_array(t) return getmetatable(t) == 'pawl.json.array' end\n" \
  "local function fails(pat, f, ...)\n"                                       \
  "  local ok, err = pcall(f, ...)\n"                                         \
  "  assert(not ok, 'no error, expected ' .. pat)\n"                          \
  "  assert(tostring(err):find(pat, 1, true), tostring(err) .. ' lacks ' .. pat)\n" \
  "end\n"

void test_ljson_arrays_stay_arrays(void) {
  lua_check(PRELUDE
            "local v = json.decode('[]')\n"
            "assert(is_array(v) and #v == 0)\n"
            "assert(json.encode(v) == '[]')\n"
            "assert(json.encode(json.decode('{}')) == '{}')\n"
            "local t = json.decode('{\"a\":[],\"b\":{},\"c\":[[],[{}]],\"d\":[1,null,3]}')\n"
            "assert(is_array(t.a) and not is_array(t.b) and not is_array(t))\n"
            "assert(is_array(t.c) and is_array(t.c[1]) and is_array(t.c[2]))\n"
            "assert(not is_array(t.c[2][1]) and next(t.c[2][1]) == nil)\n"
            "assert(t.d[2] == json.null and #t.d == 3)\n"
            "local back = json.decode(json.encode(t))\n"
            "assert(is_array(back.a) and #back.a == 0 and not is_array(back.b))\n"
            "assert(json.encode(back.c) == '[[],[{}]]')\n"
            "assert(json.encode(back.d) == '[1,null,3]')\n"
            /* Tables made in Lua: lua-cjson's rules, and array() to mark. */
            "assert(json.encode({}) == '{}')\n"
            "assert(json.encode(json.array()) == '[]')\n"
            "assert(json.encode(json.array({1, 2})) == '[1,2]')\n"
            "assert(json.encode({1, 2, 3}) == '[1,2,3]')\n"
            "assert(json.encode({[1] = 'a', [3] = 'c'}) == '[\"a\",null,\"c\"]')\n"
            "assert(json.encode({a = {}}) == '{\"a\":{}}')\n"
            "assert(json.encode({[2.5] = 1}) == '{\"2.5\":1}')\n"
            "assert(json.encode({nested = {json.array(), {}}}) == "
            "'{\"nested\":[[],{}]}')\n"
            /* The metatable is shared and protected. */
            "fails('protected metatable', setmetatable, v, {})\n"
            "fails('metatable of its own', json.array, setmetatable({}, {}))\n"
            "assert(json.array(v) == v)\n");
}

void test_ljson_numbers_keep_digits(void) {
  lua_check(PRELUDE
            "for _, x in ipairs({0, 1, -1, 0.1, 1/3, 2^53 - 1, 2^53, -2^53,\n"
            "                    2^60, 1e300, 1e-300, 5e-324, 123.456,\n"
            "                    1.7976931348623157e308}) do\n"
            "  local s = json.encode(x)\n"
            "  assert(json.decode(s) == x, s)\n"
            "  assert(json.decode(json.encode({x}))[1] == x)\n"
            "end\n"
            "assert(json.encode(2^53 - 1) == '9007199254740991')\n"
            "assert(json.encode(2^53) == '9.007199254740992e+15')\n"
            "assert(json.encode(0.1) == '0.1')\n"
            "assert(json.encode(1e20) == '1e+20')\n"
            "assert(json.encode(-0.0) == '-0')\n"
            /* Read back: a big integer PostgreSQL wrote out in full. */
            "assert(json.decode('100000000000000000001') == 1e20)\n"
            "assert(json.decode('1e-400') == 0)\n"
            "fails('out of the range of a double', json.decode, '1e400')\n"
            "fails('NaN and infinity have no JSON form at .x', json.encode,\n"
            "      {x = 0/0})\n"
            "fails('NaN and infinity', json.encode, math.huge)\n"
            "fails('NaN and infinity have no JSON form at .a[2]', json.encode,\n"
            "      {a = {1, -math.huge}})\n");
}

void test_ljson_strings(void) {
  lua_check(PRELUDE
            "assert(json.decode('\"\\\\ud83d\\\\ude00\"') == '\\240\\159\\152\\128')\n"
            "assert(json.decode('\"caf\\\\u00e9\\\\n\\\\t\\\\\"\\\\\\\\/\"') == "
            "'caf\\195\\169\\n\\t\"\\\\/')\n"
            "local s = 'x\\1y\\31z\\127 \\226\\130\\172'\n"
            "assert(json.decode(json.encode(s)) == s)\n"
            "assert(json.decode(json.encode({[s] = s}))[s] == s)\n"
            "fails('lone UTF-16 surrogate', json.decode, '\"\\\\ud800\"')\n"
            "fails('NUL is not allowed', json.decode, '\"\\\\u0000\"')\n"
            "fails('not valid UTF-8 at .s', json.encode, {s = 'caf\\233'})\n"
            "fails('not valid UTF-8', json.encode, {['k\\255'] = 1})\n"
            "fails('holds a NUL byte at [1]', json.encode, {'a\\0b'})\n");
}

void test_ljson_refusals(void) {
  lua_check(PRELUDE
            "fails('a function has no JSON form at .f', json.encode, {f = print})\n"
            "fails('a table key of type boolean', json.encode, {[true] = 1})\n"
            "fails('more holes than values', json.encode, {[1] = 1, [100] = 2})\n"
            "local a = json.array({1}); a.x = 2\n"
            "fails('a key that is not a positive integer', json.encode, a)\n"
            "local loop = {}; loop.self = loop\n"
            "fails('nested deeper than 512', json.encode, loop)\n"
            "fails('pawl.json.decode: expected', json.decode, '{nope}')\n"
            "fails('string expected', json.decode, {})\n"
            /* 512 levels, as the validator allows; 513 refused both ways. */
            "local deep = json.array()\n"
            "local t = deep\n"
            "for i = 2, 512 do local n = json.array(); t[1] = n; t = n end\n"
            "local text = json.encode(deep)\n"
            "assert(#text == 1024)\n"
            "assert(json.encode(json.decode(text)) == text)\n"
            "t[1] = json.array()\n"
            "fails('nested deeper than 512', json.encode, deep)\n"
            "fails('nesting deeper than 512', json.decode, '[' .. text .. ']')\n"
            "assert(json.encode(nil) == 'null' and json.decode('null') == json.null)\n"
            "assert(json.encode(true) == 'true' and json.decode(' false ') == false)\n");
}
