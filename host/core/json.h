/* json.h: pawl's JSON tokenizer, the strict RFC 8259 validator built on
 * it, with pawl's policy on top.
 *
 * Validates without building a tree: pawl stores job payloads as JSON text
 * and only needs to know that the text is well formed before it is stored.
 * The tokenizer (below) is the one JSON reader of pawl: the validator
 * runs it to the end, and the Lua codec's decode, the redaction of admin
 * views, the identity fields of job instances and `pawl top`'s snapshot
 * reader walk its tokens.
 *
 * Why pawl's own and not a library (measured 2026-11-28, bench/RESULTS.md
 * "JSON readers"): of the three Debian 12 packages, none enforces the
 * policy below. jansson 2.14, the strictest, has no integer rule (it reads
 * 2^53 + 1 as an exact int64 and refuses 1e20 written as an integer) and
 * its depth bound is fixed at build time (2048); json-c 0.16, even strict
 * and validating UTF-8, takes lone surrogates, \u0000, overlong UTF-8,
 * raw tabs in strings and 1e999; cJSON 1.7.15 checks no UTF-8 and takes
 * 1e999, 01 and form feeds. Each builds a tree pawl does not need and
 * costs more than this validator on every input (jansson 8.5 to 9.4
 * times, json-c 2.8 to 9.5, cJSON 1.5 to 5.3), before the second pass
 * that the policy would still need.
 *
 * Accepted: exactly one JSON value of any type, with optional surrounding
 * whitespace (space, tab, CR, LF). Rejected, among others: empty input,
 * trailing commas, single-quoted strings, unquoted keys, leading zeros,
 * '-' or '.' without digits, '1.', '1e', NaN and Infinity, comments, raw
 * control characters (below 0x20) in strings, unknown escapes, \u escapes
 * with fewer than four hex digits, invalid UTF-8 anywhere in a string
 * (overlong forms, encoded surrogates, code points above U+10FFFF), bytes
 * outside strings that are not part of the grammar, and nesting deeper than
 * JSON_MAX_DEPTH arrays/objects.
 *
 * pawl's policy: one JSON for both backends and for job code. Every JSON
 * text pawl stores (payloads, params, results, log fields) passes this
 * check, so SQLite (which keeps the text) and PostgreSQL (jsonb) accept the
 * same inputs, and job code reads back the value that was stored. Beyond
 * the grammar, the validator refuses, as RFC 7493 (I-JSON) advises:
 * - lone UTF-16 surrogate escapes ("\ud800" without a low surrogate after
 *   it, or a low one alone): they are not characters; jsonb refuses them,
 *   and job code got a garbled string (or the raw text) instead;
 * - the escape \u0000: C strings end at a NUL, and jsonb refuses it;
 * - numbers outside the range of a double (1e400): job code would read
 *   infinity, which then cannot be stored as a result;
 * - an integer written without a fraction or exponent that job code
 *   would read back as another number: job code reads numbers as doubles,
 *   which hold about 16 digits, so 9007199254740993 (2^53 + 1) would
 *   silently become 9007199254740992. Such values (64-bit ids) belong in
 *   strings. Integers up to 2^53 - 1 (JSON_MAX_SAFE_INT) always pass, and
 *   so does a larger one that is a double's shortest form
 *   (100000000000000000000); a number written with a fraction or exponent
 *   says it is a double and is read as the nearest one (as are numbers
 *   below a double's smallest magnitude, 1e-400, read as 0).
 * Why refuse rather than document: a rounded id or amount is wrong data
 * that nothing reports; refused at enqueue, the sender learns at once.
 * Duplicate object keys are valid grammar and accepted; the last one wins
 * in job code and in jsonb.
 *
 * Positions in error messages are 1-based; a line ends at '\n' and columns
 * count bytes, not characters. */
#ifndef PAWL_JSON_H
#define PAWL_JSON_H

#include <stddef.h>

/* Largest integer magnitude accepted when written as an integer. */
#define JSON_MAX_SAFE_INT 9007199254740991LL

/* Deepest nesting of arrays and objects accepted. The validator is
 * iterative, so this bounds memory (a fixed stack), not C recursion. */
#define JSON_MAX_DEPTH 512

/* How much pawl__json_check() checks. */
#define JSON_POLICY 0  /* the grammar and all of pawl's policy: what pawl stores */
#define JSON_READ 1    /* the policy but the integer rule: what pawl reads
                          back (PostgreSQL writes 1.00000000000000000001e20,
                          accepted as a double, as 100000000000000000001) */
#define JSON_GRAMMAR 2 /* RFC 8259 only: for showing stored text */

/* pawl__json_validate() with the checks of `mode`. */
int pawl__json_check(const char *s, size_t len, int mode, char *err, size_t errlen);

/* strtod that reads '.' as the decimal point whatever the locale. */
double pawl__json_strtod(const char *s, char **end);

/* The shortest JSON text that reads back as d: an integer up to
 * JSON_MAX_SAFE_INT as one, a larger integral value with an exponent,
 * anything else with the fewest digits (15 to 17) that round-trip; "null"
 * for NaN and infinity. Locale-independent. out: at least 32 bytes. */
void pawl__json_number_text(double d, char *out, size_t len);

/* Returns 0 if s[0..len) is exactly one JSON value within pawl's policy
 * (above), -1 otherwise. On -1, if
 * err is not NULL and errlen > 0, writes a one-line NUL-terminated message
 * (truncated to errlen) naming the problem and its position, e.g.
 * "expected ':' after object key at line 1, column 9"; on 0 it sets err to
 * "" (same condition). s may be NULL when
 * len == 0 (which is rejected as empty input). s need not be NUL-terminated
 * and may contain NUL bytes (which are invalid JSON). */
