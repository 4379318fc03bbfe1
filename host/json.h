/* json.h: a strict RFC 8259 JSON validator.
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
 * Surrogate escapes: a \uD800-\uDFFF escape that is not part of a pair (a
 * lone high or a lone low surrogate) is ACCEPTED. The RFC 8259 grammar
 * allows any \uXXXX (section 8.2 only warns that receivers may behave
 * unpredictably), JavaScript's JSON.stringify emits such escapes for lone
 * surrogates, and most parsers (SQLite's json functions, Python, JS) accept
 * them; rejecting them would make pawl refuse payloads other tools produce.
 *
 * Positions in error messages are 1-based; a line ends at '\n' and columns
 * count bytes, not characters. */
#ifndef PAWL_JSON_H
#define PAWL_JSON_H

#include <stddef.h>

/* Deepest nesting of arrays and objects accepted. The validator is
 * iterative, so this bounds memory (a fixed stack), not C recursion. */
#define JSON_MAX_DEPTH 512

/* Returns 0 if s[0..len) is exactly one JSON value, -1 otherwise. On -1, if
 * err is not NULL and errlen > 0, writes a one-line NUL-terminated message
 * (truncated to errlen) naming the problem and its position, e.g.
 * "expected ':' after object key at line 1, column 9"; on 0 it sets err to
 * "" (same condition). s may be NULL when
 * len == 0 (which is rejected as empty input). s need not be NUL-terminated
 * and may contain NUL bytes (which are invalid JSON). */
int json_validate(const char *s, size_t len, char *err, size_t errlen);

/* Length (1-4) of the well-formed UTF-8 sequence at p[0..n), n >= 1, or 0
 * if p[0] does not start one. Follows table 3-7 of Unicode 15 section 3.9:
 * no overlong forms, no surrogates (ED A0..BF), nothing above U+10FFFF.
 * Shared by the validator and buf_json_string(). */
size_t json_utf8_len(const unsigned char *p, size_t n);

/* 1 if s[0..len) is valid JSON whose top-level value is an object, else 0. */
int json_is_object(const char *s, size_t len);

#endif
