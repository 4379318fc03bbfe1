/* test_json.c: the JSON validator (host/core/json.c) and the byte buffer with its
 * JSON string writer (host/core/buf.c). */
#include <locale.h>

#include "unit.h"

#include "buf.h"
#include "json.h"

/* xorshift64*: fixed seed, so a failure replays identically. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Checks that s is rejected and that the message contains want. */
#define CHECK_REJECT(s, want)                                                \
  do {                                                                       \
    char err_[256];                                                          \
    memset(err_, 'x', sizeof err_);                                          \
    int rc_ = pawl__json_validate((s), strlen(s), err_, sizeof err_);              \
    if (rc_ != -1)                                                           \
      unit_fail(__FILE__, __LINE__, "accepted invalid JSON: %s", (s));       \
    if (strchr(err_, '\n') != NULL || strstr(err_, (want)) == NULL)          \
      unit_fail(__FILE__, __LINE__, "%s: error \"%s\" lacks \"%s\"", (s),    \
                err_, (want));                                               \
  } while (0)

void test_json_valid_values(void) {
  static const char *ok[] = {
      "{}", "[]", "0", "-0", "1", "-1", "9007199254740991",
      "-9007199254740991", "1.23456789012345678901234567890e29",
      "0.5", "-0.0", "1e5", "1E5", "1e+5", "1e-5", "1.25e-10", "-0.5E+03",
      "true", "false", "null", "\"\"", "\"abc\"",
      " \t\r\n{ \"a\" : [ 1 , 2 , { \"b\" : null } ] , \"c\" : \"d\" }\n ",
      "{\"a\":{\"b\":{\"c\":[[[]]]}}}", "[1,\"x\",true,false,null,{},[]]",
      "{\"\":0}", "{\"a\":1,\"a\":2}", /* duplicate keys: valid grammar */
      "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\u0001\\u001f\\u00e9\"",
      "\"\\uABCD\\uabcd\"",
      "\"\\ud83d\\ude00\"",   /* surrogate pair: U+1F600 */
      "\"\\udbff\\udfff\"",   /* U+10FFFF */
      "\"caf\xc3\xa9\"",              /* U+00E9 */
      "\"\xe2\x82\xac \xe2\x80\xa8\"", /* U+20AC, U+2028 */
      "\"\xf0\x9f\x98\x80\"",         /* U+1F600 */
      "\"\xf4\x8f\xbf\xbf\"",         /* U+10FFFF */
      "\"\xef\xbf\xbf\x7f\"",         /* U+FFFF, DEL (not a control) */
      "{\"\xe6\x97\xa5\":\"\xe6\x9c\xac\"}",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char err[256] = "";
    int rc = pawl__json_validate(ok[i], strlen(ok[i]), err, sizeof err);
    if (rc != 0) unit_fail(__FILE__, __LINE__, "%s: %s", ok[i], err);
  }

  /* Length, not NUL, ends the input: a prefix of a longer buffer. */
  CHECK_INT(pawl__json_validate("[1]xyz", 3, NULL, 0), ==, 0);
  CHECK_INT(pawl__json_validate("[1]xyz", 4, NULL, 0), ==, -1);
  /* A NUL byte inside is just an invalid byte. */
  CHECK_INT(pawl__json_validate("\"a\0b\"", 5, NULL, 0), ==, -1);
  CHECK_INT(pawl__json_validate("1 \0", 3, NULL, 0), ==, -1);

  CHECK_INT(pawl__json_is_object("{}", 2), ==, 1);
  CHECK_INT(pawl__json_is_object(" \n{\"a\":[1]} ", 12), ==, 1);
  CHECK_INT(pawl__json_is_object("[]", 2), ==, 0);
  CHECK_INT(pawl__json_is_object("\"{}\"", 4), ==, 0);
  CHECK_INT(pawl__json_is_object("{", 1), ==, 0);
  CHECK_INT(pawl__json_is_object("", 0), ==, 0);
  CHECK_INT(pawl__json_is_object(NULL, 0), ==, 0);
}

/* pawl's policy beyond the grammar (json.h): what both backends store and
 * job code reads back unchanged. */
