/* utf8.h: text made safe for every backend.
 *
 * SQLite stores any bytes in a TEXT column, PostgreSQL refuses invalid
 * UTF-8 and NUL (in text and in jsonb). Text pawl did not write itself (a
 * job's error message, its log lines) goes through here before it reaches
 * a store, so that what one backend keeps the other does too. */
#ifndef PAWL_UTF8_H
#define PAWL_UTF8_H

#include <stddef.h>

/* A copy of s[0..len) (which may hold NUL bytes) that is valid UTF-8 with
 * no NUL: every byte that does not start a well-formed sequence, and every
 * NUL, becomes U+FFFD. *outlen (may be NULL) receives its length. NULL
 * when out of memory. Free with pawl__free(). */
char *pawl__utf8_scrub(const char *s, size_t len, size_t *outlen);

/* Rewrites, in place, every \u0000 escape inside the strings of the JSON
 * text `json` as \ufffd (PostgreSQL's jsonb refuses U+0000). Other text is
 * left alone; the length does not change. */
void pawl__utf8_json_no_nul(char *json);

#endif
