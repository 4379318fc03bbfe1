/* test_json_readers.c: every JSON reader in pawl against one table.
 *
 * The readers are built on json.h's tokenizer: the validator (what pawl
 * stores, JSON_POLICY), the Lua codec's decode (what job code reads,
 * JSON_READ), the redaction of admin views (what a view shows,
 * JSON_GRAMMAR), the member extractor of job instances (JSON_POLICY) and
 * `pawl top`'s snapshot reader (JSON_READ, nested at most TOP_JSON_DEPTH).
 * Each row states the one answer; each reader must give the answer of its
 * mode, and the readers that decode must read the same value.
 *
 * Before the tokenizer the five disagreed (bench/RESULTS.md, "JSON
 * readers", has the table): the redaction walker copied invalid UTF-8,
 * "01", "-" and "1." into views; the top reader took hex, nan, inf, form
 * feeds, invalid UTF-8 and trailing text; the member extractor compared
 * keys undecoded and took the first of duplicate keys. The rows below with
 * those inputs are the fixes. Two differences are on purpose: the
 * redaction walker reads RFC 8259 only (a view also shows text an older
 * pawl stored, or PostgreSQL wrote back), and the top reader refuses
 * nesting past 16 (the snapshot has 3). */
#include <lauxlib.h>
#include <math.h>

#include "buf.h"
#include "json.h"
#include "ljson.h"
#include "redact.h"
#include "top_json.h"
#include "unit.h"

/* Which modes accept a row: policy implies read implies grammar. */
#define NONE 0    /* not JSON */
#define GRAMMAR 1 /* RFC 8259, outside pawl's policy */
#define READ 2    /* what pawl reads back, not what it stores */
#define POLICY 3  /* what pawl stores */

typedef struct row {
  const char *name;
  const char *text;
  size_t len; /* 0: strlen(text) */
  int level;
  /* What decoding readers read, when it is a string or a number. */
  const char *str;
  int isnum;
  double num;
} row_t;