void test_json_policy(void) {
  char err[256];
  /* Lone surrogates: not characters; PostgreSQL refuses them, lua-cjson
   * turned them into garbage. Pairs are fine. */
  CHECK_REJECT("\"\\ud800\"", "lone UTF-16 surrogate \\ud800 in string");
  CHECK_REJECT("\"\\udc00\"", "lone UTF-16 surrogate \\udc00 in string");
  CHECK_REJECT("\"\\udc00\\ud800\"", "lone UTF-16 surrogate \\udc00");
  CHECK_REJECT("\"\\ud800x\"", "a high surrogate must be followed by a low");
  CHECK_REJECT("\"\\ud800\\u0041\"", "lone UTF-16 surrogate \\ud800");
  CHECK_REJECT("\"\\ud800\\ud800\"", "lone UTF-16 surrogate \\ud800");
  CHECK_REJECT("\"\\ud800", "unexpected end of input in string");
  CHECK_REJECT("{\"\\udfff\":1}", "in object key");
  CHECK_INT(pawl__json_validate("\"\\uD83D\\uDE00\"", 14, NULL, 0), ==, 0);
  /* NUL: C strings end at it, PostgreSQL refuses it. */
  CHECK_REJECT("\"a\\u0000b\"", "\\u0000 in string: NUL is not allowed");
  CHECK_REJECT("{\"\\u0000\":1}", "\\u0000 in object key");
  CHECK_INT(pawl__json_validate("\"\\u0001\"", 8, NULL, 0), ==, 0);
  /* Numbers beyond a double: infinity in job code, refused when stored. */
  CHECK_REJECT("1e400", "number 1e400 is out of the range of a double");
  CHECK_REJECT("[-1e309]", "(about +-1.8e308) at line 1, column 2");
  CHECK_REJECT("1.7976931348623159e308", "out of the range");
  CHECK_REJECT("17976931348623158079372897140530341507993413271003782693617377"
               "898044496829276475094664901797758720709633028641669288791094"
               "655554785194040263065748867150582068190890200070838367627385"
               "484581771153176447573027006985557136695962284291481986083493"
               "647529271907416844436551070434271155969950809304288017790417"
               "44977920.0",
               "out of the range");
  static const char *const fits[] = {
      "1.7976931348623157e308", "-1.7976931348623157e308",
      "1.7976931348623158e308", /* rounds down to DBL_MAX */
      "0.00017976931348623158e312", "1e308", "1e-400", "-0e99999999999",
      "0.0e400", "123.456e-7", "1e-99999999999999999999",
      "179769313486231580793728971405303415079934132710037826936173778980444968"
      "292764750946649017977587207096330286416692887910946555547851940402630657"
      "488671505820681908902000708383676273854845817711531764475730270069855571"
      "366959622842914819860834936475292719074168444365510704342711559699508093"
      "042880177904174497791.9e0", /* just under the halfway point */
  };
  for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++)
    if (pawl__json_validate(fits[i], strlen(fits[i]), err, sizeof err) != 0)
      unit_fail(__FILE__, __LINE__, "%s: %s", fits[i], err);
  CHECK_REJECT("1797693134862315807937289714053034150799341327100378269361737789"
               "8044496829276475094664901797758720709633028641669288791094655"
               "5547851940402630657488671505820681908902000708383676273854845"
               "8177115317644757302700698555713669596228429148198608349364752"
               "927190741684443655107043427115596995080930428801779041744977"
               "92.0",
               "out of the range"); /* exactly halfway: rounds to inf */
  /* Integers that job code, which reads doubles, would get back as
   * another number. One that a double holds as written passes, and the
   * same values written as doubles (with an exponent) are read as the
   * nearest one. */
  CHECK_REJECT("9007199254740993", "integer 9007199254740993 would reach job "
                                   "code as 9.007199254740992e+15");
  CHECK_REJECT("{\"id\":-9007199254740993}", "integer -9007199254740993");
  CHECK_REJECT("123456789012345678901234567890", "integer 123456789012345678901234...");
  CHECK_REJECT("12345678901234567", "send it as a string");
  static const char *const ints[] = {
      "9007199254740991", "-9007199254740991", "9007199254740992",
      "100000000000000000000", "123456789012345",
      "9.007199254740993e15", "1e20", "9007199254740991.5",
      "12345678901234567890123e0"};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (pawl__json_validate(ints[i], strlen(ints[i]), err, sizeof err) != 0)
      unit_fail(__FILE__, __LINE__, "%s: %s", ints[i], err);
  /* Reading back (JSON_READ): big integers are doubles, as PostgreSQL may
   * write 1.00000000000000000001e20 out in full; the rest still holds. */
  CHECK_INT(pawl__json_check("100000000000000000001", 21, JSON_READ, NULL, 0), ==, 0);
  CHECK_INT(pawl__json_check("\"\\ud800\"", 8, JSON_READ, NULL, 0), ==, -1);
  CHECK_INT(pawl__json_check("1e400", 5, JSON_READ, NULL, 0), ==, -1);
  /* The grammar alone (showing stored text): all of the above pass. */
  const char *all = "[\"\\ud800\\u0000\",1e400,9007199254740993]";
  CHECK_INT(pawl__json_check(all, strlen(all), JSON_GRAMMAR, NULL, 0), ==, 0);
  CHECK_INT(pawl__json_validate(all, strlen(all), NULL, 0), ==, -1);
  CHECK_INT(pawl__json_check("[1,]", 4, JSON_GRAMMAR, NULL, 0), ==, -1);
}