int pawl__json_validate(const char *s, size_t len, char *err, size_t errlen);

/* ---- the tokenizer --------------------------------------------------------
 *
 * Every JSON reader in pawl is built on this one: the validator above (the
 * tokenizer run to the end), the Lua codec's decode (host/lua/ljson.c),
 * the redaction of admin views (redact_json.c), the member extractor of
 * job instances (pawl__json_members, used by host/api/steps.c) and `pawl
 * top`'s snapshot reader (host/cli/top_json.c). So they all accept the
 * same texts, under the mode each is given, with the same messages.
 *
 * A pull API: the caller asks for one token at a time. Each token is
 * checked before it is returned (a string's escapes and UTF-8, a number's
 * grammar and, by mode, its range), and the structure around it (commas,
 * colons, brackets, depth) as it goes; an error ends the walk. The caller
 * owns the lexer (about 4.6 KB: keep it on the stack) and the text, which
 * must outlive it. Not thread-safe per lexer; any number may run at once. */

/* Token kinds; pawl__json_next() returns one, or -1 on an error. */
#define JSON_TOK_END 0         /* the value is complete, nothing but
                                  whitespace after it */
#define JSON_TOK_OBJECT 1      /* '{' */
#define JSON_TOK_OBJECT_END 2  /* '}' */
#define JSON_TOK_ARRAY 3       /* '[' */
#define JSON_TOK_ARRAY_END 4   /* ']' */
#define JSON_TOK_KEY 5         /* an object member's key (its ':' consumed) */
#define JSON_TOK_STRING 6
#define JSON_TOK_NUMBER 7
#define JSON_TOK_TRUE 8
#define JSON_TOK_FALSE 9
#define JSON_TOK_NULL 10

typedef struct pawl_json_tok {
  int kind;
  /* The token's text s[start..end): a string's or key's with its quotes
   * (its contents are s[start + 1..end - 1)), a number's digits, a
   * literal's word, a bracket. */
  size_t start, end;
  int escaped; /* string, key: its contents hold a '\' escape */
  int plain;   /* number: written without fraction or exponent */
} pawl_json_tok_t;

typedef struct pawl_json_lexer {
  const unsigned char *s;
  size_t len;
  size_t pos;
  int mode; /* JSON_POLICY, JSON_READ or JSON_GRAMMAR */
  int state;
  char *err;
  size_t errlen;
  int escaped, plain; /* of the last string or number scanned */
  /* Open containers after the last token (read-only for callers): their
   * number, and the opening byte ('[' or '{') and offset of each; the
   * offset lets an end-of-input error say which container is unclosed. */
  size_t depth;
  unsigned char open[JSON_MAX_DEPTH];
  size_t open_at[JSON_MAX_DEPTH];
} pawl_json_lexer_t;

/* Starts a walk over s[0..len) (s may be NULL when len is 0) under the
 * checks of `mode`. Messages go to err as pawl__json_validate() writes
 * them (err may be NULL). */
void pawl__json_lex_init(pawl_json_lexer_t *lx, const char *s, size_t len,
                         int mode, char *err, size_t errlen);

/* The next token into *t: its kind (JSON_TOK_END once the value is
 * complete, and again if asked), or -1 with the message in err (again -1
 * if asked after that). */
int pawl__json_next(pawl_json_lexer_t *lx, pawl_json_tok_t *t);

/* One escape at p[0..n) (p[0] is the '\' of a string the tokenizer
 * accepted): its UTF-8 bytes into out (returns 1 to 4), the bytes it
 * takes in *used (2, 6, or 12 for a surrogate pair). A lone surrogate,
 * which only JSON_GRAMMAR lets through, becomes U+FFFD; \u0000 a NUL. */
size_t pawl__json_unescape_one(const char *p, size_t n, char out[4],
                               size_t *used);

/* The contents s[0..n) of a string the tokenizer accepted, escapes
 * decoded, into out: at most cap bytes written (no NUL added); returns the
 * decoded length, which may be more than cap and is at most n. */
size_t pawl__json_unescape(const char *s, size_t n, char *out, size_t cap);

/* The values of top-level members of the JSON object s[0..len), checked
 * under `mode`: spans[i][0..1] = the text of the value of the last member
 * whose key, decoded, is names[i] (the last one wins, as in job code and
 * jsonb), {0, 0} when there is none. 0, or -1 when the text is not within
 * the mode's policy (the message in err) or not an object ("expected a
 * JSON object"). n is at most JSON_MEMBERS_MAX. */
#define JSON_MEMBERS_MAX 64
int pawl__json_members(const char *s, size_t len, int mode,
                       const char *const *names, size_t n, size_t (*spans)[2],
                       char *err, size_t errlen);

/* Length (1-4) of the well-formed UTF-8 sequence at p[0..n), n >= 1, or 0
 * if p[0] does not start one. Follows table 3-7 of Unicode 15 section 3.9:
 * no overlong forms, no surrogates (ED A0..BF), nothing above U+10FFFF.
 * Shared by the validator and pawl__buf_json_string(). */
size_t pawl__json_utf8_len(const unsigned char *p, size_t n);

/* 1 if s[0..len) is valid JSON whose top-level value is an object, else 0. */
int pawl__json_is_object(const char *s, size_t len);

#endif