static const row_t rows[] = {
    /* Strings: escapes and UTF-8. */
    {"lone high surrogate", "\"\\ud800\"", 0, GRAMMAR, NULL, 0, 0},
    {"lone low surrogate", "\"\\udc00x\"", 0, GRAMMAR, NULL, 0, 0},
    {"high surrogate, then not a low one", "\"\\ud800\\u0041\"", 0, GRAMMAR,
     NULL, 0, 0},
    {"surrogate pair", "\"\\ud83d\\ude00\"", 0, POLICY, "\xf0\x9f\x98\x80", 0,
     0},
    {"escapes", "\"\\u00e9\\n\\/\\\\\\\"\\t\"", 0, POLICY, "\xc3\xa9\n/\\\"\t",
     0, 0},
    {"escape u0000", "\"a\\u0000b\"", 0, GRAMMAR, NULL, 0, 0},
    {"raw NUL in a string", "\"a\0b\"", 5, NONE, NULL, 0, 0},
    {"raw tab in a string", "\"a\tb\"", 0, NONE, NULL, 0, 0},
    {"raw ESC in a string", "\"\x1b[2J\"", 0, NONE, NULL, 0, 0},
    {"byte 0xff", "\"\xff\"", 0, NONE, NULL, 0, 0},
    {"C1 byte 0x9b alone", "\"\x9b" "31m\"", 0, NONE, NULL, 0, 0},
    {"overlong C0 AF", "\"\xc0\xaf\"", 0, NONE, NULL, 0, 0},
    {"encoded surrogate ED A0 80", "\"\xed\xa0\x80\"", 0, NONE, NULL, 0, 0},
    {"above U+10FFFF", "\"\xf4\x90\x80\x80\"", 0, NONE, NULL, 0, 0},
    {"truncated sequence", "\"\xe6\x97\"", 0, NONE, NULL, 0, 0},
    {"UTF-8 as written", "\"caf\xc3\xa9 \xe6\x97\xa5\"", 0, POLICY,
     "caf\xc3\xa9 \xe6\x97\xa5", 0, 0},
    {"bad escape", "\"\\q\"", 0, NONE, NULL, 0, 0},
    {"short u escape", "\"\\u12\"", 0, NONE, NULL, 0, 0},
    {"single quotes", "'a'", 0, NONE, NULL, 0, 0},
    /* Numbers. */
    {"1e999", "1e999", 0, GRAMMAR, NULL, 0, 0},
    {"-1e400", "-1e400", 0, GRAMMAR, NULL, 0, 0},
    {"1e-400 reads as 0", "1e-400", 0, POLICY, NULL, 1, 0},
    {"-0", "-0", 0, POLICY, NULL, 1, -0.0},
    {"-0.0e0", "-0.0e0", 0, POLICY, NULL, 1, -0.0},
    {"01", "01", 0, NONE, NULL, 0, 0},
    {"-01", "-01", 0, NONE, NULL, 0, 0},
    {"-", "-", 0, NONE, NULL, 0, 0},
    {"1.", "1.", 0, NONE, NULL, 0, 0},
    {".5", ".5", 0, NONE, NULL, 0, 0},
    {"+1", "+1", 0, NONE, NULL, 0, 0},
    {"1e", "1e", 0, NONE, NULL, 0, 0},
    {"1.2.3", "1.2.3", 0, NONE, NULL, 0, 0},
    {"0x10", "0x10", 0, NONE, NULL, 0, 0},
    {"nan", "nan", 0, NONE, NULL, 0, 0},
    {"Infinity", "Infinity", 0, NONE, NULL, 0, 0},
    {"-inf", "-inf", 0, NONE, NULL, 0, 0},
    {"2^53 + 1", "9007199254740993", 0, READ, NULL, 1, 9007199254740992.0},
    {"2^53 - 1", "9007199254740991", 0, POLICY, NULL, 1, 9007199254740991.0},
    {"1e20 as an integer", "100000000000000000000", 0, POLICY, NULL, 1, 1e20},
    {"21 digits, not a double's", "100000000000000000001", 0, READ, NULL, 1,
     1e20},
    {"largest double", "1.7976931348623157e308", 0, POLICY, NULL, 1,
     1.7976931348623157e308},
    {"exponent with a plus", "2.5E+3", 0, POLICY, NULL, 1, 2500},
    /* Structure and whitespace. */
    {"duplicate keys", "{\"a\":1,\"a\":2}", 0, POLICY, NULL, 0, 0},
    {"trailing text", "1 x", 0, NONE, NULL, 0, 0},
    {"trailing NUL", "1\0", 2, NONE, NULL, 0, 0},
    {"two values", "{} {}", 0, NONE, NULL, 0, 0},
    {"trailing comma", "[1,]", 0, NONE, NULL, 0, 0},
    {"missing comma", "[1 2]", 0, NONE, NULL, 0, 0},
    {"unquoted key", "{a:1}", 0, NONE, NULL, 0, 0},
    {"form feed", "[1,\f2]", 0, NONE, NULL, 0, 0},
    {"vertical tab", "[1,\v2]", 0, NONE, NULL, 0, 0},
    {"no-break space", "[1,\xc2\xa0" "2]", 0, NONE, NULL, 0, 0},
    {"byte order mark", "\xef\xbb\xbf" "1", 0, NONE, NULL, 0, 0},
    {"the four whitespace bytes", " \r\n\t[ 1 ,\r\n 2 ]\t", 0, POLICY, NULL, 0,
     0},
    {"empty", "", 0, NONE, NULL, 0, 0},
    {"whitespace only", " \n", 0, NONE, NULL, 0, 0},
    {"unclosed", "[1", 0, NONE, NULL, 0, 0},
    {"tru", "tru", 0, NONE, NULL, 0, 0},
    {"comment", "[1 /* x */]", 0, NONE, NULL, 0, 0},
};

static size_t row_len(const row_t *r) {
  return r->len ? r->len : strlen(r->text);
}

/* {"k":TEXT} */
static char *wrap(const char *text, size_t n, size_t *len) {
  char *w = malloc(n + 8);
  CHECK(w != NULL);
  memcpy(w, "{\"k\":", 5);
  memcpy(w + 5, text, n);
  w[5 + n] = '}';
  w[6 + n] = 0;
  *len = n + 6;
  return w;
}

/* The value decoded by the Lua codec: 1 and the checks, or 0 refused. */
static int via_ljson(const row_t *r, const char *s, size_t n) {
  lua_State *L = luaL_newstate();
  CHECK(L != NULL);
  char err[256];
  int top = lua_gettop(L);
  int rc = pawl__ljson_decode(L, s, n, err, sizeof err);
  if (rc) {
    CHECK_INT(lua_gettop(L), ==, top); /* nothing left behind */
    CHECK(err[0] != 0);
    lua_close(L);
    return 0;
  }
  CHECK_INT(lua_gettop(L), ==, top + 1);
  if (r->str) {
    size_t len;
    const char *got = lua_tolstring(L, -1, &len);
    if (!got || len != strlen(r->str) || memcmp(got, r->str, len) != 0)
      unit_fail(__FILE__, __LINE__, "%s: ljson read another string", r->name);
  }
  if (r->isnum) {
    double d = lua_tonumber(L, -1);
    if (lua_type(L, -1) != LUA_TNUMBER || d != r->num ||
        signbit(d) != signbit(r->num))
      unit_fail(__FILE__, __LINE__, "%s: ljson read %.17g", r->name, d);
  }
  lua_close(L);
  return 1;
}