/* The shortest text that reads back as the same double, whatever the
 * locale's decimal point. */
void test_json_number_text(void) {
  static const struct {
    double d;
    const char *want;
  } cases[] = {
      {0, "0"}, {-0.0, "-0"}, {1, "1"}, {-42, "-42"}, {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"}, {9007199254740991.0, "9007199254740991"},
      {9007199254740992.0, "9.007199254740992e+15"}, {1e20, "1e+20"},
      {1e300, "1e+300"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
      {5e-324, "4.94065645841247e-324"}, {123.456, "123.456"},
      {-2.5e-7, "-2.5e-07"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[48];
    pawl__json_number_text(cases[i].d, out, sizeof out);
    if (strcmp(out, cases[i].want) != 0)
      unit_fail(__FILE__, __LINE__, "%.17g gave %s, want %s", cases[i].d, out,
                cases[i].want);
    CHECK(pawl__json_strtod(out, NULL) == cases[i].d);
    CHECK_INT(pawl__json_validate(out, strlen(out), NULL, 0), ==, 0);
  }
  /* A locale with a decimal comma changes neither direction. */
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
    char out[48];
    pawl__json_number_text(0.5, out, sizeof out);
    CHECK_STR(out, "0.5");
    pawl__json_number_text(1.0 / 3, out, sizeof out);
    CHECK_STR(out, "0.3333333333333333");
    CHECK(pawl__json_strtod("0.25", NULL) == 0.25);
    setlocale(LC_NUMERIC, "C");
  }
}

void test_json_rejects(void) {
  /* Exact messages and positions for the documented examples. */
  char err[256];
  CHECK_INT(pawl__json_validate("{\"a\" 1}", 7, err, sizeof err), ==, -1);
  CHECK_STR(err, "expected ':' after object key at line 1, column 6");
  CHECK_INT(pawl__json_validate("[\n  \"\\x\"]", 9, err, sizeof err), ==, -1);
  CHECK_STR(err, "invalid escape '\\x' in string at line 2, column 4");
  CHECK_INT(pawl__json_validate("[1,", 3, err, sizeof err), ==, -1);
  CHECK_STR(err, "unexpected end of input ('[' at line 1, column 1 is not "
                 "closed)");
  CHECK_INT(pawl__json_validate("true", 3, err, sizeof err), ==, -1);
  CHECK_STR(err, "invalid literal (expected 'true') at line 1, column 1");
  CHECK_INT(pawl__json_validate("[1] 2", 5, err, sizeof err), ==, -1);
  CHECK_STR(err,
            "trailing characters after the JSON value at line 1, column 5");
  CHECK_INT(pawl__json_validate("", 0, err, sizeof err), ==, -1);
  CHECK_STR(err, "empty input (expected a JSON value)");

  /* Empty and whitespace-only. */
  CHECK_REJECT("", "empty input");
  CHECK_REJECT(" \n\t ", "empty input");
  CHECK_INT(pawl__json_validate(NULL, 0, NULL, 0), ==, -1);
  /* Trailing commas. */
  CHECK_REJECT("[1,2,]", "trailing comma before ']' at line 1, column 6");
  CHECK_REJECT("{\"a\":1,}", "trailing comma before '}' at line 1, column 8");
  CHECK_REJECT("[,]", "expected a JSON value");
  CHECK_REJECT("[1,,2]", "expected a JSON value, found ','");
  CHECK_REJECT("{,}", "expected a double-quoted object key or '}'");
  /* Quotes and keys. */
  CHECK_REJECT("'a'", "single quotes");
  CHECK_REJECT("{'a':1}", "single quotes");
  CHECK_REJECT("{a:1}", "expected a double-quoted object key or '}', found "
                        "'a' at line 1, column 2");
  CHECK_REJECT("{\"a\":1,b:2}", "expected a double-quoted object key, found "
                                "'b' at line 1, column 8");
  CHECK_REJECT("{1:2}", "object key");
  CHECK_REJECT("{\"a\"}", "expected ':' after object key");
  CHECK_REJECT("{\"a\":}", "expected a JSON value, found '}'");
  CHECK_REJECT("{\"a\":1 \"b\":2}", "expected ',' or '}' after object member");
  CHECK_REJECT("[1 2]", "expected ',' or ']' after array element, found '2'");
  CHECK_REJECT("[1}", "expected ',' or ']'");
  CHECK_REJECT("{\"a\":1]", "expected ',' or '}'");
  CHECK_REJECT("]", "expected a JSON value, found ']' at line 1, column 1");
  /* Numbers. */
  CHECK_REJECT("01", "leading zero in number at line 1, column 1");
  CHECK_REJECT("-01", "leading zero in number at line 1, column 2");
  CHECK_REJECT("[00]", "leading zero");
  CHECK_REJECT("-", "expected a digit after '-' in number at line 1, column 2");
  CHECK_REJECT("[-]", "expected a digit after '-'");
  CHECK_REJECT("1.", "expected a digit after '.' in number at line 1, "
                     "column 3");
  CHECK_REJECT("1.e5", "expected a digit after '.'");
  CHECK_REJECT(".5", "expected a JSON value, found '.' at line 1, column 1");
  CHECK_REJECT("1e", "expected a digit in number exponent at line 1, "
                     "column 3");
  CHECK_REJECT("1e+", "exponent");
  CHECK_REJECT("1E-x", "exponent");
  CHECK_REJECT("+1", "expected a JSON value, found '+'");
  CHECK_REJECT("0x10", "trailing characters");
  CHECK_REJECT("NaN", "expected a JSON value, found 'N'");
  CHECK_REJECT("Infinity", "expected a JSON value, found 'I'");
  CHECK_REJECT("-Infinity", "expected a digit after '-'");
  CHECK_REJECT("[nan]", "invalid literal (expected 'null')");
  /* Literals. */
  CHECK_REJECT("tru", "invalid literal (expected 'true')");
  CHECK_REJECT("True", "found 'T'");
  CHECK_REJECT("nul", "expected 'null'");
  CHECK_REJECT("falsey", "trailing characters after the JSON value at line "
                         "1, column 6");
  /* Strings: control characters, escapes, UTF-8, termination. */
  CHECK_REJECT("\"a\nb\"", "control character 0x0a in string (must be "
                           "escaped) at line 1, column 3");
  CHECK_REJECT("\"\t\"", "control character 0x09");
  CHECK_REJECT("{\"a\x01\":1}", "control character 0x01 in object key");
  CHECK_REJECT("\"\\a\"", "invalid escape '\\a' in string at line 1, "
                          "column 2");
  CHECK_REJECT("\"\\'\"", "invalid escape '\\''");
  CHECK_REJECT("\"\\U0041\"", "invalid escape '\\U'");
  CHECK_REJECT("\"\\\xc3\xa9\"", "invalid escape: '\\' followed by byte 0xc3");
  CHECK_REJECT("\"\\u12G4\"", "invalid \\u escape in string: 'G' is not a "
                              "hex digit at line 1, column 2");
  CHECK_REJECT("\"\\u12\"", "'\"' is not a hex digit");
  CHECK_REJECT("\"\\u\"", "not a hex digit");
  CHECK_REJECT("\"\\u00", "unexpected end of input in string starting at "
                          "line 1, column 1");
  CHECK_REJECT("\"abc", "unexpected end of input in string");
  CHECK_REJECT("\"abc\\", "unexpected end of input in string");
  CHECK_REJECT("{\"ab", "unexpected end of input in object key");
  CHECK_REJECT("\"\x80\"", "invalid UTF-8 (byte 0x80) in string at line 1, "
                           "column 2");
  CHECK_REJECT("\"\xc0\xaf\"", "invalid UTF-8 (byte 0xc0)");     /* overlong */
  CHECK_REJECT("\"\xc1\xbf\"", "invalid UTF-8");                 /* overlong */
  CHECK_REJECT("\"\xe0\x80\xaf\"", "invalid UTF-8 (byte 0xe0)"); /* overlong */
  CHECK_REJECT("\"\xf0\x80\x80\xaf\"", "invalid UTF-8");         /* overlong */
  CHECK_REJECT("\"\xed\xa0\x80\"", "invalid UTF-8 (byte 0xed)"); /* U+D800 */
  CHECK_REJECT("\"\xed\xbf\xbf\"", "invalid UTF-8");             /* U+DFFF */
  CHECK_REJECT("\"\xf4\x90\x80\x80\"", "invalid UTF-8");     /* U+110000 */
  CHECK_REJECT("\"\xf5\x80\x80\x80\"", "invalid UTF-8");     /* bad lead */
  CHECK_REJECT("\"\xff\"", "invalid UTF-8 (byte 0xff)");
  CHECK_REJECT("\"\xe2\x82\"", "invalid UTF-8 (byte 0xe2)"); /* truncated */
  CHECK_REJECT("\"\xe2\x82", "invalid UTF-8");      /* truncated at the end */
  CHECK_REJECT("\"\xc3\"", "invalid UTF-8");
  CHECK_REJECT("\xef\xbb\xbf{}", "found byte 0xef"); /* no BOM either */
  /* Outside strings. */
  CHECK_REJECT("[1] // c", "trailing characters");
  CHECK_REJECT("/* c */ 1", "expected a JSON value, found '/'");
  CHECK_REJECT("[\x0c]", "found byte 0x0c"); /* form feed is not whitespace */
  CHECK_REJECT("{} {}", "trailing characters after the JSON value at line "
                        "1, column 4");
  CHECK_REJECT("{\n\"a\":1,\n\"b\":2\n}\n]",
               "trailing characters after the JSON value at line 5, "
               "column 1");
  /* Unclosed containers name the innermost one. */
  CHECK_REJECT("[", "unexpected end of input ('[' at line 1, column 1");
  CHECK_REJECT("{\"a\":\n  [1, {\"b\":",
               "unexpected end of input ('{' at line 2, column 7 is not "
               "closed)");
  CHECK_REJECT("{\"a\"", "unexpected end of input");
  CHECK_REJECT("{\"a\":", "unexpected end of input");

  /* Small or absent error buffers are fine; the message is truncated. */
  CHECK_INT(pawl__json_validate("[1,]", 4, NULL, 0), ==, -1);
  char tiny[8];
  CHECK_INT(pawl__json_validate("[1,]", 4, tiny, sizeof tiny), ==, -1);
  CHECK_STR(tiny, "trailin");
  char none[1] = {'x'};
  CHECK_INT(pawl__json_validate("[1,]", 4, none, 0), ==, -1);
  CHECK_INT(none[0], ==, 'x');

  /* Mutated and truncated documents: never a crash or a read past len
   * (ASan checks the copy's exact size), always 0 or -1 with one line. */
  static const char doc[] =
      "{\"a\": [1, -2.5e+3, true, false, null, \"s\\u00e9\\n\"],\n"
      " \"b\": {\"c\": [[], {}], \"d\": \"\xc3\xa9\xf0\x9f\x98\x80\"}}";
  CHECK_INT(pawl__json_validate(doc, sizeof doc - 1, err, sizeof err), ==, 0);
  static const char bytes[] = "{}[],:\"\\-+.0123eEtrufalsn \n\x80\xc3\xff";
  for (int iter = 0; iter < 20000; iter++) {
    size_t n = (size_t)(rng() % sizeof doc); /* a prefix, maybe all */
    char *m = malloc(n ? n : 1);
    CHECK(m != NULL);
    memcpy(m, doc, n);
    for (int k = (int)(rng() % 4); k > 0 && n > 0; k--)
      m[rng() % n] = bytes[rng() % (sizeof bytes - 1)];
    err[0] = '\0';
    int rc = pawl__json_validate(m, n, err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    CHECK(rc == 0 ? err[0] == '\0' : err[0] != '\0');
    CHECK(strchr(err, '\n') == NULL);
    free(m);
  }
}

/* "[" * n followed by "]" * n into a malloc'd buffer. */
static char *nested(size_t n, size_t *len) {
  char *s = malloc(2 * n + 1);
  CHECK(s != NULL);
  memset(s, '[', n);
  memset(s + n, ']', n);
  s[2 * n] = '\0';
  *len = 2 * n;
  return s;
}

void test_json_depth_limit(void) {
  size_t len;
  char err[256];
  char *s = nested(JSON_MAX_DEPTH, &len);
  CHECK_INT(JSON_MAX_DEPTH, ==, 512);
  CHECK_INT(pawl__json_validate(s, len, err, sizeof err), ==, 0);
  free(s);

  s = nested(JSON_MAX_DEPTH + 1, &len);
  CHECK_INT(pawl__json_validate(s, len, err, sizeof err), ==, -1);
  CHECK_STR(err, "nesting deeper than 512 at line 1, column 513");
  free(s);

  /* Objects count too, mixed with arrays. */
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (int i = 0; i < 513; i++) pawl__buf_puts(&b, i % 2 ? "[" : "{\"k\":");
  pawl__buf_puts(&b, "1");
  for (int i = 512; i >= 0; i--) pawl__buf_puts(&b, i % 2 ? "]" : "}");
  CHECK(!b.oom);
  CHECK_INT(pawl__json_validate(b.data, b.len, err, sizeof err), ==, -1);
  CHECK(strstr(err, "nesting deeper than 512") != NULL);
  /* Without the outermost object it is exactly 512 deep. */
  CHECK_INT(pawl__json_validate(b.data + 5, b.len - 6, err, sizeof err), ==, 0);
  pawl__buf_free(&b);

  /* A million '[' must fail fast and not exhaust the C stack. */
  size_t big = 1000000;
  s = malloc(big);
  CHECK(s != NULL);
  memset(s, '[', big);
  CHECK_INT(pawl__json_validate(s, big, err, sizeof err), ==, -1);
  CHECK(strstr(err, "nesting deeper than 512") != NULL);
  memset(s, '{', big); /* '{' then '{' is a bad key, found before the limit */
  CHECK_INT(pawl__json_validate(s, big, err, sizeof err), ==, -1);
  free(s);
}

void test_buf_basic(void) {
  pawl_buf_t b;
  pawl__buf_init(&b);
  CHECK(b.data == NULL);
  CHECK_STR(pawl__buf_cstr(&b), "");
  pawl__buf_append(&b, NULL, 0);
  pawl__buf_puts(&b, "");
  CHECK_INT(b.len, ==, 0);
  CHECK_STR(pawl__buf_cstr(&b), "");

  pawl__buf_puts(&b, "hello");
  pawl__buf_putc(&b, ' ');
  pawl__buf_printf(&b, "%s-%d", "world", 42);
  CHECK_STR(pawl__buf_cstr(&b), "hello world-42");
  CHECK_INT(b.len, ==, 14);
  CHECK_INT(b.data[b.len], ==, '\0');

  /* Growth across many KB through every append path, checked byte by
   * byte against a plain array. */
  pawl__buf_reset(&b);
  CHECK_INT(b.len, ==, 0);
  CHECK_STR(pawl__buf_cstr(&b), "");
  size_t cap = 300000;
  char *want = malloc(cap);
  CHECK(want != NULL);
  size_t n = 0;
  for (int i = 0; n < 200000; i++) {
    char tmp[64];
    int k;
    switch (i % 4) {
    case 0:
      pawl__buf_printf(&b, "[%d:%s]", i, "printf");
      k = snprintf(tmp, sizeof tmp, "[%d:%s]", i, "printf");
      memcpy(want + n, tmp, (size_t)k);
      n += (size_t)k;
      break;
    case 1:
      pawl__buf_puts(&b, "puts;");
      memcpy(want + n, "puts;", 5);
      n += 5;
      break;
    case 2:
      pawl__buf_putc(&b, (char)('a' + i % 26));
      want[n++] = (char)('a' + i % 26);
      break;
    default:
      pawl__buf_append(&b, "a\0b", 3); /* embedded NUL survives */
      memcpy(want + n, "a\0b", 3);
      n += 3;
    }
  }
  CHECK(!b.oom);
  CHECK_INT(b.len, ==, n);
  CHECK_INT(b.cap, >, b.len);
  CHECK(memcmp(b.data, want, n) == 0);
  CHECK_INT(b.data[b.len], ==, '\0');

  /* One printf much larger than the spare room. */
  pawl__buf_reset(&b);
  pawl__buf_puts(&b, "x");
  pawl__buf_printf(&b, "%05000d|%s", 7, "end");
  CHECK_INT(b.len, ==, 1 + 5000 + 4);
  CHECK_INT(b.data[1], ==, '0');
  CHECK_INT(b.data[5000], ==, '7');
  CHECK_STR(b.data + 5001, "|end");
  pawl__buf_printf(&b, "%s", "");
  CHECK_INT(b.len, ==, 5005);

  /* reset keeps memory. */
  char *mem = b.data;
  size_t old_cap = b.cap;
  pawl__buf_reset(&b);
  CHECK(b.data == mem);
  CHECK_INT(b.cap, ==, old_cap);
  CHECK_STR(pawl__buf_cstr(&b), "");

  /* detach hands over a NUL-terminated string and empties the buffer. */
  pawl__buf_puts(&b, "detached");
  char *d = pawl__buf_detach(&b);
  CHECK_STR(d, "detached");
  free(d);
  CHECK(b.data == NULL);
  CHECK_INT(b.len, ==, 0);
  CHECK_INT(b.cap, ==, 0);
  d = pawl__buf_detach(&b); /* empty buffer: "" not NULL */
  CHECK_STR(d, "");
  free(d);
  pawl__buf_puts(&b, "again"); /* usable after detach */
  CHECK_STR(pawl__buf_cstr(&b), "again");

  /* Overflowing sizes fail as oom without touching memory; later appends
   * are no-ops and the old contents stay NUL-terminated. */
  pawl__buf_append(&b, "?", SIZE_MAX);
  CHECK_INT(b.oom, ==, 1);
  pawl__buf_puts(&b, "more");
  pawl__buf_putc(&b, 'c');
  pawl__buf_printf(&b, "%d", 5);
  pawl__buf_json_string(&b, "j", 1);
  CHECK_INT(b.len, ==, 5);
  CHECK_STR(pawl__buf_cstr(&b), "again");
  CHECK(pawl__buf_detach(&b) == NULL);
  CHECK_INT(b.oom, ==, 0); /* detach leaves it as after pawl__buf_init */
  CHECK(b.data == NULL);

  pawl__buf_puts(&b, "x");
  b.oom = 1; /* as if an allocation had failed */
  pawl__buf_reset(&b);
  CHECK_INT(b.oom, ==, 0); /* reset starts afresh */
  pawl__buf_puts(&b, "y");
  CHECK_STR(pawl__buf_cstr(&b), "y");
  pawl__buf_free(&b);
  CHECK(b.data == NULL);
  pawl__buf_free(&b); /* idempotent */

  /* A zeroed struct is a valid empty buffer. */
  pawl_buf_t z = {0};
  pawl__buf_printf(&z, "%s", "zero");
  CHECK_STR(pawl__buf_cstr(&z), "zero");
  pawl__buf_free(&z);
  free(want);
}

/* pawl__buf_json_string(s, n) into a fresh buffer, compared with want. */
static void check_js(const char *s, size_t n, const char *want, int line) {
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_json_string(&b, s, n);
  if (b.oom || strcmp(pawl__buf_cstr(&b), want) != 0)
    unit_fail(__FILE__, line, "pawl__buf_json_string gave %s, want %s",
              pawl__buf_cstr(&b), want);
  char err[256];
  if (pawl__json_validate(b.data, b.len, err, sizeof err) != 0)
    unit_fail(__FILE__, line, "output %s is not valid JSON: %s", b.data, err);
  pawl__buf_free(&b);
}
#define CHECK_JS(lit, want) check_js((lit), sizeof(lit) - 1, (want), __LINE__)

void test_buf_json_string(void) {
  CHECK_JS("", "\"\"");
  check_js(NULL, 0, "\"\"", __LINE__);
  CHECK_JS("plain text", "\"plain text\"");
  CHECK_JS("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
  CHECK_JS("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\"");
  CHECK_JS("\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"");
  CHECK_JS("a\0b", "\"a\\ufffdb\""); /* no \u0000 in pawl's JSON */
  /* Valid multibyte UTF-8 is kept as is. */
  CHECK_JS("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
           "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"");
  CHECK_JS("\xed\x9f\xbf\xee\x80\x80", "\"\xed\x9f\xbf\xee\x80\x80\"");
  /* Each byte of invalid UTF-8 becomes one \ufffd. */
  CHECK_JS("\x80", "\"\\ufffd\"");                  /* stray continuation */
  CHECK_JS("\xff\xfe", "\"\\ufffd\\ufffd\"");      /* bad leads */
  CHECK_JS("\xc0\xaf", "\"\\ufffd\\ufffd\"");      /* overlong '/' */
  CHECK_JS("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
  CHECK_JS("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* U+D800 */
  CHECK_JS("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  CHECK_JS("\xf5\x80", "\"\\ufffd\\ufffd\"");
  CHECK_JS("a\xe2\x82" "b", "\"a\\ufffd\\ufffdb\""); /* truncated, then 'b' */
  CHECK_JS("\xe2\x82", "\"\\ufffd\\ufffd\"");       /* truncated at the end */
  CHECK_JS("\xc3\xc3\xa9", "\"\\ufffd\xc3\xa9\"");  /* valid char survives */
  CHECK_JS("\xf0\x9f\x98\n", "\"\\ufffd\\ufffd\\ufffd\\n\"");

  /* Appends after existing content and composes into larger documents. */
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_puts(&b, "{");
  pawl__buf_json_string(&b, "k\"", 2);
  pawl__buf_putc(&b, ':');
  pawl__buf_json_string(&b, "v\n", 2);
  pawl__buf_putc(&b, '}');
  CHECK_STR(pawl__buf_cstr(&b), "{\"k\\\"\":\"v\\n\"}");
  CHECK_INT(pawl__json_is_object(b.data, b.len), ==, 1);

  /* Fuzz: whatever the bytes, the output is valid JSON, and valid UTF-8
   * without specials comes out unchanged. Byte classes are weighted so that
   * valid and almost-valid multibyte sequences are common. */
  static const unsigned char pool[] = {
      0x00, 0x01, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x20, '"',  '\\',
      '/',  'a',  'u',  0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0,
      0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1,
      0xf3, 0xf4, 0xf5, 0xf8, 0xfe, 0xff};
  unsigned char in[64];
  char err[256];
  for (int iter = 0; iter < 5000; iter++) {
    size_t n = (size_t)(rng() % sizeof in);
    for (size_t i = 0; i < n; i++) {
      uint64_t r = rng();
      in[i] = (r & 1) ? pool[(r >> 8) % sizeof pool] : (unsigned char)(r >> 8);
    }
    pawl__buf_reset(&b);
    pawl__buf_json_string(&b, (const char *)in, n);
    CHECK(!b.oom);
    if (pawl__json_validate(b.data, b.len, err, sizeof err) != 0) {
      fprintf(stderr, "iteration %d, input:", iter);
      for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", in[i]);
      unit_fail(__FILE__, __LINE__, "invalid output %s: %s", b.data, err);
    }
    /* Input that is already valid JSON string content (and has no
     * backslash, which would be read as an escape) comes out verbatim. */
    pawl__buf_reset(&b);
    pawl__buf_putc(&b, '"');
    pawl__buf_append(&b, in, n);
    pawl__buf_putc(&b, '"');
    int raw_ok = pawl__json_validate(b.data, b.len, NULL, 0) == 0;
    int has_escape = memchr(in, '\\', n) != NULL;
    if (raw_ok && !has_escape) {
      pawl_buf_t o;
      pawl__buf_init(&o);
      pawl__buf_json_string(&o, (const char *)in, n);
      CHECK_INT(o.len, ==, b.len);
      CHECK(memcmp(o.data, b.data, b.len) == 0);
      pawl__buf_free(&o);
    }
  }

  /* Fuzz: random valid code points of every length are never replaced. */
  for (int iter = 0; iter < 2000; iter++) {
    size_t n = 0;
    while (n + 4 <= sizeof in && rng() % 16 != 0) {
      uint32_t cp;
      switch (rng() % 4) {
      case 0: cp = 0x20 + (uint32_t)(rng() % 0x5F); break;
      case 1: cp = 0x80 + (uint32_t)(rng() % 0x780); break;
      case 2: cp = 0x800 + (uint32_t)(rng() % 0xF800); break;
      default: cp = 0x10000 + (uint32_t)(rng() % 0x100000);
      }
      if (cp == '"' || cp == '\\' || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      if (cp < 0x80) {
        in[n++] = (unsigned char)cp;
      } else if (cp < 0x800) {
        in[n++] = (unsigned char)(0xC0 | cp >> 6);
        in[n++] = (unsigned char)(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        in[n++] = (unsigned char)(0xE0 | cp >> 12);
        in[n++] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        in[n++] = (unsigned char)(0x80 | (cp & 0x3F));
      } else {
        in[n++] = (unsigned char)(0xF0 | cp >> 18);
        in[n++] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        in[n++] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        in[n++] = (unsigned char)(0x80 | (cp & 0x3F));
      }
    }
    pawl__buf_reset(&b);
    pawl__buf_json_string(&b, (const char *)in, n);
    CHECK(!b.oom);
    CHECK_INT(b.len, ==, n + 2);
    CHECK(memcmp(b.data + 1, in, n) == 0);
    CHECK_INT(pawl__json_validate(b.data, b.len, err, sizeof err), ==, 0);
  }
  pawl__buf_free(&b);
}
