/* json.h: a strict RFC 8259 JSON validator, with pawl's policy on top.
 *
 * Validates without building a tree: pawl stores job payloads as JSON text
 * and only needs to know that the text is well formed before it is stored.
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

/* Length (1-4) of the well-formed UTF-8 sequence at p[0..n), n >= 1, or 0
 * if p[0] does not start one. Follows table 3-7 of Unicode 15 section 3.9:
 * no overlong forms, no surrogates (ED A0..BF), nothing above U+10FFFF.
 * Shared by the validator and pawl__buf_json_string(). */
size_t pawl__json_utf8_len(const unsigned char *p, size_t n);

/* 1 if s[0..len) is valid JSON whose top-level value is an object, else 0. */
int pawl__json_is_object(const char *s, size_t len);

#endif