/* The value read by `pawl top`'s reader from {"k":TEXT}. */
static int via_top(const row_t *r, const char *w, size_t wn) {
  tj_t v;
  if (top_json_parse(w, wn, &v)) {
    CHECK(v.n == 0 && v.items == NULL);
    return 0;
  }
  const tj_t *k = top_json_get(&v, "k");
  CHECK(k != NULL);
  if (r->str && (k->t != TJ_STR || strcmp(k->str, r->str) != 0))
    unit_fail(__FILE__, __LINE__, "%s: top read another string", r->name);
  if (r->isnum && (k->t != TJ_NUM || k->num != r->num ||
                   signbit(k->num) != signbit(r->num)))
    unit_fail(__FILE__, __LINE__, "%s: top read %.17g", r->name, k->num);
  top_json_free(&v);
  return 1;
}

/* The redaction walker: unchanged text, or refused. */
static int via_redact(const char *s, size_t n) {
  pawl_buf_t out;
  pawl__buf_init(&out);
  char err[256];
  int rc = pawl__redact_json(s, n, NULL, 0, &out, err, sizeof err);
  if (rc == 0) CHECK(out.len == n && memcmp(out.data, s, n) == 0);
  else CHECK(rc == -1 && strncmp(err, "not JSON: ", 10) == 0);
  pawl__buf_free(&out);
  return rc == 0;
}

/* The redaction walker with the member secret: {"k":TEXT} becomes
 * {"k":"<redacted>"} (TEXT's whitespace around it kept), whatever TEXT
 * is, or is refused. */
static int via_redact_member(const char *s, size_t n, const char *w,
                             size_t wn) {
  pawl_buf_t out, want;
  pawl__buf_init(&out);
  pawl__buf_init(&want);
  static const char *const names[] = {"k"};
  int rc = pawl__redact_json(w, wn, names, 1, &out, NULL, 0);
  size_t a = 0, b = n;
  while (a < b && strchr(" \t\r\n", s[a])) a++;
  while (b > a && strchr(" \t\r\n", s[b - 1])) b--;
  pawl__buf_puts(&want, "{\"k\":");
  pawl__buf_append(&want, s, a);
  pawl__buf_puts(&want, REDACT_JSON_MARK);
  pawl__buf_append(&want, s + b, n - b);
  pawl__buf_putc(&want, '}');
  if (rc == 0) CHECK_STR(pawl__buf_cstr(&out), pawl__buf_cstr(&want));
  pawl__buf_free(&out);
  pawl__buf_free(&want);
  return rc == 0;
}

/* The member extractor on {"k":TEXT}: the value's text, as written. */
static int via_members(const char *s, size_t n, const char *w, size_t wn) {
  static const char *const names[] = {"k"};
  size_t spans[1][2];
  char err[256];
  if (pawl__json_members(w, wn, JSON_POLICY, names, 1, spans, err,
                         sizeof err))
    return 0;
  size_t a = 0, b = n;
  while (a < b && strchr(" \t\r\n", s[a])) a++;
  while (b > a && strchr(" \t\r\n", s[b - 1])) b--;
  CHECK_INT(spans[0][1] - spans[0][0], ==, b - a);
  CHECK(memcmp(w + spans[0][0], s + a, b - a) == 0);
  return 1;
}

/* Every reader on one text; `level` is the row's answer. */
static void check_readers(const row_t *r, const char *s, size_t n, int level,
                          int wrapped_level, int top_level) {
  char err[256];
  int got[8];
  got[0] = pawl__json_validate(s, n, err, sizeof err) == 0;
  got[1] = pawl__json_check(s, n, JSON_READ, NULL, 0) == 0;
  got[2] = pawl__json_check(s, n, JSON_GRAMMAR, NULL, 0) == 0;
  got[3] = via_ljson(r, s, n);
  got[4] = via_redact(s, n);
  size_t wn;
  char *w = wrap(s, n, &wn);
  got[5] = via_redact_member(s, n, w, wn);
  got[6] = via_members(s, n, w, wn);
  got[7] = via_top(r, w, wn);
  free(w);
  int want[8] = {level >= POLICY,         level >= READ,
                 level >= GRAMMAR,        level >= READ,
                 level >= GRAMMAR,        wrapped_level >= GRAMMAR,
                 wrapped_level >= POLICY, top_level >= READ};
  static const char *const who[8] = {
      "validator (JSON_POLICY)", "JSON_READ",        "JSON_GRAMMAR",
      "ljson decode",            "redaction",        "redaction of a member",
      "member extractor",        "top reader"};
  for (int i = 0; i < 8; i++)
    if (got[i] != want[i])
      unit_fail(__FILE__, __LINE__, "%s: the %s %s it", r->name, who[i],
                got[i] ? "accepted" : "refused");
}

void test_json_readers_agree(void) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    check_readers(&rows[i], rows[i].text, row_len(&rows[i]), rows[i].level,
                  rows[i].level, rows[i].level);
}

/* Nesting: JSON_MAX_DEPTH for every reader, but the top reader's own 16. */
static char *nest(int depth) {
  char *s = malloc((size_t)depth * 2 + 2);
  CHECK(s != NULL);
  for (int i = 0; i < depth; i++) s[i] = '[';
  s[depth] = '1';
  for (int i = 0; i < depth; i++) s[depth + 1 + i] = ']';
  s[2 * depth + 1] = 0;
  return s;
}

void test_json_readers_depth(void) {
  static const struct {
    int depth, level, wrapped, top;
  } d[] = {
      {1, POLICY, POLICY, POLICY},
      {TOP_JSON_DEPTH - 1, POLICY, POLICY, POLICY},
      /* Wrapped, one more: past the snapshot reader's bound, on purpose. */
      {TOP_JSON_DEPTH, POLICY, POLICY, NONE},
      {JSON_MAX_DEPTH - 1, POLICY, POLICY, NONE},
      {JSON_MAX_DEPTH, POLICY, NONE, NONE},
      {JSON_MAX_DEPTH + 1, NONE, NONE, NONE},
      {1000, NONE, NONE, NONE},
      {100000, NONE, NONE, NONE},
  };
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    char *s = nest(d[i].depth);
    char name[64];
    snprintf(name, sizeof name, "depth %d", d[i].depth);
    row_t r = {name, s, 0, d[i].level, NULL, 0, 0};
    check_readers(&r, s, strlen(s), d[i].level, d[i].wrapped, d[i].top);
    free(s);
  }
  char err[256];
  char *s = nest(JSON_MAX_DEPTH + 1);
  CHECK_INT(pawl__json_validate(s, strlen(s), err, sizeof err), ==, -1);
  CHECK(strstr(err, "nesting deeper than 512") != NULL);
  free(s);
}

/* Keys are compared decoded; of duplicates the last one counts, in the
 * member extractor, the Lua codec and the top reader alike (as jsonb). */
void test_json_readers_keys(void) {
  static const char *const names[] = {"date", "a\"b", "missing", "n"};
  size_t sp[4][2];
  const char *s = "{\"d\\u0061te\":1,\"n\":{\"date\":9,\"missing\":0},"
                  "\"a\\\"b\":[ 1 , 2 ],\"date\" : \"x\" , \"n\":true}";
  CHECK_OK(pawl__json_members(s, strlen(s), JSON_POLICY, names, 4, sp, NULL,
                              0));
  CHECK(sp[0][1] - sp[0][0] == 3 && memcmp(s + sp[0][0], "\"x\"", 3) == 0);
  CHECK(sp[1][1] - sp[1][0] == 9 && memcmp(s + sp[1][0], "[ 1 , 2 ]", 9) == 0);
  CHECK(sp[2][0] == 0 && sp[2][1] == 0); /* only nested: not a member */
  CHECK(sp[3][1] - sp[3][0] == 4 && memcmp(s + sp[3][0], "true", 4) == 0);
  /* An escaped key is read decoded; the first of duplicates loses. */
  const char *d = "{\"d\\u0061te\":\"first\",\"date\":\"last\"}";
  CHECK_OK(pawl__json_members(d, strlen(d), JSON_POLICY, names, 1, sp, NULL,
                              0));
  CHECK(memcmp(d + sp[0][0], "\"last\"", 6) == 0);
  tj_t v;
  CHECK_OK(top_json_parse(d, strlen(d), &v));
  CHECK_STR(top_json_get(&v, "date")->str, "last");
  top_json_free(&v);
  lua_State *L = luaL_newstate();
  CHECK_OK(pawl__ljson_decode(L, d, strlen(d), NULL, 0));
  lua_getfield(L, -1, "date");
  CHECK_STR(lua_tostring(L, -1), "last");
  lua_close(L);
  /* Not an object, or not JSON: refused with a message. */
  char err[256];
  CHECK_INT(pawl__json_members("[1]", 3, JSON_POLICY, names, 1, sp, err,
                               sizeof err), ==, -1);
  CHECK_STR(err, "expected a JSON object");
  CHECK_INT(pawl__json_members("{\"date\":01}", 11, JSON_POLICY, names, 1, sp,
                               err, sizeof err), ==, -1);
  CHECK(strstr(err, "leading zero") != NULL);
  const char *many[JSON_MEMBERS_MAX + 1];
  for (int i = 0; i <= JSON_MEMBERS_MAX; i++) many[i] = "a";
  size_t big[JSON_MEMBERS_MAX + 1][2];
  CHECK_INT(pawl__json_members("{}", 2, JSON_POLICY, many, JSON_MEMBERS_MAX + 1,
                               big, err, sizeof err), ==, -1);
  CHECK(strstr(err, "at most 64") != NULL);
  /* The snapshot reader refuses trailing text (it took it before). */
  CHECK_INT(top_json_parse("{} x", 4, &v), ==, -1);
  CHECK_INT(top_json_parse("[]", 2, &v), ==, -1);
}

/* The tokens themselves: kinds, spans, flags, depth, and the end. */
void test_json_readers_tokens(void) {
  const char *s = " {\"a\\n\" : [1, -2.5e3,\"x\",true,null], \"b\":{}} ";
  static const struct {
    int kind;
    const char *text;
    int flag;
    size_t depth;
  } want[] = {
      {JSON_TOK_OBJECT, "{", 0, 1},         {JSON_TOK_KEY, "\"a\\n\"", 1, 1},
      {JSON_TOK_ARRAY, "[", 0, 2},          {JSON_TOK_NUMBER, "1", 1, 2},
      {JSON_TOK_NUMBER, "-2.5e3", 0, 2},    {JSON_TOK_STRING, "\"x\"", 0, 2},
      {JSON_TOK_TRUE, "true", 0, 2},        {JSON_TOK_NULL, "null", 0, 2},
      {JSON_TOK_ARRAY_END, "]", 0, 1},      {JSON_TOK_KEY, "\"b\"", 0, 1},
      {JSON_TOK_OBJECT, "{", 0, 2},         {JSON_TOK_OBJECT_END, "}", 0, 1},
      {JSON_TOK_OBJECT_END, "}", 0, 0},
  };
  pawl_json_lexer_t lx;
  pawl_json_tok_t t;
  pawl__json_lex_init(&lx, s, strlen(s), JSON_POLICY, NULL, 0);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CHECK_INT(pawl__json_next(&lx, &t), ==, want[i].kind);
    CHECK_INT(t.end - t.start, ==, strlen(want[i].text));
    CHECK(memcmp(s + t.start, want[i].text, t.end - t.start) == 0);
    if (t.kind == JSON_TOK_KEY || t.kind == JSON_TOK_STRING)
      CHECK_INT(t.escaped, ==, want[i].flag);
    if (t.kind == JSON_TOK_NUMBER) CHECK_INT(t.plain, ==, want[i].flag);
    CHECK_INT(lx.depth, ==, want[i].depth);
  }
  CHECK_INT(pawl__json_next(&lx, &t), ==, JSON_TOK_END);
  CHECK_INT(pawl__json_next(&lx, &t), ==, JSON_TOK_END);
  /* An error ends the walk, and stays. */
  char err[256];
  pawl__json_lex_init(&lx, "[1 x]", 5, JSON_POLICY, err, sizeof err);
  CHECK_INT(pawl__json_next(&lx, &t), ==, JSON_TOK_ARRAY);
  CHECK_INT(pawl__json_next(&lx, &t), ==, JSON_TOK_NUMBER);
  CHECK_INT(pawl__json_next(&lx, &t), ==, -1);
  CHECK_STR(err, "expected ',' or ']' after array element, found 'x' at line "
                 "1, column 4");
  CHECK_INT(pawl__json_next(&lx, &t), ==, -1);
  /* Decoding: escapes, a pair, a lone surrogate (only JSON_GRAMMAR lets
   * one through) as U+FFFD, and a cap that still counts. */
  char out[32];
  const char *e = "a\\u00e9\\ud83d\\ude00\\udc00\\/";
  size_t n = pawl__json_unescape(e, strlen(e), out, sizeof out);
  CHECK_INT(n, ==, 1 + 2 + 4 + 3 + 1);
  CHECK(memcmp(out, "a\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd/", n) == 0);
  memset(out, '#', sizeof out);
  CHECK_INT(pawl__json_unescape(e, strlen(e), out, 2), ==, n);
  CHECK(out[2] == '#');
}
